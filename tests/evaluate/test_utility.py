"""Tests of the in-hospital-mortality utility evaluation (benchmark features, model, settings)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import skew
from sklearn.metrics import average_precision_score, roc_auc_score

from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.evaluate.benchmark_features import STATISTICS, SUBSEQUENCES
from mimic_deid.evaluate.model import _bootstrap, _weighted_auc_ap
from mimic_deid.evaluate.utility import (
    METRIC_COLUMNS,
    benchmark_features,
    datasets_from_long,
    evaluate_model,
    features_from_long,
    fit_mortality_model,
    subsequence_bounds,
)

SUBS = ["all", "first10", "first25", "first50", "last10", "last25", "last50"]
STATS = ["min", "max", "mean", "sd", "skew", "count"]


def feature_names(dims: list[str]) -> list[str]:
    """Names ``"{dim}_{sub}_{stat}"`` of the ``len(dims) * 42`` benchmark features, in column
    order (:func:`~mimic_deid.evaluate.benchmark_features.benchmark_features`)."""
    return [f"{d}_{sub}_{stat}" for d in dims for sub, _, _ in SUBSEQUENCES for stat in STATISTICS]


def _feat(F: np.ndarray, dims: list[str], row: int, name: str) -> float:
    return F[row, feature_names(dims).index(name)]


# ------------------------------------------------------------------------------ features


def test_subsequence_bounds() -> None:
    assert subsequence_bounds(10) == [(0, 10), (0, 1), (0, 3), (0, 5), (9, 10), (7, 10), (5, 10)]
    # 10 % of 30 is exactly 3 hours (no floating-point ceil to 4)
    assert subsequence_bounds(30)[1] == (0, 3)
    assert subsequence_bounds(30)[4] == (27, 30)
    # at least one hour
    assert subsequence_bounds(1) == [(0, 1)] * 7
    assert subsequence_bounds(3)[1:] == [(0, 1), (0, 1), (0, 2), (2, 3), (2, 3), (1, 3)]
    with pytest.raises(ValueError) as info:
        subsequence_bounds(0)
    assert str(info.value) == "series length must be >= 1 hour, got 0"


def test_feature_names_order() -> None:
    names = feature_names(["hr", "spo2"])
    assert len(names) == 2 * 7 * 6
    assert names[:7] == ["hr_all_min", "hr_all_max", "hr_all_mean", "hr_all_sd", "hr_all_skew",
                         "hr_all_count", "hr_first10_min"]  # fmt: skip
    assert names[42] == "spo2_all_min"
    assert names[-1] == "spo2_last50_count"


def test_features_hand_computed() -> None:
    # one series of 10 hours, 2 dims; hour 0 of dim a is null (first 10 % empty),
    # dim b is constant 5 over the last half and null before.
    a = [np.nan, 1.0, 2.0, 3.0, np.nan, 5.0, 6.0, 7.0, 8.0, 20.0]
    b = [np.nan] * 5 + [5.0] * 5
    X = np.array([a, b]).T[None]  # (1, 10, 2)
    dims = ["a", "b"]
    F = benchmark_features(X, np.array([10]))
    assert F.shape == (1, 84)

    def f(name: str) -> float:
        return _feat(F, dims, 0, name)

    # empty subsequence: NaN statistics, count 0
    for stat in ["min", "max", "mean", "sd", "skew"]:
        assert np.isnan(f(f"a_first10_{stat}"))
    assert f("a_first10_count") == 0
    # first 25 % = hours 0..2 -> values 1, 2
    assert f("a_first25_count") == 2
    assert f("a_first25_mean") == pytest.approx(1.5)
    assert f("a_first25_sd") == pytest.approx(0.5)
    assert f("a_first25_skew") == pytest.approx(0.0, abs=1e-12)
    # last 25 % = hours 7..9 -> 7, 8, 20
    v = np.array([7.0, 8.0, 20.0])
    m = v.mean()
    m2, m3 = ((v - m) ** 2).mean(), ((v - m) ** 3).mean()
    assert f("a_last25_min") == 7 and f("a_last25_max") == 20
    assert f("a_last25_mean") == pytest.approx(35 / 3)
    assert f("a_last25_sd") == pytest.approx(np.sqrt(m2))
    assert f("a_last25_skew") == pytest.approx(m3 / m2**1.5)
    assert f("a_last10_count") == 1 and f("a_last10_mean") == 20 and f("a_last10_sd") == 0
    assert f("a_last10_skew") == 0
    # full series: 8 values
    va = np.array([1, 2, 3, 5, 6, 7, 8, 20.0])
    assert f("a_all_count") == 8
    assert f("a_all_skew") == pytest.approx(skew(va))
    assert f("a_all_sd") == pytest.approx(va.std())
    # constant subsequence: sd 0, skew 0
    assert f("b_last50_count") == 5
    assert f("b_last50_min") == f("b_last50_max") == f("b_last50_mean") == 5
    assert f("b_last50_sd") == 0 and f("b_last50_skew") == 0
    assert f("b_first50_count") == 0 and np.isnan(f("b_first50_mean"))
    assert f("b_all_skew") == 0


def test_constant_non_representable_values() -> None:
    # 0.1 repeated: the mean may differ from 0.1 in the last bit; sd and skew must be exactly 0
    X = np.full((1, 7, 1), 0.1)
    F = benchmark_features(X, np.array([7]))
    assert _feat(F, ["x"], 0, "x_all_sd") == 0.0
    assert _feat(F, ["x"], 0, "x_all_skew") == 0.0


def _reference_features(X: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per-series Python loop, the obvious way."""
    n, _, D = X.shape
    out = np.empty((n, D, 7, 6))
    for i in range(n):
        L = int(lengths[i])
        for s, (a, b) in enumerate(subsequence_bounds(L)):
            for d in range(D):
                v = X[i, a:b, d]
                v = v[~np.isnan(v)]
                if len(v) == 0:
                    out[i, d, s] = [np.nan] * 5 + [0]
                    continue
                sk = 0.0 if v.max() == v.min() else skew(v)
                out[i, d, s] = [v.min(), v.max(), v.mean(), v.std(), sk, len(v)]
    return out.reshape(n, -1)


