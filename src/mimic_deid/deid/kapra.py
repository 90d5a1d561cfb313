"""KAPRA and PC-KAPRA: (k,P)-anonymity of univariate series (seed 001 §2.2.2, §3).

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

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.core.errors import (
    ConfigError,
    InputDataError,
    ReleaseCheckError,
    require_columns,
    require_int,
)
from mimic_deid.core.logs import get_logger
from mimic_deid.deid.classes import KEY, unit_keys
from mimic_deid.deid.features import FeatureSpec
from mimic_deid.deid.missing import fill_missing_hours
from mimic_deid.deid.optimise import OptimiseResult, check_inputs, evaluate
from mimic_deid.deid.plausible import PlausibleValues, project_variable
from mimic_deid.deid.sax import (
    MAX_LEVEL,
    MIN_LEVEL,
    group_envelopes,
    ivl,
    lookup_table,
    paa,
    sax_codes,
    words,
    znormalise,
)

__all__ = [
    "IMPUTE_RULES",
    "KMEANS_MAX_ITER",
    "KPGrouping",
    "check_config",
    "check_kp_groups",
    "claims",
    "diverse_k_groups",
    "form_k_groups",
    "impute",
    "integer_centroids",
    "kapra_pattern_groups",
    "kp_anonymise",
    "kp_summary",
    "k_groups",
    "pc_kapra_pattern_groups",
    "run_kapra",
    "run_pc_kapra",
    "split_p_groups",
    "summarise",
]

log = get_logger(__name__)

#: Imputation rules for null records of a grouped variable: ``none`` refuses nulls, ``carry``
#: carries observed values forward and back (class mean for a series without one,
#: :func:`mimic_deid.deid.missing.fill_missing_hours`), ``mean`` takes the class mean of the hour.
IMPUTE_RULES = ("none", "carry", "mean")
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


def impute(x: np.ndarray, rule: str, who: str, variable: str) -> tuple[np.ndarray, np.ndarray]:
    """Fill the null records of one variable of a class by ``rule`` (:data:`IMPUTE_RULES`).

    Parameters
    ----------
    x : ndarray of float64, shape (n, L)
        With at least one non-null record.
    rule : str
    who, variable : str
        Method and variable named in the error message.

    Returns
    -------
    filled : ndarray of float64, shape (n, L)
    imputed : ndarray of int64, shape (n,)
        Records filled per series.
    """
    if rule not in IMPUTE_RULES:
        raise ConfigError(f"{who} parameter 'impute' must be one of {IMPUTE_RULES}, got {rule!r}")
    null = np.isnan(x)
    imputed = null.sum(axis=1).astype(np.int64)
    if not null.any():
        return x, imputed
    if rule == "none":
        raise InputDataError(
            f"{who}: variable '{variable}' of the duration class of {x.shape[1]} h has "
            f"{int(imputed.sum())} null record(s) in {int((imputed > 0).sum())} series and "
            "parameter 'impute' is 'none'; choose 'carry' or 'mean'"
        )
    if rule == "carry":
        return fill_missing_hours(x[:, :, None])[:, :, 0], imputed
    hour_mean = np.nanmean(np.where(null.all(axis=0), np.nanmean(x), x), axis=0)
    return np.where(null, hour_mean[None, :], x), imputed


def _variable_names(spec: FeatureSpec) -> dict[int, str]:
    """Variable name of each feature dimension (``<variable>_<stat>`` without the stat)."""
    names: dict[int, str] = {}
    for d, stat, name in zip(spec.dims.tolist(), spec.stats, spec.names, strict=True):
        names.setdefault(d, name[: -len(stat) - 1])
    return names


def _run(X, targets, spec, params: Mapping[str, Any], rng, algorithm: str) -> OptimiseResult:
    """Group every feature dimension of a class independently; release envelope midpoints."""
    X, targets = check_inputs(X, targets, spec)
    n, length, _ = X.shape
    if "k" not in params:
        raise ConfigError(f"release method '{algorithm}' needs the feature k (fk) as its k")
    out = X.copy()
    detail: dict[str, np.ndarray] = {}
    iterations = 0
    for d, var in _variable_names(spec).items():
        x = X[:, :, d]
        if np.isnan(x).all():  # not observed in this class: stays null
            detail[f"k_group_{var}"] = np.full(n, -1, dtype=np.int64)
            detail[f"sax_level_{var}"] = np.zeros(n, dtype=np.int64)
            detail[f"word_{var}"] = np.full(n, "", dtype=object)
            detail[f"imputed_{var}"] = np.zeros(n, dtype=np.int64)
            detail[f"lo_{var}"] = np.full((n, length), np.nan)
            detail[f"hi_{var}"] = np.full((n, length), np.nan)
            continue
        x, imputed = impute(x, params["impute"], algorithm, var)
        res = kp_anonymise(
            x, params["k"], params["P"], params["paa"], params["level"], algorithm, rng
        )
        if "outcomes" in params:  # a labelled release: ℓ-diverse k-groups
            merged = diverse_k_groups(x, res.k_group, params["outcomes"], params["ell"])
            lo, hi = group_envelopes(x, merged)
            res = dataclasses.replace(res, k_group=merged, lo=lo[merged], hi=hi[merged])
        out[:, :, d] = res.release
        iterations = max(iterations, res.iterations)
        detail[f"k_group_{var}"] = res.k_group
        detail[f"sax_level_{var}"] = res.levels
        detail[f"word_{var}"] = words(res.codes)
        detail[f"imputed_{var}"] = imputed
        detail[f"lo_{var}"] = res.lo
        detail[f"hi_{var}"] = res.hi
    result = evaluate(X, out, targets, spec, np.full(n, iterations, dtype=np.int64))
    return OptimiseResult(
        X=result.X,
        unfeasibility=result.unfeasibility,
        distortion=result.distortion,
        iterations=result.iterations,
        detail=detail,
    )


def run_kapra(X, targets, spec, params, rng) -> OptimiseResult:
    """Release method ``kapra`` (:mod:`mimic_deid.deid.methods` signature).

    ``params``: ``k`` (the sweep's fk), ``P``, ``paa``, ``level`` (max-level), ``impute``, and
    in a labelled release ``outcomes`` and ``ell`` (k-groups made ℓ-diverse by
    :func:`diverse_k_groups`).
    Every feature dimension of ``X`` (n, L, D) is grouped on its own and released as its
    k-group's envelope midpoint; ``detail`` holds per series and variable ``k_group_<var>``,
    ``sax_level_<var>``, ``word_<var>``, ``imputed_<var>`` and the envelope ``lo_<var>``,
    ``hi_<var>`` (L values each).
    """
    return _run(X, targets, spec, params, rng, "kapra")


def run_pc_kapra(X, targets, spec, params, rng) -> OptimiseResult:
    """Release method ``pc-kapra``: as :func:`run_kapra` with k-means pattern clustering."""
    return _run(X, targets, spec, params, rng, "pc-kapra")


def kp_summary(per_series: pd.DataFrame) -> dict:
    """Public aggregates of a (k,P) release, from its private per-series table.

    Parameters
    ----------
    per_series : DataFrame
        ``method.parquet`` rows of a (k,P) method: group, class_length and the
        ``k_group_<var>``, ``lo_<var>``, ``hi_<var>`` columns of :func:`run_kapra`.

    Returns
    -------
    dict
        ``variables``: per grouped variable ``k_groups`` (count over the classes) and ``tivl``
        (mean IVL over those k-groups, seed eq. 3.5, in the variable's unit);
        ``joint_unique_pct``: percentage of series whose combination of k-groups over all
        variables no other series of its class shares (per-variable groups give no joint k).
    """
    keys = unit_keys(per_series)
    names = sorted(
        c.removeprefix("k_group_") for c in per_series.columns if c.startswith("k_group_")
    )
    out: dict = {"variables": {}}
    for var in names:
        grouped = per_series[per_series[f"k_group_{var}"] >= 0]
        first = grouped.drop_duplicates([*keys, f"k_group_{var}"])
        # one envelope per k-group; classes differ in length, so IVL is taken per k-group
        widths = [
            ivl(np.asarray(lo), np.asarray(hi))
            for lo, hi in zip(first[f"lo_{var}"], first[f"hi_{var}"], strict=True)
        ]
        out["variables"][var] = {
            "k_groups": len(first),
            "tivl": float(np.mean(widths)) if widths else None,
        }
    if names and len(per_series):
        combo = [*keys, *(f"k_group_{v}" for v in names)]
        joint = per_series.groupby(combo, sort=False)[combo[0]].transform("size")
        out["joint_unique_pct"] = float(100.0 * np.mean(joint.to_numpy() == 1))
    return out


def _project_flat(
    flat: np.ndarray, lengths: np.ndarray, plausible: PlausibleValues, var: str
) -> np.ndarray:
    """Series laid end to end (``lengths`` hours each) projected onto ``var``'s plausible
    values, as :func:`~mimic_deid.deid.plausible.project` projects them in a class."""
    out = np.empty_like(flat)
    starts = np.cumsum(lengths) - lengths
    for length in np.unique(lengths):
        at = starts[lengths == length][:, None] + np.arange(length)[None, :]
        out[at] = project_variable(flat[at], plausible, var)
    return out


def _off_midpoint(
    grouped: pd.DataFrame, rows: pd.DataFrame, var: str, plausible: PlausibleValues | None
) -> int:
    """Released values of ``var`` (``rows``: pseudonym, hour, var) that are not the midpoint
    of the envelope ``lo_<var>``/``hi_<var>`` of ``grouped`` (0 if there is no envelope),
    projected onto the variable's plausible values when ``plausible`` names it."""
    lo_col, hi_col = f"lo_{var}", f"hi_{var}"
    if not {lo_col, hi_col} <= set(grouped.columns):
        return 0
    lengths = grouped[lo_col].map(len).to_numpy(dtype=np.int64)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    mid = 0.5 * (
        np.concatenate(grouped[lo_col].to_list()) + np.concatenate(grouped[hi_col].to_list())
    )
    if plausible is not None and var in plausible.dims:
        mid = _project_flat(mid, lengths, plausible, var)
    env = pd.DataFrame(
        {
            KEY: np.repeat(grouped[KEY].to_numpy(), lengths),
            "hour": np.arange(int(lengths.sum())) - starts,
            "mid": mid,
        }
    )
    both = rows.merge(env.merge(grouped[[KEY, "pseudonym"]], on=KEY), on=["pseudonym", "hour"])
    return int((both[var].to_numpy() != both["mid"].to_numpy()).sum())


def check_kp_groups(
    per_series: pd.DataFrame,
    series_public: pd.DataFrame,
    pseudonyms: pd.DataFrame,
    k: int,
    P: int,
    plausible: PlausibleValues | None = None,
) -> dict:
    """Claim 11: the (k,P)-anonymity of a release made by a (k,P) method (seed 001 §2.2.2).

    Parameters
    ----------
    per_series : DataFrame
        The method's ``method.parquet``: icustay_id, group, class_length and per grouped
        variable ``k_group_<var>`` (-1 where the class never observed it), ``sax_level_<var>``
        and ``word_<var>``; with ``lo_<var>``/``hi_<var>`` (the envelope, one value per hour)
        every released value is also checked to be the envelope's midpoint (projected onto
        its plausible values when ``plausible`` is given, as every release is:
        :func:`~mimic_deid.deid.plausible.project`).
    series_public : DataFrame
        ``release/series.parquet``.
    pseudonyms : DataFrame
        icustay_id, pseudonym.
    k, P : int
    plausible : PlausibleValues, optional
        The plausible values of the released variables.

    Returns
    -------
    dict
        ``k``, ``P``, ``variables``, ``k_groups`` (over variables), ``smallest_k_group``,
        ``smallest_word_share`` and ``breach_bound`` (``1 / P``).
    """
    variables = sorted(
        c.removeprefix("k_group_") for c in per_series.columns if c.startswith("k_group_")
    )
    if not variables:
        raise ReleaseCheckError(
            "(k,P) groups: the method's per-series table has no 'k_group_<variable>' column"
        )
    keys = unit_keys(per_series)
    require_columns(per_series, [KEY, *keys], "method per-series table", ReleaseCheckError)
    n_groups, smallest, share = 0, None, None
    for var in variables:
        kg, lv, word = f"k_group_{var}", f"sax_level_{var}", f"word_{var}"
        require_columns(per_series, [lv, word], "method per-series table", ReleaseCheckError)
        grouped = per_series[per_series[kg] >= 0]
        sizes = grouped.groupby([*keys, kg], sort=True).size()
        if len(sizes) and sizes.min() < k:
            raise ReleaseCheckError(
                f"(k,P) groups: variable '{var}': {int((sizes < k).sum())} k-group(s) under "
                f"k={k}, smallest {int(sizes.min())} series"
            )
        shares = grouped.groupby([*keys, kg, lv, word], sort=True).size()
        if len(shares) and shares.min() < P:
            raise ReleaseCheckError(
                f"(k,P) groups: variable '{var}': {int((shares < P).sum())} pattern word(s) "
                f"shared by fewer than P={P} series of their k-group, smallest {int(shares.min())}"
            )
        if var in series_public.columns and len(grouped):
            member = grouped[[KEY, *keys, kg]].merge(pseudonyms, on=KEY)
            rows = series_public[["pseudonym", "hour", var]].merge(
                member.drop(columns=[KEY]), on="pseudonym"
            )
            spread = rows.groupby([*keys, kg, "hour"], sort=True)[var].agg(["min", "max"])
            if (spread["max"] > spread["min"]).any():
                raise ReleaseCheckError(
                    f"(k,P) groups: variable '{var}': series of one k-group publish different "
                    "values (the release is not the k-group's envelope midpoint)"
                )
            off = _off_midpoint(grouped.merge(pseudonyms, on=KEY), rows, var, plausible)
            if off:
                raise ReleaseCheckError(
                    f"(k,P) groups: variable '{var}': {off} released value(s) differ from "
                    "their k-group's envelope midpoint"
                )
        n_groups += len(sizes)
        if len(sizes):
            smallest = int(sizes.min()) if smallest is None else min(smallest, int(sizes.min()))
            share = int(shares.min()) if share is None else min(share, int(shares.min()))
    return {
        "k": int(k),
        "P": int(P),
        "variables": variables,
        "k_groups": n_groups,
        "smallest_k_group": smallest,
        "smallest_word_share": share,
        "breach_bound": 1.0 / P,
    }


# --------------------------------------------------------------------------- registry hooks
# What KAPRA and PC-KAPRA bring to the release-method contract
# (:class:`mimic_deid.deid.methods.ReleaseMethod`): their config rule, summary, claim and
# recoverable groups; no other module names them.


def check_config(name: str, grid: Mapping[str, list], deid: Mapping[str, Any]) -> None:
    """Every P of the sweep is <= every fk (the k of a (k,P) method): a k-group is made of
    whole P-groups; ``ConfigError`` naming both parameters otherwise."""
    if max(grid["P"]) > min(deid["fk"]):
        raise ConfigError(
            f"config parameters 'deid/methods/{name}/P' and 'deid/fk': every P must be <= "
            f"every fk (k < P: a k-group is made of whole P-groups), got P {grid['P']} "
            f"and fk {deid['fk']}"
        )


def summarise(per_series: pd.DataFrame) -> dict:
    """The method summary's (k,P) entry (``kp``: :func:`kp_summary`) and its sweep column
    ``kp_joint_unique_pct``."""
    kp = kp_summary(per_series)
    return {"kp": kp, "sweep": {"kp_joint_unique_pct": kp.get("joint_unique_pct")}}


def claims(
    per_series: pd.DataFrame,
    series_public: pd.DataFrame,
    pseudonyms: pd.DataFrame,
    params: Mapping[str, Any],
    k: int,
    plausible: PlausibleValues | None = None,
) -> dict:
    """The method's claim (claim 11 of :mod:`mimic_deid.deid.check`): ``{"kp_groups": ...}``
    (:func:`check_kp_groups` with the point's k, the label's P and the plausible values)."""
    return {
        "kp_groups": check_kp_groups(
            per_series, series_public, pseudonyms, k, params["P"], plausible
        )
    }


def k_groups(per_series: pd.DataFrame) -> pd.DataFrame:
    """The groups a recipient recovers from a (k,P) release: per grouped variable the k-group
    of every series (``k_group_<var>``, numbered over the release; -1: not grouped), with
    ``icustay_id``."""
    columns = [c for c in per_series.columns if c.startswith("k_group_")]
    unit = unit_keys(per_series)
    out = pd.DataFrame({KEY: per_series[KEY].to_numpy()})
    for column in columns:
        code = per_series.groupby([*unit, column], sort=True).ngroup()
        out[column] = code.where(per_series[column] >= 0, -1).to_numpy()
    return out
