"""Information loss of a lattice node (seed 003 §5.1): Prec, DM* and entropy.

All three are computed before suppression and never decrease with generalisation, as OLA's
k-minimal pruning requires. Each is reported raw and normalised to ``[0, 1]`` by its value at
the top of the lattice (the seed normalises Prec this way and reports DM* as its difference
from the original table):

- ``prec``: mean over quasi-identifiers of ``level / height`` (normalised Prec; raw = sum).
- ``dm_star``: sum of squared class sizes minus that of the original table.
- ``entropy``: ``-sum_i sum_j log2 P[x_ij | r_ij]`` with ``P[a | a'] = #a / #a'`` counted in
  the column, i.e. a sum over columns of a per-column, per-level table computed once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mimic_deid.core.errors import ConfigError, require_choice
from mimic_deid.deid.hierarchy import Encoded
from mimic_deid.tabular.anonymity import node_classes

__all__ = ["METRICS", "LossModel", "check_metric"]

METRICS = ("prec", "dm_star", "entropy")


def check_metric(metric: object, name: str = "metric") -> str:
    """``metric`` if it is one of :data:`METRICS`, else ``ConfigError`` naming ``name``."""
    return str(require_choice(metric, METRICS, f"parameter '{name}'"))


def _column_entropy(enc: Encoded) -> list[np.ndarray]:
    """Per column, entropy loss (bits) at every level, shape ``(height + 1,)``."""
    out = []
    for j, h in enumerate(enc.hierarchies):
        c0 = np.bincount(enc.codes[:, j], minlength=len(h.labels[0])).astype(np.float64)
        present = c0 > 0
        per_level = []
        for m in h.maps:
            cl = np.bincount(m, weights=c0, minlength=int(m.max()) + 1 if m.size else 0)
            ratio = c0[present] / cl[m[present]]
            per_level.append(float(-(c0[present] * np.log2(ratio)).sum()))
        out.append(np.array(per_level))
    return out


@dataclass
class LossModel:
    """Information loss of the nodes of one encoded table.

    Parameters
    ----------
    enc : Encoded
        The table.
    """

    enc: Encoded
    _entropy: list[np.ndarray] = field(init=False, repr=False)
    _dm_bottom: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._entropy = _column_entropy(self.enc)
        _, sizes = node_classes(self.enc, np.zeros(len(self.enc.columns), dtype=np.int64))
        self._dm_bottom = float(np.sum(sizes.astype(np.float64) ** 2))

    def raw(self, metric: str, node: Sequence[int]) -> float:
        """Loss of ``node`` in the metric's own units (Prec: sum of level / height)."""
        node = np.asarray(node, dtype=np.int64)
        if metric == "prec":
            h = self.enc.heights
            return float(np.sum(np.where(h > 0, node / np.maximum(h, 1), 0.0)))
        if metric == "entropy":
            return float(sum(e[int(lv)] for e, lv in zip(self._entropy, node, strict=True)))
        if metric == "dm_star":
            _, sizes = node_classes(self.enc, node)
            return float(np.sum(sizes.astype(np.float64) ** 2)) - self._dm_bottom
        raise ConfigError(f"parameter 'metric' must be one of {list(METRICS)}, got {metric!r}")

    def top_value(self, metric: str) -> float:
        """Raw loss of the most general node."""
        if metric == "prec":
            return float(np.count_nonzero(self.enc.heights))
        if metric == "entropy":
            return float(sum(e[-1] for e in self._entropy))
        n = float(self.enc.n_rows)
        return n * n - self._dm_bottom

    def normalised(self, metric: str, node: Sequence[int]) -> float:
        """Loss of ``node`` divided by the top node's (0 if the top loses nothing)."""
        top = self.top_value(metric)
        return self.raw(metric, node) / top if top > 0 else 0.0

    def prec_all(self, nodes: np.ndarray) -> np.ndarray:
        """Normalised Prec of every row of ``nodes``, shape ``(n_nodes,)`` (vectorised)."""
        h = self.enc.heights
        if not np.any(h > 0):
            return np.zeros(len(nodes))
        return (nodes[:, h > 0] / h[h > 0]).sum(axis=1) / np.count_nonzero(h)