def test_features_match_reference_mixed_lengths() -> None:
    rng = np.random.default_rng(3)
    n, L, D = 40, 12, 3
    X = rng.normal(size=(n, L, D))
    X[rng.random(X.shape) < 0.4] = np.nan
    lengths = rng.integers(1, L + 1, size=n)
    F = benchmark_features(X, lengths)
    np.testing.assert_allclose(F, _reference_features(X, lengths), rtol=1e-10, atol=1e-12)
    # hours beyond a series' length are ignored
    X2 = X.copy()
    for i in range(n):
        X2[i, lengths[i] :] = 1e6
    np.testing.assert_array_equal(benchmark_features(X2, lengths), F)


def test_features_bad_input() -> None:
    with pytest.raises(InputDataError) as info:
        benchmark_features(np.zeros((2, 5, 1)), np.array([5, 6]))
    assert str(info.value) == "benchmark_features: lengths must lie in [1, 5], got [5, 6]"
    with pytest.raises(InputDataError) as info:
        benchmark_features(np.zeros((2, 5, 1)), np.array([5]))
    assert str(info.value) == "benchmark_features: lengths must have shape (2,), got (1,)"


def test_features_from_long_string_keys() -> None:
    rng = np.random.default_rng(5)
    dims = ["hr", "spo2"]
    keys = np.array(["p3", "p1", "p2", "p0"])
    lengths = np.array([4, 6, 4, 1])
    X = rng.normal(size=(4, 6, 2))
    X[rng.random(X.shape) < 0.3] = np.nan
    rows = []
    for k, L, x in zip(keys, lengths, X, strict=True):
        for h in range(L):
            if not np.isnan(x[h]).all():  # fully null hours may be absent from the table
                rows.append({"pseudonym": k, "hour": h, "hr": x[h, 0], "spo2": x[h, 1]})
    rows.append({"pseudonym": "p1", "hour": 9, "hr": 1e6, "spo2": 1e6})  # beyond length
    rows.append({"pseudonym": "zz", "hour": 0, "hr": 1e6, "spo2": 1e6})  # not in index
    long = pd.DataFrame(rows).sample(frac=1.0, random_state=1)
    index = pd.DataFrame(
        {
            "pseudonym": [*keys, "sup"],
            "duration_class": [*lengths, 0],  # a suppressed series is left out
            "split": ["train"] * 5,
            "label": [0, 1, 0, 1, 0],
        }
    )
    out_keys, F, out_len = features_from_long(long, index, "pseudonym", dims)
    assert out_keys.tolist() == ["p0", "p1", "p2", "p3"]
    assert out_len.tolist() == [1, 6, 4, 4]
    order = np.argsort(keys)
    Xo = X[order].copy()
    for i, L in enumerate(lengths[order]):
        Xo[i, L:] = np.nan
    np.testing.assert_array_equal(F, benchmark_features(Xo, lengths[order]))

    data = datasets_from_long(long, index, "pseudonym", dims)
    assert list(data) == ["train"]
    np.testing.assert_array_equal(data["train"][0], F)
    assert data["train"][1].tolist() == [1, 1, 0, 0]

    with pytest.raises(InputDataError) as info:
        features_from_long(long.drop(columns="spo2"), index, "pseudonym", dims)
    assert str(info.value) == (
        "series long table: missing column(s) ['spo2']; expected at least ['pseudonym', "
        "'hour', 'hr', 'spo2'], got ['pseudonym', 'hour', 'hr']"
    )
    with pytest.raises(InputDataError) as info:
        features_from_long(pd.concat([long, long.iloc[:1]]), index, "pseudonym", dims)
    assert str(info.value) == (
        "series long table: 1 repeated (pseudonym, hour) row(s); expected at most one row per "
        "(pseudonym, hour)"
    )


