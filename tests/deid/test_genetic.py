"""Genetic constraint optimiser (seed §4.2, fitness variants of §6.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_adhoc import DIMS, FEATURES, group_targets, make_class

from mimic_deid.core.errors import ConfigError
from mimic_deid.core.seeding import spawn_rngs
from mimic_deid.deid.features import compute_features, feature_spec
from mimic_deid.deid.genetic import (
    GeneticParams,
    chunk_size,
    fitness_key,
    met_at_start,
    optimise_genetic,
    plan_genetic,
)
from mimic_deid.deid.methods import method_label, parse_method_label
from mimic_deid.deid.optimise import unfeasibility

FAST = GeneticParams(
    fitness="NA",
    population=12,
    tournament=4,
    parents=2,
    mutation_sd=3.0,
    mutation_prob=0.2,
    init_sd=1.0,
    patience=40,
    max_iterations=150,
    normalise_features=False,
    init="gaussian",
)


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(11)
    spec = feature_spec(FEATURES, DIMS)
    X = make_class(rng, 60, 24)
    X[0, :, DIMS.index("glucose")] = np.nan
    F = compute_features(X, spec)
    return X, group_targets(F, 5), spec


def with_(params: GeneticParams, **changes) -> GeneticParams:
    return GeneticParams(**{**params.__dict__, **changes})


def test_params_from_label_and_validation():
    label = "genetic-NA-pop24-tour5-par2-msd3-mp0.2-isd1-pat100-max600-norm0-layseries_dimension-initmean_shift"
    name, raw = parse_method_label(label)
    params = GeneticParams.from_dict(raw)
    assert params == GeneticParams()  # the defaults are the config defaults
    assert method_label(name, params.__dict__) == label
    assert GeneticParams.from_dict({"normalise_features": 1}).normalise_features is True
    with pytest.raises(ConfigError) as info:
        GeneticParams.from_dict({"popsize": 3})
    assert str(info.value) == (
        "genetic optimiser: unknown parameter(s) ['popsize'], expected some of ['fitness', "
        "'init', 'init_sd', 'layout', 'max_iterations', 'mutation_prob', 'mutation_sd', "
        "'normalise_features', 'parents', 'patience', 'population', 'tournament']"
    )
    with pytest.raises(ConfigError) as info:
        GeneticParams.from_dict({"population": 2.5})
    assert str(info.value) == "genetic optimiser parameter 'population': expected int, got 2.5"
    with pytest.raises(ConfigError) as info:
        GeneticParams(fitness="XX")
    assert str(info.value) == (
        "genetic optimiser parameter 'fitness': expected one of ('annealed', 'DF', 'CI', "
        "'NA'), got 'XX'"
    )
    with pytest.raises(ConfigError) as info:
        GeneticParams(population=4, tournament=5)
    assert str(info.value) == (
        "genetic optimiser parameter 'tournament': expected an integer in [parents=2, "
        "population], got 5"
    )
    with pytest.raises(ConfigError) as info:
        GeneticParams(mutation_prob=1.5)
    assert str(info.value) == (
        "genetic optimiser parameter 'mutation_prob': expected a probability in [0, 1], got 1.5"
    )


def test_deterministic_and_reduces_unfeasibility(problem):
    X, T, spec = problem
    a = optimise_genetic(X, T, spec, FAST, np.random.default_rng(5))
    b = optimise_genetic(X, T, spec, FAST, np.random.default_rng(5))
    assert a.X.tobytes() == b.X.tobytes()
    np.testing.assert_array_equal(a.iterations, b.iterations)
    before = unfeasibility(compute_features(X, spec), T)  # p = 0
    assert a.unfeasibility.mean() < 0.5 * before.mean()
    assert np.all((a.iterations >= FAST.patience) & (a.iterations <= FAST.max_iterations))
    # metrics are those of the returned series
    F = compute_features(a.X, spec)
    np.testing.assert_allclose(a.unfeasibility, np.nansum(np.abs(F - T), axis=1))
    np.testing.assert_allclose(a.distortion, np.nansum(np.abs(a.X - X), axis=(1, 2)) / X.shape[1])


def test_only_non_null_feature_records_change(problem):
    X, T, spec = problem
    T = T.copy()
    T[4] = np.nan  # no target at all: the series must not change
    T[5, spec.dims == DIMS.index("heart_rate")] = np.nan  # heart rate unconstrained
    params = with_(FAST, max_iterations=20, normalise_features=True)
    res = optimise_genetic(X, T, spec, params, np.random.default_rng(1), chunk_problems=16)
    np.testing.assert_array_equal(np.isnan(res.X), np.isnan(X))
    ph = DIMS.index("ph")
    assert res.X[:, :, ph].tobytes() == X[:, :, ph].tobytes()
    assert res.X[4].tobytes() == X[4].tobytes() and res.iterations[4] == 0
    hr = DIMS.index("heart_rate")
    assert res.X[5, :, hr].tobytes() == X[5, :, hr].tobytes()
    changed = ~np.isnan(X[6, :, hr]) & (res.X[6, :, hr] != X[6, :, hr])
    assert changed.any()


def test_elite_never_gets_worse(problem):
    X, T, spec = problem
    history: dict[int, list[float]] = {}

    def record(m, series, best_key):
        for i, k in zip(series.tolist(), best_key.tolist(), strict=True):
            history.setdefault(i, []).append(k)

    optimise_genetic(X[:20], T[:20], spec, FAST, np.random.default_rng(2), callback=record)
    k = len(spec.feature_dims)  # one problem per series and feature dimension
    assert {i // k for i in history} == set(range(20)) and len(history) > 20
    for keys in history.values():
        assert np.all(np.diff(keys) >= 0)
    # and the search does improve: a problem may keep its initial elite (a two-gene mean-only
    # problem whose best start is near the optimum), most do not
    improved = [keys[-1] > keys[0] for keys in history.values()]
    assert np.mean(improved) > 0.9


@pytest.mark.parametrize("fitness", ["annealed", "DF", "CI"])
def test_annealed_variants_never_overflow(problem, fitness):
    X, T, spec = problem
    Xs = X[:3, :8]
    T_far = compute_features(Xs, spec) + 1000.0  # huge infeasibility for every feature
    iters = 2000 if fitness == "annealed" else 300
    params = with_(FAST, fitness=fitness, patience=10**6, max_iterations=iters)
    seen = []
    res = optimise_genetic(
        Xs, T_far, spec, params, np.random.default_rng(0), callback=lambda m, s, k: seen.append(k)
    )
    assert np.all(res.iterations == iters)
    assert np.isfinite(res.X[~np.isnan(Xs)]).all()
    assert np.isfinite(res.unfeasibility).all() and np.isfinite(res.distortion).all()
    keys = np.concatenate(seen)
    assert np.isfinite(keys).all()
    # the seed's fitness itself overflows here: -|obj| * exp(inf * sqrt(m)) = -inf
    with np.errstate(over="ignore"):
        assert np.isinf(-1.0 * np.exp(1000.0 * math.sqrt(iters)))


def test_fitness_key_orders_like_the_seed_formulas():
    rng = np.random.default_rng(0)
    obj, inf = rng.uniform(0.1, 5, 200), rng.uniform(0, 0.5, 200)
    for m in (1, 50, 400):
        seed_fitness = {
            "annealed": -obj * np.exp(inf * np.sqrt(m)),
            "DF": -obj * np.exp(inf / 100 * np.sqrt(m)),
            "CI": -obj * np.exp(inf * np.sqrt(min(m, 300))),
            "NA": -(100 * inf + obj),
        }
        for name, fit in seed_fitness.items():
            key = fitness_key(obj, inf, m, name)
            np.testing.assert_array_equal(
                np.argsort(key, kind="stable"), np.argsort(fit, kind="stable")
            )


def test_more_parents_and_chunks(problem):
    X, T, spec = problem
    params = with_(FAST, parents=3, tournament=5, max_iterations=30)
    res = optimise_genetic(X[:10], T[:10], spec, params, np.random.default_rng(4), chunk_problems=3)
    assert res.X.shape == X[:10].shape
    before = unfeasibility(compute_features(X[:10], spec), T[:10])
    assert res.unfeasibility.mean() < before.mean()


def test_layouts_and_inits_are_named_errors():
    with pytest.raises(ConfigError) as info:
        GeneticParams(layout="rows")
    assert str(info.value) == (
        "genetic optimiser parameter 'layout': expected one of ('series_dimension', 'joint'), "
        "got 'rows'"
    )
    with pytest.raises(ConfigError) as info:
        GeneticParams(init="zero")
    assert str(info.value) == (
        "genetic optimiser parameter 'init': expected one of ('gaussian', 'mean_shift'), got 'zero'"
    )


def test_series_dimension_layout_beats_joint_and_mean_shift_starts_closer(problem):
    """Seed Table 6.2 is reached only with one problem per (series, dimension); the mean-shift
    initial population meets the mean targets from the first generation."""
    X, T, spec = problem
    X, T = X[:30], T[:30]
    rng = np.random.default_rng
    res = {
        (lay, init): optimise_genetic(X, T, spec, with_(FAST, layout=lay, init=init), rng(5))
        for lay in ("series_dimension", "joint")
        for init in ("gaussian", "mean_shift")
    }
    unf = {key: float(r.unfeasibility.mean()) for key, r in res.items()}
    assert unf["series_dimension", "gaussian"] < unf["joint", "gaussian"]
    assert unf["series_dimension", "mean_shift"] < unf["series_dimension", "gaussian"]
    first = {}
    for init in ("gaussian", "mean_shift"):
        p = with_(FAST, init=init, max_iterations=1)
        first[init] = optimise_genetic(X, T, spec, p, rng(5)).unfeasibility.mean()
    assert first["mean_shift"] < 0.8 * first["gaussian"]


def test_normalising_is_never_worse_with_the_default_layout(problem):
    """Perturbation and feature errors of a dimension scale alike: each (series, dimension)
    problem's ranking is unchanged up to float rounding (5 % tolerance)."""
    X, T, spec = problem
    X, T = X[:30], T[:30]
    base = optimise_genetic(X, T, spec, with_(FAST, init="mean_shift"), np.random.default_rng(3))
    norm = optimise_genetic(
        X,
        T,
        spec,
        with_(FAST, init="mean_shift", normalise_features=True),
        np.random.default_rng(3),
    )
    assert norm.unfeasibility.mean() <= 1.05 * base.unfeasibility.mean()


