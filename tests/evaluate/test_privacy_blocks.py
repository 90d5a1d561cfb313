"""The privacy evaluation in blocks of target series: identical to the whole-class computation.

The reference is the whole-class path (``disagreement`` + ``summarise_curves`` +
``linkage_attack`` per attacker and side, every series-distance matrix recomputed); the blocked
driver ``evaluate_class`` shares the two series-distance matrices of a class and works on
``block_rows`` targets at a time. Results must be equal bit for bit, whatever the block size.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from privacy_reference import disagreement, linkage_attack, summarise_curves

from mimic_deid.config import validate_config
from mimic_deid.core.errors import ConfigError
from mimic_deid.deid.classes import ClassArray
from mimic_deid.deid.features import compute_features, feature_spec
from mimic_deid.evaluate.disagreement import summarise_curve_matrix
from mimic_deid.evaluate.distances import ROW_CHUNK, series_centre, series_distances
from mimic_deid.evaluate.linkage import sample_targets
from mimic_deid.evaluate.privacy import baseline_disagreement, evaluate_class, evaluate_release
from mimic_deid.pipeline.variables import load_variables, series_variables

ROOT = Path(__file__).resolve().parents[2]
DIMS = ["a", "b", "c"]
FEATURES = {"a": ["mean", "var", "min", "max"], "b": ["mean", "max"]}
STRONG = {"a": ["mean", "var", "min", "max", "count"], "c": ["mean", "count"]}
ERRORS = (0.0, 0.1)


def make_class(n: int, length: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(80, 15, (n, length, len(DIMS)))
    X[rng.random(X.shape) < 0.3] = np.nan
    X[1] = X[0]  # an exact duplicate: ties and zero distances
    X[2, :, 2] = np.nan  # a dimension null throughout
    Xr = X + rng.normal(0, 2, X.shape)
    Xr[5] = Xr[4]  # identical released series: tied feature distances
    return X, Xr


def reference(X, Xr, standardise, seed=3):
    spec = feature_spec(FEATURES, DIMS)
    strong = feature_spec(STRONG, DIMS, allowed=("mean", "var", "min", "max", "count"))
    F, Fr = compute_features(X, spec), compute_features(Xr, spec)
    res = disagreement(F, Fr, X, Xr, standardise=standardise)
    link = {}
    for name, sp in (("seed", spec), ("strong", strong)):
        Fk, Fkr = compute_features(X, sp), compute_features(Xr, sp)
        link[name] = {
            side: linkage_attack(Fk, Fs, X, Xs, errors=ERRORS, rng=np.random.default_rng(seed))
            for side, (Fs, Xs) in {"baseline": (Fk, X), "release": (Fkr, Xr)}.items()
        }
    return res, summarise_curves(res), link, (spec, strong)


@pytest.mark.parametrize("standardise", [False, True])
@pytest.mark.parametrize(("n", "block_rows"), [(60, 256), (600, 256), (600, 512), (600, 1024)])
def test_blocked_equals_whole_class(standardise: bool, n: int, block_rows: int) -> None:
    X, Xr = make_class(n, 9, seed=1)
    res, summary, link, (spec, strong) = reference(X, Xr, standardise)
    attackers = {
        name: (compute_features(X, sp), compute_features(Xr, sp), np.random.default_rng(3))
        for name, sp in (("seed", spec), ("strong", strong))
    }
    per_row, got_summary, got_link = evaluate_class(
        compute_features(X, spec),
        compute_features(Xr, spec),
        X,
        Xr,
        standardise=standardise,
        attackers=attackers,
        errors=ERRORS,
        block_rows=block_rows,
    )
    for key in ("auc", "first_threshold", "first_disagreement", "t_max", "n_reachable"):
        np.testing.assert_array_equal(per_row[key], getattr(res, key), err_msg=key)
    pd.testing.assert_frame_equal(got_summary, summary, check_exact=True)
    assert got_link == link  # floats compared exactly (NaN-free on these inputs)


def test_row_blocks_of_series_distances_equal_the_whole_matrix() -> None:
    X, Xr = make_class(700, 30, seed=2)
    whole, counts = series_distances(X, Xr, return_counts=True)
    centre = series_centre(X, Xr)
    for s in range(0, 700, ROW_CHUNK):
        d, c = series_distances(X[s : s + ROW_CHUNK], Xr, return_counts=True, centre=centre)
        np.testing.assert_array_equal(d, whole[s : s + ROW_CHUNK])
        np.testing.assert_array_equal(c, counts[s : s + ROW_CHUNK])


def test_release_and_baseline_drivers_do_not_depend_on_the_block_size() -> None:
    classes, released = [], []
    for i, (n, length) in enumerate([(30, 4), (300, 7)]):
        X, Xr = make_class(n, length, seed=10 + i)
        keys = np.arange(n, dtype=np.int64) + 1000 * i
        classes.append(ClassArray("all", length, keys, X))
        released.append(ClassArray("all", length, keys, Xr))
    keys = np.concatenate([c.keys for c in classes])
    pseudonyms = pd.DataFrame({"icustay_id": keys, "pseudonym": [f"p{k}" for k in keys]})
    outs = [
        evaluate_release(
            classes,
            released,
            pseudonyms,
            DIMS,
            FEATURES,
            False,
            ERRORS,
            seed=5,
            strong_features=STRONG,
            fk=3,
            block_rows=b,
        )
        for b in (256, 512)
    ]
    pd.testing.assert_frame_equal(outs[0][0], outs[1][0], check_exact=True)
    pd.testing.assert_frame_equal(outs[0][1], outs[1][1], check_exact=True)
    assert outs[0][2] == outs[1][2]
    base = [baseline_disagreement(classes, DIMS, FEATURES, block_rows=b) for b in (256, 512)]
    pd.testing.assert_frame_equal(base[0][0], base[1][0], check_exact=True)
    pd.testing.assert_frame_equal(base[0][1], base[1][1], check_exact=True)


@pytest.mark.parametrize("bad", [0, 100, 300, 512.0, "many", True])
def test_bad_block_size_names_the_parameter(bad) -> None:
    X, Xr = make_class(8, 3, seed=4)
    F = compute_features(X, feature_spec(FEATURES, DIMS))
    with pytest.raises(ConfigError) as err:
        evaluate_class(F, F, X, Xr, block_rows=bad)
    assert str(err.value) == (
        "privacy block size (evaluate/block_rows) must be a positive multiple of 256 series, "
        f"got {bad!r}"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (300, "config parameter 'evaluate/block_rows': 300 is not a multiple of 256"),
        (0, "config parameter 'evaluate/block_rows': 0 is less than the minimum of 256"),
    ],
)
def test_block_rows_in_the_config(monkeypatch, value, expected) -> None:
    monkeypatch.chdir(ROOT)
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert validate_config(dict(config), ROOT / "config" / "schema.yaml")["evaluate"][
        "block_rows"
    ] == (256)
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["evaluate"]["block_rows"] = value
    with pytest.raises(ConfigError) as err:
        validate_config(config, ROOT / "config" / "schema.yaml")
    assert str(err.value) == expected


def test_per_record_distance_divides_the_series_distance_by_the_class_length() -> None:
    X, Xr = make_class(40, 9, seed=6)
    F, Fr = (compute_features(A, feature_spec(FEATURES, DIMS)) for A in (X, Xr))
    plain, _, _ = evaluate_class(F, Fr, X, Xr)
    per_record, summary, _ = evaluate_class(F, Fr, X, Xr, series_distance="per_record")
    # Δ-AUC and every disagreement value are linear in d_S; thresholds are feature distances
    np.testing.assert_allclose(per_record["auc"], plain["auc"] / 9, rtol=1e-12)
    np.testing.assert_allclose(
        per_record["first_disagreement"], plain["first_disagreement"] / 9, rtol=1e-12
    )
    np.testing.assert_array_equal(per_record["first_threshold"], plain["first_threshold"])
    res = disagreement(F, Fr, X, Xr)
    ref = summarise_curves(res)
    np.testing.assert_allclose(summary["value"], ref["value"] / 9, rtol=1e-12)
    np.testing.assert_allclose(summary["normalised"], ref["normalised"], rtol=1e-12)


def test_unknown_series_distance_names_the_parameter(monkeypatch) -> None:
    X, Xr = make_class(8, 3, seed=4)
    F = compute_features(X, feature_spec(FEATURES, DIMS))
    with pytest.raises(ConfigError) as err:
        evaluate_class(F, F, X, Xr, series_distance="mjc")
    assert str(err.value) == (
        "series distance (evaluate/series_distance) must be one of ['euclidean', "
        "'per_record', 'dtw'], got 'mjc'"
    )
    monkeypatch.chdir(ROOT)
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["evaluate"]["series_distance"] = "mjc"
    with pytest.raises(ConfigError) as err:
        validate_config(config, ROOT / "config" / "schema.yaml")
    assert str(err.value) == (
        "config parameter 'evaluate/series_distance': 'mjc' is not one of "
        "['euclidean', 'per_record', 'dtw']"
    )


def test_alternative_attacker_is_reported_side_by_side() -> None:
    X, Xr = make_class(40, 6, seed=8)
    keys = np.arange(40, dtype=np.int64)
    orig, rel = [ClassArray("all", 6, keys, X)], [ClassArray("all", 6, keys, Xr)]
    pseudonyms = pd.DataFrame({"icustay_id": keys, "pseudonym": [f"p{k}" for k in keys]})
    alt = {"c": ["mean", "max"]}
    args = (orig, rel, pseudonyms, DIMS, FEATURES, False, ERRORS)
    plain = evaluate_release(*args, seed=5)
    per_series, summary, linkage = evaluate_release(*args, seed=5, alt_features=alt)
    # the seed attacker's results are unchanged; the alternative ones sit next to them
    pd.testing.assert_frame_equal(per_series[plain[0].columns], plain[0], check_exact=True)
    pd.testing.assert_frame_equal(summary, plain[1], check_exact=True)
    assert {k: v for k, v in linkage.items() if k != "alternative"} == plain[2]
    by_alt = evaluate_release(orig, rel, pseudonyms, DIMS, alt, False, ERRORS, seed=5)
    np.testing.assert_array_equal(per_series["auc_alt"], by_alt[0]["auc"])
    np.testing.assert_array_equal(
        per_series["first_disagreement_alt"], by_alt[0]["first_disagreement"]
    )
    assert set(linkage["alternative"]) == {"baseline", "release", "details"}
    assert linkage["alternative"]["baseline"]["0"]["n"] == 40


def test_unknown_attacker_feature_variable_is_refused(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["evaluate"]["attacker_features"] = {"shoe_size": ["mean"]}
    with pytest.raises(ConfigError) as err:
        validate_config(config, ROOT / "config" / "schema.yaml")
    known = sorted(v.name for v in series_variables(load_variables("config/variables.yaml")))
    assert str(err.value) == (
        "config parameter 'evaluate/attacker_features': unknown variable(s) ['shoe_size']; "
        f"expected some of {known}"
    )
    config["evaluate"]["attacker_features"] = {"heart_rate": ["median"]}
    with pytest.raises(ConfigError) as err:
        validate_config(config, ROOT / "config" / "schema.yaml")
    assert str(err.value) == (
        "config parameter 'evaluate/attacker_features/heart_rate/0': 'median' is not one of "
        "['mean', 'var', 'min', 'max']"
    )


def test_sampled_targets_are_the_whole_class_rows_of_those_targets() -> None:
    """A sample of targets gives each target exactly its whole-class result: every series
    stays a candidate, the attackers' noise is drawn for the whole class, and the summary is
    over the targets' curves."""
    X, Xr = make_class(600, 9, seed=1)
    res, _, _, (spec, strong) = reference(X, Xr, False)
    F, Fr = compute_features(X, spec), compute_features(Xr, spec)
    targets = np.sort(np.random.default_rng(0).choice(600, size=300, replace=False))
    attackers = {"seed": (F, Fr, np.random.default_rng(3))}
    per_row, summary, link = evaluate_class(
        F, Fr, X, Xr, attackers=attackers, errors=ERRORS, targets=targets
    )
    for key in ("auc", "first_threshold", "first_disagreement", "t_max", "n_reachable"):
        np.testing.assert_array_equal(per_row[key], getattr(res, key)[targets], err_msg=key)
    expected = summarise_curve_matrix(res.curves[targets], res.n_reachable[targets])
    pd.testing.assert_frame_equal(summary, expected, check_exact=True)
    # a target's linkage score does not depend on which other series are targets
    singles = [
        evaluate_class(F, Fr, X, Xr, attackers=attackers, errors=ERRORS, targets=[t])[2]
        for t in targets[:3]
    ]
    three = evaluate_class(F, Fr, X, Xr, attackers=attackers, errors=ERRORS, targets=targets[:3])
    hits = [one["seed"]["release"]["by_error"][1]["top1_hits"] for one in singles]
    assert three[2]["seed"]["release"]["by_error"][1]["top1_hits"] == pytest.approx(sum(hits))
    assert link["seed"]["release"]["n"] == 600
    assert [e["n_targets"] for e in link["seed"]["release"]["by_error"]] == [300, 300]