# ------------------------------------------------------------------------------ metrics


def test_weighted_auc_ap_matches_sklearn() -> None:
    rng = np.random.default_rng(0)
    n = 300
    y = (rng.random(n) < 0.2).astype(int)
    s = np.round(rng.random(n) + 0.4 * y, 1)  # many ties
    counts = rng.integers(0, 3, size=(6, n))
    got = _weighted_auc_ap(y, s, counts)
    for b in range(6):
        assert got[0, b] == pytest.approx(roc_auc_score(y, s, sample_weight=counts[b]))
        assert got[1, b] == pytest.approx(average_precision_score(y, s, sample_weight=counts[b]))
    # a copy without positives is NaN
    counts0 = np.where(y == 1, 0, 1)[None]
    assert np.isnan(_weighted_auc_ap(y, s, counts0)).all()


def test_bootstrap_at_mimic_scale_holds_the_auc() -> None:
    # its speed against scipy.stats.bootstrap is measured in benchmarks/bench_bootstrap.py,
    # not here: a test does not depend on how busy the machine is
    rng = np.random.default_rng(1)
    n = 3000
    y = (rng.random(n) < 0.13).astype(int)
    s = rng.random(n) + 0.5 * y
    boot = _bootstrap(y, s, 1000, np.random.default_rng(2))
    assert boot.shape == (2, 1000)
    auc = roc_auc_score(y, s)
    lo, hi = np.percentile(boot[0], [2.5, 97.5])
    assert lo < auc < hi


# ------------------------------------------------------------------------------ planted signal


