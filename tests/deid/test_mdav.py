"""MDAV microaggregation of whole series: the partition, the release method on duration
classes, its claim 11 and its registry entry."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from test_stages import FEATURES, make_release

from mimic_deid.config import validate_config
from mimic_deid.core.errors import ConfigError, InputDataError, ReleaseCheckError
from mimic_deid.deid import (
    apply_method,
    check_sweep_point,
    class_arrays,
    duration_classes,
    mondrian_targets,
    pseudonymous_release,
)
from mimic_deid.deid.mdav import (
    check_mdav_clusters,
    cluster_means,
    clusters,
    diverse_clusters,
    mdav_partition,
    standardise,
)
from mimic_deid.deid.methods import REGISTRY, method_labels, parse_method_label

VARIABLES = ["heart_rate", "glucose"]

# --- the partition ----------------------------------------------------------------------------


def test_three_well_apart_groups_are_found_around_the_two_extremes_first():
    """n = 3k: the record furthest from the centroid (0, first of the tie with 22) and the one
    furthest from it (22) each take their k - 1 nearest; the rest is the last cluster."""
    Z = np.array([0.0, 1, 2, 10, 11, 12, 20, 21, 22])[:, None]
    labels, rounds = mdav_partition(Z, 3)
    assert labels.tolist() == [0, 0, 0, 2, 2, 2, 1, 1, 1] and rounds == 2


def test_between_2k_and_3k_one_cluster_forms_around_the_furthest_and_the_rest_is_one():
    Z = np.array([0.0, 1, 2, 3, 10, 11, 12])[:, None]  # centroid 5.57: 12 is furthest
    labels, rounds = mdav_partition(Z, 3)
    assert labels.tolist() == [1, 1, 1, 1, 0, 0, 0] and rounds == 1


def test_identical_records_still_make_clusters_of_k():
    labels, _ = mdav_partition(np.ones((10, 4)), 3)
    assert np.bincount(labels).tolist() == [3, 3, 4]


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 80),
    k=st.integers(2, 9),
    p=st.integers(1, 6),
    seed=st.integers(0, 2**16),
    ties=st.booleans(),
)
def test_every_cluster_holds_k_to_2k_minus_1_and_the_partition_is_repeatable(n, k, p, seed, ties):
    if n < k:
        return
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, p))
    if ties:  # many exact duplicates and equal distances
        Z = np.round(Z)
    labels, _ = mdav_partition(Z, k)
    sizes = np.bincount(labels)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1 and (labels >= 0).all()
    assert (sizes[:-1] == k).all()  # all but the last hold exactly k
    again, _ = mdav_partition(Z.copy(), k)
    np.testing.assert_array_equal(labels, again)


@pytest.mark.parametrize(
    ("Z", "k", "error", "message"),
    [
        (np.zeros((5, 2)), 1, ConfigError, "MDAV: k must be an integer >= 2, got 1"),
        (
            np.zeros((2, 2)),
            3,
            InputDataError,
            "MDAV: 2 series in the unit, fewer than k=3; every cluster needs at least k",
        ),
        (
            np.array([[0.0], [np.nan], [1.0]]),
            2,
            InputDataError,
            "MDAV: records must be finite (standardise nulls first)",
        ),
        (
            np.zeros(4),
            2,
            InputDataError,
            "MDAV: records must be a 2-D array (n, p), got shape (4,)",
        ),
    ],
)
def test_bad_partition_inputs_are_named(Z, k, error, message):
    with pytest.raises(error) as err:
        mdav_partition(Z, k)
    assert str(err.value) == message


def test_standardise_gives_every_variable_unit_scale_and_nulls_the_mean():
    X = np.array(
        [[[1.0, 5.0, 100.0], [3.0, np.nan, 100.0]], [[5.0, 7.0, 100.0], [7.0, 9.0, 100.0]]]
    )
    Z = standardise(X, np.array([0, 1]))
    assert Z.shape == (2, 4)  # hours x clustered dims
    hr = Z[:, [0, 2]]  # dim 0 at both hours: (x - 4) / sqrt(5)
    np.testing.assert_allclose(hr, (np.array([[1.0, 3.0], [5.0, 7.0]]) - 4) / np.sqrt(5))
    assert Z[0, 3] == 0.0  # the null of dim 1 counts as its mean
    np.testing.assert_allclose(
        Z[[0, 1, 1], [1, 1, 3]], (np.array([5.0, 7, 9]) - 7) / np.sqrt(8 / 3)
    )


# --- hourly means ------------------------------------------------------------------------------


def test_cluster_means_average_the_observed_members_hour_by_hour():
    X = np.array(
        [
            [[1.0, 10.0], [np.nan, 20.0]],
            [[3.0, 11.0], [4.0, 21.0]],
            [[5.0, 12.0], [np.nan, 22.0]],
            [[7.0, 13.0], [np.nan, 23.0]],
        ]
    )
    out = cluster_means(X, np.array([0, 0, 1, 1]), np.array([0]))
    np.testing.assert_array_equal(out[:2, :, 0], [[2.0, 4.0], [2.0, 4.0]])  # hour 1: one member
    assert np.isnan(out[2:, 1, 0]).all()  # no member observed: null
    np.testing.assert_array_equal(out[:, :, 1], X[:, :, 1])  # an unclustered dim is kept


def release(label="mdav", fk=5, n=60, ell=1, group_by_split=False):
    """One small release through ``label``: everything a check of its point needs."""
    series, meta = make_release(n=n)
    durations, _ = duration_classes(meta, dk=10, group_by_split=group_by_split)
    classes, dims = class_arrays(series, durations, fill_missing=True)
    outcomes = meta[["icustay_id", "mortality", "long_stay"]] if ell > 1 else None
    targets, _ = mondrian_targets(
        classes, dims, FEATURES, fk=fk, heuristic="range", outcomes=outcomes, ell=ell
    )
    perturbed, per_series, summary = apply_method(
        classes, dims, targets, FEATURES, label=label, seed=7, fk=fk, outcomes=outcomes, ell=ell
    )
    public, index, pseudonyms = pseudonymous_release(
        perturbed,
        durations,
        meta,
        7,
        "stays/test",
        variables=VARIABLES,
        labelled=ell > 1,
        publish_split=group_by_split,
    )
    return dict(
        series=series,
        meta=meta,
        durations=durations,
        classes=classes,
        targets=targets,
        perturbed=perturbed,
        per_series=per_series,
        summary=summary,
        public=public,
        index=index,
        pseudonyms=pseudonyms,
    )


@pytest.fixture(scope="module")
def point():
    return release()


def test_every_series_of_a_cluster_is_its_clusters_hourly_mean(point):
    """Computed apart from the method: the trimmed original series (gap-filled as the method
    gets them) averaged per (cluster, hour) with pandas."""
    originals = pd.concat(
        [
            pd.DataFrame(
                {
                    "icustay_id": np.repeat(c.keys, c.length),
                    "hour": np.tile(np.arange(c.length), len(c.keys)),
                    **{d: c.X[:, :, i].ravel() for i, d in enumerate(VARIABLES)},
                }
            )
            for c in point["classes"]
        ]
    )
    keyed = originals.merge(point["per_series"][["icustay_id", "class_length", "cluster"]])
    expected = keyed.groupby(["class_length", "cluster", "hour"])[VARIABLES].transform("mean")
    got = keyed[["icustay_id", "hour"]].merge(point["perturbed"], on=["icustay_id", "hour"])
    np.testing.assert_allclose(got[VARIABLES].to_numpy(), expected.to_numpy(), rtol=1e-12)
    spread = (
        got.assign(cls=keyed["class_length"].to_numpy(), cluster=keyed["cluster"].to_numpy())
        .groupby(["cls", "cluster", "hour"])[VARIABLES]
        .nunique()
    )
    assert (spread.to_numpy() == 1).all()  # bit-identical within a cluster
    sizes = point["per_series"].groupby(["class_length", "cluster"]).size()
    assert sizes.min() >= 5 and sizes.max() <= 9
    summary = point["summary"]["mdav"]
    assert summary["clusters"] == len(sizes) and summary["smallest_cluster"] == sizes.min()
    assert 0.0 < summary["sse_sst"] < 1.0


def test_the_release_does_not_depend_on_the_worker_processes():
    one = release()
    series, meta = make_release()
    durations, _ = duration_classes(meta, dk=10, group_by_split=False)
    classes, dims = class_arrays(series, durations, fill_missing=True)
    perturbed, per_series, _ = apply_method(
        classes, dims, one["targets"], FEATURES, label="mdav", seed=99, fk=5, threads=2
    )
    pd.testing.assert_frame_equal(perturbed, one["perturbed"])  # no random draw: any seed
    pd.testing.assert_frame_equal(per_series, one["per_series"])


def test_labelled_clusters_are_merged_until_each_holds_ell_outcomes():
    """Mutant: without the merge some plain MDAV cluster holds one outcome."""
    rng = np.random.default_rng(3)
    Z = rng.normal(size=(40, 3))
    outcomes = np.column_stack([np.arange(40) % 8 == 0, np.arange(40) % 3 == 0]).astype(int)
    plain, _ = mdav_partition(Z, 4)
    distinct = pd.DataFrame({"c": plain, "y": outcomes[:, 0]}).groupby("c")["y"].nunique()
    assert (distinct < 2).any()
    merged = diverse_clusters(Z, plain, outcomes, 2)
    frame = pd.DataFrame({"c": merged, "y": outcomes[:, 0], "z": outcomes[:, 1]})
    assert (frame.groupby("c")[["y", "z"]].nunique().to_numpy() >= 2).all()
    assert frame.groupby("c").size().min() >= 4
    # a merge is a union of whole clusters
    pairs = pd.DataFrame({"plain": plain, "merged": merged}).drop_duplicates()
    assert pairs["plain"].is_unique


def test_labelled_release_certifies_and_checks_outcomes_per_cluster():
    p = release(ell=2, group_by_split=True)
    result = check_sweep_point(
        p["public"], p["index"], p["durations"], p["targets"], p["pseudonyms"],
        dk=10, fk=5, group_by_split=True, variables=VARIABLES, labelled=True, outcome_l=2,
        method="mdav", per_series=p["per_series"], strict=False,
    )  # fmt: skip
    assert result["verdict"] == "certified"
    assert result["checks"]["outcomes_per_cluster"]["l"] == 2
    assert result["checks"]["mdav_clusters"]["smallest_group"] >= 5


# --- claim 11 ----------------------------------------------------------------------------------


def sweep_check(p, public=None, per_series=None):
    return check_sweep_point(
        p["public"] if public is None else public, p["index"], p["durations"], p["targets"],
        p["pseudonyms"], dk=10, fk=5, group_by_split=False, variables=VARIABLES,
        labelled=False, method="mdav",
        per_series=p["per_series"] if per_series is None else per_series, strict=False,
    )  # fmt: skip


def test_the_claim_certifies_the_mdav_release_with_its_figures(point):
    result = sweep_check(point)
    assert result["verdict"] == "certified"
    figures = result["checks"]["mdav_clusters"]
    assert figures == {
        "k": 5,
        "series": 60,
        "variables": VARIABLES,
        "groups": point["summary"]["mdav"]["clusters"],
        "smallest_group": point["summary"]["mdav"]["smallest_cluster"],
        "breach_bound": 0.2,
    }


def test_a_release_that_keeps_each_series_shape_is_refused(point):
    """The ad-hoc release of the same point (each series its own shape under new levels),
    offered with MDAV's clusters: no series has an identical companion."""
    adhoc = release(label="adhoc-it5-ns0.01")
    public = adhoc["public"].merge(adhoc["pseudonyms"]).drop(columns="pseudonym")
    public = public.merge(point["pseudonyms"])[["pseudonym", "hour", *VARIABLES]]
    result = sweep_check(point, public=public)
    assert result["verdict"] == (
        "refused: MDAV clusters: 60 released series in groups of identical series under k=5 "
        "within their duration class and demographic cell, smallest 1 series"
    )
    assert not result["passed"]


