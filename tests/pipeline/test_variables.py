"""The variables table: the shipped file is complete and typos are reported precisely."""

from pathlib import Path

import pytest
from series_reference import itemid_to_variable

from mimic_deid.core.errors import ConfigError
from mimic_deid.pipeline.variables import load_variables, series_variables

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_variables_are_the_17_benchmark_variables():
    variables = load_variables(ROOT / "config" / "variables.yaml")
    assert len(variables) == 17
    dims = [v.name for v in series_variables(variables)]
    assert len(dims) == 16 and "mean_blood_pressure" not in dims
    mapping = itemid_to_variable(variables)
    assert mapping[220045] == "heart_rate" and mapping[211] == "heart_rate"
    assert mapping[50931] == "glucose" and mapping[223761] == "temperature"
    for var in variables:
        assert var.all_itemids, var.name
        low, high = var.valid_range
        assert low <= high
    # the plausible values of a release (claim 16): discrete scores, one static variable
    discrete = {v.name: v.values for v in variables if v.values is not None}
    assert discrete == {
        "capillary_refill_rate": (0.0, 1.0),
        "gcs_eye_opening": (1.0, 2.0, 3.0, 4.0),
        "gcs_motor_response": (1.0, 2.0, 3.0, 4.0, 5.0, 6.0),
        "gcs_total": tuple(float(v) for v in range(3, 16)),
        "gcs_verbal_response": (1.0, 2.0, 3.0, 4.0, 5.0),
    }
    assert [v.name for v in variables if v.static] == ["height"]


def write(tmp_path, text):
    path = tmp_path / "variables.yaml"
    path.write_text(text)
    return path


def test_duplicate_itemid_is_reported(tmp_path):
    path = write(
        tmp_path,
        "variables:\n"
        "  a: {label: A, unit: u, itemids: {carevue: [1]}, range: [0, 1]}\n"
        "  b: {label: B, unit: u, itemids: {carevue: [1]}, range: [0, 1]}\n",
    )
    with pytest.raises(ConfigError) as info:
        load_variables(path)
    assert str(info.value) == f"{path}: variable 'b': itemid 1 is also listed for 'a'"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{label: A, unit: u, itemids: {carevue: [1]}}", "missing key 'range'"),
        (
            "{label: A, unit: u, itemids: {chartevents: [1]}, range: [0, 1]}",
            "'itemids' must map some of ('carevue', 'metavision', 'labevents') to lists of "
            "integers",
        ),
        (
            "{label: A, unit: u, itemids: {carevue: [1]}, range: [2, 1]}",
            "'range' must be [low, high] with low <= high, got [2, 1]",
        ),
        (
            "{label: A, unit: u, itemids: {carevue: [1]}, range: [0, 1], parse: guess}",
            "'parse' must be one of ('numeric', 'ratio_first', 'ratio_second', 'text_map'), "
            "got 'guess'",
        ),
        (
            "{label: A, unit: u, itemids: {carevue: [1]}, range: [0, 1], parse: text_map}",
            "parse 'text_map' needs a non-empty 'text_map'",
        ),
        (
            "{label: A, unit: u, itemids: {carevue: [1]}, range: [0, 1], conversions: [{multiply: 2}]}",
            "conversions[0] needs a condition (uom/itemids/above/at_most)",
        ),
        (
            "{label: A, unit: u, itemids: {carevue: [1]}, range: [1, 4], values: [0, 1, 2]}",
            "'values' must be a non-empty list of numbers inside its range [1, 4], got [0, 1, 2]",
        ),
        (
            "{label: A, unit: u, itemids: {carevue: [1]}, range: [1, 4], values: []}",
            "'values' must be a non-empty list of numbers inside its range [1, 4], got []",
        ),
        (
            "{label: A, unit: u, itemids: {carevue: [1]}, range: [0, 1], static: maybe}",
            "'static' must be true or false, got 'maybe'",
        ),
    ],
)
def test_malformed_variable_names_the_variable_and_key(tmp_path, body, message):
    path = write(tmp_path, f"variables:\n  a: {body}\n")
    with pytest.raises(ConfigError) as info:
        load_variables(path)
    assert str(info.value) == f"{path}: variable 'a': {message}"


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_variables(tmp_path / "nope.yaml")
    assert str(info.value) == (
        f"variables file {tmp_path / 'nope.yaml'}: cannot read it (No such file or directory)"
    )
