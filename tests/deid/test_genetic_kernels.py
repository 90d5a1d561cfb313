"""Compiled loops of the genetic optimiser against the NumPy expressions they replace."""

from __future__ import annotations

import numpy as np
import pytest

from mimic_deid.deid.genetic._kernels import (
    STAT_CODES,
    breed,
    cut_points,
    evaluate,
    select,
    survive,
)


def reference_draws(rng: np.random.Generator, n: int, k: int) -> list:
    """``k`` draws without replacement from ``range(n)`` as the kernels specify them: draw
    ``j`` takes the ``floor(u * (n - j))``-th of the values not drawn yet, ``u = rng.random()``,
    one uniform per draw even past ``n`` (``None`` then)."""
    left, out = list(range(n)), []
    for _ in range(k):
        u = rng.random()
        out.append(left.pop(min(int(u * len(left)), len(left) - 1)) if left else None)
    return out


def replayed(rng: np.random.Generator) -> np.random.Generator:
    """A generator in ``rng``'s state: it draws the numbers ``rng`` will draw next."""
    replay = np.random.default_rng()
    replay.bit_generator.state = rng.bit_generator.state
    return replay


def packed_problems(rng: np.random.Generator, n: int, widths: list[int]):
    """Valid masks of ``n`` problems with blocks of ``widths`` genes, valid genes first."""
    parts = []
    for w in widths:
        cnt = rng.integers(0, w + 1, size=n)
        parts.append(np.arange(w)[None, :] < cnt[:, None])
    valid = np.concatenate(parts, axis=1)
    offsets = np.cumsum([0, *widths]).astype(np.int64)
    return valid, offsets


def crossover_problem(rng: np.random.Generator, parents: int, n=9, P=7, C=6):
    """A population of packed problems (blocks of 5 and 8 genes) and the draws of a crossover."""
    valid, _ = packed_problems(rng, n, [5, 8])
    G = valid.shape[1]
    rank = (np.cumsum(valid, axis=1) - 1).astype(np.int32)
    n_valid = valid.sum(axis=1)
    pop = (rng.standard_normal((n, P, G)) * valid[:, None, :]).astype(np.float32)
    mates = select(rng.standard_normal((P, n)), parents, parents, rng)[:C]
    cuts = cut_points(n_valid, parents - 1, C, G, rng)
    return pop, mates, cuts, rank, valid


@pytest.mark.parametrize("parents", [1, 2, 3])
def test_breed_is_segment_crossover_then_mutation_of_valid_genes(parents):
    rng = np.random.default_rng(parents)
    pop, mates, cuts, rank, valid = crossover_problem(rng, parents)
    n, _, G = pop.shape
    C = mates.shape[0]
    child = np.full((n, C, G), np.nan, dtype=np.float32)
    state = rng.bit_generator.state

    breed(pop, mates, cuts, rank, valid, rng, 0.3, 2.5, child)

    # reference: parent s from the s-th cut on (by rank), then the mutation of the docstring,
    # replayed draw for draw from a generator in the same state
    seg = (rank[:, None, :, None] >= cuts.transpose(1, 0, 2)[:, :, None, :]).sum(axis=-1)
    slot = np.take_along_axis(mates.transpose(1, 0, 2), seg, axis=-1)  # (n, C, G)
    expected = np.ascontiguousarray(pop[np.arange(n)[:, None, None], slot, np.arange(G)])
    replay = np.random.default_rng()
    replay.bit_generator.state = state
    rate = 1.0 / -np.log1p(-0.3)
    flat, on_valid = expected.reshape(-1), np.broadcast_to(valid[:, None, :], expected.shape)
    pos, mutated = int(np.floor(replay.standard_exponential() * rate)), 0
    while pos < flat.size:
        if on_valid.reshape(-1)[pos]:
            flat[pos] += np.float32(2.5 * replay.standard_normal())
            mutated += 1
        pos += int(np.floor(replay.standard_exponential() * rate)) + 1
    assert mutated > 0
    np.testing.assert_array_equal(child, expected)
    assert not child[np.broadcast_to(~valid[:, None, :], child.shape)].any()
    assert rng.bit_generator.state == replay.bit_generator.state  # no other draw was made


