"""A release as private as its least protected variable: withheld variables, no missing-hours
pattern, outcome diversity, and the strong attacker's bound."""

import numpy as np
import pandas as pd
import pytest

from mimic_deid.core.errors import ConfigError, ReleaseCheckError
from mimic_deid.deid import (
    attacker_features,
    check,
    protected_features,
    released_variables,
)
from mimic_deid.deid.duration import duration_classes, outcome_diverse
from mimic_deid.deid.missing import fill_missing_hours
from mimic_deid.evaluate.privacy import linkage_bound

NAN = np.nan
DIMS = ["heart_rate", "glucose", "temperature"]


def test_fill_missing_hours_by_hand():
    X = np.array(
        [
            [[NAN, NAN, NAN], [80.0, 100.0, NAN], [NAN, NAN, NAN], [84.0, NAN, NAN]],
            [[70.0, NAN, NAN], [72.0, NAN, NAN], [74.0, NAN, NAN], [76.0, NAN, NAN]],
        ]
    )
    out = fill_missing_hours(X)
    # leading hour: first value; interior gap: last value before; trailing: last value
    assert out[0, :, 0].tolist() == [80.0, 80.0, 80.0, 84.0]
    assert out[0, :, 1].tolist() == [100.0] * 4
    # series 1 never observed glucose: the class mean of what the class publishes
    assert out[1, :, 1].tolist() == [100.0] * 4
    # temperature is null in the whole class: it stays null
    assert np.isnan(out[:, :, 2]).all()
    assert not np.isnan(out[:, :, :2]).any()
    assert np.isnan(X[0, 0, 0])  # the input is not modified


def test_fill_missing_hours_keeps_observed_values():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 12, 4))
    X[rng.random(X.shape) < 0.4] = NAN
    out = fill_missing_hours(X)
    observed = ~np.isnan(X)
    assert np.array_equal(out[observed], X[observed])


def test_protected_and_released_variables():
    features = {"glucose": ["mean"], "heart_rate": ["mean", "var"]}
    assert released_variables(protected_features(features, DIMS, "features"), DIMS) == [
        "heart_rate",
        "glucose",
    ]
    everything = protected_features(features, DIMS, "all")
    assert everything == {
        "heart_rate": ["mean", "var"],
        "glucose": ["mean"],
        "temperature": ["mean", "var", "min", "max"],
    }
    assert attacker_features(["glucose"]) == {"glucose": ["mean", "var", "min", "max", "count"]}
    with pytest.raises(ConfigError) as err:
        protected_features(features, DIMS, "some")
    assert str(err.value) == (
        "config parameter 'release/variables': expected one of ('features', 'all'), got 'some'"
    )


def test_outcome_diverse_suppresses_classes_of_one_outcome():
    class_lengths = np.array([5, 5, 5, 3, 3, 3, 3, 0])
    groups = np.array(["train"] * 8)
    labels = np.array([0, 1, 0, 1, 1, 1, 1, 0])
    out = outcome_diverse(class_lengths, groups, labels, 2)
    assert out.tolist() == [5, 5, 5, 0, 0, 0, 0, 0]
    assert outcome_diverse(class_lengths, groups, labels, 1).tolist() == class_lengths.tolist()
    # with a second label a class must hold two values of each: the 5 h class has one
    # long-stay value only, so it goes too
    long_stay = np.array([1, 1, 1, 0, 1, 0, 0, 0])
    both = np.column_stack([labels, long_stay])
    assert outcome_diverse(class_lengths, groups, both, 2).tolist() == [0] * 8
    long_stay = np.array([1, 0, 1, 0, 1, 0, 0, 0])
    both = np.column_stack([labels, long_stay])
    assert outcome_diverse(class_lengths, groups, both, 2).tolist() == [5, 5, 5, 0, 0, 0, 0, 0]


def test_duration_classes_count_outcome_suppression():
    meta = pd.DataFrame(
        {
            "icustay_id": np.arange(12),
            "length": [8] * 6 + [4] * 6,
            "split": "train",
            "mortality": [0, 1, 0, 0, 0, 0] + [0] * 6,
            "long_stay": [1, 0, 0, 0, 0, 0] + [0, 1] * 3,
        }
    )
    classes, summary = duration_classes(meta, dk=6, group_by_split=True, outcome_l=2)
    assert classes["class_length"].tolist() == [8] * 6 + [0] * 6
    assert summary["outcome_suppressed_series"] == 6
    assert summary["outcome_suppressed_classes"] == 1
    assert summary["suppressed"] == 6
    # the 4 h class holds both mortality outcomes but one long-stay value: suppressed too
    meta["mortality"] = [0, 1, 0, 0, 0, 0] + [0, 1] * 3
    meta["long_stay"] = [1, 0, 0, 0, 0, 0] + [0] * 6
    classes, summary = duration_classes(meta, dk=6, group_by_split=True, outcome_l=2)
    assert classes["class_length"].tolist() == [8] * 6 + [0] * 6
    assert summary["outcome_suppressed_series"] == 6


def _release():
    index = pd.DataFrame(
        {
            "pseudonym": ["Pa", "Pb", "Pc", "Pd"],
            "duration_class": np.int32([2, 2, 2, 2]),
            "split": "test",
            "label": np.int8([0, 1, 0, 0]),
            "long_stay": np.int8([1, 1, 0, 1]),
        }
    )
    series = pd.DataFrame(
        {
            "pseudonym": np.repeat(["Pa", "Pb", "Pc", "Pd"], 2),
            "hour": np.tile([0, 1], 4),
            "heart_rate": 80.0,
            "glucose": NAN,
        }
    )
    return series, index


