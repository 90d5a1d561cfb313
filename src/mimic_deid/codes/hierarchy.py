"""Domain generalisation hierarchies (DGHs) and the loss metric (seed 002 §IV.2.5-IV.2.6).

A hierarchy is a tree of integer nodes (root = 0). Leaves are the specific values of the
attribute; every other node is a generalised value standing for the leaves below it. The
loss of a node is ``leaves(node) / |A|`` where ``|A|`` is the number of leaves and a leaf
counts zero (Definition 4 as the seed's worked examples evaluate it: generalising a specific
value to the root costs 1, replacing [33-34] by [33-36] in the 8-year hierarchy costs
(4 - 2) / 8 = 0.25). ``LM(a, b) = loss(b) - loss(a)`` for an ancestor ``b`` of ``a``.

Two builders:

* :func:`icd9_hierarchy` -- ICD-9-CM from the codes present: full code (e.g. 250.01), its
  4-character parent (250.0), the 3-character category (250), the chapter (240-279), the
  root (``*``). Codes that are not ICD-9 (no category or chapter) become the root itself,
  with a count and a warning.
* :func:`age_hierarchy` -- ages ``lo..hi`` in years (``hi`` is the single ``90+`` leaf of
  MIMIC-III's shifted ages when ``hi`` = 90) and nested intervals of configurable widths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from mimic_deid.core.errors import ConfigError
from mimic_deid.core.logs import get_logger

__all__ = ["AGE_90_PLUS", "Hierarchy", "age_hierarchy", "icd9_category", "icd9_hierarchy"]

log = get_logger(__name__)

#: The age leaf that stands for every age of 90 or more (MIMIC-III shifts them by ~300 years).
AGE_90_PLUS = 90

_NUMERIC = re.compile(r"^\d{3,5}$")
_V = re.compile(r"^V\d{2,4}$")
_E = re.compile(r"^E\d{3,4}$")
#: ICD-9-CM chapters of the numeric codes: (first category, last category, label).
CHAPTERS: tuple[tuple[int, int, str], ...] = (
    (1, 139, "001-139"),
    (140, 239, "140-239"),
    (240, 279, "240-279"),
    (280, 289, "280-289"),
    (290, 319, "290-319"),
    (320, 389, "320-389"),
    (390, 459, "390-459"),
    (460, 519, "460-519"),
    (520, 579, "520-579"),
    (580, 629, "580-629"),
    (630, 679, "630-679"),
    (680, 709, "680-709"),
    (710, 739, "710-739"),
    (740, 759, "740-759"),
    (760, 779, "760-779"),
    (780, 799, "780-799"),
    (800, 999, "800-999"),
)
ROOT_LABEL = "*"


@dataclass(frozen=True)
class Hierarchy:
    """A DGH as arrays.

    Attributes
    ----------
    name : str
        ``"ICD"`` or ``"Age"`` (for messages).
    labels : list of str, length n_nodes
        Display label of each node.
    parent : ndarray of int64, shape (n_nodes,)
        Parent node, -1 for the root (node 0).
    leaves : ndarray of int64, shape (n_nodes,)
        Number of leaves below a node; 0 for a leaf.
    ancestors : ndarray of int64, shape (n_nodes, height + 1)
        Path from the root (column 0) to the node, padded with -1.
    depth : ndarray of int64, shape (n_nodes,)
    leaf_of : dict
        Value (code string or age) -> leaf node.
    """

    name: str
    labels: list[str]
    parent: np.ndarray
    leaves: np.ndarray
    ancestors: np.ndarray
    depth: np.ndarray
    leaf_of: dict

    @property
    def domain(self) -> int:
        """|A|: the number of leaves."""
        return int(self.leaves[0]) if self.leaves[0] else 1

    @property
    def root(self) -> int:
        return 0

    def loss(self, node: np.ndarray) -> np.ndarray:
        """loss(node) = leaves(node) / |A| in [0, 1] (0 for a specific value)."""
        return self.leaves[np.asarray(node)] / self.domain

    def lm(self, node: np.ndarray, ancestor: np.ndarray) -> np.ndarray:
        """LM(node, ancestor) of Definition 4, elementwise."""
        return self.loss(ancestor) - self.loss(node)

    def lca(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Lowest common ancestor of ``a`` and ``b`` (broadcast), Definition 5."""
        a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
        pa, pb = self.ancestors[a], self.ancestors[b]
        same = (pa == pb) & (pa >= 0)
        d = np.cumprod(same, axis=-1).sum(axis=-1) - 1
        return np.take_along_axis(pa, d[..., None], axis=-1)[..., 0]

    def covers(self, node: np.ndarray, leaf: np.ndarray) -> np.ndarray:
        """True where ``node`` is ``leaf`` or one of its ancestors (broadcast)."""
        node, leaf = np.broadcast_arrays(np.asarray(node), np.asarray(leaf))
        d = self.depth[node]
        return np.take_along_axis(self.ancestors[leaf], d[..., None], axis=-1)[..., 0] == node

    def label(self, node: np.ndarray) -> np.ndarray:
        """Labels of ``node`` as an object array."""
        return np.asarray(self.labels, dtype=object)[np.asarray(node)]


