"""Atomic writers: an interrupted write leaves nothing behind; output is deterministic."""

import numpy as np
import pandas as pd
import pytest

from mimic_deid.atomic import atomic_dir, atomic_path, read_json, write_json, write_parquet


def test_failed_write_leaves_no_file(tmp_path):
    target = tmp_path / "out" / "table.parquet"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("interrupted")
    assert not target.exists()
    assert list(target.parent.iterdir()) == []


def test_failed_directory_write_keeps_the_old_directory(tmp_path):
    target = tmp_path / "raw"
    target.mkdir()
    (target / "old.txt").write_text("old")
    with pytest.raises(RuntimeError), atomic_dir(target) as tmp:
        (tmp / "new.txt").write_text("new")
        raise RuntimeError("interrupted")
    assert [p.name for p in target.iterdir()] == ["old.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["raw"]


def test_parquet_and_json_are_byte_identical_across_writes(tmp_path):
    df = pd.DataFrame({"a": np.arange(5), "b": np.linspace(0, 1, 5)})
    write_parquet(df, tmp_path / "1.parquet")
    write_parquet(df, tmp_path / "2.parquet")
    assert (tmp_path / "1.parquet").read_bytes() == (tmp_path / "2.parquet").read_bytes()
    obj = {"z": np.float64(np.nan), "a": [np.int64(1), 2.5], "m": {"k": np.bool_(True)}}
    write_json(obj, tmp_path / "1.json")
    write_json(obj, tmp_path / "2.json")
    assert (tmp_path / "1.json").read_bytes() == (tmp_path / "2.json").read_bytes()
    assert read_json(tmp_path / "1.json") == {"a": [1, 2.5], "m": {"k": True}, "z": None}
