"""Trimming series to duration classes keeps the last hours; class arrays are exact."""

import numpy as np
import pandas as pd
import pytest

from mimic_deid.core.errors import InputDataError
from mimic_deid.deid.classes import class_frame, iter_class_arrays, trim_to_classes


def long_table(lengths):
    rows = []
    for key, length in lengths.items():
        for h in range(length):
            rows.append({"icustay_id": key, "hour": h, "hr": 100 * key + h, "sbp": np.nan})
    return pd.DataFrame(rows)


def test_trim_keeps_last_hours_and_drops_suppressed():
    series = long_table({1: 5, 2: 3, 3: 4})
    classes = pd.DataFrame(
        {
            "icustay_id": [1, 2, 3],
            "group": ["all"] * 3,
            "length": [5, 3, 4],
            "class_length": [3, 3, 0],
        }
    )
    trimmed = trim_to_classes(series, classes)
    assert set(trimmed["icustay_id"]) == {1, 2}
    first = trimmed[trimmed["icustay_id"] == 1]
    assert first["hour"].tolist() == [0, 1, 2]
    assert first["hr"].tolist() == [102, 103, 104]  # hours 2..4 of the original

    (cls,) = list(iter_class_arrays(trimmed, ["hr", "sbp"]))
    assert cls.length == 3 and cls.keys.tolist() == [1, 2]
    assert cls.X.shape == (2, 3, 2)
    np.testing.assert_array_equal(cls.X[1, :, 0], [200, 201, 202])
    assert np.isnan(cls.X[:, :, 1]).all()
    back = class_frame(cls, cls.X, ["hr", "sbp"])
    pd.testing.assert_frame_equal(
        back.reset_index(drop=True), trimmed.reset_index(drop=True), check_dtype=False
    )


def test_classes_are_separated_by_group_and_length():
    series = long_table({1: 2, 2: 2, 3: 2, 4: 1})
    classes = pd.DataFrame(
        {
            "icustay_id": [1, 2, 3, 4],
            "group": ["test", "train", "train", "train"],
            "length": [2, 2, 2, 1],
            "class_length": [2, 2, 2, 1],
        }
    )
    got = [
        (c.group, c.length, c.keys.tolist())
        for c in iter_class_arrays(trim_to_classes(series, classes), ["hr"])
    ]
    assert got == [("test", 2, [1]), ("train", 1, [4]), ("train", 2, [2, 3])]


def test_missing_hours_are_reported():
    series = long_table({1: 3}).iloc[[0, 2]]
    classes = pd.DataFrame(
        {"icustay_id": [1], "group": ["all"], "length": [3], "class_length": [3]}
    )
    with pytest.raises(InputDataError) as info:
        list(iter_class_arrays(trim_to_classes(series, classes), ["hr"]))
    assert str(info.value) == (
        "series table: class of length 3 has 2 rows, not a multiple of its length; every "
        "series must have one row per hour"
    )
