"""Plausible released values: the projection (deid/plausible.py) and claim 16 of the check."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mimic_deid.core.errors import ConfigError, InputDataError, ReleaseCheckError
from mimic_deid.deid import (
    PlausibleValues,
    apply_method,
    check_kp_groups,
    check_plausible_values,
    check_release,
    class_arrays,
    feature_spec,
    project,
    pseudonymous_release,
)
from mimic_deid.deid.optimise import evaluate
from mimic_deid.deid.plausible import snap
from mimic_deid.pipeline.variables import Variable

NAN = np.nan


def variable(name, low, high, values=None, static=False) -> Variable:
    return Variable(
        name=name,
        label=name,
        unit="u",
        itemids={"carevue": (1,)},
        parse="numeric",
        valid_range=(low, high),
        values=values,
        static=static,
    )


VARIABLES = [
    variable("fraction_inspired_oxygen", 0.2, 1.0),
    variable("gcs_total", 3.0, 15.0, values=tuple(float(v) for v in range(3, 16))),
    variable("height", 0.0, 275.0, static=True),
]
DIMS = [v.name for v in VARIABLES]
PLAUSIBLE = PlausibleValues.from_variables(VARIABLES, DIMS)


# --- the projection ------------------------------------------------------------------------


def test_projection_clips_snaps_and_holds_static_variables_constant():
    X = np.array(
        [
            # hour: fio2, gcs, height
            [[-1.99, 15.7, 170.0], [0.5, 7.5, 171.0], [2.83, NAN, NAN], [NAN, 2.2, 175.0]],
            [[0.3, 8.49, NAN], [0.2, 8.51, NAN], [1.0, 14.0, NAN], [0.7, 3.0, NAN]],
        ]
    )
    out = project(X, PLAUSIBLE)
    expected = np.array(
        [
            [[0.2, 15.0, 172.0], [0.5, 7.0, 172.0], [1.0, NAN, NAN], [NAN, 3.0, 172.0]],
            [[0.3, 8.0, NAN], [0.2, 9.0, NAN], [1.0, 14.0, NAN], [0.7, 3.0, NAN]],
        ]
    )
    np.testing.assert_array_equal(out, expected)  # NaN where X is NaN, nowhere else
    assert X[0, 0, 0] == -1.99  # the input is not changed in place
    np.testing.assert_array_equal(project(out, PLAUSIBLE), out)  # projecting twice: the same


def test_a_constant_static_series_keeps_its_value_bit_for_bit():
    """A mean of equal values can be an ulp away from them; the projection keeps the value,
    so the release, which projects the method's projected values again, changes nothing."""
    value = 127.39233746429086  # seven of them average to a neighbouring float
    x = np.full((1, 7), value)
    assert np.mean(x) != value
    plausible = PlausibleValues.from_variables([variable("h", 0.0, 275.0, static=True)], ["h"])
    assert project(x[:, :, None], plausible)[0, :, 0].tolist() == [value] * 7


def test_snap_takes_the_nearest_member_ties_to_the_lower():
    members = (0.0, 1.0, 4.0)
    x = np.array([-3.0, 0.4, 0.5, 0.6, 2.5, 2.6, 9.0, NAN])
    np.testing.assert_array_equal(snap(x, members), [0.0, 0.0, 0.0, 1.0, 1.0, 4.0, 4.0, NAN])
    np.testing.assert_array_equal(snap(np.array([7.0, NAN]), (2.0,)), [2.0, NAN])


def test_projection_names_a_dimension_without_plausible_values_and_a_bad_shape():
    with pytest.raises(ConfigError) as err:
        PlausibleValues.from_variables(VARIABLES, ["gcs_total", "lactate"])
    assert str(err.value) == (
        "plausible values: no variable ['lactate'] in the variables file (config 'variables'); "
        "expected every released dimension to be one"
    )
    with pytest.raises(InputDataError) as err:
        project(np.zeros((2, 3, 2)), PLAUSIBLE)
    assert str(err.value) == (
        "series X must be an (n, length, 3) array (one dimension per variable of "
        "['fraction_inspired_oxygen', 'gcs_total', 'height']), got shape (2, 3, 2)"
    )


