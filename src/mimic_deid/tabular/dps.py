"""Differential privacy under sampling and ε-safe LA (seed 003 §4.5, §6.2).

A mechanism that keeps each record with probability β, chooses the generalisation with an
ε′-differentially private procedure and then suppresses every class smaller than k is
(β, ε, δ)-DPS (Li, Qardaji and Su, cited as [31] by the seed) for ε >= -ln(1 - β) + ε′ and
δ = D(k, β, ε - ε′), where

    D(k, β, ε) = max over n in [ceil(k / γ - 1), N] of  sum_{j > γ n}^{n} Binom(j; n, β),
    γ = (e^ε - 1 + β) / e^ε.

:func:`dps_delta` evaluates D in log space over every n: each binomial tail is a log-sum-exp
of log-pmfs from a log-factorial table, truncated where the remaining terms fall below 1e-16
of the sum (their ratio is at most ((1 - γ) / γ)(β / (1 - β)) < 1), and the scan over n stops
once the Chernoff bound exp(-n KL(γ || β)) of every larger n is 1e-13 below the maximum found.

ε-safe LA (§4.5.4) samples the records, scores *every* node of the lattice and draws one with
the exponential mechanism, in log space. The utility here is ``-(normalised Prec + penalty)``,
whose sensitivity is exactly the penalty's, rather than the seed's multiplicative inverse (whose
sensitivity the seed does not bound). The penalty is ``factor`` times either the suppressed
fraction at the node (sensitivity ``factor * k / n``: one record more or less can move a whole
class of k - 1 records across the threshold, not only itself as the seed assumes) or 1 for a
node that is not k-anonymous within ``max_sup`` (sensitivity ``factor``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from mimic_deid.core.errors import ConfigError, require_choice
from mimic_deid.deid.hierarchy import Encoded
from mimic_deid.tabular.anonymity import check_k, check_max_sup, node_classes, suppression_budget
from mimic_deid.tabular.lattice import Lattice
from mimic_deid.tabular.loss import LossModel

__all__ = [
    "PENALTY_MODES",
    "NodeScores",
    "admissible_pairs",
    "check_beta",
    "check_epsilon",
    "dps_delta",
    "epsilon_prime",
    "node_scores",
    "parameter_grid",
    "selection_probabilities",
    "smallest_k",
]

PENALTY_MODES = ("suppression", "kanonymity")
_TAIL_TOL = 1e-16
_SCAN_MARGIN = 30.0  # e^-30 ~ 1e-13: larger n cannot change the maximum
_MATRIX_CELLS = 4_000_000


def check_beta(beta: object, name: str = "beta") -> float:
    """β as a float in the open interval (0, 1), else ``ConfigError`` naming ``name``."""
    ok = isinstance(beta, int | float | np.integer | np.floating) and not isinstance(beta, bool)
    if not ok or not 0.0 < float(beta) < 1.0:
        raise ConfigError(f"parameter '{name}' must lie in the open interval (0, 1), got {beta!r}")
    return float(beta)


def check_epsilon(eps: object, name: str = "epsilon") -> float:
    """ε as a finite float > 0, else ``ConfigError`` naming ``name``."""
    ok = isinstance(eps, int | float | np.integer | np.floating) and not isinstance(eps, bool)
    if not ok or not (math.isfinite(float(eps)) and float(eps) > 0.0):
        raise ConfigError(f"parameter '{name}' must be a finite number > 0, got {eps!r}")
    return float(eps)


def _log_factorials(n: int) -> np.ndarray:
    return np.r_[0.0, np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))]


def _kl(a: float, b: float) -> float:
    """Kullback-Leibler divergence of Bernoulli(a) from Bernoulli(b)."""
    out = a * math.log(a / b) if a > 0 else 0.0
    return out + ((1 - a) * math.log((1 - a) / (1 - b)) if a < 1 else 0.0)


def dps_delta(k: int, beta: float, eps: float, n_rows: int) -> tuple[float, int]:
    """D(k, β, ε) of the seed's §4.5.2 over datasets of at most ``n_rows`` records.

    Parameters
    ----------
    k : int
        Smallest class size, >= 1.
    beta : float
        Sampling probability, in (0, 1).
    eps : float
        The ε of D (i.e. ε - ε′ of the mechanism), > 0.
    n_rows : int
        |d|, the largest n of the maximum.

    Returns
    -------
    delta : float
        D(k, β, ε); 0 when the range of n is empty.
    n_max : int
        The n attaining the maximum (0 when empty).
    """
    k = int(k)
    if k < 1:
        raise ConfigError(f"parameter 'k' must be an integer >= 1, got {k!r}")
    return _delta(k, check_beta(beta), check_epsilon(eps), int(n_rows))


@lru_cache(maxsize=4096)
def _delta(k: int, beta: float, eps: float, n_rows: int) -> tuple[float, int]:
    """:func:`dps_delta` on checked arguments (pure, so grids reuse equal evaluations)."""
    gamma = (math.exp(eps) - 1.0 + beta) / math.exp(eps)
    lo = max(1, math.ceil(k / gamma - 1.0))
    if lo > n_rows:
        return 0.0, 0
    lf = _log_factorials(n_rows)
    lb, lq = math.log(beta), math.log1p(-beta)
    ratio = (1.0 - gamma) / gamma * beta / (1.0 - beta)
    terms = n_rows if ratio <= 0 else math.ceil(math.log(_TAIL_TOL * (1 - ratio)) / math.log(ratio))
    terms = int(min(max(terms, 1), n_rows + 1))
    kl = _kl(gamma, beta)
    block = max(1, _MATRIX_CELLS // terms)
    best, best_n = -math.inf, 0
    for start in range(lo, n_rows + 1, block):
        ns = np.arange(start, min(start + block, n_rows + 1), dtype=np.int64)
        j = np.floor(gamma * ns).astype(np.int64)[:, None] + 1 + np.arange(terms)[None, :]
        valid = j <= ns[:, None]
        jj = np.where(valid, j, 0)
        nn = np.broadcast_to(ns[:, None], jj.shape)
        logp = lf[nn] - lf[jj] - lf[np.maximum(nn - jj, 0)] + jj * lb + (nn - jj) * lq
        logp = np.where(valid, logp, -np.inf)
        top = logp.max(axis=1)
        finite = np.isfinite(top)
        tails = np.full(len(ns), -np.inf)
        tails[finite] = top[finite] + np.log(
            np.exp(logp[finite] - top[finite][:, None]).sum(axis=1)
        )
        i = int(np.argmax(tails))
        if tails[i] > best:
            best, best_n = float(tails[i]), int(ns[i])
        if math.isfinite(best) and -float(ns[-1]) * kl < best - _SCAN_MARGIN:
            break
    return (math.exp(best) if math.isfinite(best) else 0.0), best_n


def epsilon_prime(eps: float, beta: float) -> float:
    """Largest ε′ of the node choice for a total ε at sampling β: ε + ln(1 - β)."""
    return float(eps) + math.log1p(-float(beta))


def admissible_pairs(
    betas: Sequence[float], epsilons: Sequence[float]
) -> list[tuple[float, float, float]]:
    """Seed §6.2.1: every ``(β, ε, ε′)`` with ε′ = ε + ln(1 - β) >= 0, in input order (β
    outer). Raises ``ConfigError`` for a β outside (0, 1) or an ε <= 0."""
    pairs = []
    for beta in betas:
        for eps in epsilons:
            ep = epsilon_prime(check_epsilon(eps), check_beta(beta))
            if ep >= 0:
                pairs.append((float(beta), float(eps), ep))
    return pairs


def parameter_grid(
    betas: Sequence[float], epsilons: Sequence[float], ks: Sequence[int], n_rows: int
) -> list[dict]:
    """Seed §6.2.1: every (β, ε) with ε′ = ε + ln(1 - β) >= 0, and δ for every k.

    Returns
    -------
    list of dict
        ``beta``, ``epsilon``, ``epsilon_prime`` and ``delta_k<k>`` per k, in input order;
        combinations needing a negative ε′ are left out.
    """
    rows = []
    for beta, eps, ep in admissible_pairs(betas, epsilons):
        row = {"beta": beta, "epsilon": eps, "epsilon_prime": ep}
        for k in ks:
            # ε - ε′ = -ln(1 - β) whatever ε: one evaluation per (k, β)
            row[f"delta_k{k}"] = dps_delta(int(k), beta, -math.log1p(-beta), n_rows)[0]
        rows.append(row)
    return rows


def smallest_k(
    betas: Sequence[float],
    epsilons: Sequence[float],
    n_rows: int,
    delta_max: float,
    k_max: int = 10_000,
) -> int | None:
    """Smallest k whose δ is at most ``delta_max`` for every valid (β, ε) of the grid.

    δ never increases with k (the range of n shrinks), so a bisection over ``[1, k_max]``
    finds it; None if even ``k_max`` fails.
    """
    pairs = {
        (float(b), -math.log1p(-float(b)))
        for b in betas
        for e in epsilons
        if epsilon_prime(check_epsilon(e), check_beta(b)) >= 0
    }

    def ok(k: int) -> bool:
        return all(dps_delta(k, b, d, n_rows)[0] <= delta_max for b, d in pairs)

    if not ok(k_max):
        return None
    lo, hi = 1, k_max
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


@dataclass
class NodeScores:
    """What ε-safe LA knows about every node of the lattice of a sample.

    Attributes
    ----------
    nodes : ndarray of int64, shape (n_nodes, n_columns)
    prec : ndarray of float64, shape (n_nodes,)
        Normalised Prec.
    suppressed : ndarray of float64, shape (n_nodes,)
        Fraction of the sample in classes smaller than k.
    k_anonymous : ndarray of bool, shape (n_nodes,)
        Suppressed records within ``max_sup`` percent.
    n_rows : int
        Records in the sample.
    k : int
    """

    nodes: np.ndarray
    prec: np.ndarray
    suppressed: np.ndarray
    k_anonymous: np.ndarray
    n_rows: int
    k: int


def node_scores(enc: Encoded, k: int, max_sup: float) -> NodeScores:
    """Prec, suppression and k-anonymity of every node (``enc`` is the sample).

    ``k`` may exceed the sample's size (every record of such a node is suppressed).
    """
    k = check_k(k, max(enc.n_rows, int(k) if isinstance(k, int | np.integer) else 1))
    budget = suppression_budget(enc.n_rows, check_max_sup(max_sup))
    lattice = Lattice(enc.heights)
    sup = np.empty(lattice.size)
    for i, node in enumerate(lattice.nodes):
        _, sizes = node_classes(enc, node)
        sup[i] = sizes[sizes < k].sum()
    prec = LossModel(enc).prec_all(lattice.nodes)
    return NodeScores(lattice.nodes, prec, sup / enc.n_rows, sup <= budget, enc.n_rows, k)


def selection_probabilities(
    scores: NodeScores, factor: float, mode: str, eps_prime: float
) -> tuple[np.ndarray, float]:
    """The exponential mechanism's probability of every node, and the sensitivity used.

    Parameters
    ----------
    scores : NodeScores
    factor : float
        Penalty factor p >= 0.
    mode : {"suppression", "kanonymity"}
    eps_prime : float
    """
    require_choice(mode, PENALTY_MODES, "parameter 'mode'")
    if not factor >= 0:
        raise ConfigError(f"parameter 'penalty' must be >= 0, got {factor!r}")
    if mode == "suppression":
        penalty = factor * scores.suppressed
        sensitivity = factor * scores.k / scores.n_rows
    else:
        penalty = factor * (~scores.k_anonymous)
        sensitivity = float(factor)
    utility = -(scores.prec + penalty)
    if sensitivity == 0:  # no penalty: Prec ignores the data, any ε′ gives the same law
        sensitivity = 1.0 / scores.n_rows
    eps_prime = check_epsilon(eps_prime, "epsilon_prime")
    logw = eps_prime * utility / (2.0 * sensitivity)
    prob = np.exp(logw - logw.max())
    return prob / prob.sum(), sensitivity
