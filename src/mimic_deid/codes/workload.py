"""The AvgRE query workload of seed 002 §IV.4.1 and its estimate on a published LDA dataset.

A query counts the trajectories that hold every (ICD, age) pair of a combination. The
workload is every combination of original pairs held together by at least ``support`` of the
trajectories (the seed's ">= 1 % of the original trajectories"), found level by level as in
Apriori: a combination can only be frequent if the one without its last pair is, so the
candidates of size s extend the frequent combinations of size s - 1 by one frequent pair. The
seed bounds neither the size nor the number of queries; the size is bounded here by
``max_pairs`` (``codes.lda.max_query_pairs``) because the estimate costs 2^s terms per query,
and the number of frequent combinations one pair larger than the bound is reported so that a
cut is visible.

Estimate (the seed's uniform model): a published pair (g_icd, g_age) stands for any of the
leaf pairs below it with equal probability ``p_g = 1 / (leaves(g_icd) * leaves(g_age))``
(a leaf counts one), independently of the other published pairs. One published pair is one
leaf pair, so the events "g is q" are disjoint over the pairs q of a query Q and, by
inclusion-exclusion over the subsets T of Q, the probability that a published trajectory
holds all of Q is::

    P(Q) = sum over T subset of Q of (-1)^|T| * prod over its pairs g of (1 - sum_{q in T} p_g [g covers q])

which is exact under the model (for one pair: 1 - prod (1 - p_g)). ``e(Q)`` sums P(Q) over
the published trajectories (each cluster's once per member), ``RE(Q) = |a(Q) - e(Q)| / a(Q)``
and AvgRE is the mean over all queries of the workload, every query weighing the same.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from mimic_deid.codes.hierarchy import Hierarchy
from mimic_deid.core.errors import ConfigError

__all__ = ["QueryWorkload", "avg_relative_error", "query_estimates", "query_workload"]

CHUNK_BYTES = 32 << 20  # memory of one chunk of (queries x trajectories or published pairs)


@dataclass(frozen=True)
class QueryWorkload:
    """COUNT queries over combinations of (ICD, age) pairs and their true answers.

    Attributes
    ----------
    icd, age : ndarray of int64, shape (P,)
        The distinct pairs (DGH leaves) that appear in a query.
    queries : ndarray of int64, shape (Q, max_pairs)
        Per query, indices into ``icd``/``age`` in increasing order, -1 beyond its size.
    size : ndarray of int64, shape (Q,)
        Pairs per query.
    actual : ndarray of int64, shape (Q,)
        a(Q): trajectories of the original data holding every pair of the query.
    trajectories : int
        N, the number of original trajectories.
    support : float
        Share of the trajectories a query must reach.
    max_pairs : int
        Bound on the query size.
    beyond_bound : int
        Frequent combinations of ``max_pairs + 1`` pairs left out by the bound (0: none).
    """

    icd: np.ndarray
    age: np.ndarray
    queries: np.ndarray
    size: np.ndarray
    actual: np.ndarray
    trajectories: int
    support: float
    max_pairs: int
    beyond_bound: int

    def __len__(self) -> int:
        return self.size.size

    def sizes(self) -> dict[str, int]:
        """Number of queries per size, ``{"1": ..., "2": ...}``."""
        values, counts = np.unique(self.size, return_counts=True)
        return {str(int(v)): int(c) for v, c in zip(values, counts, strict=True)}


def _presence(traj) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (ICD, age) pairs and a bool matrix (N, P) of the trajectories holding each."""
    valid = traj.icd >= 0
    n = len(traj)
    if not valid.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((n, 0), bool)
    base = int(traj.age.max()) + 1
    rec = np.repeat(np.arange(n), valid.sum(axis=1))
    keys, col = np.unique(traj.icd[valid] * base + traj.age[valid], return_inverse=True)
    present = np.zeros((n, keys.size), dtype=bool)
    present[rec, col.ravel()] = True
    return keys // base, keys % base, present


