"""Longitudinal Data Anonymizer (LDA): alignment and clustering of (ICD, age) trajectories.

Seed 002 §IV.3. A trajectory is a sequence of (ICD node, age node) pairs ordered by age; a
pair of specific values holds two leaves of the DGHs. Two alignments of a trajectory X (which
may already be generalised, with losses ILM(X), ALM(X)) and a trajectory Y:

* :func:`baseline` (Algorithm 2): pairs matched on their position, the longer one's tail
  suppressed;
* :func:`ags` (Algorithm 3, A-GS): dynamic programming over generalise (diagonal), suppress
  y_j (left) and suppress x_h (up), weighted by ``w_icd + w_age = 1``; ties prefer
  generalisation, then suppressing y_j.

Both run against a whole batch of candidate Y at once (vectorised over the batch; the loop is
over the m x n cells). :func:`mdav` clusters trajectories into groups of at least k whose
members all publish the group's generalised trajectory: it starts from the most frequent
trajectory, takes the one costliest to align with it, and grows a cluster around that one by
adding the cheapest trajectory to align, k - 1 times (cost: ILM + ALM of the alignment).
Clustering costs O(N^2 m n') alignment cells for N trajectories, hence a cap on N.

Losses of a published dataset (Definitions 7-8): each original pair mapped to a published
pair loses ``LM(leaf, published node)``, a suppressed pair loses 1 per attribute; a
trajectory's loss is divided by its original length and the dataset's is the mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mimic_deid.codes.hierarchy import Hierarchy
from mimic_deid.core.errors import ConfigError, ReleaseCheckError
from mimic_deid.core.logs import Progress, get_logger

__all__ = [
    "ALIGNMENTS",
    "Alignment",
    "Trajectories",
    "LdaResult",
    "ags",
    "ags_align",
    "ags_matrices",
    "baseline",
    "baseline_align",
    "check_k_anonymous",
    "check_weights",
    "mdav",
]

log = get_logger(__name__)

DIAG, LEFT, UP = 0, 1, 2
ALIGNMENTS = ("baseline", "ags")


def check_weights(w_icd: float, w_age: float, param: str = "codes/lda/weights") -> None:
    """Raise ``ConfigError`` unless both weights are >= 0 and sum to 1."""
    if w_icd < 0 or w_age < 0 or abs(w_icd + w_age - 1.0) > 1e-9:
        raise ConfigError(
            f"config parameter '{param}': w_icd and w_age must be >= 0 and sum to 1, got "
            f"{w_icd} + {w_age} = {w_icd + w_age}"
        )


@dataclass(frozen=True)
class Trajectories:
    """Padded trajectories of DGH nodes.

    Attributes
    ----------
    icd, age : ndarray of int64, shape (N, L)
        Nodes of each pair, -1 beyond a trajectory's length.
    length : ndarray of int64, shape (N,)
    """

    icd: np.ndarray
    age: np.ndarray
    length: np.ndarray

    @classmethod
    def from_pairs(cls, record: np.ndarray, icd: np.ndarray, age: np.ndarray, n: int):
        """From one row per pair (record index, ICD node, age node), ordered by age then ICD."""
        order = np.lexsort((icd, age, record))
        record, icd, age = record[order], icd[order], age[order]
        length = np.bincount(record, minlength=n).astype(np.int64)
        width = int(length.max()) if n else 0
        pos = np.arange(record.size) - np.repeat(np.cumsum(length) - length, length)
        icd_m = np.full((n, width), -1, dtype=np.int64)
        age_m = np.full((n, width), -1, dtype=np.int64)
        icd_m[record, pos], age_m[record, pos] = icd, age
        return cls(icd_m, age_m, length)

    def __len__(self) -> int:
        return self.length.size


@dataclass
class Alignment:
    """One aligned trajectory and how the inputs map onto it.

    Attributes
    ----------
    icd, age : ndarray of int64, shape (r,)
        The anonymised trajectory.
    ilm, alm : float
        Weighted ILM and ALM accumulated (including the losses carried by X).
    x_to, y_to : ndarray of int64
        Position in the result of each pair of X and Y (-1: suppressed).
    """

    icd: np.ndarray
    age: np.ndarray
    ilm: float
    alm: float
    x_to: np.ndarray
    y_to: np.ndarray


def _supp(h: Hierarchy, node: np.ndarray) -> np.ndarray:
    return np.where(node >= 0, 1.0 - h.loss(np.maximum(node, 0)), 0.0)


def _gen(h: Hierarchy, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a0, b0 = np.maximum(a, 0), np.maximum(b, 0)
    lca = h.lca(a0, b0)
    return lca, 2 * h.loss(lca) - h.loss(a0) - h.loss(b0)


def ags_matrices(
    x_icd,
    x_age,
    ys: Trajectories,
    hicd: Hierarchy,
    hage: Hierarchy,
    w_icd,
    w_age,
    ilm0=0.0,
    alm0=0.0,
):
    """The i, a and r matrices of A-GS for X against every Y of a batch (Algorithm 3, 1-25).

    Parameters
    ----------
    x_icd, x_age : array_like of int, shape (m,)
        X's ICD and age nodes (X may be generalised).
    ys : Trajectories
        The batch of N candidates, padded to n pairs.
    hicd, hage : Hierarchy
        The DGHs.
    w_icd, w_age : float
        Attribute weights (sum 1).
    ilm0, alm0 : float
        ILM(X) and ALM(X) carried by X (0 for an original trajectory).

    Returns
    -------
    i, a : ndarray of float64, shape (N, m + 1, n + 1)
        Weighted ILM and ALM of aligning the first h pairs of X with the first j of Y.
    r : ndarray of int8, shape (N, m + 1, n + 1)
        Operation of each cell: 0 generalise, 1 suppress y_j, 2 suppress x_h.
    """
    x_icd, x_age = np.asarray(x_icd, np.int64), np.asarray(x_age, np.int64)
    m, (N, n) = x_icd.size, ys.icd.shape
    i = np.zeros((N, m + 1, n + 1))
    a = np.zeros((N, m + 1, n + 1))
    r = np.zeros((N, m + 1, n + 1), dtype=np.int8)
    i[:, 0, 0], a[:, 0, 0] = ilm0, alm0
    i[:, 1:, 0] = ilm0 + np.cumsum(_supp(hicd, x_icd) * w_icd)[None, :]
    a[:, 1:, 0] = alm0 + np.cumsum(_supp(hage, x_age) * w_age)[None, :]
    r[:, 1:, 0] = UP
    sy_i, sy_a = _supp(hicd, ys.icd) * w_icd, _supp(hage, ys.age) * w_age  # (N, n)
    i[:, 0, 1:] = ilm0 + np.cumsum(sy_i, axis=1)
    a[:, 0, 1:] = alm0 + np.cumsum(sy_a, axis=1)
    r[:, 0, 1:] = LEFT
    sx_i, sx_a = _supp(hicd, x_icd) * w_icd, _supp(hage, x_age) * w_age
    for h in range(1, m + 1):
        _, gi = _gen(hicd, x_icd[h - 1], ys.icd)
        _, ga = _gen(hage, x_age[h - 1], ys.age)
        gi, ga = gi * w_icd, ga * w_age
        for j in range(1, n + 1):
            ci = np.stack(
                [
                    i[:, h - 1, j - 1] + gi[:, j - 1],
                    i[:, h, j - 1] + sy_i[:, j - 1],
                    i[:, h - 1, j] + sx_i[h - 1],
                ]
            )
            ca = np.stack(
                [
                    a[:, h - 1, j - 1] + ga[:, j - 1],
                    a[:, h, j - 1] + sy_a[:, j - 1],
                    a[:, h - 1, j] + sx_a[h - 1],
                ]
            )
            total = ci + ca
            # argmin with a tolerance so that ties prefer generalisation, then suppressing y_j
            best = total.min(axis=0)
            w = np.argmax(total <= best + 1e-12, axis=0)
            cols = np.arange(N)
            i[:, h, j], a[:, h, j], r[:, h, j] = ci[w, cols], ca[w, cols], w
    return i, a, r


def ags(x_icd, x_age, ys: Trajectories, hicd, hage, w_icd, w_age, ilm0=0.0, alm0=0.0):
    """A-GS cost of X against every Y of the batch: weighted (ILM, ALM), each shape (N,).

    Arguments as :func:`ags_matrices`; the costs are read at each Y's own length.
    """
    i, a, _ = ags_matrices(x_icd, x_age, ys, hicd, hage, w_icd, w_age, ilm0, alm0)
    rows = np.arange(len(ys))
    return i[rows, len(x_icd), ys.length], a[rows, len(x_icd), ys.length]


def ags_align(
    x_icd, x_age, y_icd, y_age, hicd, hage, w_icd, w_age, ilm0=0.0, alm0=0.0
) -> Alignment:
    """A-GS of one pair of trajectories with the traceback (Algorithm 3, steps 26-37).

    Returns the :class:`Alignment`: the anonymised trajectory (LCAs of the matched pairs, in
    order), its weighted ILM and ALM, and where each pair of X and Y went.
    """
    y = Trajectories(np.asarray(y_icd)[None, :], np.asarray(y_age)[None, :], np.array([len(y_icd)]))
    i, a, r = ags_matrices(x_icd, x_age, y, hicd, hage, w_icd, w_age, ilm0, alm0)
    h, j = len(x_icd), len(y_icd)
    ilm, alm = float(i[0, h, j]), float(a[0, h, j])
    matched = []
    while h >= 1 or j >= 1:
        op = r[0, h, j]
        if op == DIAG:
            matched.append((h - 1, j - 1))
            h, j = h - 1, j - 1
        elif op == LEFT:
            j -= 1
        else:
            h -= 1
    return _assemble(matched[::-1], x_icd, x_age, y_icd, y_age, hicd, hage, ilm, alm)


def _assemble(matched, x_icd, x_age, y_icd, y_age, hicd, hage, ilm, alm) -> Alignment:
    xs = np.array([p[0] for p in matched], dtype=np.int64)
    ys = np.array([p[1] for p in matched], dtype=np.int64)
    x_icd, x_age = np.asarray(x_icd, np.int64), np.asarray(x_age, np.int64)
    y_icd, y_age = np.asarray(y_icd, np.int64), np.asarray(y_age, np.int64)
    icd = hicd.lca(x_icd[xs], y_icd[ys]) if xs.size else np.zeros(0, np.int64)
    age = hage.lca(x_age[xs], y_age[ys]) if xs.size else np.zeros(0, np.int64)
    x_to = np.full(x_icd.size, -1, dtype=np.int64)
    y_to = np.full(y_icd.size, -1, dtype=np.int64)
    x_to[xs], y_to[ys] = np.arange(xs.size), np.arange(xs.size)
    return Alignment(np.asarray(icd), np.asarray(age), ilm, alm, x_to, y_to)


def baseline(x_icd, x_age, ys: Trajectories, hicd, hage, w_icd, w_age, ilm0=0.0, alm0=0.0):
    """Baseline cost (Algorithm 2) of X against every Y of the batch: (ILM, ALM), shape (N,).

    Weighted like A-GS so that the two are comparable (weights 1 give Algorithm 2 as printed).
    """
    x_icd, x_age = np.asarray(x_icd, np.int64), np.asarray(x_age, np.int64)
    m, (N, n) = x_icd.size, ys.icd.shape
    L = max(m, n)
    xi = np.full(L, -1, np.int64)
    xa = np.full(L, -1, np.int64)
    xi[:m], xa[:m] = x_icd, x_age
    yi = np.full((N, L), -1, np.int64)
    ya = np.full((N, L), -1, np.int64)
    yi[:, :n], ya[:, :n] = ys.icd, ys.age
    both = (xi[None, :] >= 0) & (yi >= 0)
    _, gi = _gen(hicd, xi[None, :], yi)
    _, ga = _gen(hage, xa[None, :], ya)
    ilm = np.where(both, gi, _supp(hicd, np.broadcast_to(xi, yi.shape)) + _supp(hicd, yi))
    alm = np.where(both, ga, _supp(hage, np.broadcast_to(xa, ya.shape)) + _supp(hage, ya))
    return ilm0 + w_icd * ilm.sum(axis=1), alm0 + w_age * alm.sum(axis=1)


def baseline_align(x_icd, x_age, y_icd, y_age, hicd, hage, w_icd, w_age, ilm0=0.0, alm0=0.0):
    """Baseline of one pair with its result trajectory (Algorithm 2)."""
    y = Trajectories(np.asarray(y_icd)[None, :], np.asarray(y_age)[None, :], np.array([len(y_icd)]))
    ilm, alm = baseline(x_icd, x_age, y, hicd, hage, w_icd, w_age, ilm0, alm0)
    s = min(len(x_icd), len(y_icd))
    matched = [(t, t) for t in range(s)]
    return _assemble(matched, x_icd, x_age, y_icd, y_age, hicd, hage, float(ilm[0]), float(alm[0]))


_BATCH = {"ags": ags, "baseline": baseline}
_PAIR = {"ags": ags_align, "baseline": baseline_align}


@dataclass(frozen=True)
class LdaResult:
    """A k-anonymised trajectory dataset.

    Attributes
    ----------
    cluster : ndarray of int64, shape (N,)
        Cluster of each trajectory.
    published : list of (ndarray, ndarray)
        Per cluster, the (ICD nodes, age nodes) every member publishes.
    pair_to : ndarray of int64, shape (N, L)
        Position in its cluster's published trajectory of each original pair (-1 suppressed
        or padding).
    ilm, alm : float
        ILM(D^) and ALM(D^) (Definition 8, unweighted).
    """

    cluster: np.ndarray
    published: list
    pair_to: np.ndarray
    ilm: float
    alm: float


def _take(t: Trajectories, idx: np.ndarray) -> Trajectories:
    width = int(t.length[idx].max()) if idx.size else 0
    return Trajectories(t.icd[idx, :width], t.age[idx, :width], t.length[idx])


def mdav(
    traj: Trajectories,
    k: int,
    hicd: Hierarchy,
    hage: Hierarchy,
    w_icd: float = 0.5,
    w_age: float = 0.5,
    alignment: str = "ags",
) -> LdaResult:
    """Cluster ``traj`` into groups of >= k sharing one generalised trajectory (seed §IV.3.2).

    Parameters
    ----------
    traj : Trajectories
        N trajectories of DGH leaves.
    k : int
        Minimum cluster size (2 <= k <= N; k = 1 publishes the data unchanged).
    hicd, hage : Hierarchy
    w_icd, w_age : float
        Attribute weights of the alignment cost (sum 1).
    alignment : {"ags", "baseline"}

    Returns
    -------
    LdaResult
    """
    if alignment not in _BATCH:
        raise ConfigError(
            f"LDA: unknown alignment {alignment!r}; expected one of {list(ALIGNMENTS)}"
        )
    check_weights(w_icd, w_age)
    N = len(traj)
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ConfigError(f"LDA: k must be an integer >= 1, got {k!r}")
    if k > N:
        raise ConfigError(f"LDA: k = {k} exceeds the number of trajectories ({N})")
    batch, pair = _BATCH[alignment], _PAIR[alignment]
    width = traj.icd.shape[1]
    cluster = np.full(N, -1, dtype=np.int64)
    pair_to = np.full((N, width), -1, dtype=np.int64)
    published = []
    remaining = np.arange(N)
    # Frequency of identical trajectories (ties: the first in input order).
    _, inverse, freq = np.unique(
        np.concatenate([traj.icd, traj.age], axis=1),
        axis=0,
        return_inverse=True,
        return_counts=True,
    )
    freq_of = freq[inverse.ravel()]
    progress = Progress(f"LDA {alignment} k={k}", N, log, unit="trajectories")
    while remaining.size:
        seed_rec, size = _cluster_seed(traj, remaining, k, freq_of, batch, hicd, hage, w_icd, w_age)
        members = [seed_rec]
        remaining = remaining[remaining != seed_rec]
        n0 = traj.length[seed_rec]
        rep_i, rep_a = traj.icd[seed_rec, :n0], traj.age[seed_rec, :n0]
        ilm0 = alm0 = 0.0
        maps = {seed_rec: np.arange(n0)}
        while len(members) < size:
            cand = _take(traj, remaining)
            ci, ca = batch(rep_i, rep_a, cand, hicd, hage, w_icd, w_age, ilm0, alm0)
            nxt = remaining[int(np.argmin(ci + ca))]
            ny = traj.length[nxt]
            res = pair(
                rep_i,
                rep_a,
                traj.icd[nxt, :ny],
                traj.age[nxt, :ny],
                hicd,
                hage,
                w_icd,
                w_age,
                ilm0,
                alm0,
            )
            for mem in maps:
                old = maps[mem]
                maps[mem] = np.where(old >= 0, res.x_to[np.maximum(old, 0)], -1)
            maps[nxt] = res.y_to
            rep_i, rep_a, ilm0, alm0 = res.icd, res.age, res.ilm, res.alm
            members.append(nxt)
            remaining = remaining[remaining != nxt]
        c = len(published)
        published.append((np.asarray(rep_i, np.int64), np.asarray(rep_a, np.int64)))
        for mem, mp in maps.items():
            cluster[mem] = c
            pair_to[mem, : mp.size] = mp
        progress.update(len(members))
    progress.close()
    ilm, alm = dataset_losses(traj, cluster, published, pair_to, hicd, hage)
    return LdaResult(cluster, published, pair_to, ilm, alm)


def _cluster_seed(traj, remaining, k, freq_of, batch, hicd, hage, w_icd, w_age):
    """The next cluster's seed record and size: with at least ``2k`` records left, the one
    farthest from the most frequent trajectory, for ``k`` members; else the first, for all."""
    if remaining.size < 2 * k:
        return remaining[0], remaining.size
    mode = remaining[np.argmax(freq_of[remaining])]
    icd, age = traj.icd[mode, : traj.length[mode]], traj.age[mode, : traj.length[mode]]
    ci, ca = batch(icd, age, _take(traj, remaining), hicd, hage, w_icd, w_age)
    return remaining[int(np.argmax(ci + ca))], k


def dataset_losses(traj, cluster, published, pair_to, hicd, hage) -> tuple[float, float]:
    """ILM(D^) and ALM(D^) of Definition 8 (unweighted), each in [0, 1]."""
    valid = traj.icd >= 0
    pub_i = _published_nodes(published, 0)
    pub_a = _published_nodes(published, 1)
    offset = np.cumsum([0] + [p[0].size for p in published])[:-1]
    flat = np.where(pair_to >= 0, offset[cluster][:, None] + np.maximum(pair_to, 0), -1)
    li = np.where(flat >= 0, hicd.lm(np.maximum(traj.icd, 0), pub_i[np.maximum(flat, 0)]), 1.0)
    la = np.where(flat >= 0, hage.lm(np.maximum(traj.age, 0), pub_a[np.maximum(flat, 0)]), 1.0)
    n = np.maximum(traj.length, 1)
    ilm = (np.where(valid, li, 0).sum(axis=1) / n).mean() if len(traj) else 0.0
    alm = (np.where(valid, la, 0).sum(axis=1) / n).mean() if len(traj) else 0.0
    return float(ilm), float(alm)


def _published_nodes(published, which: int) -> np.ndarray:
    parts = [p[which] for p in published]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def check_k_anonymous(result: LdaResult, k: int) -> int:
    """Raise ``ReleaseCheckError`` unless every published trajectory appears >= k times.

    Returns the smallest number of records sharing one published trajectory.
    """
    keys = np.array(
        [
            "|".join(f"{i}:{a}" for i, a in zip(p[0].tolist(), p[1].tolist(), strict=True))
            for p in result.published
        ],
        dtype=object,
    )
    per_record = keys[result.cluster] if keys.size else np.zeros(0, dtype=object)
    _, counts = np.unique(per_record.astype(str), return_counts=True)
    smallest = int(counts.min()) if counts.size else 0
    if counts.size and smallest < k:
        raise ReleaseCheckError(
            f"LDA: a published trajectory is shared by {smallest} records, fewer than k = {k}"
        )
    return smallest
