"""GA example figures: the worst and the median series by unfeasibility, numbers in the caption."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mimic_deid.core.atomic import read_json, write_json
from mimic_deid.deid.examples import (
    example_keys,
    examples_from_json,
    examples_to_json,
    method_examples,
)
from mimic_deid.report.items import ReportData
from mimic_deid.report.series import ITEMS, ga_caption

KEY = "icustay_id"


def run_frames(n: int = 7, length: int = 6):
    rng = np.random.default_rng(0)
    keys = np.arange(100, 100 + n)
    series = pd.DataFrame(
        {
            KEY: np.repeat(keys, length),
            "hour": np.tile(np.arange(length), n),
            "heart_rate": rng.normal(80, 10, n * length),
        }
    )
    classes = pd.DataFrame(
        {
            KEY: keys,
            "group": "all",
            "split": "train",
            "length": length,
            "class_length": length,
        }
    )
    perturbed = series.assign(heart_rate=series["heart_rate"] + 1.0)
    targets = pd.DataFrame({KEY: keys})
    for s in ("min", "max", "mean", "var"):
        targets[f"target_heart_rate_{s}"] = 1.0
    targets.loc[targets[KEY] == 106, "target_heart_rate_var"] = np.nan  # not shown: no var
    unfeas = np.array([5.0, 0.5, 9.0, 2.0, 2.0, 1.0, 50.0])  # 106 has the largest but no var
    per_series = pd.DataFrame(
        {
            KEY: keys,
            "group": "all",
            "class_length": length,
            "unfeasibility": unfeas,
            "distortion": np.arange(n) * 0.5,
            "iterations": np.arange(n) * 10 + 100,
        }
    )
    return series, classes, perturbed, targets, per_series


def test_worst_and_median_by_unfeasibility() -> None:
    ex = method_examples(*run_frames(), {"heart_rate": ["mean", "var", "min", "max"]})
    assert [e["rank"] for e in ex] == ["worst", "median"]
    worst, median = ex
    # usable: 100..105 with unfeasibility 5, .5, 9, 2, 2, 1 -> sorted .5 1 2(103) 2(104) 5 9
    assert worst["key_stats"] == {
        "unfeasibility": 9.0,
        "distortion": 1.0,
        "iterations": 120,
        "class_length": 6,
        "n": 6,
    }
    assert median["key_stats"]["unfeasibility"] == 2.0
    assert median["key_stats"]["iterations"] == 130  # key 103: the first of the tied pair
    assert worst["perturbed"].shape == (6,)
    np.testing.assert_allclose(worst["perturbed"] - worst["original"], 1.0)


def test_the_examples_need_only_their_two_series() -> None:
    """example_keys names the series method_examples shows (102 worst, 103 median), and the
    examples are the same from the original and perturbed tables cut to those rows, as the
    rule reads them."""
    series, classes, perturbed, targets, per_series = run_frames()
    features = {"heart_rate": ["mean", "var", "min", "max"]}
    assert example_keys(targets, per_series, features) == [102, 103]
    cut = series[KEY].isin([102, 103])
    whole = method_examples(series, classes, perturbed, targets, per_series, features)
    only = method_examples(series[cut], classes, perturbed[cut], targets, per_series, features)
    assert examples_to_json(only) == examples_to_json(whole)
    assert example_keys(targets, per_series, {"heart_rate": ["mean"]}) == []


def test_captions_give_the_numbers() -> None:
    ex = method_examples(*run_frames(), {"heart_rate": ["mean", "var", "min", "max"]})
    data = ReportData.__new__(ReportData)
    data.ga_examples = ex
    data.units = {"heart_rate": ("Heart rate", "bpm")}
    assert ga_caption(data, "worst") == (
        "worst of 6 series with heart rate targets: unfeasibility 9 and distortion 1 over all "
        "its feature dimensions, 120 generations, 6 h class"
    )
    assert ga_caption(data, "median").startswith("median of 6 series with heart rate targets: ")
    data.ga_examples = []
    assert ga_caption(data, "worst") == "no genetic optimiser run"
    names = {i.name: i.caption for i in ITEMS}
    assert "{ga_worst}" in names["ga_example_worst"]
    assert "{ga_median}" in names["ga_example_median"]
    assert "ga_example_high" not in names and "ga_example_low" not in names


def test_the_examples_artefact_gives_back_what_was_selected(tmp_path) -> None:
    """Rule method_examples writes the examples; the private report reads the same back,
    nulls as NaN."""
    series, classes, perturbed, targets, per_series = run_frames()
    perturbed.loc[perturbed[KEY] == 102, "heart_rate"] = np.nan  # the worst: all null
    ex = method_examples(
        series, classes, perturbed, targets, per_series, {"heart_rate": ["mean", "var"]}
    )
    write_json(examples_to_json(ex), tmp_path / "examples.json")
    back = examples_from_json(read_json(tmp_path / "examples.json"))
    assert [e["rank"] for e in back] == ["worst", "median"]
    for got, want in zip(back, ex, strict=True):
        for name in ("original", "perturbed"):
            np.testing.assert_array_equal(got[name], want[name])
            assert got[name].dtype == np.float64
        assert got["key_stats"] == want["key_stats"]
        assert got["variable"] == want["variable"] == "heart_rate"
        for role, block in want["features"].items():
            assert set(got["features"][role]) == set(block)
            np.testing.assert_array_equal(
                [got["features"][role][s] for s in block], list(block.values())
            )
    assert np.isnan(back[0]["perturbed"]).all()
    assert np.isnan(back[0]["features"]["achieved"]["mean"])