def test_series_dimension_result_does_not_depend_on_the_other_dimensions(problem):
    """Independent problems: a dimension's released values depend only on its own records and
    targets (given the same random stream), so changing another dimension changes nothing."""
    X, T, spec = problem
    X, T = X[:10].copy(), T[:10]
    p = with_(FAST, max_iterations=30)
    a = optimise_genetic(X, T, spec, p, np.random.default_rng(8))
    assert a.X.shape == X.shape
    ph = DIMS.index("ph")  # not a feature dimension: never changed
    assert a.X[:, :, ph].tobytes() == X[:, :, ph].tobytes()
    again = optimise_genetic(X, T, spec, p, np.random.default_rng(8))
    assert again.X.tobytes() == a.X.tobytes()


def test_a_dimension_with_one_record_is_optimised_for_the_mean_only(problem):
    X, T, spec = problem
    X, T = X[:6].copy(), T[:6].copy()
    hr = DIMS.index("heart_rate")
    X[2, 1:, hr] = np.nan  # one heart-rate record: its variance is 0 whatever happens
    var_col = spec.names.index("heart_rate_var")
    T[2, var_col] = 50.0
    T[3, var_col] = np.nan  # NaN targets stay unconstrained
    res = optimise_genetic(X, T, spec, with_(FAST, max_iterations=40), np.random.default_rng(4))
    assert res.detail["mean_only_dims"].tolist() == [0, 0, 1, 0, 0, 0]
    mean_col = spec.names.index("heart_rate_mean")
    assert abs(res.X[2, 0, hr] - T[2, mean_col]) < abs(X[2, 0, hr] - T[2, mean_col])


