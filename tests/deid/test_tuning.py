"""Tuning series selection and the seed's Tables 6.1 / 6.2 (deid/tuning.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
import pytest
from test_adhoc import DIMS, FEATURES, group_targets, make_class

from mimic_deid.core.errors import ConfigError
from mimic_deid.deid import mondrian
from mimic_deid.deid.adhoc import optimise_adhoc
from mimic_deid.deid.features import FeatureSpec, compute_features, feature_spec
from mimic_deid.deid.genetic import GeneticParams, optimise_genetic
from mimic_deid.deid.optimise import OptimiseResult
from mimic_deid.deid.tuning import (
    TuningClass,
    TuningRun,
    complete_series,
    eligible_series,
    optimiser_table,
    select_tuning_series,
    tuning_spec,
)


def run_tuning(
    selection: Mapping[int, TuningClass],
    optimiser: Callable[[np.ndarray, np.ndarray, FeatureSpec], OptimiseResult],
) -> dict[int, TuningRun]:
    """Apply ``optimiser(X, targets, spec)`` to every tuning class; same keys and order."""
    return {L: TuningRun(tc, optimiser(tc.X, tc.targets, tc.spec)) for L, tc in selection.items()}


def fake_partition(F, k, heuristic, X=None):
    """Deterministic stand-in for Mondrian: sorted groups of k on the first feature."""
    order = np.argsort(np.nan_to_num(F[:, 0], nan=np.inf), kind="stable")
    labels = np.empty(len(F), dtype=np.int64)
    labels[order] = np.arange(len(F)) // k
    return labels


def fake_targets(F, labels):
    T = np.full_like(F, np.nan)
    for c in np.unique(labels):
        rows = labels == c
        T[rows] = np.where(np.isnan(F[rows]), np.nan, np.nanmean(F[rows], axis=0))
    return T


@pytest.fixture(scope="module")
def classes():
    rng = np.random.default_rng(3)
    out = {L: make_class(rng, 40, L) for L in (5, 25, 48, 75, 100)}  # no class of length 50
    return out


@pytest.fixture(scope="module")
def tspec():
    return tuning_spec(feature_spec(FEATURES, DIMS))


def test_tuning_spec_drops_height_and_weight(tspec):
    assert tspec.n_features == 12
    assert not any(n.startswith(("height", "weight")) for n in tspec.names)
    assert sorted(DIMS[d] for d in tspec.feature_dims) == [
        "diastolic_blood_pressure",
        "glucose",
        "heart_rate",
    ]


def test_select_complete_series_and_fallback(classes, tspec):
    fill = {}
    for L, X in classes.items():  # make a few series complete in the feature dims
        X = X.copy()
        X[:25, :, tspec.feature_dims] = np.nan_to_num(X[:25, :, tspec.feature_dims], nan=100.0)
        fill[L] = X
    sel = select_tuning_series(
        fill,
        tspec,
        n_per_class=20,
        rng=np.random.default_rng(0),
        partition=fake_partition,
        targets_of=fake_targets,
        eligibility="complete",
    )
    assert list(sel) == [5, 25, 48, 75, 100]
    assert sel[48].requested_length == 50 and sel[48].length == 48
    for L, tc in sel.items():
        assert isinstance(tc, TuningClass)
        assert tc.X.shape == (20, L, len(DIMS)) and tc.targets.shape == (20, 12)
        assert complete_series(tc.X, tspec.feature_dims).all()
        assert tc.n_complete >= 25 and np.all(np.diff(tc.rows) > 0)
        # targets come from the partition of the *whole* class
        F = compute_features(fill[L], tspec)
        full = fake_targets(F, fake_partition(F, 5, "range"))
        np.testing.assert_array_equal(tc.targets, full[tc.rows])
    # deterministic given the generator; eligibility masks restrict the draw
    again = select_tuning_series(
        fill,
        tspec,
        rng=np.random.default_rng(0),
        partition=fake_partition,
        targets_of=fake_targets,
        eligibility="complete",
    )
    assert all(np.array_equal(again[L].rows, sel[L].rows) for L in sel)
    only = {L: np.arange(40) < 10 for L in fill}
    small = select_tuning_series(
        fill,
        tspec,
        rng=np.random.default_rng(0),
        eligible=only,
        partition=fake_partition,
        targets_of=fake_targets,
    )
    assert all(tc.rows.max() < 10 and len(tc.rows) == 10 for tc in small.values())


def test_select_with_real_mondrian(classes, tspec):
    X = classes[25].copy()
    X[:, :, tspec.feature_dims] = np.nan_to_num(X[:, :, tspec.feature_dims], nan=90.0)
    sel = select_tuning_series(
        {25: X}, tspec, n_per_class=10, lengths=(25,), rng=np.random.default_rng(1)
    )
    F = compute_features(X, tspec)
    T = mondrian.class_targets(F, mondrian.mondrian_partition(F, 5, "range"))
    np.testing.assert_array_equal(sel[25].targets, T[sel[25].rows])


def test_select_bad_input(classes, tspec):
    with pytest.raises(ConfigError) as info:
        select_tuning_series(classes, tspec, n_per_class=0, rng=np.random.default_rng(0))
    assert str(info.value) == "tuning: n_per_class must be an integer >= 1, got 0"
    with pytest.raises(ConfigError) as info:
        select_tuning_series(classes, tspec)
    assert str(info.value) == "tuning: a numpy Generator 'rng' is required to draw the series"


def _tuning_class(L, X, T, spec):
    return TuningClass(L, L, np.arange(len(X)), X, T, spec, len(X))


def test_optimiser_table_by_hand(tspec):
    """Two classes with known results: check every cell of the table."""
    spec = tspec
    hr = DIMS.index("heart_rate")
    runs = {}
    for L, shift in ((2, 1.0), (4, 2.0)):
        X = np.full((2, L, len(DIMS)), 50.0)
        X[:, :, hr] = np.arange(L, dtype=float)  # other dims constant 50
        T = compute_features(X, spec)  # targets = original features ...
        Xp = X.copy()
        Xp[:, :, hr] += shift  # ... the "optimiser" shifts heart rate
        res = OptimiseResult(Xp, np.zeros(2), np.full(2, shift), np.array([10, 30]))
        runs[L] = TuningRun(_tuning_class(L, X, T, spec), res)
    table = optimiser_table(runs, iterations=True)
    assert list(table.columns) == [
        "duration",
        "series",
        "unfeasibility",
        "distortion",
        "iterations",
    ]
    assert list(table["duration"]) == ["2", "4", "All classes"]
    # per series: heart rate dim has |mean| + |min| + |max| errors = 3 * shift, var unchanged;
    # two other dims have 0 -> average over 3 dims = shift
    np.testing.assert_allclose(table["unfeasibility"], [1.0, 2.0, 1.5])
    # distortion: shift per record in one of the 3 feature dims -> shift / 3 per dimension
    np.testing.assert_allclose(table["distortion"], [1 / 3, 2 / 3, 0.5])
    np.testing.assert_allclose(table["iterations"], [20.0, 20.0, 20.0])
    assert list(table["series"]) == [2, 2, 4]
    assert "iterations" not in optimiser_table(runs).columns


def test_tables_end_to_end(classes, tspec):
    """Ad-hoc (Table 6.1) and genetic (Table 6.2) on drawn series with given targets."""
    sel = {}
    rng = np.random.default_rng(0)
    for L in (5, 25):
        X = classes[L]
        T = group_targets(compute_features(X, tspec), 5)
        keep = np.arange(8)
        sel[L] = TuningClass(L, L, keep, X[keep], T[keep], tspec, len(X))
    adhoc = run_tuning(sel, lambda X, T, s: optimise_adhoc(X, T, s, 50, 0.01, rng))
    params = GeneticParams(population=10, tournament=4, patience=20, max_iterations=60)
    genetic = run_tuning(sel, lambda X, T, s: optimise_genetic(X, T, s, params, rng))
    t61, t62 = optimiser_table(adhoc), optimiser_table(genetic, iterations=True)
    assert isinstance(t61, pd.DataFrame) and len(t61) == 3 and len(t62) == 3
    assert np.isfinite(t61.iloc[:, 1:].to_numpy(dtype=float)).all()
    assert np.isfinite(t62.iloc[:, 1:].to_numpy(dtype=float)).all()
    assert (t62["iterations"] >= 20).all()
    # ad-hoc meets mean and variance exactly: far more feasible than the short genetic run
    assert t61["unfeasibility"].iloc[-1] < t62["unfeasibility"].iloc[-1]


def test_two_records_eligibility_draws_series_with_gaps_and_warns_for_short_classes(
    classes, tspec, caplog
):
    """Default eligibility: >= 2 non-null records per feature dimension (not complete series)."""
    X = classes[25].copy()
    dims = tspec.feature_dims
    X[:, :, dims] = np.nan
    X[:30, :2, dims] = 80.0  # 30 series with exactly 2 records per feature dimension
    X[30:33, :1, dims] = 80.0  # 3 with one record: not eligible
    ok = eligible_series(X, dims)
    assert ok[:30].all() and not ok[30:].any()
    assert not complete_series(X, dims).any()
    sel = select_tuning_series(
        {25: X[:33]},
        tspec,
        n_per_class=40,
        lengths=(25,),
        rng=np.random.default_rng(0),
        partition=fake_partition,
        targets_of=fake_targets,
    )
    assert len(sel[25].rows) == 30 and sel[25].n_complete == 30
    assert "tuning: class 25 has only 30 eligible series (two_records); 40 asked for" in caplog.text
    with pytest.raises(ConfigError) as info:
        eligible_series(X, dims, "some")
    assert str(info.value) == (
        "tuning eligibility must be one of ('two_records', 'complete'), got 'some'"
    )


def test_tuning_labels_table_every_fitness_variant_of_each_genetic_point():
    from mimic_deid.deid.tuning import tuning_labels

    genetic = (
        "genetic-NA-pop24-tour5-par2-msd3-mp0.2-isd1-pat100-max600-norm0-layjoint-initgaussian"
    )
    labels = ["adhoc-it50-ns0.01", genetic, "kapra-P5-paa4-sax10-none"]
    got = tuning_labels(labels, ["annealed", "DF", "CI", "NA"])
    assert got == ["adhoc-it50-ns0.01"] + [
        genetic.replace("-NA-", f"-{f}-") for f in ("annealed", "DF", "CI", "NA")
    ]


def test_fitness_comparison_one_row_per_genetic_variant_with_the_seed_figures():
    from mimic_deid.deid.tuning import fitness_comparison, tuning_tables_summary

    def table(unf, dist, iters):
        return pd.DataFrame(
            {
                "duration": ["5", "All classes"],
                "series": [20, 100],
                "unfeasibility": [9.0, unf],
                "distortion": [9.0, dist],
                "iterations": [9.0, iters],
            }
        )

    genetic = (
        "genetic-{}-pop24-tour5-par2-msd3-mp0.2-isd1-pat300-max10000-norm0-layjoint-initgaussian"
    )
    labels = ["adhoc-it50-ns0.01"] + [genetic.format(f) for f in ("annealed", "DF", "CI", "NA")]
    tables = [table(0.1, 8.5, 50.0), table(5.0, 5.0, 400.0), table(0.4, 8.0, 450.0)]
    tables += [table(0.39, 8.1, 460.0), table(0.87, 7.0, 1900.0)]
    got = fitness_comparison(tuning_tables_summary(labels, tables))

    assert got["fitness"].tolist() == ["annealed", "DF", "CI", "NA"]
    assert got["method"].tolist() == labels[1:]
    # measured "All classes" figures, never a class row
    assert got["unfeasibility"].tolist() == [5.0, 0.4, 0.39, 0.87]
    assert got["iterations"].tolist() == [400.0, 450.0, 460.0, 1900.0]
    na = got.set_index("fitness").loc["NA"]
    assert (na["seed_unfeasibility"], na["seed_distortion"], na["seed_iterations"]) == (
        2.13,
        9.41,
        1728.39,
    )
    df = got.set_index("fitness").loc["DF"]
    assert np.isnan(df["seed_unfeasibility"]) and df["seed_iterations_below"] == 500.0
    assert got.set_index("fitness").loc["annealed", "seed_note"].startswith("overflow")
