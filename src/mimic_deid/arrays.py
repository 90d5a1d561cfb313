"""Conversions between the long series table and per-duration-class arrays.

Long table: one row per (series, hour) with columns ``key`` (an int64 series key: ICUSTAY_ID
in private artefacts), ``hour`` (int, 0-based) and one float column per dimension.
Class array: ``(n_series, length, n_dims)`` float64 with NaN for null, series in key order.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def long_to_array(
    long: pd.DataFrame, keys: np.ndarray, length: int, dims: list[str], key_col: str = "icustay_id"
) -> np.ndarray:
    """Stack the first ``length`` hours of the series ``keys`` into ``(len(keys), length, D)``.

    Hours beyond ``length`` are ignored; hours missing from the table are NaN. Series are
    trimmed by the caller (by shifting ``hour``) before calling when the last hours must be kept.
    """
    keys = np.asarray(keys, dtype=np.int64)
    out = np.full((len(keys), length, len(dims)), np.nan, dtype=np.float64)
    if len(keys) == 0:
        return out
    sub = long[long[key_col].isin(keys)]
    hours = sub["hour"].to_numpy(dtype=np.int64)
    ok = (hours >= 0) & (hours < length)
    sub = sub[ok]
    order = np.argsort(keys, kind="stable")
    pos = order[np.searchsorted(keys, sub[key_col].to_numpy(dtype=np.int64), sorter=order)]
    out[pos, sub["hour"].to_numpy(dtype=np.int64)] = sub[dims].to_numpy(dtype=np.float64)
    return out


def array_to_long(
    X: np.ndarray, keys: np.ndarray, dims: list[str], key_col: str = "icustay_id"
) -> pd.DataFrame:
    """Inverse of :func:`long_to_array`: one row per (series, hour), hours 0..length-1."""
    n, length, n_dims = X.shape
    frame = pd.DataFrame(X.reshape(n * length, n_dims), columns=dims)
    frame.insert(0, "hour", np.tile(np.arange(length, dtype=np.int32), n))
    frame.insert(0, key_col, np.repeat(np.asarray(keys), length))
    return frame