def _build(name: str, labels: list[str], parent: list[int], leaf_of: dict) -> Hierarchy:
    parent_arr = np.asarray(parent, dtype=np.int64)
    n = parent_arr.size
    depth = np.zeros(n, dtype=np.int64)
    for v in range(1, n):  # nodes are created after their parent
        depth[v] = depth[parent_arr[v]] + 1
    height = int(depth.max()) if n else 0
    anc = np.full((n, height + 1), -1, dtype=np.int64)
    anc[np.arange(n), depth] = np.arange(n)
    for v in range(1, n):
        anc[v, : depth[v]] = anc[parent_arr[v], : depth[v]]
    is_leaf = np.zeros(n, dtype=bool)
    is_leaf[list(leaf_of.values())] = True
    leaves = np.zeros(n, dtype=np.int64)
    leaf_nodes = np.flatnonzero(is_leaf)
    for col in range(height + 1):  # every leaf adds one to each of its ancestors
        a = anc[leaf_nodes, col]
        a = a[(a >= 0) & (a != leaf_nodes)]
        np.add.at(leaves, a, 1)
    return Hierarchy(name, labels, parent_arr, leaves, anc, depth, dict(leaf_of))


def icd9_category(code: str) -> str | None:
    """The 3-character category of an ICD-9-CM diagnosis code (``E`` codes: 4), or None."""
    code = code.strip().upper()
    if _NUMERIC.match(code) or _V.match(code):
        return code[:3]
    if _E.match(code):
        return code[:4]
    return None


def _chapter(category: str) -> str | None:
    if category.startswith("V"):
        return "V01-V91"
    if category.startswith("E"):
        return "E000-E999"
    number = int(category)
    for lo, hi, label in CHAPTERS:
        if lo <= number <= hi:
            return label
    return None


def _dotted(code: str) -> str:
    cut = 4 if code.startswith("E") else 3
    return code if len(code) <= cut else f"{code[:cut]}.{code[cut:]}"


def icd9_hierarchy(codes) -> tuple[Hierarchy, int]:
    """The ICD-9-CM DGH of the distinct ``codes`` (MIMIC-III spelling, no dot).

    Parameters
    ----------
    codes : iterable of str
        Diagnosis codes at any level (``25000``, ``4019``, ``486``, ``V5861``, ``E8497``).

    Returns
    -------
    Hierarchy
        Leaves are the distinct valid codes; ``leaf_of`` also maps every invalid code to the
        root.
    int
        Number of distinct codes outside ICD-9-CM (mapped to the root; a warning naming the
        first five is logged).
    """
    labels, parent, index = [ROOT_LABEL], [-1], {("root", ROOT_LABEL): 0}
    leaf_of: dict[str, int] = {}

    def node(kind: str, label: str, up: int) -> int:
        key = (kind, label)
        if key not in index:
            index[key] = len(labels)
            labels.append(label)
            parent.append(up)
        return index[key]

    invalid = []
    for code in sorted({str(c).strip().upper() for c in codes}):
        category = icd9_category(code)
        chapter = _chapter(category) if category else None
        if chapter is None:
            invalid.append(code)
            continue
        up = node("chapter", chapter, 0)
        up = node("category", category, up)
        cut = len(category)
        for length in range(cut + 1, len(code)):  # 4-character parent of a 5-character code
            up = node(f"sub{length}", _dotted(code[:length]), up)
        leaf_of[code] = node("leaf", _dotted(code), up)
    tree = _build("ICD", labels, parent, leaf_of)
    for code in invalid:
        tree.leaf_of[code] = 0
    if invalid:
        log.warning(
            "table diagnoses_icd, column icd9_code: %d distinct codes are not ICD-9-CM codes "
            "(first: %s); they are mapped to the root of the ICD hierarchy (fully generalised)",
            len(invalid),
            invalid[:5],
        )
    return tree, len(invalid)


def age_hierarchy(lo: int, hi: int, widths) -> Hierarchy:
    """Ages ``lo..hi`` (years) under nested intervals of ``widths`` years, then the root.

    Parameters
    ----------
    lo, hi : int
        Youngest and oldest leaf; with ``hi = 90`` the last leaf is labelled ``90+``.
    widths : sequence of int
        Interval widths from the finest, each a multiple of the previous one and > 1, e.g.
        ``[2, 4, 8]`` (the seed's Figure 5). Intervals start at ``lo``; the last one of a level
        is cut at ``hi``. A level whose single interval spans the domain is the root.

    Returns
    -------
    Hierarchy
    """
    widths = [int(w) for w in widths]
    if hi < lo:
        raise ConfigError(f"age hierarchy: the oldest age {hi} is below the youngest {lo}")
    for prev, w in zip([1, *widths], widths, strict=False):
        if w <= prev or w % prev:
            raise ConfigError(
                f"age hierarchy: interval widths must increase and each divide the next, got "
                f"{widths}"
            )

    def show(a: int) -> str:
        return "90+" if a == AGE_90_PLUS and hi == AGE_90_PLUS else str(a)

    labels, parent = [f"[{show(lo)}-{show(hi)}]" if hi > lo else show(lo)], [-1]
    level_nodes = [np.zeros(hi - lo + 1, dtype=np.int64)]  # per level: node of each age
    for w in reversed(widths):
        blocks = (np.arange(lo, hi + 1) - lo) // w
        if blocks.max() == 0:
            continue
        above = level_nodes[-1]
        first = len(labels)
        for b in range(int(blocks.max()) + 1):
            a0, a1 = lo + b * w, min(lo + (b + 1) * w - 1, hi)
            labels.append(f"[{show(a0)}-{show(a1)}]" if a1 > a0 else show(a0))
            parent.append(int(above[a0 - lo]))
        level_nodes.append(first + blocks)
    above = level_nodes[-1]
    leaf_of = {}
    for a in range(lo, hi + 1):
        leaf_of[a] = len(labels)
        labels.append(show(a))
        parent.append(int(above[a - lo]))
    return _build("Age", labels, parent, leaf_of)
