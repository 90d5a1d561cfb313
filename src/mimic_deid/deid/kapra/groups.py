"""KAPRA and PC-KAPRA on one variable of a class: the (k,P) grouping (seed 001 §2.2.2, §3).

A published table is (k,P)-anonymous when every *k-group* of series sharing one value envelope
has at least ``k`` members (k-requirement) and, within a k-group, every published pattern word
is shared by at least ``P`` members (P-requirement), so a pattern links to a series with
probability at most ``1 / P``. Both algorithms run in three phases (seed §3.3, Fig. 3.5):

1. **Pattern groups.**
   - *KAPRA* (seed §3.2, after Shou et al.): a tree of nodes, each holding series with the same
     SAX word at the node's alphabet size ("level"). The root holds every series at level 1;
     a node of ``>= 2P`` members below ``max_level`` is split by the words one level up; a
     node of fewer than ``P`` members is a *bad leaf*, any other node that is not split is a
     *good leaf*. Members of bad leaves are recycled from ``max_level`` down to level 1: at each
     level those sharing a word with at least ``P - 1`` others form a good leaf. At level 1 all
     words agree, so fewer than ``P`` series remain. The seed suppresses them; here nothing is
     suppressed (every series of a duration class must be released): they form a group with
     the ``P - r`` series nearest to their mean taken from the good leaf whose envelope they
     grow least among those that keep ``>= P`` after giving them up; if no leaf can spare
     them, they join the good leaf whose envelope grows least. Either group publishes its
     word at the highest level at which all its members share one (level 1 at worst), so a
     few odd series (e.g. a flat PAA word) generalise ``P`` words, not a whole large leaf.
   - *PC-KAPRA* (seed §3.1.3): k-means on the SAX words at one fixed level with MINDIST as the
     distance (ties: the first centroid). The initial centroids are the words of ``n // P``
     series drawn at random without replacement; empty clusters are removed after every
     assignment, and the iterations stop when no word changes cluster (at most
     :data:`KMEANS_MAX_ITER`). A centroid is the symbol-wise integer mean of its members'
     codes rounded half up (``ACAD`` and ``DADA`` give ``CBCC``). After
     convergence, the members of clusters smaller than ``P`` move to the nearest cluster of at
     least ``P`` (all series form one cluster if there is none); every member then publishes
     its final cluster's centroid word.
2. **Deconstruction** (top-down greedy search, seed §3.3): a pattern group of ``>= 2P``
   members is split in two around the two members furthest apart (largest IVL of the pair);
   every other member joins the seed with which its pair IVL is smaller; a side short of ``P``
   takes the members of the other side closest to its seed. Repeated until every *P-group* has
   between ``P`` and ``2P - 1`` members.
3. **Group formation** (Shou et al.'s Algorithm 3, seed §3.3): while the P-groups left hold
   at least ``k`` series, the P-group of smallest IVL absorbs, one at a time, the P-group
   whose union with it has the smallest IVL until it has ``k`` members and becomes a k-group;
   each P-group left over joins the k-group whose union with it has the smallest IVL.

The envelope of a k-group is the per-hour minimum and maximum of its members; the *point
release* of a series is the midpoint of its k-group's envelope, so every member of a k-group
publishes the same series.

Everything is vectorised over series; the loops run over tree levels, k-means iterations,
splits and merges of groups, never over pairs of series. KAPRA is deterministic; PC-KAPRA
draws its initial centroids from the generator it is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mimic_deid.core.errors import ConfigError, InputDataError, require_int
from mimic_deid.deid.sax import (
    MAX_LEVEL,
    MIN_LEVEL,
    group_envelopes,
    ivl,
    lookup_table,
    paa,
    sax_codes,
    znormalise,
)

__all__ = [
    "ALGORITHMS",
    "KMEANS_MAX_ITER",
    "KPGrouping",
    "diverse_k_groups",
    "form_k_groups",
    "integer_centroids",
    "kapra_pattern_groups",
    "kp_anonymise",
    "pc_kapra_pattern_groups",
    "split_p_groups",
]

#: Cap on PC-KAPRA's k-means iterations (it converges in a few).
KMEANS_MAX_ITER = 100
#: Elements of one block of a pairwise computation (bounds memory for large classes).
BLOCK_ELEMENTS = 4_000_000
ALGORITHMS = ("kapra", "pc-kapra")


@dataclass(frozen=True)
class KPGrouping:
    """A (k,P)-anonymous grouping of one variable of one duration class.

    Attributes
    ----------
    k_group : ndarray of int64, shape (n,)
        k-group of each series, ``0 .. g-1``.
    p_group : ndarray of int64, shape (n,)
        P-group of each series (unique within the class).
    codes : ndarray of int64, shape (n, m)
        Published SAX word of each series (0-based symbols).
    levels : ndarray of int64, shape (n,)
        Alphabet size of each published word.
    orig_codes : ndarray of int64, shape (n, m)
        Original words at the configured level (KAPRA: ``max_level``).
    lo, hi : ndarray of float64, shape (n, L)
        Envelope of each series' k-group.
    iterations : int
        k-means iterations (PC-KAPRA); 0 for KAPRA.
    """

    k_group: np.ndarray
    p_group: np.ndarray
    codes: np.ndarray
    levels: np.ndarray
    orig_codes: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    iterations: int

    @property
    def release(self) -> np.ndarray:
        """Point release, shape (n, L): the midpoint of each series' k-group envelope."""
        return 0.5 * (self.lo + self.hi)


