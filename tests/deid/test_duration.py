"""Duration k-classes: invariants (property-based), hand example, trimming and summary."""

from __future__ import annotations

import contextlib

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.deid.classes import trim_to_classes
from mimic_deid.deid.duration import (
    assign_duration_classes,
    assign_duration_classes_grouped,
    duration_summary,
    records_lost,
)


def reference_classes(lengths: list[int], k: int) -> list[int]:
    """Plain per-series statement of the rule, for comparison."""
    out = [0] * len(lengths)
    carried: list[int] = []
    for length in sorted(set(lengths), reverse=True):
        carried += [i for i, x in enumerate(lengths) if x == length]
        if len(carried) >= k:
            for i in carried:
                out[i] = length
            carried = []
    return out


# Length distributions: many ties (small range), wide uniform, heavy tail (log-uniform).
lengths_strategy = st.one_of(
    st.lists(st.integers(1, 8), min_size=0, max_size=80),
    st.lists(st.integers(1, 3000), min_size=0, max_size=80),
    st.lists(st.floats(0, 9).map(lambda e: int(np.exp(e)) + 1), min_size=0, max_size=120),
    st.lists(st.sampled_from([1, 2, 24, 48, 49, 500, 501, 2000]), min_size=0, max_size=60),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lengths=lengths_strategy, k=st.integers(1, 12))
def test_duration_invariants(lengths: list[int], k: int) -> None:
    arr = np.asarray(lengths, dtype=np.int64)
    if k > max(len(arr), 0):
        with (
            pytest.warns(UserWarning, match="suppressed") if len(arr) else contextlib.nullcontext()
        ):
            cls = assign_duration_classes(arr, k)
        assert np.all(cls == 0)
        return
    cls = assign_duration_classes(arr, k)
    assert cls.dtype == np.int32 and cls.shape == arr.shape
    released = cls > 0
    # every released class holds >= k series
    _, sizes = np.unique(cls[released], return_counts=True)
    assert np.all(sizes >= k)
    # series are only shortened, onto a length that exists in the input
    assert np.all(cls <= arr)
    assert set(cls[released].tolist()) <= set(arr.tolist())
    # a series whose own length class is >= k never moves
    own_len, own_count = np.unique(arr, return_counts=True)
    big = np.isin(arr, own_len[own_count >= k])
    assert np.all(cls[big] == arr[big])
    # moved series come from too-small classes only
    moved = released & (cls < arr)
    assert not np.any(moved & big)
    # every series is released or counted as suppressed
    summary = duration_summary(arr, cls)
    assert summary["released"] + summary["suppressed"] == summary["series_in"] == len(arr)
    assert summary["moved"] == int(moved.sum())
    # suppressed series are all shorter than every released class (only the shortest fail)
    if (~released).any() and released.any():
        assert arr[~released].max() < cls[released].min()
    # nearest completable shorter length: identical to the per-series statement of the rule
    assert cls.tolist() == reference_classes(lengths, k)
    # trimming keeps the last hours: offset = length - class_length
    assert np.array_equal(records_lost(arr, cls), arr - cls)


def test_hand_example() -> None:
    lengths = np.array([10, 10, 9, 8, 8, 8, 5, 3, 3, 1])
    cls = assign_duration_classes(lengths, 3)
    # 10,10 too few -> carried to 9 (2+1=3); 8 has 3 of its own; 5 carried to 3 (1+2=3);
    # 1 cannot reach 3 -> suppressed
    assert cls.tolist() == [9, 9, 9, 8, 8, 8, 3, 3, 3, 0]
    s = duration_summary(lengths, cls)
    assert s["series_in"] == 10
    assert s["released"] == 9
    assert s["moved"] == 3
    assert s["suppressed"] == 1
    assert s["classes"] == 3
    assert s["smallest_class"] == 3
    lost = np.array([1, 1, 0, 0, 0, 0, 2, 0, 0, 1], dtype=float)
    pct = 100 * lost / lengths
    assert s["records_lost"] == 5
    assert s["records_lost_mean"] == pytest.approx(lost.mean())
    assert s["records_lost_sd"] == pytest.approx(lost.std())
    assert s["records_lost_pct_mean"] == pytest.approx(pct.mean())
    assert s["records_lost_pct_sd"] == pytest.approx(pct.std())


def test_big_class_absorbs_carried_series() -> None:
    lengths = np.array([7, 5, 5, 5, 5, 2])
    assert assign_duration_classes(lengths, 2).tolist() == [5, 5, 5, 5, 5, 0]


def test_k_one_keeps_everything() -> None:
    lengths = np.array([4, 1, 9, 9])
    assert assign_duration_classes(lengths, 1).tolist() == [4, 1, 9, 9]