def _long_series(n=12, seed=0):
    """Series whose values a method can push out of range (a low FiO2, GCS near 3)."""
    rng = np.random.default_rng(seed)
    rows = []
    for key in range(n):
        length = 6
        rows.append(
            pd.DataFrame(
                {
                    "icustay_id": 100 + key,
                    "hour": np.arange(length, dtype=np.int32),
                    "fraction_inspired_oxygen": 0.21 + rng.random(length) * 0.05 * (key % 3),
                    "gcs_total": rng.integers(3, 6, length).astype(float),
                    "height": 150 + 3 * key + rng.normal(0, 1, length),
                }
            )
        )
    series = pd.concat(rows, ignore_index=True)
    durations = pd.DataFrame(
        {
            "icustay_id": 100 + np.arange(n),
            "group": "all",
            "split": "train",
            "length": np.int32(6),
            "class_length": np.int32(6),
        }
    )
    return series, durations


FEATURES = {d: ["mean", "var", "min", "max"] for d in DIMS}


def _targets(classes, dims):
    """Mondrian-like targets: every series asked for its class's mean features, and a spread
    that pushes values below the range (an additive method will overshoot)."""
    spec = feature_spec(FEATURES, dims)
    keys = np.concatenate([c.keys for c in classes])
    targets = pd.DataFrame({"icustay_id": keys, "cell": 0})
    for j, name in enumerate(spec.names):
        d = int(spec.dims[j])
        stat = name.split("_")[-1]
        low = PLAUSIBLE.low[d]
        wanted = {"mean": low + 0.01, "var": 4.0, "min": low - 2.0, "max": low + 3.0}[stat]
        targets[f"target_{name}"] = wanted
    return targets


@pytest.mark.parametrize("label", ["adhoc-it20-ns0.01", "kapra-P2-paa3-sax6-none", "noise-sc2"])
def test_apply_method_releases_only_plausible_values_and_measures_them(label):
    series, durations = _long_series()
    classes, dims = class_arrays(series, durations)
    assert dims == DIMS
    targets = _targets(classes, dims)
    args = (classes, dims, targets, FEATURES)
    raw, raw_series, _ = apply_method(*args, label=label, seed=3, fk=3)
    perturbed, per_series, summary = apply_method(
        *args, label=label, seed=3, fk=3, plausible=PLAUSIBLE
    )
    values = perturbed[dims].to_numpy()
    moved = summary["projected_values"]
    assert set(moved) == set(DIMS) and sum(moved.values()) > 0  # the fixture needs the step
    by_series = raw[dims].to_numpy().reshape(12, 6, 3)  # one class: 12 series of 6 hours
    np.testing.assert_array_equal(values, project(by_series, PLAUSIBLE).reshape(-1, 3))
    assert moved == {d: int((values[:, j] != raw[d].to_numpy()).sum()) for j, d in enumerate(dims)}
    public = perturbed.assign(pseudonym=perturbed["icustay_id"].astype(str))
    figures = check_plausible_values(public[["pseudonym", "hour", *dims]], PLAUSIBLE)
    assert figures == {
        "variables": 3,
        "values": int(np.isfinite(values).sum()),
        "discrete": ["gcs_total"],
        "static": ["height"],
    }
    with pytest.raises(ReleaseCheckError):  # the same method without the projection
        check_plausible_values(raw.assign(pseudonym=raw["icustay_id"].astype(str)), PLAUSIBLE)
    # unfeasibility and distortion are those of the released (projected) series
    spec = feature_spec(FEATURES, dims)
    X = classes[0].X
    T = targets[[f"target_{n}" for n in spec.names]].to_numpy()
    again = evaluate(X, values.reshape(X.shape), T, spec, per_series["iterations"].to_numpy())
    np.testing.assert_array_equal(per_series["unfeasibility"], again.unfeasibility)
    # (summed in the memory order of the class's arrays: equal up to rounding)
    np.testing.assert_allclose(per_series["distortion"], again.distortion, rtol=1e-12)
    assert not np.array_equal(per_series["unfeasibility"], raw_series["unfeasibility"])