def test_claim_released_variables():
    series, _ = _release()
    assert check.check_released_variables(series, ["heart_rate", "glucose"])["published"] == [
        "heart_rate",
        "glucose",
    ]
    with pytest.raises(ReleaseCheckError) as err:
        check.check_released_variables(series, ["heart_rate"])
    assert str(err.value) == (
        "unprotected variable(s) published: ['glucose']; only variables whose features are "
        "de-identified may be released (config release/variables)"
    )


def test_claim_missing_withheld():
    series, index = _release()
    assert check.check_missing_withheld(series, index) == {"classes": 1, "variables": 2}
    series.loc[0, "glucose"] = 100.0
    with pytest.raises(ReleaseCheckError) as err:
        check.check_missing_withheld(series, index)
    assert str(err.value) == (
        "missing-hours pattern published: 1 (class, variable) pair(s) mix observed and null "
        "hours, e.g. glucose in class ('test', 2)"
    )


def test_claim_outcomes():
    _, index = _release()
    assert check.check_outcomes(index, labelled=True, ell=2)["classes"] == 1
    with pytest.raises(ReleaseCheckError) as err:
        check.check_outcomes(index, labelled=True, ell=3)
    assert str(err.value) == (
        "outcome disclosed: 1 class(es) with fewer than l=3 distinct values of 'label'"
    )
    with pytest.raises(ReleaseCheckError) as err:
        check.check_outcomes(index, labelled=False, ell=2)
    assert str(err.value) == "outcome label: this release must not publish it (label, long_stay)"
    # the long-stay label is protected like mortality: a class of one value is refused
    with pytest.raises(ReleaseCheckError) as err:
        check.check_outcomes(index.assign(long_stay=np.int8(1)), labelled=True, ell=2)
    assert str(err.value) == (
        "outcome disclosed: 1 class(es) with fewer than l=2 distinct values of 'long_stay'"
    )
    with pytest.raises(ReleaseCheckError) as err:
        check.check_outcomes(index.drop(columns="long_stay"), labelled=True, ell=2)
    assert str(err.value) == "outcome label: this release must publish it (long_stay)"


def test_linkage_bound_is_one_over_k_and_ignores_every_measured_rate():
    linkage = {
        # the seed attacker leaves 2 % unmet: a bound that added it would pass 0.11 at k 10
        "release": {"0": {"top1": 0.02}, "0.1": {"top1": 0.01}},
        "strong": {
            "release": {
                "0": {"top1": 0.11, "top1_ci": [0.09, 0.13], "n": 900},
                "0.1": {"top1": 0.05, "top1_ci": [0.04, 0.07], "n": 900},
            }
        },
    }
    assert linkage_bound(linkage, 10) == {
        "error": 0.0,
        "k": 10,
        "top1": 0.1,
        "strong_top1": 0.11,
        "strong_top1_ci": [0.09, 0.13],
        "n": 900,
        "within": False,
    }
    assert linkage_bound(linkage, 5)["within"] is True
    assert linkage_bound(linkage, 5)["top1"] == 0.2


def test_attack_rates_carry_their_wilson_interval():
    from mimic_deid.evaluate.linkage import rate_interval

    low, high = rate_interval(10, 100)
    assert (round(low, 4), round(high, 4)) == (0.0552, 0.1744)  # Wilson, 95 %
    assert rate_interval(0, 50)[0] == 0.0
    assert rate_interval(50, 50)[1] == 1.0
    assert all(np.isnan(rate_interval(0, 0)))
    # scipy's Wilson interval, bit for bit (computed without importing scipy.stats); expected
    # hits are rounded to whole targets, and never above n
    from scipy.stats import binomtest

    for n in (1, 2, 7, 100, 245, 1332, 2690, 46_520):
        for k in sorted({0, 1, n // 10, n // 3, n // 2, n - 1, n}):
            for confidence in (0.9, 0.95, 0.99):
                ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
                assert rate_interval(k, n, confidence) == (ci.low, ci.high), (k, n, confidence)
    assert rate_interval(9.6, 100) == rate_interval(10, 100)
    assert rate_interval(100.4, 100) == rate_interval(100, 100)


def test_a_recoverable_group_of_one_outcome_is_refused():
    index = pd.DataFrame(
        {
            "pseudonym": ["a", "b", "c", "d", "e", "f"],
            "label": np.int8([1, 0, 0, 0, 1, 0]),
            "long_stay": np.int8([0, 1, 0, 1, 1, 0]),
        }
    )
    groups = pd.DataFrame({"pseudonym": list("abcdef"), "eq_class": [0, 0, 0, 1, 1, 1]})
    assert check.check_group_outcomes(index, groups, 2, "equivalence class") == {
        "l": 2,
        "groups": {"eq_class": 2},
    }
    # a and d swap classes: {b, c, d} are all survivors
    groups["eq_class"] = [1, 0, 0, 1, 1, 1]
    with pytest.raises(ReleaseCheckError) as err:
        check.check_group_outcomes(index, groups, 2, "equivalence class")
    assert str(err.value) == (
        "outcome disclosed: 1 equivalence class(s) (eq_class) with fewer than l=2 distinct "
        "values of 'label'"
    )
    # a (k,P) k-group column: -1 (not grouped) is left out
    kp = pd.DataFrame({"pseudonym": list("abcdef"), "k_group_heart_rate": [0, 0, -1, -1, 1, 1]})
    assert check.check_group_outcomes(index, kp, 2, "k-group")["groups"] == {
        "k_group_heart_rate": 2
    }
