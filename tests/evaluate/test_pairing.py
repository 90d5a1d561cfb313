"""Cross-release pairing (evaluate.pairing)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mimic_deid.core.errors import InputDataError
from mimic_deid.evaluate.pairing import (
    cell_chance,
    pairing_rate,
    pairs_of,
    release_name,
    release_pairs,
    series_shapes,
    series_statistics,
    shape_pairing_rate,
)


def _release(values: np.ndarray, keys: np.ndarray, prefix: str):
    """A long release table of 4 hours per series and its pseudonym -> key map."""
    n = len(keys)
    pseudonyms = [f"{prefix}{i:03d}" for i in range(n)]
    long = pd.DataFrame(
        {
            "pseudonym": np.repeat(pseudonyms, 4),
            "hour": np.tile(np.arange(4), n),
            "heart_rate": np.repeat(values, 4) + np.tile([0.0, 1.0, -1.0, 0.5], n),
        }
    )
    return series_statistics(long, ["heart_rate"]), pd.Series(keys, index=pseudonyms)


def test_statistics_are_the_strong_attackers_per_series():
    stats, _ = _release(np.array([10.0, 20.0]), np.array([1, 2]), "P")
    assert list(stats.columns) == [
        "heart_rate_mean", "heart_rate_var", "heart_rate_min", "heart_rate_max",
        "heart_rate_count",
    ]  # fmt: skip
    assert stats.loc["P000"].tolist() == pytest.approx([10.125, 0.546875, 9.0, 11.0, 4.0])


def test_distinct_values_pair_every_series_and_identical_ones_only_by_chance():
    rng = np.random.default_rng(0)
    keys = np.arange(100, 150)
    values = rng.normal(80, 10, size=50)
    order = rng.permutation(50)  # B lists the same people in another order
    a = _release(values, keys, "A")
    b = _release(values[order], keys[order], "B")
    result = pairing_rate(*a, *b, np.random.default_rng(1))
    assert (result["targets"], result["candidates"], result["rate"]) == (50, 50, 1.0)
    assert result["chance"] == 1 / 50 and result["rate_ci"][1] == 1.0
    # one shared value for everybody: every candidate is tied, a pair is right 1/50 of the time
    flat = _release(np.full(50, 80.0), keys, "C")
    assert pairing_rate(*a, *flat, np.random.default_rng(1))["rate"] == pytest.approx(1 / 50)


def test_only_people_in_both_releases_are_targets_and_large_releases_are_sampled():
    keys = np.arange(40)
    a = _release(np.arange(40, dtype=float) * 5, keys, "A")
    b = _release(np.arange(20, dtype=float) * 5, keys[:20], "B")
    assert pairing_rate(*a, *b, np.random.default_rng(0))["targets"] == 20
    sampled = pairing_rate(*a, *b, np.random.default_rng(0), max_targets=7)
    assert sampled["targets"] == 7 and sampled["rate"] == 1.0


def test_pairs_are_every_two_releases_of_the_sweep():
    p = [dict(dk=50, fk=10, heuristic="range", method=m) for m in ("adhoc-x", "genetic-y")]
    q = dict(dk=50, fk=5, heuristic="range", method="adhoc-x")
    pairs = release_pairs([*p, q])
    names = [(release_name(*a), release_name(*b)) for a, b in pairs]
    assert len(names) == 15 == len(set(names))  # 6 releases: every two, once
    assert names[:3] == [
        ("stays_50_10_range_adhoc-x", "stays_50_10_range_genetic-y"),
        ("stays_50_10_range_adhoc-x", "stays_50_5_range_adhoc-x"),
        ("stays_50_10_range_genetic-y", "stays_50_5_range_adhoc-x"),
    ]
    # a stays and an ihm48 release: ihm48 (the smaller) gives the targets
    assert ("ihm48_50_5_range_adhoc-x", "stays_50_10_range_genetic-y") in names
    assert not [n for n in names if n[0].startswith("stays") and n[1].startswith("ihm48")]
    table = pd.DataFrame([{"release_a": a, "release_b": b, "rate": 0.5} for a, b in names])
    mine = pairs_of(table, "stays_50_10_range_adhoc-x")
    assert [(r["other"], r["as"]) for r in mine] == [
        ("stays_50_10_range_genetic-y", "a"),
        ("stays_50_5_range_adhoc-x", "a"),
        ("ihm48_50_10_range_adhoc-x", "b"),
        ("ihm48_50_10_range_genetic-y", "b"),
        ("ihm48_50_5_range_adhoc-x", "b"),
    ]


def test_group_intersections_below_k_are_counted_per_grouping():
    from mimic_deid.evaluate.pairing import group_intersections

    def groups(ids):  # six people, one grouping column, one never grouped
        return pd.DataFrame({"icustay_id": range(6), "k_group_heart_rate": ids, "k_group_ph": -1})

    # release A groups {0,1,2} {3,4,5}; B groups {0,1,5} {2,3,4}: A∩B cells {0,1} {2} {3,4} {5}
    a, b = groups([0, 0, 0, 1, 1, 1]), groups([0, 0, 1, 1, 1, 0])
    assert group_intersections(a, b, 3) == {"k_group_heart_rate": 100.0}  # every cell under 3
    assert group_intersections(a, b, 2) == {"k_group_heart_rate": pytest.approx(100 * 2 / 6)}
    assert group_intersections(a, a, 3) == {"k_group_heart_rate": 0.0}  # the same groups


def _long(X: np.ndarray, prefix: str) -> pd.DataFrame:
    n, hours, _ = X.shape
    return pd.DataFrame(
        {
            "pseudonym": np.repeat([f"{prefix}{i:03d}" for i in range(n)], hours),
            "hour": np.tile(np.arange(hours), n),
            "heart_rate": X[:, :, 0].ravel(),
            "glucose": X[:, :, 1].ravel(),
        }
    )


def test_the_shape_attacker_pairs_each_shape_under_new_levels_that_statistics_cannot():
    rng = np.random.default_rng(0)
    n, hours = 30, 12
    keys = np.arange(500, 500 + n)
    X = 80 + np.cumsum(rng.normal(0, 3, (n, hours, 2)), axis=1)
    # release A: the first 6 hours of every shape under one level and scale per group of 5;
    # release B: the 12 hours under others, listed in another order
    group = (np.arange(n) // 5)[:, None, None]
    order = rng.permutation(n)
    A = _long((2.0 + group) * X[:, :6] + 10 * group, "A")
    B = _long(X[order] * 0.5 - 30, "B")
    vars_ = ["heart_rate", "glucose"]
    shapes_a = (*series_shapes(A, vars_), vars_)
    shapes_b = (*series_shapes(B, vars_), vars_)
    assert shapes_a[1].shape == (n, 48, 2) and np.isnan(shapes_a[1][:, 6:]).all()
    keys_a = pd.Series(keys, index=[f"A{i:03d}" for i in range(n)])
    keys_b = pd.Series(keys[order], index=[f"B{i:03d}" for i in range(n)])
    shape = shape_pairing_rate(shapes_a, keys_a, shapes_b, keys_b, np.random.default_rng(1))
    assert (shape["targets"], shape["candidates"], shape["rate"]) == (n, n, 1.0)
    assert shape["features"] == 6 * 2  # the 6 hours both hold
    stats = pairing_rate(
        series_statistics(A, vars_), keys_a, series_statistics(B, vars_), keys_b,
        np.random.default_rng(1),
    )  # fmt: skip
    assert stats["rate"] < 0.5
    # identical series in B (one shape for everybody): only chance
    flat = _long(np.repeat(X[:1], n, axis=0), "C")
    keys_c = pd.Series(keys, index=[f"C{i:03d}" for i in range(n)])
    tied = shape_pairing_rate(
        shapes_a, keys_a, (*series_shapes(flat, vars_), vars_), keys_c, np.random.default_rng(1)
    )
    assert tied["rate"] == pytest.approx(1 / n)


def _index(prefix: str, ages: list[str], classes: list[int], **extra) -> pd.DataFrame:
    n = len(ages)
    return pd.DataFrame(
        {"pseudonym": [f"{prefix}{i:03d}" for i in range(n)], "duration_class": classes,
         "age": ages, **extra}
    )  # fmt: skip


def test_chance_counts_the_candidates_of_each_targets_published_cell():
    """A target is guessed among B's series of its own duration class and demographics."""
    rng = np.random.default_rng(0)
    keys = np.arange(100, 150)
    values = rng.normal(80, 10, size=50)
    ages = ["30-39"] * 10 + ["60-69"] * 40
    a = _release(values, keys, "A")
    b = _release(values, keys, "B")
    index_a = _index("A", ages, [24] * 50)
    index_b = _index("B", ages, [24] * 50, split="train")  # split: B's alone, not compared
    result = pairing_rate(*a, *b, np.random.default_rng(1), index_a=index_a, index_b=index_b)
    # 10 targets among 10 candidates, 40 among 40: (10/10 + 40/40) / 50
    assert result["chance"] == pytest.approx(2 / 50)
    assert result["chance_columns"] == "duration_class;age"
    shapes = [(*series_shapes(long, ["heart_rate"]), ["heart_rate"]) for long in _longs(values)]
    shape = shape_pairing_rate(
        shapes[0], a[1], shapes[1], b[1], np.random.default_rng(1), index_a=index_a,
        index_b=index_b,
    )  # fmt: skip
    assert shape["chance"] == pytest.approx(2 / 50)
    # without the indexes: every series of B
    plain = pairing_rate(*a, *b, np.random.default_rng(1))
    assert (plain["chance"], plain["chance_columns"]) == (1 / 50, "")