def test_one_changed_value_breaks_its_group_and_is_refused(point):
    public = point["public"].copy()
    public.loc[0, "heart_rate"] += 1e-9
    who = public.loc[0, "pseudonym"]
    key = point["pseudonyms"].set_index("pseudonym").at[who, "icustay_id"]
    row = point["per_series"].set_index("icustay_id").loc[key]
    size = int(
        (
            (point["per_series"]["class_length"] == row["class_length"])
            & (point["per_series"]["cluster"] == row["cluster"])
        ).sum()
    )
    with pytest.raises(ReleaseCheckError) as err:
        check_mdav_clusters(point["per_series"], public, point["pseudonyms"], 5)
    assert str(err.value) == (
        f"MDAV clusters: {size} released series in groups of identical series under k=5 "
        "within their duration class and demographic cell, smallest 1 series"
    )


def test_a_cluster_that_publishes_two_series_is_refused(point):
    """Two clusters of one class given one id: each is a group of >= k, but the cluster
    publishes two series."""
    per_series = point["per_series"].copy()
    first = per_series["class_length"] == per_series["class_length"].iloc[0]
    per_series.loc[first & (per_series["cluster"] == 1), "cluster"] = 0
    with pytest.raises(ReleaseCheckError) as err:
        check_mdav_clusters(per_series, point["public"], point["pseudonyms"], 5)
    assert str(err.value) == (
        "MDAV clusters: 1 cluster(s) publish more than one series (the release is not each "
        "cluster's hourly mean)"
    )