def test_a_class_above_max_targets_is_attacked_through_a_weighted_sample() -> None:
    """The release, its baseline and the attackers share one sample per class; a sampled
    class's rate counts with the weight of all its series."""
    classes, released = [], []
    for i, (n, length) in enumerate([(30, 4), (300, 7)]):
        X, Xr = make_class(n, length, seed=10 + i)
        keys = np.arange(n, dtype=np.int64) + 1000 * i
        classes.append(ClassArray("all", length, keys, X))
        released.append(ClassArray("all", length, keys, Xr))
    keys = np.concatenate([c.keys for c in classes])
    pseudonyms = pd.DataFrame({"icustay_id": keys, "pseudonym": [f"p{k}" for k in keys]})
    args = (classes, released, pseudonyms, DIMS, FEATURES, False, ERRORS)
    per_series, summary, linkage = evaluate_release(
        *args, seed=5, strong_features=STRONG, fk=3, max_targets=100
    )
    # the small class whole, the large one through 100 of its 300 series
    assert per_series.groupby("class_length").size().to_dict() == {4: 30, 7: 100}
    sampled = per_series[per_series["class_length"] == 7]["pseudonym"]
    assert sampled.is_unique and set(sampled) <= {f"p{k}" for k in classes[1].keys}
    base, _ = baseline_disagreement(classes, DIMS, FEATURES, seed=5, max_targets=100)
    chosen = per_series["class_length"] == 7
    # the baseline attacks the same series: their baseline curves are the release's own
    # baseline side, so the targets' first thresholds match a whole-class baseline's rows
    whole_base, _ = baseline_disagreement(classes, DIMS, FEATURES, seed=5)
    rows = whole_base[whole_base["class_length"] == 7].reset_index(drop=True)
    position = {f"p{k}": i for i, k in enumerate(classes[1].keys)}
    picked = rows.iloc[[position[p] for p in per_series.loc[chosen, "pseudonym"]]]
    np.testing.assert_array_equal(
        base[base["class_length"] == 7]["auc"].to_numpy(), picked["auc"].to_numpy()
    )
    # rates: the small class's hits plus the large one's scaled by 300 / 100, over 330
    details = linkage["strong"]["details"]["release"]["by_error"][0]
    whole = evaluate_release(*args, seed=5, strong_features=STRONG, fk=3)[2]
    assert details["n_targets"] == 130
    assert linkage["strong"]["release"]["0"]["n"] == 130
    assert whole["strong"]["release"]["0"]["n"] == 330
    small = evaluate_release(
        [classes[0]], [released[0]], pseudonyms, DIMS, FEATURES, False, ERRORS,
        seed=5, strong_features=STRONG,
    )[2]["strong"]["details"]["release"]["by_error"][0]["top1_hits"]  # fmt: skip
    large = evaluate_release(
        [classes[1]], [released[1]], pseudonyms, DIMS, FEATURES, False, ERRORS,
        seed=5, strong_features=STRONG, max_targets=100,
    )[2]["strong"]["details"]["release"]["by_error"][0]["top1_hits"]  # fmt: skip
    assert details["top1"] == pytest.approx((small + large) / 330)
    assert linkage["bound"]["n"] == 130 and linkage["bound"]["top1"] == pytest.approx(1 / 3)


