"""Data shaping for the report's figures: from run artefacts to the numbers drawn.

Functions here validate and reshape loaded objects (arrays, DataFrames, dicts) and never
draw; :mod:`mimic_deid.report.figures` draws what they return.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.core.errors import InputDataError, require_columns
from mimic_deid.deid.examples import GA_STATS
from mimic_deid.evaluate.utility import SETTINGS as UTILITY_SETTINGS

__all__ = [
    "SERIES_COLUMNS",
    "SUMMARY_COLUMNS",
    "as_1d",
    "duration_inputs",
    "feature_block",
    "first_values",
    "float_or_nan",
    "linkage_points",
    "summary_rows",
    "utility_keys",
    "utility_rows",
]

SUMMARY_COLUMNS = ("class_length", "inclusion", "stat", "value", "normalised")
SERIES_COLUMNS = ("class_length", "first_disagreement")


def as_1d(values: Any, name: str) -> np.ndarray:
    """``values`` as a 1-d array; ``InputDataError`` naming ``name`` otherwise."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InputDataError(f"{name}: expected a 1-d array, got shape {arr.shape}")
    return arr


def duration_inputs(lengths: Any, class_lengths: Any) -> tuple[np.ndarray, np.ndarray]:
    """Original and class lengths (hours) as int64 arrays, checked to match and to shrink."""
    lengths = as_1d(lengths, "lengths").astype(np.int64, copy=False)
    class_lengths = as_1d(class_lengths, "class_lengths").astype(np.int64, copy=False)
    if lengths.shape != class_lengths.shape:
        raise InputDataError(
            f"lengths and class_lengths: expected the same number of series, got "
            f"{lengths.shape[0]} and {class_lengths.shape[0]}"
        )
    if (lengths < 0).any() or (class_lengths < 0).any():
        raise InputDataError("lengths / class_lengths: expected non-negative hour counts")
    if (class_lengths > lengths).any():
        raise InputDataError(
            "class_lengths: a class length exceeds the series' original length; series are "
            "only ever shortened"
        )
    return lengths, class_lengths


def summary_rows(
    df: pd.DataFrame | None, class_length: int, stats: Sequence[str], what: str
) -> pd.DataFrame:
    """Rows of a disagreement summary for one class length and the given statistics."""
    if df is None or len(df) == 0:
        return pd.DataFrame(columns=list(SUMMARY_COLUMNS))
    require_columns(df, SUMMARY_COLUMNS, what)
    rows = df[(df["class_length"] == class_length) & df["stat"].isin(list(stats))]
    return rows.sort_values(["stat", "inclusion"], kind="stable")


def first_values(df: pd.DataFrame | None, class_length: int | None, what: str) -> np.ndarray:
    """First-disagreement values of one class length (all lengths if None) of a per-series table."""
    if df is None or len(df) == 0:
        return np.empty(0)
    require_columns(df, SERIES_COLUMNS, what)
    if class_length is not None:
        df = df[df["class_length"] == class_length]
    return pd.to_numeric(df["first_disagreement"], errors="coerce").to_numpy(dtype=float)


def float_or_nan(value: Any) -> float:
    """``float(value)``, NaN where it is not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def feature_block(features: Mapping[str, Any], role: str) -> dict[str, float] | None:
    """``features[role]`` (role: original, target or achieved) as floats, None if absent."""
    block = features.get(role)
    if block is None:
        return None
    return {s: float_or_nan(block.get(s)) for s in GA_STATS}


def linkage_points(block: Mapping[str, Any] | None) -> pd.DataFrame:
    """One side of ``linkage.json`` as rows (error, top1, top5, reconstruction_error, n)."""
    block = block or {}
    if isinstance(block.get("by_error"), Sequence):  # evaluate.linkage's own shape
        items = [(row.get("error"), {"n": block.get("n"), **row}) for row in block["by_error"]]
    else:
        items = list(block.items())
    rows = []
    for key, values in items:
        error = float_or_nan(key)
        if not math.isfinite(error) or not isinstance(values, Mapping):
            continue
        recon = values.get("reconstruction_error")
        if isinstance(recon, Mapping):
            recon = recon.get("overall")
        rows.append(
            {
                "error": error,
                "top1": float_or_nan(values.get("top1")),
                "top5": float_or_nan(values.get("top5")),
                "reconstruction_error": float_or_nan(recon),
                "n": float_or_nan(values.get("n", values.get("n_targets"))),
            }
        )
    df = pd.DataFrame(rows, columns=["error", "top1", "top5", "reconstruction_error", "n"])
    return df.sort_values("error").reset_index(drop=True)


#: Key values of a utility table written before it held the data owner's baseline and the
#: like-for-like rows (issue 27): mortality, on the released variables, shipped.
_UTILITY_DEFAULT_KEYS = {"task": "mortality", "variables": "released", "cross": "shipped"}
_SETTING_SIDES = {label: (train, test) for label, train, test in UTILITY_SETTINGS}


def utility_keys(utility: pd.DataFrame) -> pd.DataFrame:
    """``utility`` with every key column of
    :data:`mimic_deid.evaluate.utility.KEY_COLUMNS` present.

    A table from before those columns (an older ``trust_settings.csv`` that a re-run of the
    report reads, or a hand-made one) holds mortality on the released variables with the
    original side shipped; ``train_data`` / ``test_data`` follow from the setting label.
    """
    out = utility.copy()
    if "train_data" not in out.columns and "setting" in out.columns:
        sides = [_SETTING_SIDES.get(str(s), ("", "")) for s in out["setting"]]
        out["train_data"] = [a for a, _ in sides]
        out["test_data"] = [b for _, b in sides]
    for key, value in _UTILITY_DEFAULT_KEYS.items():
        if key not in out.columns:
            out[key] = value
    return out


def utility_rows(utility: pd.DataFrame, split: str, task: str = "mortality") -> pd.DataFrame:
    """The rows of one evaluated ``split`` and ``task`` (:func:`utility_keys` completed).

    Raises
    ------
    InputDataError
        ``setting`` or ``split`` is missing, or a (variables, cross, setting) appears twice.
    """
    require_columns(utility, ["setting", "split"], "utility (trust settings)")
    frame = utility_keys(utility)
    rows = frame[(frame["split"].astype(str) == split) & (frame["task"].astype(str) == task)]
    keys = ["variables", "cross", "setting"]
    dup = rows[rows.duplicated(keys)]
    if len(dup):
        first = dup.iloc[0]
        raise InputDataError(
            f"utility (trust settings): setting {first['setting']!r} ({first['variables']} "
            f"variables, {first['cross']}) appears more than once for split {split!r}; "
            "expected one row per (task, variables, cross, setting, split)"
        )
    return rows
