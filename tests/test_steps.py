"""Workflow steps fail with a message that names the parameter or file at fault."""

import numpy as np
import pandas as pd
import pytest

from mimic_deid.errors import ConfigError
from mimic_deid.steps.deid import duration_step, mondrian_step


def write_release(tmp_path, n_series=12, length=6):
    rng = np.random.default_rng(0)
    keys = np.arange(1, n_series + 1)
    series = pd.DataFrame(
        {
            "icustay_id": np.repeat(keys, length),
            "hour": np.tile(np.arange(length, dtype=np.int32), n_series),
            "heart_rate": rng.normal(80, 10, n_series * length),
            "glucose": rng.normal(120, 20, n_series * length),
        }
    )
    meta = pd.DataFrame(
        {
            "icustay_id": keys,
            "subject_id": keys,
            "hadm_id": keys,
            "length": np.int32(length),
            "mortality": np.int8(0),
            "split": "train",
        }
    )
    series.to_parquet(tmp_path / "series.parquet")
    meta.to_parquet(tmp_path / "meta.parquet")
    return tmp_path / "series.parquet", tmp_path / "meta.parquet"


def test_fk_larger_than_a_duration_class_names_the_parameter(tmp_path):
    series, meta = write_release(tmp_path, n_series=12)
    duration_step(str(meta), 10, False, str(tmp_path / "d.parquet"), str(tmp_path / "d.json"))
    with pytest.raises(ConfigError, match=r"fk=20 is larger than duration class of length 6 h"):
        mondrian_step(
            str(series),
            str(tmp_path / "d.parquet"),
            {"heart_rate": ["mean"]},
            20,
            "range",
            str(tmp_path / "t.parquet"),
            str(tmp_path / "t.json"),
        )
    assert not (tmp_path / "t.parquet").exists()


def test_unknown_feature_variable_is_reported(tmp_path):
    series, meta = write_release(tmp_path)
    duration_step(str(meta), 5, False, str(tmp_path / "d.parquet"), str(tmp_path / "d.json"))
    with pytest.raises(ConfigError, match="deid/features': variable 'pulse'"):
        mondrian_step(
            str(series),
            str(tmp_path / "d.parquet"),
            {"pulse": ["mean"]},
            3,
            "range",
            str(tmp_path / "t.parquet"),
            str(tmp_path / "t.json"),
        )
