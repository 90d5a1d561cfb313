"""The attacker family: each member against a release whose answer is known.

The originals come in clusters of K series that are permutations of one another's hours, so
their summary statistics (mean, variance, extremes, observed hours) coincide within a cluster
while their shapes differ. Each release below keeps or removes one thing an attacker knows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mimic_deid.core.errors import ConfigError, ReleaseCheckError
from mimic_deid.core.seeding import derive_rng
from mimic_deid.deid.check import check_linkage_bound
from mimic_deid.deid.classes import ClassArray
from mimic_deid.deid.features import attacker_features
from mimic_deid.evaluate.attackers import (
    ATTACKERS,
    RAW_HOURS,
    check_attackers,
    rich_statistics,
    znormalise,
)
from mimic_deid.evaluate.privacy import evaluate_release

DIMS = ["a", "b", "c"]
N, K, L = 40, 5, 24
SEED = 3
CLUSTER = np.arange(N) // K


@pytest.fixture(scope="module")
def originals() -> np.ndarray:
    rng = np.random.default_rng(0)
    base = 80 + np.cumsum(rng.normal(0, 3, (N // K, L, len(DIMS))), axis=1)
    return np.stack([base[CLUSTER[i]][rng.permutation(L)] for i in range(N)])


def cluster_means(X: np.ndarray) -> np.ndarray:
    """Every series replaced by its cluster's hourly mean: K identical series per cluster."""
    return np.stack([X[CLUSTER == c].mean(axis=0) for c in range(N // K)])[CLUSTER]


def attack(X: np.ndarray, Xr: np.ndarray) -> dict:
    keys = np.arange(N, dtype=np.int64)
    pseudonyms = pd.DataFrame({"icustay_id": keys, "pseudonym": [f"p{k}" for k in keys]})
    return evaluate_release(
        [ClassArray("all", L, keys, X)], [ClassArray("all", L, keys, Xr)], pseudonyms, DIMS,
        {"a": ["mean"]}, False, (0.0, 0.1), seed=SEED,
        strong_features=attacker_features(DIMS), fk=K, family=list(ATTACKERS),
    )[2]  # fmt: skip


def rates(linkage: dict) -> dict[str, float]:
    return {name: r["release"]["0"]["top1"] for name, r in linkage["family"].items()}


def test_a_release_that_keeps_each_shape_under_new_levels_is_refused_by_the_shape_attacker(
    originals,
):
    # new level and scale per cluster: the summary statistics stay tied within each cluster
    level = (CLUSTER * 5.0)[:, None, None]
    scale = (1 + CLUSTER * 0.1)[:, None, None]
    linkage = attack(originals, scale * originals + level)
    top1 = rates(linkage)
    assert top1["shape"] == 1.0
    assert top1["summary"] <= 1 / K  # the strong attacker alone would certify it
    assert linkage["strong"]["release"]["0"]["top1"] == top1["summary"]
    bound = linkage["bound"]
    assert bound["strong_within"] is True and bound["within"] is False
    assert bound["strongest_attacker"] == "shape" and bound["refused_by"] == ["shape"]
    assert linkage["strongest"]["name"] == "shape"
    assert linkage["strongest"]["knows"] == ATTACKERS["shape"].knows
    low, high = bound["strongest_top1_ci"]
    assert low == pytest.approx(0.912378, abs=1e-6) and high == 1.0
    with pytest.raises(ReleaseCheckError) as err:
        check_linkage_bound(linkage)
    assert str(err.value) == (
        "linkage bound: attacker 'shape' links top-1 100.0 % > bound 1/5 = 20.0 % "
        "(95 % interval 91.2 % to 100.0 %, 40 series; above the bound: shape)"
    )


def test_identical_series_within_clusters_hold_every_attacker_to_one_in_k(originals):
    linkage = attack(originals, cluster_means(originals))
    top1 = rates(linkage)
    assert set(top1) == set(ATTACKERS)
    assert all(rate <= 1 / K + 1e-12 for rate in top1.values()), top1
    assert linkage["bound"]["within"] is True and linkage["bound"]["refused_by"] == []
    assert check_linkage_bound(linkage)["strongest_top1"] <= 1 / K + 1e-12


def test_a_release_that_keeps_the_raw_values_at_the_known_hours_is_linked_by_them(originals):
    hours = np.sort(
        derive_rng(SEED, "attacker", "raw_hours", "all", L).choice(L, RAW_HOURS, replace=False)
    )
    released = cluster_means(originals)
    released[:, hours, :] = originals[:, hours, :]
    linkage = attack(originals, released)
    top1 = rates(linkage)
    assert top1["raw_hours"] == 1.0 and top1["summary"] <= 1 / K
    assert "raw_hours" in linkage["bound"]["refused_by"] and not linkage["bound"]["within"]
    # the same release with other hours kept is held by the raw-values attacker
    others = [h for h in range(L) if h not in set(hours.tolist())][:RAW_HOURS]
    released = cluster_means(originals)
    released[:, others, :] = originals[:, others, :]
    assert rates(attack(originals, released))["raw_hours"] <= 1 / K + 1e-12


def test_rich_statistics_link_what_the_summary_statistics_cannot(originals):
    # the originals published unchanged: tied summary statistics, distinct trends and ends
    top1 = rates(attack(originals, originals.copy()))
    assert top1["summary"] == pytest.approx(1 / K)
    assert top1["rich"] == 1.0 and top1["values"] == 1.0


def test_the_value_attacker_links_a_slightly_noisy_copy_and_not_a_relevelled_one(originals):
    noisy = originals + np.random.default_rng(1).normal(0, 0.01, originals.shape)
    assert rates(attack(originals, noisy))["values"] == 1.0
    relevelled = originals + (CLUSTER * 50.0)[:, None, None]
    assert rates(attack(originals, relevelled))["values"] <= 1 / K + 1e-12


def test_rich_statistics_of_a_known_series():
    x = np.array([[1.0, np.nan, 3.0, 4.0, 5.0]])[:, :, None]
    slope, first, last, median, q25, q75, lag1 = rich_statistics(x)[0]
    assert (slope, first, last, median, q25, q75) == pytest.approx((1.0, 1.0, 5.0, 3.5, 2.5, 4.25))
    # about the mean 3.25: pairs (3, 4) and (4, 5) observed; (1, nan) and (nan, 3) are not
    assert lag1 == pytest.approx(
        (-0.25 * 0.75 + 0.75 * 1.75) / (2.25**2 + 0.25**2 + 0.75**2 + 1.75**2)
    )
    empty = rich_statistics(np.full((1, 4, 1), np.nan))[0]
    assert np.isnan(empty).all()


def test_znormalise_removes_level_and_scale_and_keeps_nulls():
    x = np.array([[[1.0], [np.nan], [3.0]], [[10.0], [np.nan], [30.0]], [[2.0], [2.0], [2.0]]])
    z = znormalise(x)
    np.testing.assert_array_equal(z[0], z[1])
    np.testing.assert_allclose(z[0, [0, 2], 0], [-1.0, 1.0])
    assert np.isnan(z[0, 1, 0]) and (z[2] == 0).all()


def test_the_registry_names_each_member_once_and_rejects_unknown_attackers():
    assert list(ATTACKERS) == ["summary", "rich", "raw_hours", "shape", "values"]
    assert all(a.name == name and a.knows for name, a in ATTACKERS.items())
    with pytest.raises(ConfigError) as err:
        check_attackers(["shape", "oracle"])
    assert str(err.value) == (
        "unknown attacker(s) ['oracle'], expected some of "
        "['summary', 'rich', 'raw_hours', 'shape', 'values']"
    )


def test_family_results_do_not_depend_on_the_block_of_targets():
    rng = np.random.default_rng(4)
    n, length = 300, 6
    X = rng.normal(80, 10, (n, length, len(DIMS)))
    X[rng.random(X.shape) < 0.2] = np.nan
    Xr = X + rng.normal(0, 4, X.shape)
    Xr[1] = Xr[0]  # identical released series: ties
    keys = np.arange(n, dtype=np.int64)
    pseudonyms = pd.DataFrame({"icustay_id": keys, "pseudonym": [f"p{k}" for k in keys]})

    def family(block_rows: int) -> dict:
        return evaluate_release(
            [ClassArray("all", length, keys, X)], [ClassArray("all", length, keys, Xr)],
            pseudonyms, DIMS, {"a": ["mean"]}, False, (0.0,), seed=SEED,
            strong_features=attacker_features(DIMS), fk=K, family=list(ATTACKERS),
            block_rows=block_rows,
        )[2]["family"]  # fmt: skip

    small, whole = family(256), family(512)
    assert small == whole
    assert 0.0 < small["shape"]["release"]["0"]["top1"] < 1.0


def test_rich_quantiles_are_numpys_over_the_observed_hours():
    rng = np.random.default_rng(2)
    X = rng.normal(0, 1, (50, 9, 2))
    X[rng.random(X.shape) < 0.4] = np.nan
    X[0, :, 1] = np.nan
    rich = rich_statistics(X).reshape(50, 2, 7)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        expected = np.nanquantile(X, [0.5, 0.25, 0.75], axis=1)  # (3, n, D)
    np.testing.assert_allclose(rich[:, :, 3:6], np.moveaxis(expected, 0, 2), rtol=1e-12)


def test_a_strong_attackers_refusal_also_names_the_strongest_member(originals):
    # distinct walks published unchanged: the summary statistics link them as well
    walks = 80 + np.cumsum(np.random.default_rng(5).normal(0, 3, (N, L, len(DIMS))), axis=1)
    linkage = attack(walks, walks.copy())
    bound = linkage["bound"]
    assert bound["strong_within"] is False and bound["refused_by"] == list(ATTACKERS)
    assert bound["strongest_attacker"] == "summary"  # every member links all: the first
    with pytest.raises(ReleaseCheckError) as err:
        check_linkage_bound(linkage)
    assert str(err.value) == (
        "linkage bound: strong attacker's top-1 100.0 % > bound 1/5 = 20.0 % (95 % interval "
        "91.2 % to 100.0 %, 40 series); strongest attacker 'summary' links top-1 100.0 % "
        "(95 % interval 91.2 % to 100.0 %; above the bound: summary, rich, raw_hours, shape, "
        "values)"
    )
