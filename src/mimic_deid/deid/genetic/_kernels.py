"""Compiled inner loops of the genetic optimiser (:mod:`mimic_deid.deid.genetic`).

NumPy cannot fuse a gather with the reductions that follow it: breeding and evaluating a
generation of children took ~15 whole-array passes (two parent gathers, the crossover mix,
the mutation mask, then ``abs``/``sum``/``add``/``square``/``min``/``max`` per feature
dimension). These kernels (compiled with Numba, cached on disk) breed the children in one
pass that copies whole gene segments of the parents, and evaluate chromosomes (statistics and
their errors) in one pass.
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
    rng: np.random.Generator,
    mutation_prob: float,
    mutation_sd: float,
    child: np.ndarray,
) -> None:
    """Crossover and mutation of a generation's children, written into ``child``.

    Gene ``g`` of child ``c`` of problem ``i`` comes from parent ``mates[c, i, s]``, where
    ``s`` is the number of cut points ``cuts[c, i, :]`` at or below the gene's rank among the
    problem's valid genes (``rank[i, g]``, non-decreasing in ``g``). Then every gene of
    ``child`` is a Bernoulli(``mutation_prob``) trial, independently: the successes are the
    running sums of geometric gaps ``floor(E * rate) + 1`` over the flat (C-order) index of
    ``child``, ``E ~ Exp(1)``, ``rate = 1 / -log(1 - mutation_prob)`` (so their cost is
    proportional to the mutated genes); a success on a valid gene adds ``mutation_sd * Z``,
    ``Z ~ N(0, 1)`` (rounded to float32). ``E`` and ``Z`` are drawn from ``rng`` in that
    order (a ``Z`` only for a valid gene), NumPy's generator itself: Numba's
    ``standard_exponential`` and ``standard_normal`` are NumPy's algorithms on its bit
    generator, so the numbers are the ones NumPy would draw, without the arrays. No draw is
    made when ``mutation_prob <= 0`` or ``mutation_sd <= 0``.

    Parameters
    ----------
    pop : ndarray of float32, shape (n, P, G)
    mates : ndarray of int64, shape (C, n, K)
        Parent slots in ``pop`` (second axis), in crossover order.
    cuts : ndarray of int32, shape (C, n, K - 1)
        Sorted cut points (gene ranks; a segment starts at a cut).
    rank : ndarray of int32, shape (n, G)
    valid : ndarray of bool, shape (n, G)
    rng : numpy.random.Generator
        Advanced by the mutation draws.
    mutation_prob : float
        In ``[0, 1]``.
    mutation_sd : float
        Sd of the noise, in the unit of the genes.
    child : ndarray of float32, shape (n, C, G)
        Output.
    """
    n, C, G = child.shape
    n_cuts = cuts.shape[2]
    mutate = mutation_prob > 0 and mutation_sd > 0 and child.size > 0
    rate = 0.0  # every gene when mutation_prob >= 1
    if mutate and mutation_prob < 1:
        rate = 1.0 / -np.log1p(-mutation_prob)
    # next mutated gene: flat index into child, counted from the start of the current row
    pos = np.int64(np.floor(rng.standard_exponential() * rate)) if mutate else np.int64(0)
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
            if not mutate:
                continue
            row = child[i, c]
            while pos < G:
                if valid[i, pos]:
                    row[pos] += np.float32(mutation_sd * rng.standard_normal())
                pos += np.int64(np.floor(rng.standard_exponential() * rate)) + 1
            pos -= G


#: Codes of the statistics in :func:`evaluate`'s ``term_stat``.
STAT_CODES = {"mean": 0, "var": 1, "min": 2, "max": 3}


@numba.njit(**_JIT)
def evaluate(
    pop: np.ndarray,
    base: np.ndarray,
    base_min: np.ndarray,
    base_max: np.ndarray,
    unit: np.ndarray,
    offsets: np.ndarray,
    cnt: np.ndarray,
    term_block: np.ndarray,
    term_stat: np.ndarray,
    target: np.ndarray,
    weight: np.ndarray,
    abs_obj: np.ndarray,
    unfeasibility: np.ndarray,
) -> None:
    """``|objective|`` and unfeasibility of every chromosome, in one pass over its genes.

    Per chromosome: ``|objective|`` is the weighted ``sum |p|`` over all genes; per block of
    genes, with ``v = p + base`` and ``c = max(cnt, 1)``, the statistics are the mean
    ``sum v / c``, the variance ``sum v^2 / c - mean^2`` (sums in float64, in gene order), the
    minimum of ``p + base_min`` and the maximum of ``p + base_max``; the unfeasibility is
    ``sum_j weight_j |stat_j - target_j|`` over the terms ``j`` in order, a term whose product
    is NaN (weight 0 on an all-padding block: ``inf * 0``) counting 0.

    Parameters
    ----------
    pop : ndarray of float32, shape (n, q, G)
    base, base_min, base_max : ndarray of float32, shape (n, G)
        Centred values; ``base_min`` / ``base_max`` are +inf / -inf at padding genes.
    unit : ndarray of float32, shape (n, G) or (0, 0)
        Weight of each gene's ``|p|``; empty for weight 1.
    offsets : ndarray of int64, shape (B + 1,)
        Block ``b`` is genes ``offsets[b]:offsets[b + 1]``.
    cnt : ndarray of float64, shape (B, n)
        Valid genes of each block.
    term_block, term_stat : ndarray of int64, shape (J,)
        Each term's block and statistic (:data:`STAT_CODES`).
    target, weight : ndarray of float64, shape (J, n)
        Centred targets and weights (0 for an unconstrained term).
    abs_obj, unfeasibility : ndarray of float64, shape (q, n)
        Outputs.
    """
    n, q, _ = pop.shape
    B = offsets.shape[0] - 1
    J = term_block.shape[0]
    weighted = unit.shape[0] > 0
    stats = np.empty((4, B), dtype=np.float64)  # the chromosome's statistics per block
    for i in range(n):
        # through row views, as in breed; and minima / maxima by comparison (no NaN can
        # occur): ~0.75x the time of 3-d indexing and min() / max(), the same results
        bi, bmin, bmax = base[i], base_min[i], base_max[i]
        ui = unit[i] if weighted else base[i]
        for c in range(q):
            row = pop[i, c]
            a_sum = 0.0
            for b in range(B):
                start, stop = offsets[b], offsets[b + 1]
                p, v0 = row[start:stop], bi[start:stop]
                v_min, v_max, u = bmin[start:stop], bmax[start:stop], ui[start:stop]
                t_sum, s_sum = 0.0, 0.0
                lo, hi = np.float32(np.inf), np.float32(-np.inf)
                for g in range(p.shape[0]):
                    x = p[g]
                    a = abs(x)
                    if weighted:
                        a = a * u[g]
                    a_sum += a
                    v = x + v0[g]
                    t_sum += v
                    s_sum += v * v
                    y = x + v_min[g]
                    lo = y if y < lo else lo
                    z = x + v_max[g]
                    hi = z if z > hi else hi
                size = max(cnt[b, i], 1.0)
                mean = t_sum / size
                stats[0, b] = mean
                stats[1, b] = s_sum / size - mean * mean
                stats[2, b] = lo
                stats[3, b] = hi
            abs_obj[c, i] = a_sum
            total = 0.0
            for j in range(J):
                e = abs(stats[term_stat[j], term_block[j]] - target[j, i]) * weight[j, i]
                if e != e:
                    e = 0.0
                total += e
            unfeasibility[c, i] = total


@numba.njit(**_JIT)
def _distinct_draw(u: float, j: int, avail: int, drawn: np.ndarray) -> int:
    """Draw ``j`` of a sample without replacement from ``0, 1, ...``: the
    ``floor(u * avail)``-th (in increasing order) of the ``avail`` values not drawn yet, given
    the ``j`` earlier draws in ``drawn[:j]`` (ascending), which it keeps ascending with the new
    value inserted. With ``u`` uniform in ``[0, 1)`` every draw is uniform over the values left,
    so every ordered tuple of distinct values is equally likely (up to the 53-bit resolution
    of ``u``)."""
    v = min(np.int64(u * avail), avail - 1)
    pos = 0  # the v-th value not drawn yet: step over the drawn values at or below it
    while pos < j and drawn[pos] <= v:
        v += 1
        pos += 1
    for q in range(j, pos, -1):
        drawn[q] = drawn[q - 1]
    drawn[pos] = v
    return v


@numba.njit(**_JIT)
def select(keys: np.ndarray, tournament: int, parents: int, rng: np.random.Generator) -> np.ndarray:
    """Tournament selection of the mates of ``P - 1`` children per problem.

    For child ``c`` of problem ``i`` (cells in C order of ``(P - 1, n)``): ``tournament``
    distinct population slots are drawn without replacement (:func:`_distinct_draw`), one
    uniform of ``rng`` per draw (``rng.random()``, the numbers NumPy's
    ``rng.random((P - 1, n, tournament))`` would give); the ``parents`` fittest of them mate,
    in draw order, ties to the earlier draw.

    Parameters
    ----------
    keys : ndarray of float64, shape (P, n)
        Fitness keys of the population (higher = fitter).
    tournament : int
        Contenders per child, ``parents <= tournament <= P``.
    parents : int
    rng : numpy.random.Generator
        Advanced by ``(P - 1) * n * tournament`` uniforms.

    Returns
    -------
    ndarray of int64, shape (P - 1, n, parents)
        Population slots.
    """
    P, n = keys.shape
    C = P - 1
    mates = np.empty((C, n, parents), dtype=np.int64)
    contenders = np.empty(tournament, dtype=np.int64)
    drawn = np.empty(tournament, dtype=np.int64)
    chosen = np.empty(tournament, dtype=np.bool_)
    for c in range(C):
        for i in range(n):
            for j in range(tournament):
                contenders[j] = _distinct_draw(rng.random(), j, P - j, drawn)
            chosen[:] = False
            for _ in range(parents):
                best, best_key = -1, -np.inf
                for d in range(tournament):
                    if not chosen[d]:
                        k = keys[contenders[d], i]
                        if best < 0 or k > best_key:
                            best, best_key = d, k
                chosen[best] = True
            s = 0
            for d in range(tournament):
                if chosen[d]:
                    mates[c, i, s] = contenders[d]
                    s += 1
    return mates


@numba.njit(**_JIT)
def cut_points(
    n_valid: np.ndarray, n_cuts: int, children: int, n_genes: int, rng: np.random.Generator
) -> np.ndarray:
    """The crossover's cut points of every child: ``n_cuts`` distinct gene ranks in
    ``[1, n_valid[i])`` per child ``c`` of problem ``i``, ascending.

    Cells in C order of ``(children, n)``; per cell ``n_cuts`` values drawn without
    replacement from the ``n_valid[i] - 1`` values ``0, 1, ...`` (:func:`_distinct_draw`), one
    uniform of ``rng`` per draw (``rng.random()``, drawn also for the draws beyond a problem's
    values), then sorted and shifted by 1 (a segment starts at a cut, so the first gene always
    comes from the first parent). Draws beyond a problem's values give ``n_genes + 1`` (no
    segment).

    Parameters
    ----------
    n_valid : ndarray of int64, shape (n,)
        Valid genes of each problem.
    n_cuts : int
        ``parents - 1``.
    children : int
    n_genes : int
        ``G``, genes per chromosome.
    rng : numpy.random.Generator
        Advanced by ``children * n * n_cuts`` uniforms.

    Returns
    -------
    ndarray of int32, shape (children, n, n_cuts)
    """
    n = n_valid.shape[0]
    cuts = np.empty((children, n, n_cuts), dtype=np.int32)
    drawn = np.empty(n_cuts, dtype=np.int64)  # this cell's draws so far, ascending
    for c in range(children):
        for i in range(n):
            m = 0  # valid draws
            for j in range(n_cuts):
                u = rng.random()
                avail = n_valid[i] - 1 - j
                if avail > 0:
                    _distinct_draw(u, j, avail, drawn)
                    m += 1
            for j in range(n_cuts):
                cuts[c, i, j] = drawn[j] + 1 if j < m else n_genes + 1
    return cuts


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