def test_a_dimension_that_already_meets_its_targets_is_released_unchanged(problem):
    """A class of series that never observed glucose shares the class-mean fill, so their
    glucose targets are their own features: the zero perturbation is optimal (no distortion,
    no unfeasibility) and the search leaves them alone instead of adding noise."""
    X, _, spec = problem
    X = X[:8].copy()
    glu = DIMS.index("glucose")
    X[:, :, glu] = 97.3  # the same fill for every series
    F = compute_features(X, spec)
    T = group_targets(F, 4)
    cols = [j for j, name in enumerate(spec.names) if name.startswith("glucose")]
    rest = [0, 1, 2, 3, 4, 6, 7]
    T[np.ix_(rest, cols)] = F[rest][:, cols].mean(axis=0)  # their class mean, rounded:
    assert T[0, cols[0]] != F[0, cols[0]]  # off by float rounding
    T[5, cols] = [99.0, 4.0, 95.0, 101.0]  # series 5's glucose targets are elsewhere
    for fitness in ("NA", "annealed"):
        res = optimise_genetic(
            X, T, spec, with_(FAST, fitness=fitness, max_iterations=60), np.random.default_rng(2)
        )
        unchanged = [i for i in range(8) if res.X[i, :, glu].tobytes() == X[i, :, glu].tobytes()]
        assert unchanged == [0, 1, 2, 3, 4, 6, 7]
        assert res.detail["met_at_start_dims"].tolist() == [1, 1, 1, 1, 1, 0, 1, 1]
        assert res.iterations[5] > 0  # the other dimensions and series 5 are searched

    # every dimension of every series met: nothing is searched, 0 generations
    same = compute_features(X, spec)
    res = optimise_genetic(X, same, spec, FAST, np.random.default_rng(2))
    assert res.X.tobytes() == X.tobytes()
    assert res.iterations.tolist() == [0] * 8
    assert res.unfeasibility.tolist() == [0.0] * 8
    assert res.detail["met_at_start_dims"].tolist() == [len(spec.feature_dims)] * 8
    joint = optimise_genetic(X, same, spec, with_(FAST, layout="joint"), np.random.default_rng(2))
    assert joint.X.tobytes() == X.tobytes()
    assert joint.iterations.tolist() == [0] * 8