def query_workload(traj, support: float = 0.01, max_pairs: int = 4) -> QueryWorkload:
    """The queries of the original trajectories ``traj`` with support >= ``support``.

    Parameters
    ----------
    traj : Trajectories
        N original trajectories of DGH leaves.
    support : float
        A combination is a query when at least ``support * N`` trajectories hold all its pairs
        (0 < support <= 1).
    max_pairs : int
        Largest number of pairs in one query (>= 1).

    Returns
    -------
    QueryWorkload
        Queries ordered by size, then by their pair indices.
    """
    if not 0 < support <= 1:
        raise ConfigError(
            f"config parameter 'codes/lda/support': expected a share in (0, 1], got {support!r}"
        )
    if isinstance(max_pairs, bool) or not isinstance(max_pairs, int | np.integer) or max_pairs < 1:
        raise ConfigError(
            "config parameter 'codes/lda/max_query_pairs': expected an integer >= 1, got "
            f"{max_pairs!r}"
        )
    n = len(traj)
    icd, age, present = _presence(traj)
    need = support * n
    counts = present.sum(axis=0)
    frequent = np.flatnonzero(counts >= need)
    present = present[:, frequent]
    icd, age, counts = icd[frequent], age[frequent], counts[frequent]
    dense = present.astype(np.float64)  # (N, P) for the co-occurrence products
    levels = [(np.arange(frequent.size)[:, None], counts.astype(np.int64))]
    beyond = 0
    while levels[-1][0].shape[0] and levels[-1][0].shape[1] <= max_pairs:
        combos = levels[-1][0]
        rows = max(1, CHUNK_BYTES // (8 * max(n, frequent.size, 1)))
        found, found_counts = [], []
        for lo in range(0, combos.shape[0], rows):
            part = combos[lo : lo + rows]
            holds = present[:, part].all(axis=2).T.astype(np.float64)  # (c, N)
            together = np.rint(holds @ dense).astype(np.int64)  # (c, P): with each extra pair
            extend = np.arange(frequent.size)[None, :] > part[:, -1:]
            c, p = np.nonzero(extend & (together >= need))
            found.append(np.concatenate([part[c], p[:, None]], axis=1))
            found_counts.append(together[c, p])
        nxt = np.concatenate(found) if found else np.zeros((0, combos.shape[1] + 1), np.int64)
        if combos.shape[1] == max_pairs:
            beyond = int(nxt.shape[0])
            break
        levels.append((nxt, np.concatenate(found_counts) if found_counts else np.zeros(0)))
    queries = np.full((sum(q.shape[0] for q, _ in levels), max_pairs), -1, dtype=np.int64)
    size = np.concatenate([np.full(q.shape[0], q.shape[1], np.int64) for q, _ in levels])
    start = 0
    for q, _ in levels:
        queries[start : start + q.shape[0], : q.shape[1]] = q
        start += q.shape[0]
    actual = np.concatenate([a for _, a in levels]).astype(np.int64)
    return QueryWorkload(icd, age, queries, size, actual, n, float(support), int(max_pairs), beyond)


def query_estimates(
    workload: QueryWorkload, result, hicd: Hierarchy, hage: Hierarchy
) -> np.ndarray:
    """e(Q) of every query on the published dataset ``result`` (an ``LdaResult``), shape (Q,).

    Vectorised over chunks of queries and all published pairs (memory about
    ``CHUNK_BYTES`` per chunk); clusters are reduced with ``np.multiply.reduceat`` (their
    published pairs are contiguous).
    """
    sizes = np.array([p[0].size for p in result.published], dtype=np.int64)
    members = np.bincount(result.cluster, minlength=sizes.size).astype(np.float64)
    pub_i = np.concatenate([p[0] for p in result.published] or [np.zeros(0, np.int64)])
    pub_a = np.concatenate([p[1] for p in result.published] or [np.zeros(0, np.int64)])
    out = np.zeros(len(workload))
    nonempty = sizes > 0
    if not pub_i.size or not len(workload):
        return out
    starts = (np.cumsum(sizes) - sizes)[nonempty]
    weight = members[nonempty]
    p_pub = 1.0 / (np.maximum(hicd.leaves[pub_i], 1) * np.maximum(hage.leaves[pub_a], 1))
    height = max(hicd.ancestors.shape[1], hage.ancestors.shape[1])
    for s in np.unique(workload.size):
        idx = np.flatnonzero(workload.size == s)
        subsets = [t for r in range(1, s + 1) for t in itertools.combinations(range(s), r)]
        rows = max(1, CHUNK_BYTES // (8 * (height + 2) * s * pub_i.size))
        for lo in range(0, idx.size, rows):
            q = workload.queries[idx[lo : lo + rows], :s]
            # chance that published pair g is the query's t-th pair, shape (c, s, G)
            cover = hicd.covers(pub_i, workload.icd[q][..., None]) & hage.covers(
                pub_a, workload.age[q][..., None]
            )
            chance = np.where(cover, p_pub, 0.0)
            prob = np.ones((q.shape[0], starts.size))
            for t in subsets:
                hit = chance[:, list(t), :].sum(axis=1)  # (c, G)
                none = np.multiply.reduceat(np.clip(1.0 - hit, 0.0, 1.0), starts, axis=1)
                prob += (-1.0) ** len(t) * none
            out[idx[lo : lo + rows]] = np.clip(prob, 0.0, 1.0) @ weight
    return out


def avg_relative_error(
    workload: QueryWorkload, result, hicd: Hierarchy, hage: Hierarchy
) -> dict[str, float]:
    """AvgRE of ``workload`` on the published dataset ``result`` (seed §IV.4.1).

    Returns
    -------
    dict
        ``avg_re``: mean RE over all queries (NaN for an empty workload); ``avg_re_<s>``: the
        mean over the queries of s pairs, for each size present.
    """
    if not len(workload):
        return {"avg_re": float("nan")}
    re = np.abs(workload.actual - query_estimates(workload, result, hicd, hage))
    re = re / workload.actual
    out = {"avg_re": float(re.mean())}
    for s in np.unique(workload.size):
        out[f"avg_re_{int(s)}"] = float(re[workload.size == s].mean())
    return out