def test_max_targets_below_one_names_the_parameter() -> None:
    with pytest.raises(ConfigError) as err:
        sample_targets(10, 0, np.random.default_rng(0))
    assert str(err.value) == "attack targets (evaluate/max_targets) must be at least 1, got 0"


def test_a_release_of_no_series_has_no_attack_and_says_why() -> None:
    """Issue 48: a release with no duration class (every split below dk) is evaluated without
    error: its tables hold no row but the measured columns of a release with series, and its
    linkage says why no attack was measured (the card reads it)."""
    from mimic_deid.evaluate.privacy import NO_SERIES

    X, Xr = make_class(12, 6, seed=8)
    keys = np.arange(12, dtype=np.int64)
    pseudonyms = pd.DataFrame({"icustay_id": keys, "pseudonym": [f"p{k}" for k in keys]})
    args = (pseudonyms, DIMS, FEATURES, False, ERRORS)
    alt = {"c": ["mean", "max"]}
    full = evaluate_release(
        [ClassArray("all", 6, keys, X)], [ClassArray("all", 6, keys, Xr)], *args, seed=5,
        strong_features=STRONG, fk=3, alt_features=alt,
    )  # fmt: skip
    per_series, summary, linkage = evaluate_release(
        [], [], *args, seed=5, strong_features=STRONG, fk=3, alt_features=alt
    )
    assert linkage == {"not_computable": NO_SERIES, "details": {}}
    assert per_series.empty and list(per_series.columns) == list(full[0].columns)
    assert summary.empty and list(summary.columns) == list(full[1].columns)
