"""Compiled loops of the genetic optimiser against the NumPy expressions they replace."""

from __future__ import annotations

import numpy as np
import pytest

from mimic_deid.deid.genetic import bernoulli_positions, sample_distinct
from mimic_deid.deid.genetic._kernels import (
    block_moments,
    breed,
    draw_distinct,
    gap_positions,
    survive,
    tournament,
)

SENTINEL = np.iinfo(np.int64).max // 4  # larger than any drawn value


def packed_problems(rng: np.random.Generator, n: int, widths: list[int]):
    """Valid masks of ``n`` problems with blocks of ``widths`` genes, valid genes first."""
    parts = []
    for w in widths:
        cnt = rng.integers(0, w + 1, size=n)
        parts.append(np.arange(w)[None, :] < cnt[:, None])
    valid = np.concatenate(parts, axis=1)
    offsets = np.cumsum([0, *widths]).astype(np.int64)
    return valid, offsets


@pytest.mark.parametrize("parents", [1, 2, 3])
def test_breed_is_segment_crossover_then_mutation_of_valid_genes(parents):
    rng = np.random.default_rng(parents)
    n, P, C = 9, 7, 6
    valid, _ = packed_problems(rng, n, [5, 8])
    G = valid.shape[1]
    rank = (np.cumsum(valid, axis=1) - 1).astype(np.int32)
    n_valid = valid.sum(axis=1)
    pop = (rng.standard_normal((n, P, G)) * valid[:, None, :]).astype(np.float32)
    mates = sample_distinct(rng, P, parents, (C, n))
    cuts = sample_distinct(rng, (n_valid - 1)[None, :], parents - 1, (C, n))
    cuts = np.minimum(np.sort(cuts, axis=-1) + 1, G + 1).astype(np.int32)
    child = np.full((n, C, G), np.nan, dtype=np.float32)
    pos = bernoulli_positions(rng, child.size, 0.3)
    noise = rng.standard_normal(pos.size, dtype=np.float32)

    breed(pop, mates, cuts, rank, valid, pos, noise, child)

    # reference: parent s from the s-th cut on (by rank), then noise on valid genes only
    seg = (rank[:, None, :, None] >= cuts.transpose(1, 0, 2)[:, :, None, :]).sum(axis=-1)
    slot = np.take_along_axis(mates.transpose(1, 0, 2), seg, axis=-1)  # (n, C, G)
    expected = np.ascontiguousarray(pop[np.arange(n)[:, None, None], slot, np.arange(G)])
    on_valid = np.broadcast_to(valid[:, None, :], child.shape).reshape(-1)[pos]
    expected.reshape(-1)[pos[on_valid]] += noise[on_valid]
    np.testing.assert_array_equal(child, expected)
    assert not child[np.broadcast_to(~valid[:, None, :], child.shape)].any()