def test_the_kp_claim_holds_for_the_projected_midpoint():
    """A (k,P) k-group publishes its envelope's midpoint; for a discrete or static variable
    that is the midpoint projected onto its plausible values (claim 11 with claim 16)."""
    series, durations = _long_series(n=12, seed=1)
    classes, dims = class_arrays(series, durations)
    targets = _targets(classes, dims)
    label = "kapra-P2-paa3-sax6-none"
    perturbed, per_series, _ = apply_method(
        classes, dims, targets, FEATURES, label=label, seed=0, fk=3, plausible=PLAUSIBLE
    )
    pseudonyms = pd.DataFrame(
        {"icustay_id": per_series["icustay_id"], "pseudonym": [f"p{i:02d}" for i in range(12)]}
    )
    public = perturbed.merge(pseudonyms, on="icustay_id")[["pseudonym", "hour", *dims]]
    mid = 0.5 * (np.stack(per_series["lo_gcs_total"]) + np.stack(per_series["hi_gcs_total"]))
    assert (mid % 1 != 0).any()  # some k-group's midpoint is not a score
    result = check_kp_groups(per_series, public, pseudonyms, k=3, P=2, plausible=PLAUSIBLE)
    assert result["variables"] == sorted(DIMS)
    with pytest.raises(ReleaseCheckError) as err:  # against the raw midpoint it is off
        check_kp_groups(per_series, public, pseudonyms, k=3, P=2)
    assert "'gcs_total'" in str(err.value) and "envelope midpoint" in str(err.value)


def test_the_release_snaps_the_class_mean_that_fills_a_never_observed_discrete_variable():
    """A series that never observed a variable takes the class mean (missing hours withheld);
    for a discrete variable that mean is snapped to the value set."""
    perturbed = pd.DataFrame(
        {
            "group": "train",
            "class_length": np.int32(2),
            "icustay_id": np.repeat([1, 2, 3], 2),
            "hour": np.tile(np.int32([0, 1]), 3),
            "fraction_inspired_oxygen": 0.5,
            "gcs_total": [3.0, 3.0, 4.0, 4.0, NAN, NAN],
            "height": [170.0, 170.0, NAN, NAN, 180.0, 180.0],
        }
    )
    classes = pd.DataFrame(
        {"icustay_id": [1, 2, 3], "split": "train", "length": 2, "class_length": np.int32(2)}
    )
    meta = pd.DataFrame({"icustay_id": [1, 2, 3], "mortality": 0, "long_stay": 0})
    public, index, pseudonyms = pseudonymous_release(
        perturbed, classes, meta, seed=1, salt="s", plausible=PLAUSIBLE
    )
    by_key = public.merge(pseudonyms.merge(index, on="pseudonym"), on="pseudonym")
    filled = by_key[by_key["icustay_id"] == 3]
    assert filled["gcs_total"].tolist() == [3.0, 3.0]  # class mean 3.5, ties to the lower
    assert by_key[by_key["icustay_id"] == 2]["height"].tolist() == [175.0, 175.0]
    check_plausible_values(public, PLAUSIBLE)
    bare, _, _ = pseudonymous_release(perturbed, classes, meta, seed=1, salt="s")
    assert sorted(bare["gcs_total"].unique()) == [3.0, 3.5, 4.0]


# --- claim 16 ------------------------------------------------------------------------------


def plausible_release() -> tuple[pd.DataFrame, pd.DataFrame]:
    series = pd.DataFrame(
        {
            "pseudonym": np.repeat(["Pa", "Pb", "Pc"], 2),
            "hour": np.tile(np.int32([0, 1]), 3),
            "fraction_inspired_oxygen": [0.21, 1.0, 0.2, 0.4, 0.3, 0.3],
            "gcs_total": [15.0, 14.0, 3.0, 3.0, 9.0, 10.0],
            "height": [170.0, 170.0, 182.5, 182.5, 160.0, 160.0],
        }
    )
    index = pd.DataFrame(
        {"pseudonym": ["Pa", "Pb", "Pc"], "duration_class": np.int32(2), "split": "train"}
    )
    return series, index