def test_met_at_start_allows_float_rounding_only():
    spec = feature_spec({"glucose": ["mean", "var"]}, ["glucose"])
    X = np.full((3, 4, 1), 120.0)
    X[2, 0, 0] = 121.0
    exact = compute_features(X, spec)
    T = exact.copy()
    T[1, 0] += 1e-8  # rounding of a class mean near 120: within 1e-9 * 120
    T[2, 0] += 1e-6  # a real difference
    assert met_at_start(X, T, spec).tolist() == [True, True, False]
    T[0, 1] = 1e-10  # a variance target of (nearly) 0: within 1e-9 * max(1, |t|)
    assert met_at_start(X, T, spec).tolist() == [True, True, False]
    T[0] = np.nan  # nothing constrained: not a problem of the search
    assert met_at_start(X, T, spec).tolist() == [False, True, False]


def test_chunks_give_the_same_bytes_whatever_the_thread_count(problem):
    """Each chunk has its own generator: one process or two workers, same release."""
    X, T, spec = problem
    p = with_(FAST, max_iterations=40)
    one = optimise_genetic(X, T, spec, p, np.random.default_rng(6), chunk_problems=16, threads=1)
    two = optimise_genetic(X, T, spec, p, np.random.default_rng(6), chunk_problems=16, threads=2)
    assert one.X.tobytes() == two.X.tobytes()
    assert one.iterations.tobytes() == two.iterations.tobytes()
    assert one.unfeasibility.tobytes() == two.unfeasibility.tobytes()
    # the chunking is part of the result: another chunk size draws other streams
    other = optimise_genetic(X, T, spec, p, np.random.default_rng(6), chunk_problems=20)
    assert other.X.tobytes() != one.X.tobytes()


def test_a_chunk_depends_only_on_its_own_generator(problem):
    """Chunks run in any order (reversed here) give the class's result; chunk c's generator is
    the c-th derived from the class generator, whatever the number of chunks."""
    X, T, spec = problem
    p = with_(FAST, max_iterations=30, layout="joint")
    plan = plan_genetic(X, T, spec, p, np.random.default_rng(9), chunk_problems=16)
    assert plan.chunk_sizes() == [16, 16, 16, 12]
    tasks = plan.tasks()
    results = [None] * len(tasks)
    for c in reversed(range(len(tasks))):
        results[c] = tasks[c]()
    assembled = plan.assemble(results)
    direct = optimise_genetic(X, T, spec, p, np.random.default_rng(9), chunk_problems=16)
    assert assembled.X.tobytes() == direct.X.tobytes()
    # the first 16 series are one chunk: alone, with the same derived generator, same result
    first = spawn_rngs(np.random.default_rng(9), 1)[0]
    alone = plan_genetic(X[:16], T[:16], spec, p, np.random.default_rng(0), chunk_problems=16)
    alone.chunk_rngs[0] = first
    assert alone.assemble([alone.tasks()[0]()]).X.tobytes() == direct.X[:16].tobytes()