def test_breed_mutates_each_valid_gene_with_its_probability_and_sd():
    rng = np.random.default_rng(11)
    n, P, G = 50, 4, 400
    valid = np.arange(G)[None, :] < rng.integers(100, G + 1, size=n)[:, None]
    rank = (np.cumsum(valid, axis=1) - 1).astype(np.int32)
    pop = np.zeros((n, P, G), dtype=np.float32)
    mates = np.zeros((P - 1, n, 1), dtype=np.int64)  # one parent: the child copies slot 0
    cuts = np.empty((P - 1, n, 0), dtype=np.int32)
    child = np.empty((n, P - 1, G), dtype=np.float32)
    on_valid = np.broadcast_to(valid[:, None, :], child.shape)

    breed(pop, mates, cuts, rank, valid, rng, 0.2, 3.0, child)
    changed = child[on_valid] != 0
    assert abs(changed.mean() - 0.2) < 0.005  # ~60,000 valid genes
    assert abs(child[on_valid][changed].std() - 3.0) < 0.05
    assert not child[~on_valid].any()

    breed(pop, mates, cuts, rank, valid, rng, 1.0, 3.0, child)
    assert (child[on_valid] != 0).all()
    for prob, sd in ((0.0, 3.0), (0.2, 0.0)):  # no mutation: no draw either
        state = rng.bit_generator.state
        breed(pop, mates, cuts, rank, valid, rng, prob, sd, child)
        assert not child.any() and rng.bit_generator.state == state


@pytest.mark.parametrize("weighted", [False, True])
def test_evaluate_sums_the_weighted_errors_of_the_block_statistics(weighted):
    rng = np.random.default_rng(3)
    n, q = 11, 5
    valid, offsets = packed_problems(rng, n, [4, 9, 1])
    G, B = valid.shape[1], len(offsets) - 1
    valid[0, offsets[2] :] = False  # an all-padding block: its terms count 0
    base = (rng.standard_normal((n, G)) * valid).astype(np.float32)
    base_min = np.where(valid, base, np.inf).astype(np.float32)
    base_max = np.where(valid, base, -np.inf).astype(np.float32)
    unit = (
        rng.uniform(0.5, 2, (n, G)).astype(np.float32) if weighted else np.zeros((0, 0), np.float32)
    )
    pop = (rng.standard_normal((n, q, G)) * valid[:, None, :]).astype(np.float32)
    cnt = np.stack([valid[:, offsets[b] : offsets[b + 1]].sum(axis=1) for b in range(B)])
    terms = [(0, "mean"), (0, "max"), (1, "var"), (1, "mean"), (1, "min"), (2, "mean")]
    term_block = np.array([b for b, _ in terms])
    term_stat = np.array([STAT_CODES[s] for _, s in terms])
    target = rng.standard_normal((len(terms), n))
    weight = rng.uniform(0.5, 3, (len(terms), n))
    weight[:, 3] = 0.0  # an unconstrained problem
    weight[cnt[term_block] == 0] = 0.0  # as the search sets them: no term on an empty block
    abs_obj, unfeasibility = np.empty((q, n)), np.empty((q, n))

    evaluate(
        pop, base, base_min, base_max, unit, offsets, cnt.astype(np.float64),
        term_block, term_stat, target, weight, abs_obj, unfeasibility,
    )  # fmt: skip

    a = np.abs(pop) * (unit[:, None, :] if weighted else 1)
    np.testing.assert_allclose(abs_obj, a.astype(np.float64).sum(axis=-1).T, rtol=1e-12)
    stats = {}
    for b in range(B):
        g = slice(offsets[b], offsets[b + 1])
        v = (pop[:, :, g] + base[:, None, g]).astype(np.float64)
        size = np.maximum(cnt[b], 1)[:, None]
        mean = v.sum(axis=-1) / size
        stats[b, "mean"], stats[b, "var"] = mean, (v * v).sum(axis=-1) / size - mean**2
        stats[b, "min"] = (pop[:, :, g] + base_min[:, None, g]).min(axis=-1, initial=np.inf)
        stats[b, "max"] = (pop[:, :, g] + base_max[:, None, g]).max(axis=-1, initial=-np.inf)
    with np.errstate(invalid="ignore"):
        err = [
            np.abs(stats[t] - target[j][:, None]) * weight[j][:, None] for j, t in enumerate(terms)
        ]
    expected = np.nan_to_num(np.stack(err), nan=0.0).sum(axis=0).T  # (q, n)
    assert np.isfinite(unfeasibility).all() and (unfeasibility[:, 3] == 0).all()
    np.testing.assert_allclose(unfeasibility, expected, rtol=1e-6)  # v * v in float32


