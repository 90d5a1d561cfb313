"""Pseudonyms, release assembly and the release check (each failure is caught)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from mimic_deid.core.errors import InputDataError, ReleaseCheckError
from mimic_deid.deid import check
from mimic_deid.deid.check import check_release
from mimic_deid.deid.classes import trim_to_classes
from mimic_deid.deid.duration import assign_duration_classes_grouped
from mimic_deid.deid.mondrian import mondrian_partition
from mimic_deid.deid.release import assemble_release, make_pseudonyms

DIMS = ["heart_rate", "glucose"]
DK, FK = 3, 2


def test_pseudonyms_format_unique_deterministic() -> None:
    p = make_pseudonyms(2000, np.random.default_rng(7))
    assert p.shape == (2000,)
    assert all(re.fullmatch(r"P[0-9a-f]{12}", s) for s in p)
    assert len(set(p)) == 2000
    assert np.array_equal(p, make_pseudonyms(2000, np.random.default_rng(7)))
    assert np.array_equal(p, make_pseudonyms(2000, 7))
    assert not np.array_equal(p, make_pseudonyms(2000, np.random.default_rng(8)))
    # not sequential: order unrelated to position
    assert not (np.all(p[:-1] < p[1:]) or np.all(p[:-1] > p[1:]))
    assert make_pseudonyms(0, 1).shape == (0,)
    with pytest.raises(ValueError) as info:
        make_pseudonyms(-1, 1)
    assert str(info.value) == "number of pseudonyms must be an integer >= 0, got -1"


def test_pseudonym_duplicates_are_redrawn() -> None:
    class Repeating(np.random.Generator):
        """First draw: every row identical; later draws come from the real generator."""

        calls = 0

        def integers(self, low, high=None, size=None, **kw):
            Repeating.calls += 1
            if Repeating.calls == 1:
                return np.zeros(size, dtype=np.int64)
            return super().integers(low, high, size=size, **kw)

    p = make_pseudonyms(50, Repeating(np.random.PCG64(0)))
    assert len(set(p)) == 50
    assert "P000000000000" in set(p)


def build_private(seed: int = 0):
    """Private artefacts of a small two-split release, de-identified per split."""
    rng = np.random.default_rng(seed)
    splits = np.array(["train"] * 12 + ["test"] * 7)
    lengths = np.array([6, 6, 6, 6, 5, 5, 4, 4, 4, 4, 3, 2] + [5, 5, 5, 3, 3, 2, 7])
    keys = np.arange(100, 100 + len(lengths), dtype=np.int64) * 7  # private ids
    cls = assign_duration_classes_grouped(lengths, splits, DK)
    duration = pd.DataFrame(
        {"icustay_id": keys, "split": splits, "length": lengths, "class_length": cls}
    )
    long = pd.DataFrame(
        {
            "icustay_id": np.repeat(keys, lengths),
            "hour": np.concatenate([np.arange(n) for n in lengths]).astype(np.int32),
        }
    )
    for d in DIMS:
        long[d] = rng.normal(size=len(long))
    trimmed = trim_to_classes(long, duration.assign(group=duration["split"])).drop(
        columns=["group", "class_length"]
    )
    released = duration[duration["class_length"] > 0].reset_index(drop=True)
    # Mondrian per (split, class_length) on a random feature
    eq = np.zeros(len(released), dtype=np.int64)
    for _, grp in released.groupby(["split", "class_length"]):
        F = rng.normal(size=(len(grp), 2))
        eq[grp.index.to_numpy()] = mondrian_partition(F, FK)
    eq_classes = pd.DataFrame(
        {
            "icustay_id": released["icustay_id"],
            "split": released["split"],
            "class_length": released["class_length"],
            "eq_class": eq,
        }
    )
    pseud = pd.DataFrame(
        {"icustay_id": released["icustay_id"], "pseudonym": make_pseudonyms(len(released), seed)}
    )
    meta = pd.DataFrame(
        {
            "icustay_id": keys,
            "mortality": (rng.random(len(keys)) < 0.3).astype(np.int8),
            "long_stay": (rng.random(len(keys)) < 0.2).astype(np.int8),
        }
    )
    return duration, trimmed, eq_classes, pseud, meta


@pytest.fixture
def good():
    duration, trimmed, eq_classes, pseud, meta = build_private()
    series, index = assemble_release(trimmed, duration, pseud, meta, dims=DIMS)
    kwargs = dict(
        dk=DK,
        fk=FK,
        eq_classes=eq_classes,
        n_input=len(duration),
        n_suppressed=int((duration["class_length"] == 0).sum()),
    )
    return series, index, kwargs


def test_assemble_contract(good) -> None:
    series, index, kwargs = good
    assert list(series.columns) == ["pseudonym", "hour", *DIMS]
    assert list(index.columns) == ["pseudonym", "duration_class", "split", "label", "long_stay"]
    assert series["hour"].dtype == np.int32
    assert index["duration_class"].dtype == np.int32
    assert index["label"].dtype == np.int8 and index["long_stay"].dtype == np.int8
    assert index["pseudonym"].is_monotonic_increasing
    assert series[["pseudonym", "hour"]].apply(tuple, axis=1).is_monotonic_increasing
    assert kwargs["n_suppressed"] > 0  # the fixture exercises suppression


def test_good_release_passes(good) -> None:
    series, index, kwargs = good
    result = check_release(series, index, **kwargs)
    assert set(result) == {
        "no_identifiers",
        "pseudonyms",
        "series_accounted",
        "hours_match_class",
        "duration_classes",
        "equivalence_classes",
        "demographics",
    }
    assert result["demographics"] == {
        "columns": [],
        "classes": result["duration_classes"]["classes"],
        "smallest": result["duration_classes"]["smallest"],
    }
    assert result["duration_classes"]["smallest"] >= DK
    assert result["equivalence_classes"]["smallest"] >= FK
    assert result["series_accounted"]["released"] == len(index)


def test_duration_class_under_dk(good) -> None:
    series, index, kwargs = good
    victim = index["pseudonym"].iloc[0]
    row = index.iloc[0]
    index2 = index[index["pseudonym"] != victim]
    series2 = series[series["pseudonym"] != victim]
    eq = kwargs["eq_classes"]
    same = eq.index[(eq["split"] == row["split"]) & (eq["class_length"] == row["duration_class"])]
    size = len(same)
    # shrink that duration class to dk - 1 series, keeping the accounting consistent
    drop = index2[
        (index2["split"] == row["split"]) & (index2["duration_class"] == row["duration_class"])
    ]["pseudonym"].iloc[: size - DK]
    index2 = index2[~index2["pseudonym"].isin(drop)]
    series2 = series2[~series2["pseudonym"].isin(drop)]
    kw = dict(kwargs, n_suppressed=kwargs["n_suppressed"] + 1 + len(drop))
    with pytest.raises(ReleaseCheckError) as info:
        check_release(series2, index2, **kw)
    assert str(info.value) == (
        "duration class under dk=3: 1 class(es) with fewer series ((split, duration_class): "
        "size: ('train', 4): 2)"
    )


def test_duration_classes_counted_per_split(good) -> None:
    series, index, kwargs = good
    # relabelling one series' split makes a cross-split class of 1
    index2 = index.copy()
    index2.loc[0, "split"] = "validation"
    with pytest.raises(ReleaseCheckError) as info:
        check_release(series, index2, **kwargs)
    assert str(info.value) == (
        "duration class under dk=3: 1 class(es) with fewer series ((split, duration_class): "
        "size: ('validation', 4): 1)"
    )


def test_eq_class_under_fk(good) -> None:
    series, index, kwargs = good
    eq = kwargs["eq_classes"].copy()
    eq.loc[eq.index[0], "eq_class"] = 999  # a class of one member
    with pytest.raises(ReleaseCheckError) as info:
        check_release(series, index, **dict(kwargs, eq_classes=eq))
    assert str(info.value) == (
        "Mondrian equivalence class under fk=2: 2 class(es), smallest 1 members"
    )


def test_eq_classes_must_cover_release(good) -> None:
    series, index, kwargs = good
    eq = kwargs["eq_classes"].iloc[1:]
    with pytest.raises(ReleaseCheckError) as info:
        check_release(series, index, **dict(kwargs, eq_classes=eq))
    assert str(info.value) == (
        "equivalence classes do not cover the released series: 16 rows for 17 released series, "
        "or the per-duration-class counts differ"
    )


@pytest.mark.parametrize(
    ("table", "column", "values", "message"),
    [
        ("index", "icustay_id", 1, "index.icustay_id: identifier column"),
        ("index", "SUBJECT_ID", 1, "index.SUBJECT_ID: identifier column"),
        ("series", "hadm_id", 1, "series.hadm_id: identifier column"),
        ("series", "row_id", 1, "series.row_id: identifier column"),
        ("series", "charttime", 0.0, "series.charttime: name contains 'time'"),
        ("index", "admit_date", "x", "index.admit_date: name contains 'date'"),
        ("index", "dob", "x", "index.dob: name contains 'dob'"),
        ("index", "dod_flag", 0, "index.dod_flag: name contains 'dod'"),
        ("index", "age_years", 70.0, "index.age_years: name contains 'age'"),
        ("index", "when", pd.Timestamp("2150-01-01"), "index.when: datetime-typed column"),
        ("series", "offset", pd.Timedelta("1h"), "series.offset: datetime-typed column"),
        ("index", "note", "2150-01-01 12:00:00", "index.note: values look like ISO timestamps"),
        ("index", "note", "2150-01-01T12:00", "index.note: values look like ISO timestamps"),
    ],
)
def test_identifier_columns(good, table, column, values, message) -> None:
    series, index, kwargs = good
    series, index = series.copy(), index.copy()
    (series if table == "series" else index)[column] = values
    with pytest.raises(ReleaseCheckError) as info:
        check_release(series, index, **kwargs)
    assert str(info.value) == "identifier, timestamp or age in the release: " + message


def test_pseudonym_repeated_in_index(good) -> None:
    series, index, kwargs = good
    index2 = pd.concat([index, index.iloc[[0]]], ignore_index=True)
    with pytest.raises(ReleaseCheckError) as info:
        check_release(series, index2, **dict(kwargs, n_suppressed=kwargs["n_suppressed"] - 1))
    assert str(info.value) == "pseudonyms: 1 pseudonym(s) repeated in the index"


def test_pseudonyms_differ(good) -> None:
    series, index, kwargs = good
    series2 = series.copy()
    first = series2["pseudonym"] == series2["pseudonym"].iloc[0]
    series2.loc[first, "pseudonym"] = "Pffffffffffff"
    with pytest.raises(ReleaseCheckError) as info:
        check_release(series2, index, **kwargs)
    assert str(info.value) == (
        "pseudonyms differ between series and index: 1 only in series, 1 only in index"
    )


def test_lost_series_uncounted(good) -> None:
    series, index, kwargs = good
    with pytest.raises(ReleaseCheckError) as info:
        check_release(series, index, **dict(kwargs, n_input=kwargs["n_input"] + 1))
    assert str(info.value) == "series lost uncounted: released 17 + suppressed 2 != input 20"
    victim = index["pseudonym"].iloc[-1]
    with pytest.raises(ReleaseCheckError) as info:
        check_release(
            series[series["pseudonym"] != victim], index[index["pseudonym"] != victim], **kwargs
        )
    assert str(info.value) == "series lost uncounted: released 16 + suppressed 2 != input 19"


def test_hours_differ_from_class(good) -> None:
    series, index, kwargs = good
    with pytest.raises(ReleaseCheckError) as info:
        check_release(series.iloc[1:], index, **kwargs)
    assert str(info.value) == (
        "hours: series whose hours are not exactly 0..duration_class-1 (wrong number of hours: "
        "1, hour outside the class: 0 rows, repeated hours: False; 1 series affected)"
    )
    shifted = series.copy()
    shifted.loc[shifted.index[0], "hour"] = 100
    with pytest.raises(ReleaseCheckError) as info:
        check_release(shifted, index, **kwargs)
    assert str(info.value) == (
        "hours: series whose hours are not exactly 0..duration_class-1 (wrong number of hours: "
        "0, hour outside the class: 1 rows, repeated hours: False; 1 series affected)"
    )
    dup = series.copy()
    dup.loc[dup.index[1], "hour"] = dup.loc[dup.index[0], "hour"]
    with pytest.raises(ReleaseCheckError) as info:
        check_release(dup, index, **kwargs)
    assert str(info.value) == (
        "hours: series whose hours are not exactly 0..duration_class-1 (wrong number of hours: "
        "0, hour outside the class: 0 rows, repeated hours: True; 1 series affected)"
    )


def test_eq_classes_keyed_by_pseudonym(good) -> None:
    series, index, kwargs = good
    duration, _, eq_classes, pseud, _ = build_private()
    eq = eq_classes.merge(pseud, on="icustay_id").drop(columns="icustay_id")
    assert check_release(series, index, **dict(kwargs, eq_classes=eq))
    bad = eq.reset_index(drop=True)
    # swap the pseudonyms of two same-split series of different class lengths: all counts
    # per (split, class_length) stay the same, only the pseudonym-to-class link is wrong
    train = np.flatnonzero(bad["split"].to_numpy() == "train")
    lens = bad["class_length"].to_numpy()
    i = int(train[0])
    j = int(train[lens[train] != lens[i]][0])
    bad.loc[[i, j], "pseudonym"] = bad.loc[[j, i], "pseudonym"].to_numpy()
    with pytest.raises(ReleaseCheckError) as info:
        check_release(series, index, **dict(kwargs, eq_classes=bad))
    assert str(info.value) == (
        "equivalence classes do not cover the released series: pseudonyms or class lengths of "
        "the equivalence-class table differ from the index"
    )


def test_missing_columns(good) -> None:
    series, index, kwargs = good
    with pytest.raises(ReleaseCheckError) as err:
        check_release(series, index.drop(columns="duration_class"), **kwargs)
    assert str(err.value) == (
        "release index: missing column(s) ['duration_class']; expected at least ['pseudonym', "
        f"'duration_class'], got {[c for c in index.columns if c != 'duration_class']}"
    )
    with pytest.raises(ReleaseCheckError) as info:
        check_release(
            series, index, **dict(kwargs, eq_classes=kwargs["eq_classes"].drop(columns="split"))
        )
    assert str(info.value) == (
        "equivalence-class table: missing column 'split'; expected it because the release "
        "index has a 'split' column (equivalence classes are formed within each split)"
    )


def test_assemble_errors() -> None:
    duration, trimmed, _, pseud, meta = build_private()
    with pytest.raises(InputDataError) as info:
        assemble_release(trimmed, duration, pseud.iloc[1:], meta, dims=DIMS)
    assert str(info.value) == (
        "pseudonym table: 1 released series have no pseudonym; expected one row per released "
        "'icustay_id'"
    )
    suppressed_key = duration.loc[duration["class_length"] == 0, "icustay_id"].iloc[0]
    extra = pd.DataFrame(
        {"icustay_id": [suppressed_key], "hour": [0], DIMS[0]: [1.0], DIMS[1]: [2.0]}
    )
    with pytest.raises(InputDataError) as info:
        assemble_release(pd.concat([trimmed, extra]), duration, pseud, meta, dims=DIMS)
    assert str(info.value) == (
        "private series table: 1 rows belong to no released series (suppressed or unknown); "
        "trim the series to the duration classes first"
    )
    with pytest.raises(InputDataError) as info:
        assemble_release(trimmed, duration, pseud, meta.iloc[1:], dims=DIMS)
    assert str(info.value) == (
        "label table: 1 released series have no 'mortality'; expected one row per released "
        "'icustay_id'"
    )


def test_release_without_label_has_no_private_ids() -> None:
    duration, trimmed, eq_classes, pseud, _ = build_private(seed=3)
    series, index = assemble_release(trimmed, duration, pseud)
    assert list(index.columns) == ["pseudonym", "duration_class", "split"]
    assert "icustay_id" not in series.columns
    check_release(
        series,
        index,
        dk=DK,
        fk=FK,
        eq_classes=eq_classes,
        n_input=len(duration),
        n_suppressed=int((duration["class_length"] == 0).sum()),
    )


# --------------------------------------------------------------------------------------------
# each privacy claim alone (mimic_deid.deid.check)


def _tiny_release():
    index = pd.DataFrame(
        {"pseudonym": ["Pa", "Pb", "Pc"], "duration_class": np.int32([2, 2, 2]), "split": "train"}
    )
    series = pd.DataFrame(
        {"pseudonym": np.repeat(["Pa", "Pb", "Pc"], 2), "hour": np.tile([0, 1], 3), "hr": 80.0}
    )
    return series, index


def test_claim_no_identifiers_alone() -> None:
    series, index = _tiny_release()
    assert check.check_no_identifiers(series, index)["series_columns"] == [
        "pseudonym",
        "hour",
        "hr",
    ]
    with pytest.raises(ReleaseCheckError) as err:
        check.check_no_identifiers(series.assign(age_years=60.0), index)
    assert str(err.value) == (
        "identifier, timestamp or age in the release: series.age_years: name contains 'age'"
    )


def test_claim_pseudonyms_alone() -> None:
    series, index = _tiny_release()
    assert check.check_pseudonyms(series, index) == {"unique": 3}
    with pytest.raises(ReleaseCheckError) as err:
        check.check_pseudonyms(series[series["pseudonym"] != "Pc"], index)
    assert str(err.value) == (
        "pseudonyms differ between series and index: 0 only in series, 1 only in index"
    )


def test_claim_accounting_alone() -> None:
    _, index = _tiny_release()
    assert check.check_accounting(index, 4, 1) == {"input": 4, "released": 3, "suppressed": 1}
    with pytest.raises(ReleaseCheckError) as err:
        check.check_accounting(index, 5, 1)
    assert str(err.value) == "series lost uncounted: released 3 + suppressed 1 != input 5"


def test_claim_hours_alone() -> None:
    series, index = _tiny_release()
    assert check.check_hours(series, index) == {"series": 3, "rows": 6}
    with pytest.raises(ReleaseCheckError) as err:
        check.check_hours(series.iloc[1:], index)
    assert str(err.value) == (
        "hours: series whose hours are not exactly 0..duration_class-1 (wrong number of hours: "
        "1, hour outside the class: 0 rows, repeated hours: False; 1 series affected)"
    )


def test_claims_duration_k_coverage_and_feature_k_alone() -> None:
    _, index = _tiny_release()
    assert check.check_duration_k(index, 3) == {"dk": 3, "classes": 1, "smallest": 3}
    with pytest.raises(ReleaseCheckError) as err:
        check.check_duration_k(index, 4)
    assert str(err.value) == (
        "duration class under dk=4: 1 class(es) with fewer series "
        "((split, duration_class): size: ('train', 2): 3)"
    )
    eq = pd.DataFrame({"split": "train", "class_length": [2, 2, 2], "eq_class": [0, 0, 1]})
    check.check_coverage(index, eq)
    with pytest.raises(ReleaseCheckError) as err:
        check.check_coverage(index, eq.iloc[:2])
    assert str(err.value) == (
        "equivalence classes do not cover the released series: 2 rows for 3 released series, "
        "or the per-duration-class counts differ"
    )
    assert check.check_feature_k(index, eq, 1)["smallest"] == 1
    with pytest.raises(ReleaseCheckError) as err:
        check.check_feature_k(index, eq, 2)
    assert (
        str(err.value) == "Mondrian equivalence class under fk=2: 1 class(es), smallest 1 members"
    )


def test_release_order_is_independent_of_icustay_id() -> None:
    """Rows are ordered by pseudonym; pseudonyms must not follow ICUSTAY_ID (rank corr ~ 0)."""
    from scipy.stats import spearmanr

    from mimic_deid.deid.release import pseudonymous_release

    n, length = 400, 2
    ids = np.arange(200_000, 200_000 + n, dtype=np.int64)
    perturbed = pd.DataFrame(
        {
            "group": "all",
            "class_length": np.int32(length),
            "icustay_id": np.repeat(ids, length),
            "hour": np.tile(np.arange(length, dtype=np.int32), n),
            "heart_rate": 80.0,
        }
    )
    classes = pd.DataFrame(
        {
            "icustay_id": ids,
            "group": "all",
            "split": "train",
            "length": np.int32(length),
            "class_length": np.int32(length),
        }
    )
    meta = pd.DataFrame({"icustay_id": ids, "mortality": np.int8(0), "long_stay": np.int8(0)})
    _, index, pseudonyms = pseudonymous_release(perturbed, classes, meta, seed=1, salt="stays")
    order = index["pseudonym"].map(pseudonyms.set_index("pseudonym")["icustay_id"])
    rho = spearmanr(np.arange(n), order.to_numpy()).statistic
    assert abs(rho) < 0.2, rho
