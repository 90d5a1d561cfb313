"""Compiled inner loops of the genetic optimiser (:mod:`mimic_deid.deid.genetic`).

NumPy cannot fuse a gather with the reductions that follow it: breeding and evaluating a
generation of children took ~15 whole-array passes (two parent gathers, the crossover mix,
the mutation mask, then ``abs``/``sum``/``add``/``square``/``min``/``max`` per feature
dimension). These kernels (compiled with Numba, cached on disk) breed the children in one
pass that copies whole gene segments of the parents, and evaluate chromosomes in one pass.
They use IEEE arithmetic without reassociation (no ``fastmath``): float32 gene values,
float64 sums accumulated in gene order, so their results do not depend on the CPU.

Layout, as in :mod:`mimic_deid.deid.genetic`: chromosomes are problem-major ``(n, q, G)``
(problems, chromosomes, genes), so the genes of one chromosome are contiguous.
"""

from __future__ import annotations

import numba
import numpy as np

_JIT = {"cache": True, "nogil": True, "boundscheck": False}


@numba.njit(**_JIT)
def breed(
    pop: np.ndarray,
    mates: np.ndarray,
    cuts: np.ndarray,
    rank: np.ndarray,
    valid: np.ndarray,
    positions: np.ndarray,
    noise: np.ndarray,
    child: np.ndarray,
) -> None:
    """Crossover and mutation of a generation's children, written into ``child``.

    Gene ``g`` of child ``c`` of problem ``i`` comes from parent ``mates[c, i, s]``, where
    ``s`` is the number of cut points ``cuts[c, i, :]`` at or below the gene's rank among the
    problem's valid genes (``rank[i, g]``, non-decreasing in ``g``); then ``noise[t]`` is added
    to the gene at flat index ``positions[t]`` of ``child`` (C order) when that gene is valid.

    Parameters
    ----------
    pop : ndarray of float32, shape (n, P, G)
    mates : ndarray of int64, shape (C, n, K)
        Parent slots in ``pop`` (second axis), in crossover order.
    cuts : ndarray of int32, shape (C, n, K - 1)
        Sorted cut points (gene ranks; a segment starts at a cut).
    rank : ndarray of int32, shape (n, G)
    valid : ndarray of bool, shape (n, G)
    positions : ndarray of int64, shape (t,)
        Sorted, distinct flat indices into ``child``.
    noise : ndarray of float32, shape (t,)
    child : ndarray of float32, shape (n, C, G)
        Output.
    """
    n, C, G = child.shape
    n_cuts = cuts.shape[2]
    t, n_pos = 0, positions.shape[0]
    flat = child.reshape(-1)
    for i in range(n):
        for c in range(C):
            start = 0
            for s in range(n_cuts + 1):
                stop = G if s == n_cuts else np.searchsorted(rank[i], cuts[c, i, s])
                if stop > start:
                    # through views that start at 0: a loop over data-dependent bounds
                    # into the 3-d arrays copied several times slower than a plain copy
                    dst = child[i, c, start:stop]
                    src = pop[i, mates[c, i, s], start:stop]
                    for g in range(dst.shape[0]):
                        dst[g] = src[g]
                    start = stop
            row = (i * C + c) * G
            while t < n_pos and positions[t] < row + G:
                if valid[i, positions[t] - row]:
                    flat[positions[t]] += noise[t]
                t += 1