@pytest.mark.parametrize("parents", [1, 2, 4])
def test_select_mates_the_fittest_of_distinct_contenders_in_draw_order(parents):
    rng = np.random.default_rng(parents)
    P, n, T = 12, 30, 5
    keys = rng.integers(0, 4, size=(P, n)).astype(np.float64)  # many ties
    replay = replayed(rng)

    mates = select(keys, T, parents, rng)

    # reference: the contenders drawn cell after cell from the same generator state, then the
    # parents fittest, fittest first, ties to the earlier draw, kept in draw order
    contenders = np.array([[reference_draws(replay, P, T) for _ in range(n)] for _ in range(P - 1)])
    ckeys = keys[contenders, np.arange(n)[None, :, None]]
    top = np.empty((P - 1, n, parents), dtype=np.int64)
    for s in range(parents):
        top[..., s] = np.argmax(ckeys, axis=-1)
        np.put_along_axis(ckeys, top[..., s, None], -np.inf, axis=-1)
    top.sort(axis=-1)
    np.testing.assert_array_equal(mates, np.take_along_axis(contenders, top, axis=-1))
    assert rng.random() == replay.random()  # both drew (P - 1) * n * T uniforms
    assert (np.diff(np.sort(mates, axis=-1), axis=-1) > 0).all()  # distinct mates


def test_select_draws_every_ordered_tuple_of_contenders_alike():
    # equal keys and parents == tournament: the mates are the contenders, in draw order
    d = select(np.zeros((4, 20_000)), 3, 3, np.random.default_rng(3)).reshape(-1, 3)
    assert (np.sort(d, axis=1)[:, 1:] != np.sort(d, axis=1)[:, :-1]).all()
    assert d.min() == 0 and d.max() == 3
    codes = d[:, 0] * 16 + d[:, 1] * 4 + d[:, 2]
    counts = np.bincount(codes, minlength=64)[np.unique(codes)]
    assert len(counts) == 24  # 4 * 3 * 2 ordered triples, each about 2,500 times
    assert counts.min() > 2_300 and counts.max() < 2_700


@pytest.mark.parametrize("n_cuts", [0, 1, 3])
def test_cut_points_are_sorted_distinct_ranks_after_the_first_gene(n_cuts):
    rng = np.random.default_rng(10 + n_cuts)
    n_valid, C, G = np.array([1, 2, 3, 4, 9, 40]), 200, 40
    replay = replayed(rng)

    cuts = cut_points(n_valid, n_cuts, C, G, rng)

    # reference: distinct draws from the n_valid - 1 ranks after the first, sorted, shifted by
    # one; the draws a problem has no values for give G + 1
    ref = np.full((C, len(n_valid), n_cuts), G + 1)
    for c in range(C):
        for i, nv in enumerate(n_valid):
            drawn = sorted(v + 1 for v in reference_draws(replay, nv - 1, n_cuts) if v is not None)
            ref[c, i, : len(drawn)] = drawn
    assert cuts.dtype == np.int32 and cuts.shape == (C, len(n_valid), n_cuts)
    np.testing.assert_array_equal(cuts, ref)
    assert rng.random() == replay.random()
    for i, nv in enumerate(n_valid):
        got = cuts[:, i]
        inside = got[got <= G]
        assert ((inside >= 1) & (inside < nv)).all()
        assert (got <= G).sum(axis=-1).max(initial=0) == min(n_cuts, nv - 1)


def test_cut_points_take_each_problems_own_range():
    n_valid = np.tile(np.array([2, 3, 8]), 2)
    cuts = cut_points(n_valid, 2, 5_000, 8, np.random.default_rng(4))  # (5000, 6, 2)
    two, three, eight = cuts[:, 0::3], cuts[:, 1::3], cuts[:, 2::3]
    assert (two[..., 0] == 1).all() and (two[..., 1] == 9).all()  # one rank, then no segment
    assert (three == np.array([1, 2])).all()  # both ranks, ascending
    assert eight.min() == 1 and eight.max() == 7 and (eight[..., 0] < eight[..., 1]).all()
    assert np.bincount(eight.reshape(-1), minlength=8)[1:].min() > 2_500  # ~2,860 each


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