@pytest.mark.parametrize("weighted", [False, True])
def test_block_moments_are_the_per_block_sums_minima_and_maxima(weighted):
    rng = np.random.default_rng(3)
    n, q = 11, 5
    valid, offsets = packed_problems(rng, n, [4, 9, 1])
    G = valid.shape[1]
    base = (rng.standard_normal((n, G)) * valid).astype(np.float32)
    base_min = np.where(valid, base, np.inf).astype(np.float32)
    base_max = np.where(valid, base, -np.inf).astype(np.float32)
    unit = (
        rng.uniform(0.5, 2, (n, G)).astype(np.float32) if weighted else np.zeros((0, 0), np.float32)
    )
    pop = (rng.standard_normal((n, q, G)) * valid[:, None, :]).astype(np.float32)
    B = len(offsets) - 1
    abs_obj = np.empty((q, n))
    total, total_sq = np.empty((B, q, n)), np.empty((B, q, n))
    low, high = np.empty((B, q, n), np.float32), np.empty((B, q, n), np.float32)

    block_moments(pop, base, base_min, base_max, unit, offsets, abs_obj, total, total_sq, low, high)

    a = np.abs(pop) * (unit[:, None, :] if weighted else 1)
    np.testing.assert_allclose(abs_obj, a.astype(np.float64).sum(axis=-1).T, rtol=1e-12)
    for b in range(B):
        g = slice(offsets[b], offsets[b + 1])
        v = (pop[:, :, g] + base[:, None, g]).astype(np.float64)
        np.testing.assert_allclose(total[b], v.sum(axis=-1).T, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(total_sq[b], (v * v).sum(axis=-1).T, rtol=1e-6, atol=1e-9)
        np.testing.assert_array_equal(
            low[b], (pop[:, :, g] + base_min[:, None, g]).min(axis=-1, initial=np.inf).T
        )
        np.testing.assert_array_equal(
            high[b], (pop[:, :, g] + base_max[:, None, g]).max(axis=-1, initial=-np.inf).T
        )


@pytest.mark.parametrize("parents", [1, 2, 4])
def test_tournament_mates_the_fittest_contenders_in_draw_order(parents):
    rng = np.random.default_rng(parents)
    P, C, n, T = 12, 11, 30, 5
    keys = rng.integers(0, 4, size=(P, n)).astype(np.float64)  # many ties
    contenders = sample_distinct(rng, P, T, (C, n))

    mates = tournament(keys, contenders, parents)

    ckeys = keys[contenders, np.arange(n)[None, :, None]]
    top = np.empty((C, n, parents), dtype=np.int64)
    for s in range(parents):  # fittest first; ties: the earlier draw
        top[..., s] = np.argmax(ckeys, axis=-1)
        np.put_along_axis(ckeys, top[..., s, None], -np.inf, axis=-1)
    top.sort(axis=-1)
    np.testing.assert_array_equal(mates, np.take_along_axis(contenders, top, axis=-1))


def test_draw_distinct_maps_uniforms_to_the_values_not_drawn_yet():
    # n = 5: u * 5 -> 2; u * 4 -> 2, the third value not drawn (0, 1, 3, ...) is 3; u * 3 -> 0
    u = np.array([[0.5, 0.6, 0.1], [0.99, 0.99, 0.99], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(draw_distinct(u, 5, SENTINEL), [[2, 3, 0], [4, 3, 2], [0, 1, 2]])
    short = draw_distinct(np.array([[0.7, 0.2, 0.5]]), 2, SENTINEL)  # n < k: the sentinel
    assert short[0].tolist() == [1, 0, SENTINEL]


def test_draw_distinct_is_uniform_over_ordered_tuples():
    u = np.random.default_rng(3).random((60_000, 3))
    d = draw_distinct(u, 4, SENTINEL)
    assert (np.sort(d, axis=1)[:, 1:] != np.sort(d, axis=1)[:, :-1]).all()
    codes = d[:, 0] * 16 + d[:, 1] * 4 + d[:, 2]
    counts = np.bincount(codes, minlength=64)[np.unique(codes)]
    assert len(counts) == 24  # 4 * 3 * 2 ordered triples, each about 2,500 times
    assert counts.min() > 2_300 and counts.max() < 2_700


def test_gap_positions_are_the_running_sums_of_the_geometric_gaps():
    e = np.random.default_rng(5).standard_exponential(10_000)
    rate = 1.0 / -np.log1p(-0.2)
    expected = np.cumsum(np.floor(e * rate) + 1).astype(np.int64) + 7
    np.testing.assert_array_equal(gap_positions(e, rate, 7, 10**9), expected)
    cut = gap_positions(e, rate, 7, int(expected[100]))  # stops before the first >= size
    np.testing.assert_array_equal(cut, expected[:100])


def test_survive_keeps_the_fittest_as_a_stable_sort_does():
    """The P fittest of parents and children survive, ties to parents then lower slots, and
    each entering child takes the slot of a dropped parent in order: the NumPy formulation's
    population, byte for byte, on keys with many ties."""
    rng = np.random.default_rng(1)
    for _ in range(50):
        P, C, n, G = 24, 23, int(rng.integers(1, 40)), int(rng.integers(1, 9))
        keys, c_keys = np.round(rng.normal(size=(P, n)), 1), np.round(rng.normal(size=(C, n)), 1)
        pop = rng.normal(size=(n, P, G)).astype(np.float32)
        child = rng.normal(size=(n, C, G)).astype(np.float32)
        obj, inf, c_obj, c_inf = (
            rng.random((P, n)),
            rng.random((P, n)),
            rng.random((C, n)),
            rng.random((C, n)),
        )
        want_pop, want_obj, want_inf = pop.copy(), obj.copy(), inf.copy()
        everyone = np.concatenate([keys, c_keys])
        order = np.argsort(-everyone, axis=0, kind="stable")[:P]
        survives = np.zeros(everyone.shape, dtype=bool)
        np.put_along_axis(survives, order, True, axis=0)
        d_col, d_slot = np.nonzero(~survives[:P].T)
        e_col, e_child = np.nonzero(survives[P:].T)
        want_pop[d_col, d_slot] = child[e_col, e_child]
        want_obj[d_slot, d_col] = c_obj[e_child, e_col]
        want_inf[d_slot, d_col] = c_inf[e_child, e_col]
        survive(keys, c_keys, pop, child, obj, inf, c_obj, c_inf)
        assert pop.tobytes() == want_pop.tobytes()
        assert obj.tobytes() == want_obj.tobytes() and inf.tobytes() == want_inf.tobytes()