@numba.njit(**_JIT)
def block_moments(
    pop: np.ndarray,
    base: np.ndarray,
    base_min: np.ndarray,
    base_max: np.ndarray,
    unit: np.ndarray,
    offsets: np.ndarray,
    abs_obj: np.ndarray,
    total: np.ndarray,
    total_sq: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
) -> None:
    """Per chromosome: the weighted ``sum |p|`` over all genes, and per block of genes the
    sum and sum of squares of ``p + base`` and the minimum and maximum of ``p + base_min`` /
    ``p + base_max``, written into the output arrays.

    Parameters
    ----------
    pop : ndarray of float32, shape (n, q, G)
    base, base_min, base_max : ndarray of float32, shape (n, G)
        Centred values; ``base_min`` / ``base_max`` are +inf / -inf at padding genes.
    unit : ndarray of float32, shape (n, G) or (0, 0)
        Weight of each gene's ``|p|``; empty for weight 1.
    offsets : ndarray of int64, shape (B + 1,)
        Block ``b`` is genes ``offsets[b]:offsets[b + 1]``.
    abs_obj : ndarray of float64, shape (q, n)
    total, total_sq : ndarray of float64, shape (B, q, n)
    low, high : ndarray of float32, shape (B, q, n)
        Outputs.
    """
    n, q, _ = pop.shape
    weighted = unit.shape[0] > 0
    for i in range(n):
        for c in range(q):
            a_sum = 0.0
            for b in range(offsets.shape[0] - 1):
                t_sum, s_sum = 0.0, 0.0
                lo, hi = np.float32(np.inf), np.float32(-np.inf)
                for g in range(offsets[b], offsets[b + 1]):
                    p = pop[i, c, g]
                    a = abs(p)
                    if weighted:
                        a = a * unit[i, g]
                    a_sum += a
                    v = p + base[i, g]
                    t_sum += v
                    s_sum += v * v
                    lo = min(lo, p + base_min[i, g])
                    hi = max(hi, p + base_max[i, g])
                total[b, c, i] = t_sum
                total_sq[b, c, i] = s_sum
                low[b, c, i] = lo
                high[b, c, i] = hi
            abs_obj[c, i] = a_sum


@numba.njit(**_JIT)
def tournament(keys: np.ndarray, contenders: np.ndarray, parents: int) -> np.ndarray:
    """The mates of every child: the ``parents`` fittest of its contenders, in draw order.

    Ties are broken in favour of the earlier draw.

    Parameters
    ----------
    keys : ndarray of float64, shape (P, n)
        Fitness keys of the population (higher = fitter).
    contenders : ndarray of int64, shape (C, n, T)
        Distinct population slots drawn for each child, in draw order.
    parents : int
        ``K <= T``.

    Returns
    -------
    ndarray of int64, shape (C, n, K)
    """
    C, n, T = contenders.shape
    mates = np.empty((C, n, parents), dtype=np.int64)
    chosen = np.empty(T, dtype=np.bool_)
    for c in range(C):
        for i in range(n):
            chosen[:] = False
            for _ in range(parents):
                best, best_key = -1, -np.inf
                for d in range(T):
                    if not chosen[d]:
                        k = keys[contenders[c, i, d], i]
                        if best < 0 or k > best_key:
                            best, best_key = d, k
                chosen[best] = True
            s = 0
            for d in range(T):
                if chosen[d]:
                    mates[c, i, s] = contenders[c, i, d]
                    s += 1
    return mates


@numba.njit(**_JIT)
def draw_distinct(u: np.ndarray, n: int, sentinel: int) -> np.ndarray:
    """``k`` distinct integers in ``[0, n)`` per row of ``u``, in draw order, from ``k``
    uniforms per row: draw ``j`` is uniform over the ``n - j`` values not drawn yet (it takes
    the ``floor(u[r, j] * (n - j))``-th of them in increasing order), so every ordered
    ``k``-tuple of distinct values is equally likely (up to the 53-bit resolution of ``u``).
    Rows whose draws would exceed the ``n`` values (``j >= n``) get ``sentinel`` there.

    Parameters
    ----------
    u : ndarray of float64, shape (m, k)
        Uniforms in ``[0, 1)``.
    n : int
    sentinel : int
        Larger than any valid value (the caller's, so that both paths of
        :func:`~mimic_deid.deid.genetic.search.sample_distinct` use one).

    Returns
    -------
    ndarray of int64, shape (m, k)
    """
    m, k = u.shape
    out = np.empty((m, k), dtype=np.int64)
    drawn = np.empty(k, dtype=np.int64)  # this row's draws so far, ascending
    for r in range(m):
        for j in range(k):
            avail = n - j
            if avail <= 0:
                out[r, j] = sentinel
                continue
            v = min(np.int64(u[r, j] * avail), avail - 1)
            pos = 0  # the v-th value not drawn yet: step over the drawn values at or below it
            while pos < j and drawn[pos] <= v:
                v += 1
                pos += 1
            for q in range(j, pos, -1):  # keep drawn ascending
                drawn[q] = drawn[q - 1]
            drawn[pos] = v
            out[r, j] = v
    return out


