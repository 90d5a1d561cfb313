"""Oracles of the tabular stage's searches, for the tests only: every node of the lattice
checked (the library's OLA and inverse OLA must find the same optimum)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mimic_deid.core.errors import ConfigError
from mimic_deid.deid.hierarchy import Encoded
from mimic_deid.tabular.anonymity import check_k, node_classes, suppression_budget
from mimic_deid.tabular.dps import (
    check_beta,
    check_epsilon,
    node_scores,
    selection_probabilities,
)
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


# ε-safe LA in one draw (the workflow draws through tabular.dps' node scores and
# selection probabilities), and the exponential mechanism it is checked against
def exponential_mechanism(
    utility: np.ndarray, sensitivity: float, eps_prime: float, rng: np.random.Generator
) -> tuple[int, np.ndarray]:
    """Draw an index with probability proportional to ``exp(ε′ u / (2 Δu))``, in log space.

    Parameters
    ----------
    utility : ndarray of float64, shape (n_outputs,)
    sensitivity : float
        Δu > 0.
    eps_prime : float
        ε′ > 0.
    rng : numpy.random.Generator

    Returns
    -------
    index : int
    probabilities : ndarray of float64, shape (n_outputs,)
    """
    eps_prime = check_epsilon(eps_prime, "epsilon_prime")
    if not sensitivity > 0:
        raise ConfigError(f"exponential mechanism: sensitivity must be > 0, got {sensitivity!r}")
    logw = eps_prime * np.asarray(utility, dtype=np.float64) / (2.0 * sensitivity)
    logw -= logw.max()
    prob = np.exp(logw)
    prob /= prob.sum()
    return int(rng.choice(len(prob), p=prob)), prob


@dataclass
class EpsilonSafeResult:
    """One run of ε-safe LA.

    Attributes
    ----------
    node : tuple of int
    sampled : ndarray of bool, shape (n_rows,)
        Records kept by the β-sampling.
    released : ndarray of bool, shape (n_rows,)
        Sampled records not suppressed at ``node``.
    probabilities : ndarray of float64, shape (n_nodes,)
    sensitivity : float
    """

    node: tuple[int, ...]
    sampled: np.ndarray
    released: np.ndarray
    probabilities: np.ndarray
    sensitivity: float


def epsilon_safe_la(
    enc: Encoded,
    k: int,
    beta: float,
    eps_prime: float,
    factor: float,
    mode: str,
    max_sup: float,
    rng: np.random.Generator,
) -> EpsilonSafeResult:
    """ε-safe LA: sample with β, draw a node by the exponential mechanism, suppress classes < k.

    Every column of ``enc`` is treated as a quasi-identifier (the DPS proof needs it).
    """
    beta = check_beta(beta)
    k = check_k(k, enc.n_rows)
    sampled = rng.random(enc.n_rows) < beta
    sample = Encoded(enc.columns, enc.codes[sampled], enc.hierarchies)
    if sample.n_rows == 0:
        raise ConfigError(f"parameter 'beta' = {beta} sampled no record of {enc.n_rows}")
    scores = node_scores(sample, k, max_sup)
    prob, sensitivity = selection_probabilities(scores, factor, mode, eps_prime)
    index = int(rng.choice(len(prob), p=prob))
    node = scores.nodes[index]
    inverse, sizes = node_classes(sample, node)
    released = np.zeros(enc.n_rows, dtype=bool)
    released[np.flatnonzero(sampled)[sizes[inverse] >= k]] = True
    return EpsilonSafeResult(tuple(int(x) for x in node), sampled, released, prob, sensitivity)