def test_a_plausible_release_passes_claim_16_in_check_release():
    series, index = plausible_release()
    eq = pd.DataFrame({"split": "train", "class_length": [2, 2, 2], "eq_class": [0, 0, 0]})
    result = check_release(
        series,
        index,
        dk=3,
        fk=3,
        eq_classes=eq,
        n_input=3,
        n_suppressed=0,
        variables=DIMS,
        plausible=PLAUSIBLE,
    )
    assert result["plausible_values"] == {
        "variables": 3,
        "values": 18,
        "discrete": ["gcs_total"],
        "static": ["height"],
    }
    assert (
        list(result).index("plausible_values") == list(result).index("missing_hours_withheld") + 1
    )


@pytest.mark.parametrize(
    ("column", "row", "value", "message"),
    [
        (
            "fraction_inspired_oxygen",
            0,
            -1.99,
            "plausible values: 'fraction_inspired_oxygen': 1 value(s) outside its valid range "
            "[0.2, 1]",
        ),
        (
            "gcs_total",
            1,
            15.7,
            "plausible values: 'gcs_total': 1 value(s) outside its valid range [3, 15]",
        ),
        (
            "gcs_total",
            4,
            9.5,
            "plausible values: 'gcs_total': 1 value(s) in range but not in its value set "
            "{3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}",
        ),
        (
            "height",
            1,
            171.0,
            "plausible values: 'height': 1 series whose value changes within the series (a "
            "static variable publishes one value per series)",
        ),
    ],
)
def test_an_implausible_value_is_refused_naming_the_variable(column, row, value, message):
    series, index = plausible_release()
    series.loc[row, column] = value
    with pytest.raises(ReleaseCheckError) as err:
        check_plausible_values(series, PLAUSIBLE)
    assert str(err.value) == message
    eq = pd.DataFrame({"split": "train", "class_length": [2, 2, 2], "eq_class": [0, 0, 0]})
    with pytest.raises(ReleaseCheckError) as err:  # and check_release stops on it
        check_release(
            series, index, dk=3, fk=3, eq_classes=eq, n_input=3, n_suppressed=0, plausible=PLAUSIBLE
        )
    assert str(err.value) == message


def test_every_implausible_variable_is_named_in_one_message():
    series, _ = plausible_release()
    series["fraction_inspired_oxygen"] = [-1.99, 2.83, 0.5, 0.5, 0.5, 0.5]
    series["gcs_total"] = [15.7, 7.5, 7.5, 3.0, 3.0, 3.0]
    series["height"] = [170.0, 171.0, 180.0, 181.0, 160.0, 160.0]
    with pytest.raises(ReleaseCheckError) as err:
        check_plausible_values(series, PLAUSIBLE)
    assert str(err.value) == (
        "plausible values: 'fraction_inspired_oxygen': 2 value(s) outside its valid range "
        "[0.2, 1]; 'gcs_total': 1 value(s) outside its valid range [3, 15], 2 value(s) in "
        "range but not in its value set {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}; "
        "'height': 2 series whose value changes within the series (a static variable "
        "publishes one value per series)"
    )


def test_a_published_variable_without_plausible_values_is_refused():
    series, _ = plausible_release()
    with pytest.raises(ReleaseCheckError) as err:
        check_plausible_values(series.assign(lactate=1.0), PLAUSIBLE)
    assert str(err.value) == (
        "plausible values: published variable(s) ['lactate'] have no valid range; expected "
        "each to be a variable of the variables file (config 'variables')"
    )


GENETIC = (
    "genetic-NA-pop8-tour3-par2-msd3-mp0.2-isd1-pat10-max30-norm0-layseries_dimension-"
    "initmean_shift"
)


def test_the_projected_release_is_byte_identical_whatever_the_threads():
    series, durations = _long_series(n=16, seed=2)
    classes, dims = class_arrays(series, durations)
    args = (classes, dims, _targets(classes, dims), FEATURES)
    one, series_one, summary_one = apply_method(
        *args, label=GENETIC, seed=5, threads=1, plausible=PLAUSIBLE
    )
    two, series_two, summary_two = apply_method(
        *args, label=GENETIC, seed=5, threads=2, plausible=PLAUSIBLE
    )
    assert one[dims].to_numpy().tobytes() == two[dims].to_numpy().tobytes()
    pd.testing.assert_frame_equal(series_one, series_two)
    assert summary_one == summary_two and sum(summary_one["projected_values"].values()) > 0