def _longs(values: np.ndarray) -> list[pd.DataFrame]:
    n = len(values)
    return [
        pd.DataFrame(
            {
                "pseudonym": np.repeat([f"{p}{i:03d}" for i in range(n)], 4),
                "hour": np.tile(np.arange(4), n),
                "heart_rate": np.repeat(values, 4) + np.tile([0.0, 1.0, -1.0, 0.5], n),
            }
        )
        for p in ("A", "B")
    ]


def test_a_column_on_which_a_target_and_its_partner_differ_is_not_matched_on():
    """Another dk (or generalisation level) in B: the class tells that target nothing."""
    index_a = _index("A", ["30-39", "30-39", "60-69", "60-69"], [24, 24, 24, 24])
    index_b = _index("B", ["30-39", "30-39", "60-69", "60-69"], [24, 48, 24, 24])
    targets, partners = pd.Index(index_a["pseudonym"]), pd.Index(index_b["pseudonym"])
    chance, columns = cell_chance(targets, partners, index_a, index_b)
    # B000: class and age agree -> {B000}; B001: class differs -> age only -> {B000, B001};
    # B002, B003: {B002, B003}
    assert columns == ["duration_class", "age"]
    assert chance == pytest.approx((1 + 1 / 2 + 1 / 2 + 1 / 2) / 4)
    with pytest.raises(InputDataError) as err:
        cell_chance(targets, partners, index_a, index_b.iloc[1:])
    assert str(err.value) == (
        "release index B: 1 series of the pairing have no row; expected one row per released series"
    )