def test_problems_are_chunked_widest_first(problem):
    """One problem per (series, dimension), cut into chunks in decreasing order of genes: every
    problem in exactly one chunk, and a chunk of sparse dimensions is padded only to its own
    widest problem (not to the hourly dimensions' length)."""
    X, T, spec = problem
    X = X.copy()
    X[:, 1:, DIMS.index("glucose")] = np.nan  # one record per series
    plan = plan_genetic(X, T, spec, FAST, np.random.default_rng(2), chunk_problems=50)
    k = len(spec.feature_dims)
    rows = np.concatenate(plan.chunk_rows)
    assert np.array_equal(np.sort(rows), np.arange(X.shape[0] * k))
    Xp, tp = plan._problems[:2]
    widths = (~np.isnan(Xp[rows, :, 0])).sum(axis=1) * ~np.isnan(tp[rows]).all(axis=1)
    assert np.all(np.diff(widths) <= 0)
    starts = np.cumsum([0] + plan.chunk_sizes()[:-1])
    assert plan.chunk_widths == [int(widths[s]) for s in starts]
    assert plan.chunk_widths[-1] <= 1 and plan.chunk_costs()[0] == 50 * plan.chunk_widths[0]
    # the result is that of the same chunks run in one process
    res = optimise_genetic(X, T, spec, FAST, np.random.default_rng(2), chunk_problems=50)
    assert plan.assemble([t() for t in plan.tasks()]).X.tobytes() == res.X.tobytes()


def test_spawned_generators_depend_on_the_state_and_index_only():
    few = [g.random(4) for g in spawn_rngs(np.random.default_rng(3), 2)]
    many = [g.random(4) for g in spawn_rngs(np.random.default_rng(3), 5)]
    assert all(a.tobytes() == b.tobytes() for a, b in zip(few, many[:2], strict=True))
    assert len({m.tobytes() for m in many}) == 5  # distinct streams per part
    advanced = np.random.default_rng(3)
    advanced.random()
    assert spawn_rngs(advanced, 1)[0].random(4).tobytes() != few[0].tobytes()
    with pytest.raises(ValueError) as info:
        spawn_rngs(np.random.default_rng(3), -1)
    assert str(info.value) == "spawn_rngs: n must be an integer >= 0, got -1"


def test_default_chunking_splits_a_large_class_independently_of_threads():
    """A 48-h class of 6,880 series (the real data's largest) is split into ~50 chunks, so two
    workers share it; the chunk size is a function of the class alone."""
    per = chunk_size(6880, 48 * 7, 24)
    assert per == 129 and -(-6880 // per) == 54
    assert chunk_size(5, 48 * 7, 24) == 5  # a small class is one chunk
    assert chunk_size(6880, 2000 * 7, 24) == 8  # at least 8 series per chunk


def test_bad_threads_chunks_and_callback_are_named_errors(problem):
    X, T, spec = problem
    rng = np.random.default_rng
    with pytest.raises(ConfigError) as info:
        optimise_genetic(X, T, spec, FAST, rng(1), threads=0)
    assert str(info.value) == "threads: expected a positive integer, got 0"
    with pytest.raises(ConfigError) as info:
        optimise_genetic(X, T, spec, FAST, rng(1), chunk_problems=0)
    assert str(info.value) == "genetic optimiser: chunk_problems must be an integer >= 1, got 0"
    with pytest.raises(ConfigError) as info:
        optimise_genetic(X, T, spec, FAST, rng(1), chunk_problems=2.5)
    assert str(info.value) == "genetic optimiser: chunk_problems must be an integer >= 1, got 2.5"
    with pytest.raises(ConfigError) as info:
        optimise_genetic(X, T, spec, FAST, rng(1), threads=2, callback=lambda m, s, k: None)
    assert str(info.value) == (
        "genetic optimiser: a callback needs threads=1 (chunks in worker processes cannot call "
        "back), got threads=2"
    )