def _synthetic_cohort(
    n: int, seed: int, shuffle: bool = False
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Series with planted signal: deaths have higher heart rate and lower min SpO2 late."""
    rng = np.random.default_rng(seed)
    L, dims = 24, 3
    lengths = rng.integers(12, L + 1, size=n)
    y = (rng.random(n) < 0.25).astype(np.int64)
    X = np.empty((n, L, dims))
    X[:, :, 0] = rng.normal(85, 12, size=(n, L))  # heart rate
    X[:, :, 1] = rng.normal(96, 2, size=(n, L))  # SpO2
    X[:, :, 2] = rng.normal(37, 0.5, size=(n, L))  # temperature: noise only
    hours = np.arange(L)[None, :]
    late = hours >= (lengths - np.ceil(0.25 * lengths))[:, None]
    X[:, :, 0] += 12 * (y[:, None] * late)
    dip = rng.integers(0, L, size=n)
    X[np.arange(n), np.minimum(dip, lengths - 1), 1] -= 6 * y
    X[rng.random(X.shape) < 0.3] = np.nan
    F = benchmark_features(X, lengths)
    if shuffle:
        y = rng.permutation(y)
    counts = [n * 6 // 10, n // 5, n - n * 6 // 10 - n // 5]
    split = rng.permutation(np.repeat(["train", "validation", "test"], counts))
    return {s: (F[split == s], y[split == s]) for s in ("train", "validation", "test")}


def test_planted_signal_and_chance() -> None:
    data = _synthetic_cohort(1000, seed=11)
    model, C = fit_mortality_model(data["train"], data["validation"], Cs=[0.01, 0.1, 1.0], seed=0)
    assert C in (0.01, 0.1, 1.0)
    res = evaluate_model(model, *data["test"], n_bootstrap=200, seed=0)
    assert res["roc_auc"] > 0.75
    assert res["roc_auc_lo"] < res["roc_auc"] < res["roc_auc_hi"]
    assert res["pr_auc_lo"] < res["pr_auc"] < res["pr_auc_hi"]
    assert res["n"] == len(data["test"][1]) and res["positives"] == data["test"][1].sum()
    assert set(res) == set(METRIC_COLUMNS)
    assert res["roc_auc_ceiling"] == 1.0  # no two test series share a feature vector

    # label-shuffled cohort: chance level (the interval covers 0.5)
    shuffled = _synthetic_cohort(2000, seed=12, shuffle=True)
    model0, _ = fit_mortality_model(shuffled["train"], shuffled["validation"], Cs=[0.01], seed=0)
    res0 = evaluate_model(model0, *shuffled["test"], n_bootstrap=200, seed=0)
    assert abs(res0["roc_auc"] - 0.5) < 0.1
    assert res0["roc_auc_lo"] < 0.5 < res0["roc_auc_hi"]
    assert np.isnan(evaluate_model(model0, *shuffled["test"], n_bootstrap=0)["roc_auc_lo"])

    again = evaluate_model(
        fit_mortality_model(data["train"], data["validation"], Cs=[0.01, 0.1, 1.0], seed=0)[0],
        *data["test"],
        n_bootstrap=200,
        seed=0,
    )
    assert again == res


def test_the_ceiling_is_the_best_any_score_of_the_features_reaches() -> None:
    from sklearn.metrics import roc_auc_score

    from mimic_deid.evaluate.model import roc_auc_ceiling

    # three groups of identical feature vectors (NaN in the same place counts as equal): the
    # first all label 1, the second 1 of 4, the third 1 of 2; and one distinct series of label 0
    a, b, c = [1.0, np.nan], [2.0, 0.0], [2.0, -0.0]  # -0.0 and 0.0 are one value
    X = np.array([a, a, b, b, b, b, [3.0, 1.0], [3.0, 1.0], [4.0, 4.0]])
    X[5] = c
    y = np.array([1, 1, 0, 0, 1, 0, 1, 0, 0])
    best = roc_auc_ceiling(X, y)
    # by hand: positives 4, negatives 5; a beats all 5 (2 x 5), the 3.0 group's positive beats
    # b's 3 and the lone 0 and ties its own 0 (4.5), b's positive beats the lone 0 and ties 3
    assert best == pytest.approx((10 + 4.5 + 2.5) / 20)
    assert best == pytest.approx(roc_auc_score(y, [1, 1, 0.25, 0.25, 0.25, 0.25, 0.5, 0.5, 0]))
    # no score constant on the groups does better: every ordering of the four groups
    import itertools

    groups = np.array([0, 0, 1, 1, 1, 1, 2, 2, 3])
    for order in itertools.permutations(range(4)):
        assert roc_auc_score(y, np.array(order, dtype=float)[groups]) <= best + 1e-12
    # every series distinct: the ceiling is 1; one label: not computable
    assert roc_auc_ceiling(np.arange(6.0)[:, None], np.array([0, 1, 0, 1, 1, 0])) == 1.0
    assert np.isnan(roc_auc_ceiling(X, np.zeros(9, dtype=int)))


def test_c_selection_ties_go_to_smaller_c() -> None:
    data = _synthetic_cohort(400, seed=2)
    # the scaled features make tiny Cs rank identically; equal validation AUCs -> smallest C
    _, C = fit_mortality_model(data["train"], data["validation"], Cs=[1e-9, 1e-8], seed=0)
    assert C == 1e-9
    with pytest.raises(ConfigError) as info:
        fit_mortality_model(data["train"], data["validation"], Cs=[], seed=0)
    assert str(info.value) == ("utility Cs: expected a non-empty list of positive numbers, got []")
    X, y = data["train"]
    with pytest.raises(InputDataError) as info:
        fit_mortality_model((X, np.zeros_like(y)), data["validation"], Cs=[1.0])
    assert str(info.value) == (
        "utility training split: expected both labels 0 and 1, got only [0] in 240 series"
    )


def test_a_validation_split_of_one_label_takes_the_middle_c(caplog) -> None:
    """A small release (the 100-subject demo) can leave one label in its validation split:
    the run goes on with the middle of the C grid instead of stopping."""
    data = _synthetic_cohort(400, seed=2)
    X, y = data["validation"]
    with caplog.at_level("WARNING", logger="mimic_deid.evaluate.utility"):
        model, C = fit_mortality_model(
            data["train"], (X, np.zeros_like(y)), Cs=[10.0, 0.01, 1.0, 0.1], seed=0
        )
    assert C == 0.1
    assert model.named_steps["logreg"].C == 0.1
    assert caplog.messages == [
        f"utility validation split holds one label in {len(y)} series: C not chosen on it, "
        "the middle of the grid (C=0.1) is used"
    ]


# ------------------------------------------------------------------------------ trust settings


def test_trust_settings_score_each_model_on_the_test_sides_data() -> None:
    """The de-identified side reverses the signal: a model is good on its own side's data and
    worse than chance on the other side's, so scoring the wrong side's data shows at once."""
    from utility_reference import trust_settings

    orig = _synthetic_cohort(1000, seed=11)
    deid = {s: (F, 1 - y) for s, (F, y) in _synthetic_cohort(700, seed=13).items()}
    table = trust_settings(orig, deid, Cs=[0.01, 0.1], seed=0, n_bootstrap=0)
    sides = {"orig": orig, "deid": deid}
    for row in table.itertuples():
        _, y = sides[row.test_data][row.split]
        assert (row.n, row.positives) == (len(y), int(y.sum())), row.setting
    test = table[table["split"] == "test"].set_index("setting")["roc_auc"]
    assert test["orig. / orig."] > 0.7 and test["de-id. / de-id."] > 0.7
    assert test["orig. / de-id."] < 0.3 and test["de-id. / orig."] < 0.3


# ------------------------------------------------------------------------------ utility table


def _ihm48_tables(
    n: int, missing: float, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Original series of three variables and a release of two of them (``temp`` withheld).

    Deaths run a higher temperature (strong signal, withheld) and heart rate (weak signal,
    published); long stays a lower SpO2 (published). The release only withholds the missing hours: its series are the original
    ones filled by ``fill_missing_hours`` per split and length, its keys pseudonyms.
    """
    from mimic_deid.deid.missing import fill_missing_hours

    rng = np.random.default_rng(seed)
    lengths = rng.choice([10, 12], size=n)
    y = (rng.random(n) < 0.3).astype(np.int8)
    long_stay = (rng.random(n) < 0.25).astype(np.int8)
    split = rng.permutation(np.repeat(["train", "validation", "test"], [n // 2, n // 4, n // 4]))
    X = np.full((n, 12, 3), np.nan)
    X[:, :, 0] = rng.normal(85, 10, size=(n, 12)) + y[:, None]
    X[:, :, 1] = rng.normal(96, 2, size=(n, 12)) - 1.5 * long_stay[:, None]
    X[:, :, 2] = rng.normal(37, 0.3, size=(n, 12)) + 0.2 * y[:, None]
    X[rng.random(X.shape) < missing] = np.nan
    for i, length in enumerate(lengths):
        X[i, length:] = np.nan
    dims = ["hr", "spo2", "temp"]
    released = np.full((n, 12, 2), np.nan)
    for s in np.unique(split):
        for length in np.unique(lengths):
            idx = np.flatnonzero((split == s) & (lengths == length))
            released[idx, :length] = fill_missing_hours(X[idx, :length, :2])
    ids = np.arange(1000, 1000 + n)
    hour = np.tile(np.arange(12), n)

    def long(values: np.ndarray, key: str, keys: np.ndarray, names: list[str]) -> pd.DataFrame:
        frame = pd.DataFrame({key: np.repeat(keys, 12), "hour": hour})
        for j, name in enumerate(names):
            frame[name] = values[:, :, j].ravel()
        return frame[hour < np.repeat(lengths, 12)].reset_index(drop=True)

    pseudonyms = np.array([f"p{i:04d}" for i in rng.permutation(n)])
    series = long(X, "icustay_id", ids, dims)
    meta = pd.DataFrame(
        {
            "icustay_id": ids,
            "length": lengths,
            "mortality": y,
            "long_stay": long_stay,
            "split": split,
        }
    )
    release_series = long(released, "pseudonym", pseudonyms, dims[:2])
    release_index = pd.DataFrame(
        {
            "pseudonym": pseudonyms,
            "duration_class": lengths,
            "split": split,
            "label": y,
            "long_stay": long_stay,
        }
    )
    return series, meta, release_series, release_index


def _utility(missing: float) -> pd.DataFrame:
    from mimic_deid.evaluate.utility import utility_table

    return utility_table(*_ihm48_tables(800, missing, seed=3), Cs=[0.01, 0.1], n_bootstrap=50)


def _test_rows(table: pd.DataFrame, task: str = "mortality") -> pd.DataFrame:
    test = table[(table["split"] == "test") & (table["task"] == task)]
    return test.set_index(["variables", "cross", "setting"]).sort_index()


def test_utility_table_rows_and_the_owners_baseline_on_withheld_variables() -> None:
    """The data owner's baseline sees ``temp``, which the release withholds: it predicts
    well where the released variables barely do, so withholding is its own row."""
    from mimic_deid.evaluate.utility import KEY_COLUMNS, SETTINGS

    table = _utility(missing=0.3)
    assert list(table.columns) == [
        *KEY_COLUMNS,
        "C",
        "validation_roc_auc",
        *METRIC_COLUMNS,
        "not_computable",
    ]
    assert (table["not_computable"] == "").all()
    labels = [label for label, _, _ in SETTINGS]
    expected = [("all", "shipped", "orig. / orig.")] + [
        ("released", cross, label) for cross in ("shipped", "gap_filled") for label in labels
    ]
    assert list(table["task"].unique()) == ["mortality", "long_stay"]
    for _, rows in table.groupby("task", sort=False):
        keys = rows[["variables", "cross", "setting"]].drop_duplicates()
        assert list(keys.itertuples(index=False, name=None)) == expected
        assert len(rows) == 2 * len(expected)
    test = _test_rows(table)
    owner = test.loc[("all", "shipped", "orig. / orig.")]
    released = test.loc[("released", "shipped", "orig. / orig.")]
    assert owner["roc_auc"] > 0.75 and released["roc_auc"] < 0.65
    assert owner["roc_auc_lo"] < owner["roc_auc"] < owner["roc_auc_hi"]
    assert (owner["n"], owner["positives"]) == (released["n"], released["positives"])
    # the second task predicts the long stay from a published variable: no withholding cost
    long_stay = _test_rows(table, "long_stay")
    assert long_stay.loc[("released", "shipped", "de-id. / de-id."), "roc_auc"] > 0.75
    assert long_stay.loc[("all", "shipped", "orig. / orig."), "positives"] != owner["positives"]


def test_gap_filled_original_side_differs_only_when_hours_are_missing() -> None:
    metrics = ["roc_auc", "pr_auc", "n", "positives"]  # intervals: series in another order
    test = _test_rows(_utility(missing=0.3))
    shipped, filled = test.loc[("released", "shipped")], test.loc[("released", "gap_filled")]
    # the release only withholds the missing hours: like-for-like, orig. / de-id. and
    # de-id. / orig. are its own settings, the shipped original side is not
    pd.testing.assert_series_equal(
        filled.loc["orig. / de-id.", metrics],
        filled.loc["de-id. / de-id.", metrics],
        check_names=False,
    )
    pd.testing.assert_series_equal(
        filled.loc["de-id. / orig.", metrics],
        filled.loc["de-id. / de-id.", metrics],
        check_names=False,
    )
    assert shipped.loc["orig. / de-id.", "roc_auc"] != filled.loc["orig. / de-id.", "roc_auc"]
    assert shipped.loc["orig. / orig.", "roc_auc"] != filled.loc["orig. / orig.", "roc_auc"]
    pd.testing.assert_series_equal(
        shipped.loc["de-id. / de-id.", metrics], filled.loc["de-id. / de-id.", metrics]
    )
    # no missing hour: gap filling changes nothing, every row is the shipped one
    complete = _test_rows(_utility(missing=0.0))
    pd.testing.assert_frame_equal(
        complete.loc[("released", "gap_filled")], complete.loc[("released", "shipped")]
    )


def test_utility_table_names_a_released_variable_the_original_lacks() -> None:
    from mimic_deid.evaluate.utility import utility_table

    series, meta, release_series, release_index = _ihm48_tables(40, 0.0, seed=1)
    with pytest.raises(InputDataError) as info:
        utility_table(series.drop(columns="spo2"), meta, release_series, release_index)
    assert str(info.value) == (
        "utility: released variable(s) ['spo2'] are not columns of the original series; "
        "expected a subset of ['hr', 'temp']"
    )


def test_a_release_without_its_test_split_gives_not_computable_rows() -> None:
    """A release that could not form its test split (issue 48): the rows that need it are
    NaN with the reason, every other row is computed, nothing raises."""
    from mimic_deid.evaluate.utility import utility_table

    series, meta, release_series, release_index = _ihm48_tables(400, 0.2, seed=5)
    test_keys = release_index.loc[release_index["split"] == "test", "pseudonym"]
    release_index = release_index[release_index["split"] != "test"]
    release_series = release_series[~release_series["pseudonym"].isin(test_keys)]
    table = utility_table(
        series, meta, release_series, release_index, Cs=[0.1], n_bootstrap=0, seed=2**63 - 1
    )
    missing = table[(table["test_data"] == "deid") & (table["split"] == "test")]
    assert len(missing) == 2 * 2 * 2  # 2 tasks x 2 cross x (de-id./de-id., orig./de-id.)
    assert set(missing["not_computable"]) == {
        "not computable: the de-identified data hold no series of split 'test'"
    }
    assert missing["roc_auc"].isna().all() and (missing["n"] == 0).all()
    computed = table[table["not_computable"] == ""]
    assert len(computed) == len(table) - len(missing)
    assert computed["roc_auc"].notna().all()  # de-id./orig. is trained on the release


def test_a_release_without_its_training_split_fits_no_deid_model() -> None:
    from mimic_deid.evaluate.utility import utility_table

    series, meta, release_series, release_index = _ihm48_tables(400, 0.2, seed=5)
    table = utility_table(
        series, meta, release_series.iloc[:0], release_index.iloc[:0], Cs=[0.1], n_bootstrap=0
    )
    deid = table[(table["train_data"] == "deid") | (table["test_data"] == "deid")]
    assert deid["roc_auc"].isna().all()
    assert set(deid.loc[deid["train_data"] == "deid", "not_computable"]) == {
        "not computable: the de-identified data hold no series of split 'train'"
    }
    owner = table[(table["train_data"] == "orig") & (table["test_data"] == "orig")]
    assert owner["roc_auc"].notna().all() and (owner["not_computable"] == "").all()


def test_a_test_split_of_one_outcome_says_why_its_auc_is_empty() -> None:
    """Issue 48: 100 subjects' ihm48 test split holds 5 series and no death: the rows scored
    on it have no AUC and say why; the long-stay rows (both outcomes) are computed."""
    from mimic_deid.evaluate.utility import utility_table

    series, meta, release_series, release_index = _ihm48_tables(400, 0.2, seed=5)
    test = (meta["split"] == "test").to_numpy()
    meta.loc[test, "mortality"] = 0
    release_index.loc[release_index["split"] == "test", "label"] = 0
    table = utility_table(series, meta, release_series, release_index, Cs=[0.1], n_bootstrap=0)
    scored = table[(table["task"] == "mortality") & (table["split"] == "test")]
    name = {"orig": "original", "deid": "de-identified"}
    assert scored["not_computable"].tolist() == [
        f"not computable: the {name[side]} test split holds one label (0) in {test.sum()} "
        "series; an AUC needs both"
        for side in scored["test_data"]
    ]
    assert scored["roc_auc"].isna().all()
    assert (table.loc[table["task"] == "long_stay", "not_computable"] == "").all()
