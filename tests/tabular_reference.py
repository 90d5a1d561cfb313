"""Oracles of the tabular stage's searches, for the tests only: every node of the lattice
checked (the library's OLA and inverse OLA must find the same optimum)."""

from __future__ import annotations

import numpy as np

from mimic_deid.deid.hierarchy import Encoded
from mimic_deid.tabular.anonymity import suppression_budget
from mimic_deid.tabular.lattice import Lattice
from mimic_deid.tabular.loss import LossModel
from mimic_deid.tabular.ola import _best, _k_at, is_k_anonymous


def brute_force_ola(
    enc: Encoded, k: int, max_sup: float, metric: str = "prec"
) -> tuple[tuple[int, ...], float]:
    """Check every node: the least raw loss over all k-anonymous nodes and its node."""
    budget = suppression_budget(enc.n_rows, max_sup)
    losses = LossModel(enc)
    lattice = Lattice(enc.heights)
    ok = np.array([is_k_anonymous(enc, n, k, budget) for n in lattice.nodes])
    nodes = lattice.nodes[ok]
    scores = np.array([losses.raw(metric, n) for n in nodes])
    best = nodes[_best(nodes, scores, True)]
    return tuple(int(x) for x in best), float(scores.min())


def brute_force_inverse(enc: Encoded, max_loss: float, max_sup: float, metric: str = "prec") -> int:
    """Check every node: the largest k over all nodes with normalised loss <= ``max_loss``."""
    budget = suppression_budget(enc.n_rows, max_sup)
    losses = LossModel(enc)
    lattice = Lattice(enc.heights)
    return max(
        _k_at(enc, n, budget)
        for n in lattice.nodes
        if losses.normalised(metric, n) <= max_loss + 1e-12
    )
