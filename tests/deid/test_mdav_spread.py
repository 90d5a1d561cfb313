"""Release method ``mdav-spread``: MDAV's clusters, each publishing its hourly mean stretched to
its members' within-series sd (issue 49.3). Its invariants: clusters of at least k, members
identical, ℓ outcomes per cluster, one release whatever the workers, certified by claim 11."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from test_mdav import VARIABLES, release
from test_stages import FEATURES

from mimic_deid.config import validate_config
from mimic_deid.core.errors import ConfigError
from mimic_deid.deid import apply_method, check_sweep_point
from mimic_deid.deid.mdav import cluster_means, spread_means
from mimic_deid.deid.methods import REGISTRY, method_labels, parse_method_label


def test_the_cluster_mean_is_stretched_to_its_members_sd():
    """Members (0, 4, 0) and (0, 0, 4): hourly mean (0, 2, 2), mean 4/3, sd sqrt(8)/3; each
    member's sd is twice that, so the mean is stretched by 2 about 4/3."""
    X = np.array([[[0.0], [4.0], [0.0]], [[0.0], [0.0], [4.0]]])
    out = spread_means(X, np.array([0, 0]), np.array([0]))
    np.testing.assert_allclose(out[0, :, 0], [-4 / 3, 8 / 3, 8 / 3], rtol=1e-12)
    assert (out[0] == out[1]).all()
    np.testing.assert_allclose(out[0, :, 0].std(), X[0, :, 0].std(), rtol=1e-12)
    np.testing.assert_allclose(cluster_means(X, np.array([0, 0]), np.array([0]))[0, :, 0],
                               [0.0, 2.0, 2.0])  # fmt: skip


def test_nulls_constant_means_and_unclustered_dims_are_kept():
    X = np.array(
        [
            [[1.0, 5.0], [3.0, 6.0], [np.nan, 7.0]],
            [[3.0, 5.0], [1.0, 6.0], [np.nan, 8.0]],
            [[np.nan, 1.0], [np.nan, 2.0], [np.nan, 3.0]],
            [[np.nan, 1.0], [np.nan, 2.0], [np.nan, 3.0]],
        ]
    )
    out = spread_means(X, np.array([0, 0, 1, 1]), np.array([0]))
    np.testing.assert_array_equal(out[:2, :2, 0], [[2.0, 2.0], [2.0, 2.0]])  # constant: f = 1
    assert np.isnan(out[:, 2, 0]).all() and np.isnan(out[2:, :, 0]).all()  # never observed
    np.testing.assert_array_equal(out[:, :, 1], X[:, :, 1])


def spread_point(**kwargs):
    return release(label="mdav-spread", **kwargs)


@pytest.fixture(scope="module")
def point():
    return spread_point()


def test_clusters_hold_k_identical_series_with_their_members_spread(point):
    """MDAV's own clusters (those of label mdav), each of >= k series publishing one series
    whose sd over the hours is its members' mean sd (gap-filled, as the method gets them)."""
    plain = release()
    pd.testing.assert_series_equal(point["per_series"]["cluster"], plain["per_series"]["cluster"])
    per = point["per_series"].set_index("icustay_id")
    sizes = per.groupby(["class_length", "cluster"]).size()
    assert sizes.min() >= 5
    pert = point["perturbed"].merge(per[["cluster"]], left_on="icustay_id", right_index=True)
    hours = pert.groupby(["class_length", "cluster", "hour"])[VARIABLES].nunique()
    assert (hours.to_numpy() == 1).all()  # members bit-identical, hour by hour
    checked = 0
    for cls in point["classes"]:
        labels = per.loc[cls.keys, "cluster"].to_numpy()
        for c in np.unique(labels):
            members = cls.X[labels == c][:, :, 0]  # heart rate, complete in the class
            if np.isnan(members).any():
                continue
            got = pert[(pert["class_length"] == cls.length) & (pert["cluster"] == c)]
            one = got[got["icustay_id"] == got["icustay_id"].iloc[0]]["heart_rate"].to_numpy()
            np.testing.assert_allclose(one.std(), members.std(axis=1).mean(), rtol=1e-9)
            np.testing.assert_allclose(one.mean(), members.mean(), rtol=1e-9)
            checked += 1
    assert checked >= 5


def test_the_release_does_not_depend_on_the_workers_or_the_seed(point):
    again = apply_method(
        point["classes"],
        VARIABLES,
        point["targets"],
        FEATURES,
        label="mdav-spread",
        seed=99,
        fk=5,
        threads=2,
    )
    pd.testing.assert_frame_equal(again[0], point["perturbed"])
    pd.testing.assert_frame_equal(again[1], point["per_series"])


def test_the_labelled_release_certifies_with_ell_outcomes_per_cluster():
    p = spread_point(ell=2, group_by_split=True)
    frame = p["per_series"].merge(p["meta"][["icustay_id", "mortality", "long_stay"]])
    distinct = frame.groupby(["group", "class_length", "cell", "cluster"])[
        ["mortality", "long_stay"]
    ].nunique()
    assert (distinct.to_numpy() >= 2).all()
    result = check_sweep_point(
        p["public"], p["index"], p["durations"], p["targets"], p["pseudonyms"],
        dk=10, fk=5, group_by_split=True, variables=VARIABLES, labelled=True, outcome_l=2,
        method="mdav-spread", per_series=p["per_series"], strict=False,
    )  # fmt: skip
    assert result["verdict"] == "certified"
    assert result["checks"]["mdav_clusters"]["smallest_group"] >= 5


def test_the_registry_entry_has_a_bare_label_beside_mdav():
    entry = REGISTRY["mdav-spread"]
    assert entry.k_from_fk and entry.takes_outcomes and entry.group_name == "cluster"
    assert method_labels({"mdav": {}, "mdav-spread": {}}) == ["mdav", "mdav-spread"]
    assert parse_method_label("mdav-spread") == ("mdav-spread", {})
    assert parse_method_label("mdav") == ("mdav", {})
    with pytest.raises(ConfigError) as err:
        parse_method_label("mdav-spread-k5")
    assert str(err.value) == "method label 'mdav-spread-k5': expected 0 parameters"


def test_the_config_takes_mdav_spread_without_parameters():
    config = yaml.safe_load(open("config/config.yaml"))
    config["deid"]["methods"] = {"mdav-spread": {}}
    validated = validate_config(config, "config/schema.yaml", variables=False)
    assert validated["deid"]["methods"] == {"mdav-spread": {}}
    config["deid"]["methods"] = {"mdav-spread": {"k": [5]}}
    with pytest.raises(ConfigError) as err:
        validate_config(config, "config/schema.yaml", variables=False)
    assert str(err.value) == (
        "config parameter 'deid/methods/mdav-spread': Additional properties are not allowed "
        "('k' was unexpected)"
    )
