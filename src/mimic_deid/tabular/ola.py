"""OLA and Inverse OLA (seed 003 §4.3, §4.4) on an encoded table, and their brute-force twins.

:func:`ola` finds the k-minimal set (the minimal nodes that are k-anonymous within ``max_sup``
percent suppression) by :func:`~mimic_deid.tabular.lattice.minimal_nodes` and returns its
member of least information loss: as the loss never decreases with generalisation, that node
is optimal among all k-anonymous nodes. :func:`inverse_ola` searches the reversed lattice for
the most general nodes whose normalised loss is at most ``max_loss`` and returns the one that
reaches the largest ``k`` within ``max_sup``.

The k-minimal set is built afresh by every call (the seed author's code keeps it in a mutable
default argument, so a later call can return nodes found for an earlier ``k``; not here).
Ties in loss (or in ``k``) go to the lower node, then to the lexicographically smaller one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from mimic_deid.core.errors import ConfigError
from mimic_deid.deid.hierarchy import Encoded
from mimic_deid.tabular.anonymity import (
    check_k,
    check_max_sup,
    k_within,
    node_classes,
    suppression_budget,
)
from mimic_deid.tabular.lattice import Lattice, minimal_nodes
from mimic_deid.tabular.loss import LossModel, check_metric

__all__ = [
    "InverseResult",
    "OlaResult",
    "SearchResult",
    "check_max_loss",
    "inverse_ola",
    "is_k_anonymous",
    "ola",
]


@dataclass
class SearchResult:
    """The node a lattice search chose and what the search cost (both searches share these).

    Attributes
    ----------
    node : tuple of int
        Generalisation level per quasi-identifier.
    loss_normalised : float
        The metric at ``node`` divided by the top node's value.
    suppressed : int
        Records in classes smaller than ``k`` at ``node`` (suppressed in the release).
    checked : int
        Nodes the search evaluated (OLA: k-anonymity, seed Table 6.9; Inverse OLA: the loss).
    lattice_size : int
    seconds : float
        Wall time of the call.
    """

    node: tuple[int, ...]
    loss_normalised: float
    suppressed: int
    checked: int
    lattice_size: int
    seconds: float


@dataclass
class OlaResult(SearchResult):
    """The node OLA chose and what it cost (:class:`SearchResult`), with the raw loss and the
    k-minimal set.

    Attributes
    ----------
    loss : float
        The metric at ``node``, raw.
    k_minimal : list of tuple of int
        The k-minimal set of this call.
    """

    loss: float = 0.0
    k_minimal: list[tuple[int, ...]] = field(default_factory=list)


@dataclass
class InverseResult(SearchResult):
    """The node Inverse OLA chose (:class:`SearchResult`).

    Attributes
    ----------
    k : int
        Largest k reached at ``node`` within the suppression limit.
    candidates : list of tuple of int
        The most general nodes within ``max_loss`` (this call's set).
    """

    k: int = 0
    candidates: list[tuple[int, ...]] = field(default_factory=list)


def check_max_loss(max_loss: object, name: str = "max_loss") -> float:
    """``max_loss`` as a float in ``[0, 1]`` (normalised loss), else ``ConfigError``."""
    ok = isinstance(max_loss, int | float | np.integer | np.floating) and not isinstance(
        max_loss, bool
    )
    if not ok or not 0.0 <= float(max_loss) <= 1.0:
        raise ConfigError(
            f"parameter '{name}' must be a normalised loss in [0, 1], got {max_loss!r}"
        )
    return float(max_loss)


def is_k_anonymous(enc: Encoded, node: np.ndarray, k: int, budget: int) -> bool:
    """Whether the records in classes smaller than ``k`` at ``node`` number <= ``budget``."""
    _, sizes = node_classes(enc, node)
    return int(sizes[sizes < k].sum()) <= budget


def _suppressed(enc: Encoded, node: np.ndarray, k: int) -> int:
    _, sizes = node_classes(enc, node)
    return int(sizes[sizes < k].sum())


def _best(nodes: np.ndarray, scores: np.ndarray, lower_is_better: bool) -> int:
    """Row of the best score; ties to the lower node (height), then the first row."""
    key = scores if lower_is_better else -scores
    order = np.lexsort((np.arange(len(nodes)), nodes.sum(axis=1), key))
    return int(order[0])


def ola(
    enc: Encoded, k: int, max_sup: float, metric: str = "prec", losses: LossModel | None = None
) -> OlaResult:
    """Optimal Lattice Anonymisation: the k-anonymous node of least loss.

    Parameters
    ----------
    enc : Encoded
        The table's quasi-identifiers.
    k : int
        Smallest class size, in ``[1, n_rows]``.
    max_sup : float
        Percent of records that may be suppressed, in ``[0, 100]``.
    metric : {"prec", "dm_star", "entropy"}
    losses : LossModel, optional
        Reused between calls on the same table (it holds no search state).

    Raises
    ------
    ConfigError
        ``k``, ``max_sup`` or ``metric`` out of range (named).
    """
    started = time.perf_counter()
    k = check_k(k, enc.n_rows)
    budget = suppression_budget(enc.n_rows, check_max_sup(max_sup))
    metric = check_metric(metric)
    losses = losses or LossModel(enc)
    lattice = Lattice(enc.heights)
    search = minimal_nodes(lattice, lambda node: is_k_anonymous(enc, node, k, budget))
    cand = lattice.nodes[search.minimal]
    scores = np.array([losses.raw(metric, n) for n in cand])
    best = cand[_best(cand, scores, True)]
    return OlaResult(
        **_chosen(enc, best, k, losses.normalised(metric, best), search, lattice, started),
        loss=losses.raw(metric, best),
        k_minimal=[tuple(int(x) for x in n) for n in cand],
    )


def _k_at(enc: Encoded, node: np.ndarray, budget: int) -> int:
    _, sizes = node_classes(enc, node)
    return k_within(sizes, budget)


def inverse_ola(
    enc: Encoded,
    max_loss: float,
    max_sup: float,
    metric: str = "prec",
    losses: LossModel | None = None,
) -> InverseResult:
    """Inverse OLA: the node of largest k among those with normalised loss <= ``max_loss``.

    Parameters
    ----------
    enc : Encoded
    max_loss : float
        Largest normalised loss accepted, in ``[0, 1]``.
    max_sup : float
        Percent of records that may be suppressed, in ``[0, 100]``.
    metric : {"prec", "dm_star", "entropy"}
    losses : LossModel, optional

    Raises
    ------
    ConfigError
        ``max_loss``, ``max_sup`` or ``metric`` out of range (named).
    """
    started = time.perf_counter()
    max_loss = check_max_loss(max_loss)
    budget = suppression_budget(enc.n_rows, check_max_sup(max_sup))
    metric = check_metric(metric)
    losses = losses or LossModel(enc)
    lattice = Lattice(enc.heights)
    search = minimal_nodes(
        lattice, lambda node: losses.normalised(metric, node) <= max_loss + 1e-12, reverse=True
    )
    cand = lattice.nodes[search.minimal]
    ks = np.array([_k_at(enc, n, budget) for n in cand])
    best = cand[_best(cand, ks.astype(np.float64), False)]
    k = int(ks.max())
    return InverseResult(
        **_chosen(enc, best, k, losses.normalised(metric, best), search, lattice, started),
        k=k,
        candidates=[tuple(int(x) for x in n) for n in cand],
    )


def _chosen(enc, best, k, loss_normalised, search, lattice, started) -> dict:
    """The :class:`SearchResult` fields of a search that chose ``best``."""
    return {
        "node": tuple(int(x) for x in best),
        "loss_normalised": loss_normalised,
        "suppressed": _suppressed(enc, best, k),
        "checked": search.checked,
        "lattice_size": lattice.size,
        "seconds": time.perf_counter() - started,
    }
