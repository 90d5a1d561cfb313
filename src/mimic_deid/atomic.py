"""Atomic, deterministic writers for every artefact.

Outputs are written to a temporary file in the destination directory and renamed into place,
so an interrupted run never leaves a partial file that looks finished. Writers are
deterministic: the same data gives byte-identical files.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

PARQUET_COMPRESSION = "zstd"


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    On an exception the temporary file is removed and ``path`` is left untouched.
    """
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=suffix or ".tmp", dir=dest.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory next to ``path``; move it onto ``path`` on success."""
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        yield tmp
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_table(table: pa.Table, path: str | os.PathLike) -> None:
    """Write an Arrow table to Parquet atomically (zstd, no dictionary surprises)."""
    with atomic_path(path, ".parquet") as tmp:
        pq.write_table(table, tmp, compression=PARQUET_COMPRESSION)


def write_parquet(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write a DataFrame to Parquet atomically, without its index."""
    write_table(pa.Table.from_pandas(df, preserve_index=False), path)


def write_csv(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write a DataFrame to CSV atomically, without its index, floats to 6 significant digits."""
    with atomic_path(path, ".csv") as tmp:
        df.to_csv(tmp, index=False, float_format="%.6g")


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating | float):
        value = float(obj)
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def write_json(obj: Any, path: str | os.PathLike) -> None:
    """Write ``obj`` as sorted, indented JSON atomically; NaN and inf become null."""
    text = json.dumps(_jsonable(obj), indent=2, sort_keys=True, allow_nan=False) + "\n"
    write_text(text, path)


def write_text(text: str, path: str | os.PathLike) -> None:
    """Write a text file atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def read_json(path: str | os.PathLike) -> Any:
    """Read a JSON artefact."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)