def test_a_release_of_identical_series_in_groups_pairs_one_in_its_group_size():
    """Microaggregation: B publishes each group's mean for its members (groups of 2, 3 and 5,
    far apart), so a target finds its group and then guesses among its members; A's targets
    come in identical pairs too. Both attackers count every member of a tied group."""
    rng = np.random.default_rng(3)
    sizes = np.array([2, 3, 5])
    group = np.repeat(np.arange(3), sizes)
    keys = np.arange(700, 710)
    order = rng.permutation(10)
    # B: one value per group (the hourly pattern of _release is the same for all)
    b = _release((100.0 * group)[order], keys[order], "B")
    a = _release(100.0 * group + rng.normal(0, 1, 10), keys, "A")
    expected = np.mean(1.0 / sizes[group])
    assert pairing_rate(*a, *b, np.random.default_rng(1))["rate"] == pytest.approx(expected)
    # the other way round: a group's identical targets all pick the one member of A nearest
    # their mean, the right pick for one target per group
    assert pairing_rate(*b, *a, np.random.default_rng(1))["rate"] == pytest.approx(3 / 10)
    vars_ = ["heart_rate", "glucose"]
    X = np.cumsum(rng.normal(0, 3, (3, 12, 2)), axis=1)[group]
    shapes_b = (*series_shapes(_long(X[order], "B"), vars_), vars_)
    shapes_a = (*series_shapes(_long(X + rng.normal(0, 0.01, X.shape), "A"), vars_), vars_)
    keys_a = pd.Series(keys, index=[f"A{i:03d}" for i in range(10)])
    keys_b = pd.Series(keys[order], index=[f"B{i:03d}" for i in range(10)])
    shape = shape_pairing_rate(shapes_a, keys_a, shapes_b, keys_b, np.random.default_rng(1))
    assert (shape["targets"], shape["candidates"]) == (10, 10)
    assert shape["rate"] == pytest.approx(expected)


def test_the_table_marks_each_release_of_a_pair_certified_or_not():
    from mimic_deid.evaluate.pairing import pair_table

    rows = pd.DataFrame(
        {
            "release_a": ["ihm48_x", "ihm48_x"],
            "release_b": ["stays_x", "stays_y"],
            "rate": [0.1, 0.2],
        }
    )
    table = pair_table(rows, {"ihm48_x": True, "stays_x": True, "stays_y": False})
    assert list(table.columns) == ["release_a", "release_b", "certified_a", "certified_b", "rate"]
    assert table["certified_a"].tolist() == [True, True]
    assert table["certified_b"].tolist() == [True, False]
    with pytest.raises(InputDataError) as err:
        pair_table(rows, {"ihm48_x": True, "stays_x": True})
    assert str(err.value) == (
        "cross-release table: no check for release(s) ['stays_y']; expected one verdict per "
        "release of the sweep"
    )


def test_a_release_that_publishes_no_series_pairs_nobody():
    rng = np.random.default_rng(0)
    vars_ = ["heart_rate", "glucose"]
    full = _long(80 + rng.normal(0, 3, (6, 12, 2)), "A")
    keys_a = pd.Series(np.arange(6), index=[f"A{i:03d}" for i in range(6)])
    empty = full.iloc[:0]
    none = pd.Series([], dtype=np.int64)
    shapes_full = (*series_shapes(full, vars_), vars_)
    shapes_empty = (*series_shapes(empty, vars_), vars_)
    stats_full, stats_empty = series_statistics(full, vars_), series_statistics(empty, vars_)
    for shape in (
        shape_pairing_rate(shapes_full, keys_a, shapes_empty, none, np.random.default_rng(1)),
        shape_pairing_rate(shapes_empty, none, shapes_full, keys_a, np.random.default_rng(1)),
        pairing_rate(stats_full, keys_a, stats_empty, none, np.random.default_rng(1)),
        pairing_rate(stats_empty, none, stats_full, keys_a, np.random.default_rng(1)),
    ):
        assert shape["targets"] == 0 and np.isnan(shape["rate"])