def test_k_larger_than_n_warns_and_suppresses() -> None:
    with pytest.warns(UserWarning, match="exceeds the number of series"):
        cls = assign_duration_classes(np.array([3, 4]), 5)
    assert cls.tolist() == [0, 0]
    s = duration_summary(np.array([3, 4]), cls)
    assert s["suppressed"] == 2 and s["records_lost_pct_mean"] == 100.0
    assert s["smallest_class"] is None and s["classes"] == 0


@pytest.mark.parametrize("k", [0, -1, 2.5, True, "3"])
def test_bad_k(k) -> None:
    with pytest.raises(ConfigError) as info:
        assign_duration_classes(np.array([1, 2, 3]), k)
    assert str(info.value) == f"duration k (dk) must be an integer >= 1, got {k!r}"


@pytest.mark.parametrize(
    ("lengths", "message"),
    [
        (
            [0, 1, 2],
            "lengths: 1 series have length < 1 hour (minimum 0); every series must have at "
            "least one hour",
        ),
        (
            [-3, 4],
            "lengths: 1 series have length < 1 hour (minimum -3); every series must have at "
            "least one hour",
        ),
        ([1.5, 2.0], "lengths must be whole numbers of hours, got dtype float64"),
    ],
)
def test_bad_lengths(lengths, message) -> None:
    with pytest.raises(InputDataError) as info:
        assign_duration_classes(np.array(lengths), 1)
    assert str(info.value) == message


def test_empty() -> None:
    assert assign_duration_classes(np.array([], dtype=int), 3).shape == (0,)
    s = duration_summary(np.array([], dtype=int), np.array([], dtype=int))
    assert s["series_in"] == 0 and s["records_lost_mean"] is None


def test_grouped_per_split() -> None:
    lengths = np.array([5, 5, 4, 5, 4, 4])
    groups = np.array(["train", "train", "train", "test", "test", "test"])
    cls = assign_duration_classes_grouped(lengths, groups, 2)
    # train: 5,5 stay, 4 alone -> suppressed; test: 5 alone -> carried to 4
    assert cls.tolist() == [5, 5, 0, 4, 4, 4]
    assert np.array_equal(assign_duration_classes_grouped(lengths, None, 2), [5, 5, 4, 5, 4, 4])


def test_trim_keeps_last_hours() -> None:
    lengths = np.array([4, 3, 2])
    cls = np.array([2, 2, 0])
    keys = np.array([30, 10, 20])
    long = pd.DataFrame(
        {
            "icustay_id": np.repeat(keys, lengths),
            "hour": np.concatenate([np.arange(n) for n in lengths]),
        }
    )
    long["hr"] = long["icustay_id"] * 100.0 + long["hour"]
    classes = pd.DataFrame(
        {"icustay_id": keys, "group": "all", "length": lengths, "class_length": cls}
    )
    out = trim_to_classes(long, classes)
    assert out["icustay_id"].tolist() == [10, 10, 30, 30]
    assert out["hour"].tolist() == [0, 1, 0, 1]
    assert out["hour"].dtype == np.int32
    # series 10 (length 3) keeps hours 1, 2; series 30 (length 4) keeps hours 2, 3
    assert out["hr"].tolist() == [1001.0, 1002.0, 3002.0, 3003.0]
    assert records_lost(lengths, cls).tolist() == [2, 1, 2]


def test_records_lost_rejects_lengthening() -> None:
    with pytest.raises(InputDataError) as err:
        records_lost(np.array([3, 5, 2]), np.array([3, 6, -1]))
    assert str(err.value) == (
        "class_lengths must lie in [0, length] for every series; 2 series lie outside "
        "(first: class length 6 for length 5)"
    )


def test_vectorised_scale() -> None:
    rng = np.random.default_rng(0)
    lengths = (rng.pareto(1.2, size=40_000) * 24).astype(int) + 1
    cls = assign_duration_classes(lengths, 50)
    _, sizes = np.unique(cls[cls > 0], return_counts=True)
    assert sizes.min() >= 50
    assert duration_summary(lengths, cls)["series_in"] == 40_000