@numba.njit(**_JIT)
def gap_positions(exponentials: np.ndarray, rate: float, start: int, size: int) -> np.ndarray:
    """Positions ``start + G_1, start + G_1 + G_2, ...`` below ``size`` of geometric gaps
    ``G_t = floor(E_t * rate) + 1`` (support 1, 2, ...) from exponential draws ``E_t``; the
    sums are exact (int64).

    Parameters
    ----------
    exponentials : ndarray of float64, shape (t,)
    rate : float
        ``1 / -log(1 - p)`` for success probability ``p``.
    start : int
        The position before the first gap.
    size : int
        Positions at or above it end the output (and the gaps after them are not used).

    Returns
    -------
    ndarray of int64, shape (<= t,)
    """
    out = np.empty(exponentials.shape[0], dtype=np.int64)
    pos = start
    t = 0
    for e in exponentials:
        pos += np.int64(np.floor(e * rate)) + 1
        if pos >= size:
            break
        out[t] = pos
        t += 1
    return out[:t]


@numba.njit(**_JIT)
def survive(
    keys: np.ndarray,
    c_keys: np.ndarray,
    pop: np.ndarray,
    child: np.ndarray,
    abs_obj: np.ndarray,
    infeas: np.ndarray,
    c_obj: np.ndarray,
    c_inf: np.ndarray,
) -> None:
    """The next population of every problem, in place: of its ``P`` parents and ``C``
    children the ``P`` fittest survive, ties to the earlier of parents-then-children (the
    first ``P`` of a stable sort by decreasing key); each child that survives takes the slot
    of a parent that does not, both in increasing order, with its ``|objective|`` and
    unfeasibility.

    Parameters
    ----------
    keys : ndarray of float64, shape (P, n)
    c_keys : ndarray of float64, shape (C, n)
        Fitness keys of the parents and the children (higher = fitter).
    pop : ndarray of float32, shape (n, P, G)
    child : ndarray of float32, shape (n, C, G)
    abs_obj, infeas : ndarray of float64, shape (P, n)
    c_obj, c_inf : ndarray of float64, shape (C, n)
        ``pop``, ``abs_obj`` and ``infeas`` are updated.
    """
    P, n = keys.shape
    C = c_keys.shape[0]
    top_key = np.empty(P, dtype=np.float64)  # the fittest so far, by (key desc, index asc)
    top_idx = np.empty(P, dtype=np.int64)
    keep = np.empty(P + C, dtype=np.bool_)
    for i in range(n):
        m = 0
        for e in range(P + C):
            k = keys[e, i] if e < P else c_keys[e - P, i]
            if m == P:
                if not k > top_key[P - 1]:  # a later index loses a tie
                    continue
                m -= 1
            pos = m
            while pos > 0 and top_key[pos - 1] < k:
                top_key[pos] = top_key[pos - 1]
                top_idx[pos] = top_idx[pos - 1]
                pos -= 1
            top_key[pos] = k
            top_idx[pos] = e
            m += 1
        keep[:] = False
        for s in range(m):
            keep[top_idx[s]] = True
        slot = 0
        for c in range(C):
            if keep[P + c]:
                while keep[slot]:
                    slot += 1
                pop[i, slot, :] = child[i, c, :]
                abs_obj[slot, i] = c_obj[c, i]
                infeas[slot, i] = c_inf[c, i]
                slot += 1
