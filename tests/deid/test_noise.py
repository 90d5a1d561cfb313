"""Additive noise on the hourly values: the draw, the release method on duration classes, its
registry entry and its config."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from test_stages import FEATURES, make_release

from mimic_deid.config import validate_config
from mimic_deid.core.errors import ConfigError
from mimic_deid.deid import apply_method, class_arrays, duration_classes, mondrian_targets
from mimic_deid.deid.features import feature_spec
from mimic_deid.deid.methods import REGISTRY, method_labels, parse_method_label, run_method
from mimic_deid.deid.noise import add_noise, run_noise, unit_sd

# --- the draw ---------------------------------------------------------------------------------


def large_unit(seed=0, n=400, length=50):
    """A unit of three variables on very different scales (heart rate, a fraction, lactate),
    with series-level offsets, so the unit's sd mixes between- and within-series spread; a
    fourth dimension carries no feature."""
    rng = np.random.default_rng(seed)
    level = rng.normal(size=(n, 1, 4))
    X = np.concatenate(
        [
            80 + 12 * level[:, :, :1] + 5 * rng.normal(size=(n, length, 1)),
            0.4 + 0.1 * level[:, :, 1:2] + 0.02 * rng.normal(size=(n, length, 1)),
            2 + level[:, :, 2:3] + 0.5 * rng.normal(size=(n, length, 1)),
            rng.normal(size=(n, length, 1)),
        ],
        axis=2,
    )
    return X


DIMS = np.array([0, 1, 2])


def test_the_noise_sd_is_the_scale_in_units_of_each_variables_unit_sd():
    X = large_unit()
    sd = unit_sd(X, DIMS)
    np.testing.assert_allclose(sd, X[:, :, :3].std(axis=(0, 1)), rtol=1e-12)
    for scale in (0.3, 2.5):
        out = add_noise(X, DIMS, scale, np.random.default_rng(1))
        noise = (out - X)[:, :, :3] / sd
        # 20,000 draws per variable: the sample sd is within 2 % of the scale
        np.testing.assert_allclose(noise.std(axis=(0, 1)), scale, rtol=0.02)
        np.testing.assert_allclose(noise.mean(axis=(0, 1)), 0.0, atol=0.03 * scale)
        np.testing.assert_array_equal(out[:, :, 3], X[:, :, 3])  # no feature: untouched


def test_the_draw_is_a_function_of_the_generator_alone():
    X = large_unit(n=30, length=8)
    one = add_noise(X, DIMS, 1.0, np.random.default_rng(5))
    again = add_noise(X.copy(), DIMS, 1.0, np.random.default_rng(5))
    other = add_noise(X, DIMS, 1.0, np.random.default_rng(6))
    assert one.tobytes() == again.tobytes()
    assert not np.array_equal(one, other)


def test_null_hours_stay_null_and_do_not_shift_the_stream():
    X = large_unit(n=30, length=8)
    holed = X.copy()
    holed[3, 2:5, 0] = np.nan
    holed[7, :, 1] = np.nan  # a variable never observed in one series
    out = add_noise(holed, DIMS, 1.0, np.random.default_rng(2))
    np.testing.assert_array_equal(np.isnan(out), np.isnan(holed))
    # one standard normal per (series, hour, variable), nulls included: the other values get
    # the same draws as without the holes, only scaled by the unit's (changed) sd
    full = add_noise(X, DIMS, 1.0, np.random.default_rng(2))
    e_full = (full - X)[:, :, :3] / unit_sd(X, DIMS)
    e_holed = (out - holed)[:, :, :3] / unit_sd(holed, DIMS)
    seen = ~np.isnan(holed[:, :, :3])
    np.testing.assert_allclose(e_holed[seen], e_full[seen], rtol=1e-9, atol=1e-12)


def test_a_larger_scale_moves_every_value_further_in_proportion():
    X = large_unit(n=50, length=10)
    small = add_noise(X, DIMS, 0.5, np.random.default_rng(4)) - X
    large = add_noise(X, DIMS, 2.0, np.random.default_rng(4)) - X
    np.testing.assert_allclose(large, 4.0 * small, rtol=1e-9, atol=1e-12)
    assert np.abs(large).mean() > 3.9 * np.abs(small).mean() > 0


def test_a_variable_constant_over_the_unit_or_never_observed_is_published_unchanged():
    X = large_unit(n=10, length=5)
    X[:, :, 1] = 0.21
    X[:, :, 2] = np.nan
    np.testing.assert_array_equal(unit_sd(X, DIMS)[1:], [0.0, 0.0])
    out = add_noise(X, DIMS, 3.0, np.random.default_rng(0))
    np.testing.assert_array_equal(out[:, :, 1:], X[:, :, 1:])
    assert not np.array_equal(out[:, :, 0], X[:, :, 0])


@pytest.mark.parametrize(
    "scale, message",
    [
        (0.0, "noise: scale must be a finite number > 0, got 0.0"),
        (-1.0, "noise: scale must be a finite number > 0, got -1.0"),
        (float("inf"), "noise: scale must be a finite number > 0, got inf"),
        ("1", "noise: scale must be a number > 0, got '1'"),
        (True, "noise: scale must be a number > 0, got True"),
    ],
)
def test_a_bad_scale_is_named(scale, message):
    with pytest.raises(ConfigError) as err:
        add_noise(large_unit(n=3, length=2), DIMS, scale, np.random.default_rng(0))
    assert str(err.value) == message


# --- the release method -----------------------------------------------------------------------


def point(label="noise-sc1", seed=7, threads=1):
    series, meta = make_release(n=60)
    durations, _ = duration_classes(meta, dk=10, group_by_split=False)
    classes, dims = class_arrays(series, durations, fill_missing=True)
    targets, _ = mondrian_targets(classes, dims, FEATURES, fk=5, heuristic="range")
    perturbed, per_series, summary = apply_method(
        classes, dims, targets, FEATURES, label=label, seed=seed, fk=5, threads=threads
    )
    return classes, dims, perturbed, per_series


def originals(classes, dims) -> pd.DataFrame:
    return pd.concat(
        [
            pd.DataFrame(
                {
                    "icustay_id": np.repeat(c.keys, c.length),
                    "hour": np.tile(np.arange(c.length), len(c.keys)),
                    **{d: c.X[:, :, i].ravel() for i, d in enumerate(dims)},
                }
            )
            for c in classes
        ]
    )


def test_the_release_moves_every_protected_value_and_is_repeatable_for_a_seed():
    classes, dims, perturbed, per_series = point()
    keyed = originals(classes, dims).merge(
        perturbed, on=["icustay_id", "hour"], suffixes=("", "_out")
    )
    for d in dims:  # both variables carry features in FEATURES
        observed = keyed[d].notna()
        assert (keyed.loc[observed, d] != keyed.loc[observed, f"{d}_out"]).all()
        assert keyed.loc[~observed, f"{d}_out"].isna().all()
    assert (per_series["distortion"] > 0).all() and (per_series["iterations"] == 0).all()
    _, _, again, again_series = point(threads=2)  # any number of workers
    assert perturbed[dims].to_numpy().tobytes() == again[dims].to_numpy().tobytes()
    pd.testing.assert_frame_equal(perturbed, again, check_exact=True)
    pd.testing.assert_frame_equal(per_series, again_series)
    _, _, other, _ = point(seed=8)
    assert not perturbed[dims].equals(other[dims])


def test_a_larger_scale_distorts_the_release_more():
    distortion = [point(f"noise-sc{s}")[3]["distortion"].mean() for s in (0.5, 1, 4)]
    assert distortion[0] < distortion[1] < distortion[2]
    # each label draws its own stream (derive_rng(seed, label, ...)): x8 in expectation
    assert distortion[2] == pytest.approx(8 * distortion[0], rel=0.1)


def test_run_method_reaches_the_method_with_its_scale():
    X = large_unit(n=20, length=6)
    spec = feature_spec({"a": ["mean"], "b": ["var"], "c": ["max"]}, ["a", "b", "c", "d"])
    targets = np.full((20, 3), np.nan)
    result = run_method("noise-sc2", X, targets, spec, np.random.default_rng(3))
    direct = run_noise(X, targets, spec, {"scale": 2.0}, np.random.default_rng(3))
    assert result.X.tobytes() == direct.X.tobytes()
    np.testing.assert_array_equal(result.X, add_noise(X, DIMS, 2.0, np.random.default_rng(3)))
    with pytest.raises(ConfigError) as err:
        run_noise(X, targets, spec, {}, np.random.default_rng(3))
    assert str(err.value) == "release method 'noise' needs its scale"


# --- registry and config -----------------------------------------------------------------------


def test_the_registry_entry_is_labelled_by_its_scale_and_promises_only_measurement():
    entry = REGISTRY["noise"]
    assert not entry.k_from_fk and entry.claims is None and entry.groups is None
    assert method_labels({"noise": {"scale": [1.0, 0.25, 16]}}) == [
        "noise-sc1",
        "noise-sc0.25",
        "noise-sc16",
    ]
    assert parse_method_label("noise-sc0.25") == ("noise", {"scale": 0.25})
    assert entry.promises.startswith("nothing by construction")
    assert "certified only by measurement" in entry.promises
    assert "summary, rich, raw_hours, shape, values" in entry.promises
    assert "1/fk" in entry.promises and "no bound of its own" in entry.not_promised


def test_the_config_takes_a_sweep_of_scales_and_names_a_bad_one():
    config = yaml.safe_load(open("config/config.yaml"))
    config["deid"]["methods"] = {"noise": {}}
    assert validate_config(config, "config/schema.yaml", variables=False)["deid"]["methods"] == {
        "noise": {"scale": [1.0]}
    }
    config["deid"]["methods"] = {"noise": {"scale": [0.5, 0]}}
    with pytest.raises(ConfigError) as err:
        validate_config(config, "config/schema.yaml", variables=False)
    assert str(err.value) == (
        "config parameter 'deid/methods/noise/scale/1': 0 is less than or equal to the minimum of 0"
    )
    config["deid"]["methods"] = {"noise": {"sd": [1.0]}}
    with pytest.raises(ConfigError) as err:
        validate_config(config, "config/schema.yaml", variables=False)
    assert str(err.value) == (
        "config parameter 'deid/methods/noise': Additional properties are not allowed "
        "('sd' was unexpected)"
    )