def _dense(labels: np.ndarray) -> np.ndarray:
    """Relabel to ``0 .. g-1`` in order of first appearance of the sorted labels."""
    return np.unique(labels, return_inverse=True)[1].astype(np.int64)


def _row_groups(keys: np.ndarray) -> np.ndarray:
    """Dense ids of identical rows of ``keys`` (n, c)."""
    return np.unique(keys, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


def kapra_pattern_groups(
    x: np.ndarray, P: int, paa_size: int, max_level: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """KAPRA's pattern groups: tree splitting by SAX level and recycling (module docstring, 1).

    Parameters
    ----------
    x : ndarray of float64, shape (n, L)
        Complete series, ``n >= P``.
    P : int
    paa_size : int
    max_level : int
        Highest alphabet size of the tree (2 .. 26).

    Returns
    -------
    groups : ndarray of int64, shape (n,)
        Pattern group (good leaf) of each series; every group has ``>= P`` members sharing one
        word.
    codes : ndarray of int64, shape (n, m)
        Each series' word at its group's level.
    levels : ndarray of int64, shape (n,)
    orig_codes : ndarray of int64, shape (n, m)
        Words at ``max_level``.
    """
    n = x.shape[0]
    z = znormalise(paa(x, paa_size))
    by_level = {lv: sax_codes(z, lv) for lv in range(1, max_level + 1)}
    leaf = np.full(n, -1, dtype=np.int64)
    level = np.zeros(n, dtype=np.int64)
    bad = np.zeros(n, dtype=bool)
    next_leaf = 0
    active = np.arange(n)
    node = np.zeros(n, dtype=np.int64)  # node of each active series
    for lv in range(1, max_level + 1):
        if active.size == 0:
            break
        sizes = np.bincount(node)[node]
        small = sizes < P
        stop = ~small & ((sizes < 2 * P) | (lv == max_level))
        bad[active[small]] = True
        if stop.any():
            ids = _dense(node[stop])
            leaf[active[stop]] = next_leaf + ids
            level[active[stop]] = lv
            next_leaf += int(ids.max()) + 1
        split = ~small & ~stop
        active = active[split]
        if active.size and lv < max_level:
            node = _row_groups(np.column_stack([node[split], by_level[lv + 1][active]]))
    # recycle the bad leaves from max_level down to level 1
    pool = np.flatnonzero(bad)
    for lv in range(max_level, 0, -1):
        if pool.size < P:
            break
        ids = _row_groups(by_level[lv][pool])
        sizes = np.bincount(ids)[ids]
        ok = sizes >= P
        if ok.any():
            dense = _dense(ids[ok])
            leaf[pool[ok]] = next_leaf + dense
            level[pool[ok]] = lv
            next_leaf += int(dense.max()) + 1
            pool = pool[~ok]
    if pool.size:  # fewer than P left: borrow from a good leaf that can spare, else join one
        lo, hi = group_envelopes(x[leaf >= 0], leaf[leaf >= 0])
        plo, phi = x[pool].min(axis=0), x[pool].max(axis=0)
        growth = ivl(np.minimum(lo, plo), np.maximum(hi, phi))
        need = P - pool.size
        spare = np.bincount(leaf[leaf >= 0]) >= P + need
        if spare.any():
            donor = int(np.flatnonzero(spare)[np.argmin(growth[spare])])
            members = np.flatnonzero(leaf == donor)
            near = np.linalg.norm(x[members] - x[pool].mean(axis=0), axis=1)
            group = np.concatenate([pool, members[np.argsort(near, kind="stable")[:need]]])
            leaf[group] = next_leaf
        else:
            joined = int(np.argmin(growth))
            group = np.concatenate([pool, np.flatnonzero(leaf == joined)])
            leaf[pool] = joined
        # the highest level at which the whole group shares one word (level 1 always does)
        level[group] = next(
            lv
            for lv in range(max_level, 0, -1)
            if (by_level[lv][group] == by_level[lv][group[0]]).all()
        )
    codes = np.empty_like(by_level[1])
    for lv in np.unique(level).tolist():
        rows = level == lv
        codes[rows] = by_level[lv][rows]
    return _dense(leaf), codes, level, by_level[max_level]


def integer_centroids(codes: np.ndarray, labels: np.ndarray, n_groups: int) -> np.ndarray:
    """Symbol-wise integer mean of the words of each group, rounded half up (seed §3.1.3).

    Parameters
    ----------
    codes : ndarray of int, shape (n, m)
        0-based codes (``a`` = 0; the seed's 1-based mapping rounds identically).
    labels : ndarray of int, shape (n,)
        Group of each word, ``0 .. n_groups-1``.
    n_groups : int

    Returns
    -------
    ndarray of int64, shape (n_groups, m)
        A group without members gets code 0.
    """
    codes = np.asarray(codes, dtype=np.float64)
    sums = np.zeros((n_groups, codes.shape[1]))
    np.add.at(sums, np.asarray(labels, dtype=np.int64), codes)
    counts = np.bincount(labels, minlength=n_groups)[:, None]
    return np.floor(sums / np.maximum(counts, 1) + 0.5).astype(np.int64)


def pc_kapra_pattern_groups(
    x: np.ndarray, P: int, paa_size: int, level: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """PC-KAPRA's pattern groups: k-means on SAX words with MINDIST (module docstring, 1).

    Parameters
    ----------
    x : ndarray of float64, shape (n, L)
        Complete series, ``n >= P``.
    P, paa_size, level : int
    rng : numpy.random.Generator
        Draws the initial centroids.

    Returns
    -------
    groups : ndarray of int64, shape (n,)
        Cluster of each series, every cluster ``>= P`` members.
    codes : ndarray of int64, shape (n, m)
        The centroid word of each series' cluster.
    orig_codes : ndarray of int64, shape (n, m)
        Original words at ``level``.
    iterations : int
        Assignment rounds run.
    """
    n = x.shape[0]
    orig = sax_codes(znormalise(paa(x, paa_size)), level)
    # MINDIST^2 up to the constant n/m (enough for argmin), on an integer grid so that the
    # matrix products below are exact whatever the summation order of the BLAS
    sq = np.round(lookup_table(level) ** 2 * 2.0**30)
    m = orig.shape[1]

    def nearest(codes: np.ndarray, centroids: np.ndarray) -> np.ndarray:
        """Index of the MINDIST-nearest centroid of every word (first on ties).

        ``sum_j sq[a_j, b_j]`` as one-hot(a) (rows, m*level) @ table (m*level, centroids),
        in blocks of rows.
        """
        table = sq[:, centroids.T].transpose(1, 0, 2).reshape(m * level, -1)
        rows = max(1, BLOCK_ELEMENTS // max(1, table.shape[1]))
        out = np.empty(len(codes), dtype=np.int64)
        offsets = np.arange(m) * level
        for start in range(0, len(codes), rows):
            block = codes[start : start + rows]
            onehot = np.zeros((len(block), m * level))
            np.put_along_axis(onehot, block + offsets, 1.0, axis=1)
            out[start : start + rows] = np.argmin(onehot @ table, axis=1)
        return out

    centroids = orig[np.sort(rng.choice(n, size=max(1, n // P), replace=False))]
    assign = None
    iterations = 0
    for it in range(1, KMEANS_MAX_ITER + 1):
        iterations = it
        new = nearest(orig, centroids)
        used, new = np.unique(new, return_inverse=True)  # drop empty clusters
        converged = assign is not None and np.array_equal(new, assign)
        assign = new.astype(np.int64)
        centroids = integer_centroids(orig, assign, used.size)
        if converged:
            break
    sizes = np.bincount(assign)
    big = np.flatnonzero(sizes >= P)
    if big.size == 0:
        assign = np.zeros(n, dtype=np.int64)
    else:
        small = sizes[assign] < P
        if small.any():
            assign[small] = big[nearest(orig[small], centroids[big])]
        assign = _dense(assign)
    centroids = integer_centroids(orig, assign, int(assign.max()) + 1)
    return assign, centroids[assign], orig, iterations


def _farthest_pair(xs: np.ndarray) -> tuple[int, int]:
    """Indices of the two rows of ``xs`` (s, L) furthest apart (first in row-major order).

    Squared Euclidean distances (IVL of a pair = distance / sqrt(L)) in blocks of rows, so
    memory stays bounded for large pattern groups.
    """
    sq = np.einsum("ij,ij->i", xs, xs)
    rows = max(1, BLOCK_ELEMENTS // len(xs))
    best, pair = -np.inf, (0, 0)
    for start in range(0, len(xs), rows):
        d2 = sq[start : start + rows, None] + sq[None, :] - 2.0 * (xs[start : start + rows] @ xs.T)
        flat = int(np.argmax(d2))
        if d2.flat[flat] > best:
            best = d2.flat[flat]
            pair = (start + flat // len(xs), flat % len(xs))
    return pair


def _split_two(xs: np.ndarray, P: int) -> np.ndarray:
    """One top-down greedy split of ``xs`` (s, L), ``s >= 2P``: True = joins the second seed."""
    u, v = _farthest_pair(xs)
    du = np.sum((xs - xs[u]) ** 2, axis=1)
    dv = np.sum((xs - xs[v]) ** 2, axis=1)
    side = dv < du
    side[u], side[v] = False, True
    for short, seed_d, other_d in ((False, du, dv), (True, dv, du)):
        need = P - int(np.sum(side == short))
        if need > 0:
            # members of the other side closest to the short side's seed (relative margin)
            cand = np.flatnonzero((side != short) & (np.arange(len(side)) != (v if short else u)))
            margin = seed_d[cand] - other_d[cand]
            side[cand[np.argsort(margin, kind="stable")[:need]]] = short
    return side


def split_p_groups(x: np.ndarray, groups: np.ndarray, P: int) -> np.ndarray:
    """Deconstruction: split every group of ``>= 2P`` members into P-groups of ``[P, 2P)``.

    Parameters
    ----------
    x : ndarray of float64, shape (n, L)
    groups : ndarray of int, shape (n,)
        Pattern groups, each ``>= P`` members.
    P : int

    Returns
    -------
    ndarray of int64, shape (n,)
        P-group of each series, ``0 .. g-1``; each a subset of one pattern group.
    """
    out = np.asarray(groups, dtype=np.int64).copy()
    next_id = int(out.max()) + 1 if out.size else 0
    sizes = np.bincount(out)
    stack = [np.flatnonzero(out == g) for g in np.flatnonzero(sizes >= 2 * P).tolist()]
    while stack:
        members = stack.pop()
        side = _split_two(x[members], P)
        for part in (members[~side], members[side]):
            if part.size >= 2 * P:
                stack.append(part)
        out[members[side]] = next_id
        next_id += 1
    return _dense(out)


def form_k_groups(x: np.ndarray, p_groups: np.ndarray, k: int) -> np.ndarray:
    """Shou et al.'s Algorithm 3: merge P-groups into k-groups by smallest IVL.

    Parameters
    ----------
    x : ndarray of float64, shape (n, L)
    p_groups : ndarray of int, shape (n,)
        P-groups ``0 .. g-1``.
    k : int
        ``n >= k``.

    Returns
    -------
    ndarray of int64, shape (n,)
        k-group of each series, ``0 .. h-1``, each ``>= k`` members and a union of P-groups.
    """
    lo, hi = group_envelopes(x, p_groups)
    size = np.bincount(p_groups).astype(np.int64)
    g = size.size
    alive = np.ones(g, dtype=bool)
    k_of_p = np.full(g, -1, dtype=np.int64)
    k_lo, k_hi = [], []
    own = ivl(lo, hi)
    while size[alive].sum() >= k:
        cur = int(np.flatnonzero(alive)[np.argmin(own[alive])])
        alive[cur] = False
        kid = len(k_lo)
        k_of_p[cur] = kid
        clo, chi, csize = lo[cur].copy(), hi[cur].copy(), int(size[cur])
        while csize < k:
            cand = np.flatnonzero(alive)
            loss = ivl(np.minimum(clo, lo[cand]), np.maximum(chi, hi[cand]))
            best = int(cand[np.argmin(loss)])
            alive[best] = False
            k_of_p[best] = kid
            np.minimum(clo, lo[best], out=clo)
            np.maximum(chi, hi[best], out=chi)
            csize += int(size[best])
        k_lo.append(clo)
        k_hi.append(chi)
    if k_lo:
        klo, khi = np.array(k_lo), np.array(k_hi)
        for p in np.flatnonzero(alive).tolist():
            loss = ivl(np.minimum(klo, lo[p]), np.maximum(khi, hi[p]))
            best = int(np.argmin(loss))
            k_of_p[p] = best
            np.minimum(klo[best], lo[p], out=klo[best])
            np.maximum(khi[best], hi[p], out=khi[best])
    return k_of_p[p_groups]


def _check_kp(k: Any, P: Any, paa_size: Any, level: Any, n: int, length: int, who: str):
    P = require_int(P, f"{who} parameter 'P'")
    k = require_int(k, f"{who} k (the feature k, fk)")
    if k < P:
        raise ConfigError(
            f"{who}: k (fk) = {k} is smaller than P = {P}; (k,P)-anonymity needs k >= P"
        )
    if isinstance(level, bool) or not isinstance(level, int | np.integer):
        raise ConfigError(f"{who} parameter 'level' must be an integer, got {level!r}")
    if not MIN_LEVEL <= level <= MAX_LEVEL:
        raise ConfigError(
            f"{who} parameter 'level' (SAX alphabet size) must be in [{MIN_LEVEL}, {MAX_LEVEL}] "
            f"(one letter a-z per symbol), got {level}"
        )
    paa_size = require_int(paa_size, f"{who} parameter 'paa'")
    if paa_size > length:
        raise ConfigError(
            f"{who} parameter 'paa' = {paa_size} exceeds the series length of the duration class "
            f"of {length} h; choose paa <= {length}"
        )
    if n < k:
        raise InputDataError(
            f"{who}: the duration class of {length} h has {n} series, fewer than k = {k}"
        )
    return int(k), int(P), int(paa_size), int(level)


def kp_anonymise(
    x: np.ndarray,
    k: int,
    P: int,
    paa_size: int,
    level: int,
    algorithm: str = "kapra",
    rng: np.random.Generator | None = None,
) -> KPGrouping:
    """(k,P)-anonymise the series of one variable of one duration class (module docstring).

    Parameters
    ----------
    x : ndarray of float64, shape (n, L)
        Complete series (no NaN), ``n >= k``.
    k, P : int
        ``k >= P >= 1``.
    paa_size : int
        PAA segments ``m``, ``1 <= m <= L``.
    level : int
        SAX alphabet size, 2 .. 26 (KAPRA: the tree's ``max_level``).
    algorithm : {"kapra", "pc-kapra"}
    rng : numpy.random.Generator
        Required by PC-KAPRA.

    Returns
    -------
    KPGrouping
    """
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise InputDataError(f"series x must be 2-D (n_series, length), got shape {x.shape}")
    if np.isnan(x).any() or np.isinf(x).any():
        raise InputDataError(f"{algorithm}: series x must be complete and finite (impute first)")
    n, length = x.shape
    k, P, paa_size, level = _check_kp(k, P, paa_size, level, n, length, algorithm)
    iterations = 0
    if algorithm == "kapra":
        groups, codes, levels, orig = kapra_pattern_groups(x, P, paa_size, level)
    else:
        if rng is None:
            raise ConfigError("pc-kapra needs a numpy Generator 'rng' for its initial centroids")
        groups, codes, orig, iterations = pc_kapra_pattern_groups(x, P, paa_size, level, rng)
        levels = np.full(n, level, dtype=np.int64)
    p_groups = split_p_groups(x, groups, P)
    k_groups = form_k_groups(x, p_groups, k)
    lo, hi = group_envelopes(x, k_groups)
    return KPGrouping(
        k_group=k_groups,
        p_group=p_groups,
        codes=codes,
        levels=levels,
        orig_codes=orig,
        lo=lo[k_groups],
        hi=hi[k_groups],
        iterations=int(iterations),
    )


def diverse_k_groups(
    x: np.ndarray, k_groups: np.ndarray, outcomes: np.ndarray, ell: int
) -> np.ndarray:
    """Merge k-groups until each holds ``ell`` distinct values of every outcome (ℓ-diversity).

    A recipient reads a k-group off the released values (its members publish one series), so
    in a labelled release a k-group of one outcome discloses it. Each k-group short of ``ell``
    values of some outcome (lowest id first) is merged into the k-group whose union with it
    has the smallest IVL (the criterion of :func:`form_k_groups`), until none is short or one
    group is left. Merging keeps every k-group a union of whole P-groups, so the (k,P)
    requirements still hold.

    Parameters
    ----------
    x : ndarray of float64, shape (n, L)
    k_groups : ndarray of int, shape (n,)
        ``0 .. h-1``.
    outcomes : ndarray, shape (n, t)
        The published outcome labels.
    ell : int

    Returns
    -------
    ndarray of int64, shape (n,)
        k-groups ``0 .. h'-1``, ``h' <= h``.
    """
    labels = _dense(np.asarray(k_groups, dtype=np.int64))
    outcomes = np.asarray(outcomes)
    while True:
        g = int(labels.max()) + 1
        distinct = np.stack(
            [np.array([np.unique(col[labels == j]).size for j in range(g)]) for col in outcomes.T]
        ).min(axis=0)
        poor = np.flatnonzero(distinct < ell)
        if poor.size == 0 or g == 1:
            return labels
        lo, hi = group_envelopes(x, labels)
        cur = int(poor[0])
        cand = np.flatnonzero(np.arange(g) != cur)
        loss = ivl(np.minimum(lo[cur], lo[cand]), np.maximum(hi[cur], hi[cand]))
        labels = _dense(np.where(labels == cur, int(cand[np.argmin(loss)]), labels))