def test_a_series_outside_the_methods_table_or_without_its_table_is_refused(point):
    with pytest.raises(ReleaseCheckError) as err:
        check_mdav_clusters(point["per_series"].iloc[1:], point["public"], point["pseudonyms"], 5)
    assert str(err.value) == (
        "MDAV clusters: 1 released series are not in the method's per-series table"
    )
    result = check_sweep_point(
        point["public"], point["index"], point["durations"], point["targets"],
        point["pseudonyms"], dk=10, fk=5, group_by_split=False, method="mdav", strict=False,
    )  # fmt: skip
    assert result["verdict"] == (
        "refused: method 'mdav': its claims need its per-series table (method.parquet)"
    )


def test_clusters_are_numbered_over_the_release(point):
    groups = clusters(point["per_series"])
    assert list(groups.columns) == ["icustay_id", "cluster"]
    per_class = point["per_series"].groupby(["class_length", "cluster"]).ngroups
    assert groups["cluster"].nunique() == per_class


# --- registry and config -----------------------------------------------------------------------


def test_the_registry_entry_takes_k_from_fk_and_has_a_bare_label():
    entry = REGISTRY["mdav"]
    assert entry.k_from_fk and entry.takes_outcomes and entry.group_name == "cluster"
    assert method_labels({"mdav": {}}) == ["mdav"]
    assert parse_method_label("mdav") == ("mdav", {})
    with pytest.raises(ConfigError) as err:
        parse_method_label("mdav-k5")
    assert str(err.value) == "method label 'mdav-k5': expected 0 parameters"


def test_the_config_takes_mdav_without_parameters_and_names_a_stray_one():
    config = yaml.safe_load(open("config/config.yaml"))
    config["deid"]["methods"] = {"mdav": {}}
    assert validate_config(config, "config/schema.yaml", variables=False)["deid"]["methods"] == {
        "mdav": {}
    }
    config["deid"]["methods"] = {"mdav": {"k": [5]}}
    with pytest.raises(ConfigError) as err:
        validate_config(config, "config/schema.yaml", variables=False)
    assert str(err.value) == (
        "config parameter 'deid/methods/mdav': Additional properties are not allowed "
        "('k' was unexpected)"
    )