def test_unpublished_groups_name_the_split_the_parameter_and_what_would_fit() -> None:
    """Issue 48: a split too small for dk, or whose classes lack outcome_l outcomes, is named
    with its series count and the largest value of the parameter that would fit."""
    from mimic_deid.deid.duration import duration_classes, unpublished_groups

    n = {"train": 120, "validation": 60, "test": 36}
    split = np.repeat(list(n), list(n.values()))
    meta = pd.DataFrame(
        {
            "icustay_id": np.arange(len(split)),
            "length": 48,
            "split": split,
            "mortality": np.r_[np.arange(120) % 5 == 0, np.zeros(60, bool), np.ones(36, bool)],
            "long_stay": np.arange(len(split)) % 2,
        }
    ).astype({"mortality": "int8"})
    classes, _ = duration_classes(meta, dk=50, group_by_split=True, outcome_l=2)
    got = unpublished_groups(classes, 50, meta, 2)
    assert got == [
        {
            "group": "test",
            "series": 36,
            "parameter": "deid.dk",
            "value": 50,
            "largest": 36,
            "reason": "split 'test': 36 series, fewer than deid.dk = 50 (a duration class "
            "needs dk series of one group); the largest dk that fits: 36",
        },
        {
            "group": "validation",
            "series": 60,
            "parameter": "deid.outcome_l",
            "value": 2,
            "largest": 1,
            "reason": "split 'validation': 60 series, no duration class with deid.outcome_l = 2 "
            "distinct outcomes of every label (the group holds 1); the largest outcome_l that "
            "fits: 1, in one class (a larger dk, up to 60, makes fewer, larger classes)",
        },
    ]
    whole, _ = duration_classes(meta.iloc[:30], dk=50, group_by_split=False)
    assert [u["reason"] for u in unpublished_groups(whole, 50)] == [
        "the whole release: 30 series, fewer than deid.dk = 50 (a duration class needs dk "
        "series of one group); the largest dk that fits: 30"
    ]
    assert unpublished_groups(classes[classes["group"] == "train"], 50, meta, 2) == []


def test_a_release_with_nothing_to_publish_is_explained_with_the_values_that_fit() -> None:
    """Issue 48: no split of 100 subjects' ihm48 fills dk 50; the run goes on, and the
    report's paragraph names every split, the largest dk with which all form a class, and
    the preset; that dk, followed, publishes every split."""
    from mimic_deid.deid.duration import duration_classes, unpublished_groups
    from mimic_deid.deid.sizes import largest_fitting, sizes_advice

    meta = pd.DataFrame(
        {
            "icustay_id": np.arange(44),
            "length": 48,
            "split": np.repeat(["train", "validation", "test"], [27, 12, 5]),
        }
    )
    classes, _ = duration_classes(meta, dk=50, group_by_split=True)
    groups = unpublished_groups(classes, 50)
    assert sizes_advice("ihm48", 50, groups) == (
        "Nothing of ihm48 is published at dk=50: split 'test': 5 series, fewer than deid.dk = "
        "50 (a duration class needs dk series of one group); the largest dk that fits: 5; "
        "split 'train': 27 series, fewer than deid.dk = 50 (a duration class needs dk series "
        "of one group); the largest dk that fits: 27; split 'validation': 12 series, fewer "
        "than deid.dk = 50 (a duration class needs dk series of one group); the largest dk "
        "that fits: 12. The largest dk with which every group forms a class: 5; or run with "
        "--configfile config/presets/demo.yaml for a cohort of about 100 subjects "
        "(docs/cohort-sizes.md gives the sizes that fit each cohort size)."
    )
    outcome = [
        {"parameter": "deid.outcome_l", "largest": 1},
        {"parameter": "deid.dk", "largest": 7},
    ]
    assert largest_fitting(outcome) == (
        "The largest dk with which every group forms a class: 7; The largest outcome_l with "
        "which every group forms a class: 1"
    )
    # the value it names, followed, publishes every split
    fixed, _ = duration_classes(meta, dk=5, group_by_split=True)
    assert unpublished_groups(fixed, 5) == [] and sizes_advice("ihm48", 5, []) == ""
    assert (fixed["class_length"] > 0).groupby(fixed["split"]).all().all()


def test_a_stays_release_of_no_series_stops_naming_sizes_and_the_fix() -> None:
    """The report draws stays: a cohort of fewer stays than dk stops at its duration classes
    with the counts and the fix; ihm48 of no series, or stays with series, runs on."""
    from mimic_deid.deid.duration import duration_classes
    from mimic_deid.deid.sizes import require_drawable

    meta = pd.DataFrame(
        {
            "icustay_id": np.arange(35),
            "length": 48,
            "split": np.repeat(["train", "validation", "test"], [25, 5, 5]),
        }
    )
    whole, _ = duration_classes(meta, dk=50, group_by_split=False)
    with pytest.raises(ConfigError) as err:
        require_drawable(whole, 50, "stays")
    assert str(err.value) == (
        "config parameter 'deid/dk': release 'stays' would publish no series, and the report "
        "draws it: the whole release: 35 series, fewer than deid.dk = 50 (a duration class "
        "needs dk series of one group); the largest dk that fits: 35. The largest dk with "
        "which every group forms a class: 35. A cohort this small needs smaller sizes in every "
        "stage: run with --configfile config/presets/demo.yaml (sized for about 100 subjects; "
        "docs/cohort-sizes.md)"
    )
    require_drawable(duration_classes(meta, dk=35, group_by_split=False)[0], 35, "stays")
    require_drawable(duration_classes(meta, dk=50, group_by_split=True)[0], 50, "ihm48")
