"""The generalisation lattice and OLA's search for the minimal nodes of a monotone predicate.

A node is one generalisation level per quasi-identifier (seed 003 §4.3.2, Fig. 4.2); node
``a`` is below node ``b`` when ``a <= b`` in every column. All nodes are enumerated once as an
integer array, so the sub-lattice between two nodes, a level of it, and the nodes above or below
a node are boolean masks computed over the whole array at once.

:func:`minimal_nodes` is the recursion of OLA (El Emam et al. 2009, as described in seed 003
§4.3.2): a binary search for the lowest node satisfying the predicate on every path of the
sub-lattice, with predictive tagging (a node that satisfies it tags every node above it, one
that does not tags every node below it). It serves OLA (predicate: k-anonymous within the
suppression limit) and, on the reversed lattice, Inverse OLA (predicate: information loss at
most ``max_loss``). The set of minimal nodes and every tag are local to one call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Lattice", "SearchResult", "minimal_nodes"]

UNKNOWN, YES, NO = 0, 1, -1


@dataclass(frozen=True)
class Lattice:
    """Every node of the product of ``range(h + 1)`` over the column heights.

    Attributes
    ----------
    heights : ndarray of int64, shape (n_columns,)
        Top level of every column.
    nodes : ndarray of int64, shape (n_nodes, n_columns)
        All nodes, in lexicographic order (node 0 is the bottom, the last is the top).
    """

    heights: np.ndarray
    nodes: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        h = np.asarray(self.heights, dtype=np.int64)
        object.__setattr__(self, "heights", h)
        grids = np.meshgrid(*[np.arange(x + 1) for x in h], indexing="ij")
        nodes = (
            np.stack([g.ravel() for g in grids], axis=1) if len(h) else np.zeros((1, 0), np.int64)
        )
        object.__setattr__(self, "nodes", nodes.astype(np.int64))

    @property
    def size(self) -> int:
        return int(self.nodes.shape[0])

    @property
    def levels(self) -> np.ndarray:
        """Height of every node in the lattice (sum of its levels), shape ``(n_nodes,)``."""
        return self.nodes.sum(axis=1)

    def index(self, node: np.ndarray) -> int:
        """Row of ``node`` in :attr:`nodes` (mixed-radix number)."""
        strides = np.r_[np.cumprod((self.heights + 1)[::-1])[::-1][1:], 1]
        return int(np.dot(np.asarray(node, dtype=np.int64), strides))

    def above(self, node: np.ndarray) -> np.ndarray:
        """Mask of the nodes at least as general as ``node``."""
        return np.all(self.nodes >= node, axis=1)

    def below(self, node: np.ndarray) -> np.ndarray:
        """Mask of the nodes at most as general as ``node``."""
        return np.all(self.nodes <= node, axis=1)


@dataclass
class SearchResult:
    """What :func:`minimal_nodes` found.

    Attributes
    ----------
    minimal : list of int
        Indices of the minimal nodes satisfying the predicate, ascending.
    checked : int
        Nodes on which the predicate was evaluated (seed Table 6.9).
    status : ndarray of int8, shape (n_nodes,)
        1 known to satisfy, -1 known not to, 0 never decided.
    """

    minimal: list[int]
    checked: int
    status: np.ndarray


def _minimal_known(
    idx: np.ndarray, status: np.ndarray, nodes: np.ndarray, step: np.ndarray
) -> np.ndarray:
    """Minimal satisfying nodes among ``idx`` when all are tagged (no satisfying predecessor;
    ``step[j]``: the index offset of a node's predecessor in column ``j``)."""
    yes = idx[status[idx] == YES]
    keep = np.ones(len(yes), dtype=bool)
    for j in range(nodes.shape[1]):
        has_pred = nodes[yes, j] > 0
        pred = yes[has_pred] + step[j]
        keep[np.flatnonzero(has_pred)[status[pred] == YES]] = False
    return yes[keep]


def minimal_nodes(
    lattice: Lattice, predicate: Callable[[np.ndarray], bool], reverse: bool = False
) -> SearchResult:
    """All minimal nodes of an upward-closed predicate, by OLA's binary search and tagging.

    Parameters
    ----------
    lattice : Lattice
    predicate : callable
        ``predicate(node) -> bool`` on a node (ndarray of levels); must be monotone: true at
        a node implies true at every more general node (``reverse=False``), or at every less
        general node (``reverse=True``). It must hold at the top (bottom when reversed).
    reverse : bool
        Search the reversed lattice: return the *maximal* nodes of a downward-closed predicate
        (Inverse OLA).

    Returns
    -------
    SearchResult
        The minimal (maximal if ``reverse``) nodes are fresh for every call.
    """
    nodes = lattice.heights - lattice.nodes if reverse else lattice.nodes
    levels = nodes.sum(axis=1)
    heights = lattice.heights
    strides = np.r_[np.cumprod((heights + 1)[::-1])[::-1][1:], 1].astype(np.int64)
    # index offset of one step down in column j, in the search's orientation
    step = strides if reverse else -strides
    status = np.zeros(lattice.size, dtype=np.int8)
    found = np.zeros(lattice.size, dtype=bool)
    covered = np.zeros(lattice.size, dtype=bool)  # at or above a found node
    # at_least[j, v] / at_most[j, v]: nodes whose level in column j (original orientation) is
    # >= v / <= v; a box of the lattice is the AND of one row of each per column
    columns = np.arange(len(heights))
    grid = np.arange(int(heights.max(initial=0)) + 1)
    at_least = lattice.nodes.T[:, None, :] >= grid[None, :, None]
    at_most = lattice.nodes.T[:, None, :] <= grid[None, :, None]
    visited: set[tuple[int, int]] = set()
    checked = 0
    unknown = lattice.size

    def decide(i: int) -> bool:
        nonlocal checked, unknown
        if status[i] == UNKNOWN:
            checked += 1
            if predicate(lattice.nodes[i]):
                status[np.all(nodes >= nodes[i], axis=1)] = YES
            else:
                status[np.all(nodes <= nodes[i], axis=1)] = NO
            unknown = int(np.count_nonzero(status == UNKNOWN))
        return bool(status[i] == YES)

    def add(candidates: np.ndarray) -> None:
        """Add each candidate no found node lies below; drop the found nodes above it."""
        for i in candidates:
            if not covered[i]:
                up = np.all(nodes >= nodes[i], axis=1)
                found[up] = False
                found[i] = True
                covered[up] = True

    def sub_lattice(b: int, t: int) -> np.ndarray:
        """Indices of the nodes between ``b`` and ``t`` (inclusive), ascending."""
        lo = np.minimum(lattice.nodes[b], lattice.nodes[t])
        hi = np.maximum(lattice.nodes[b], lattice.nodes[t])
        box = np.logical_and(at_least[columns, lo], at_most[columns, hi]).all(axis=0)
        return np.flatnonzero(box)

    def kmin(b: int, t: int) -> None:
        if unknown == 0 or (b, t) in visited:
            return  # a fully tagged lattice is resolved at once at the end
        visited.add((b, t))
        idx = sub_lattice(b, t)
        tags = status[idx]
        if not np.any(tags == UNKNOWN):
            # every path's lowest satisfying node is known: what the recursion would add
            # (nothing when each satisfying node already lies above a found one)
            if not covered[idx[tags == YES]].all():
                add(_minimal_known(idx, status, nodes, step))
            return
        span = levels[t] - levels[b]
        if span > 1:
            for p in idx[levels[idx] == levels[b] + span // 2]:
                if decide(int(p)):
                    kmin(b, int(p))
                else:
                    kmin(int(p), t)
        else:
            add(np.array([b if decide(b) else t]))

    bottom = int(np.argmin(levels))
    top = int(np.argmax(levels))
    if not decide(top):
        raise ValueError("minimal_nodes: the predicate does not hold at the top of the lattice")
    kmin(bottom, top)  # recursion depth <= log2(lattice height) + 1
    if unknown == 0:
        add(_minimal_known(np.arange(lattice.size), status, nodes, step))
    return SearchResult([int(i) for i in np.flatnonzero(found)], checked, status)
