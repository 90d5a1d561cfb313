"""Hand-engineered features of the mimic3-benchmarks logistic-regression baseline (seed 5.7).

For every series dimension, 7 subsequences of the series' own span x 6 statistics of the
non-null values in each: ``D * 7 * 6`` features per series, named ``"{dim}_{sub}_{stat}"``
and laid out dimension-major (dimension, then subsequence, then statistic).

Subsequences of a series of ``length`` hours (``m(p) = max(1, ceil(p * length / 100))``, computed
in integer arithmetic so that e.g. 10 % of 30 hours is exactly 3):

========  ===============================
``all``    hours ``[0, length)``
``firstP`` hours ``[0, m(P))``            for P in 10, 25, 50
``lastP``  hours ``[length - m(P), length)`` for P in 10, 25, 50
========  ===============================

Statistics over the non-null values of a subsequence: ``min``, ``max``, ``mean``, ``sd``
(population, ``ddof=0``), ``skew`` (biased Fisher-Pearson coefficient ``m3 / m2**1.5``, as
``scipy.stats.skew(bias=True)``; 0 when all values are equal, i.e. ``sd = 0``) and ``count``
(number of non-null values). A subsequence with no non-null value has every statistic NaN
except ``count = 0``.

Differences from the benchmark's own extractor (``mimic3models/feature_extractor.py``), on
purpose: the benchmark cuts the subsequences out of the span between a channel's first and last
observation and gives NaN for every statistic, including the count, of an empty subsequence.
Here the span is the series' own hour grid (all dimensions share it, so "last 25 %" means the
same hours for every variable, and the time of a recording relative to the series start is what
the de-identified release preserves) and an empty subsequence has count 0, which is a real
observation ("not measured") rather than a missing one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from mimic_deid.core.errors import InputDataError, require_columns

SUBSEQUENCES: tuple[tuple[str, str, int], ...] = (
    ("all", "all", 100),
    ("first10", "first", 10),
    ("first25", "first", 25),
    ("first50", "first", 50),
    ("last10", "last", 10),
    ("last25", "last", 25),
    ("last50", "last", 50),
)
"""(name, anchor, percent) of the 7 subsequences, in feature order."""

STATISTICS: tuple[str, ...] = ("min", "max", "mean", "sd", "skew", "count")
"""The 6 statistics, in feature order."""

N_SUB = len(SUBSEQUENCES)
_CHUNK_ELEMENTS = 1_000_000  # series x hours x dims per vectorised block (~8 MB per temporary)
N_STAT = len(STATISTICS)


def subsequence_bounds(length: int) -> list[tuple[int, int]]:
    """Hour ranges ``[start, stop)`` of the 7 subsequences of a series of ``length`` hours.

    Parameters
    ----------
    length : int
        Number of hourly grid points of the series, >= 1.

    Returns
    -------
    list of (start, stop), length 7, in ``SUBSEQUENCES`` order; every range holds >= 1 hour.
    """
    if length < 1:
        raise InputDataError(f"series length must be >= 1 hour, got {length}")
    bounds = []
    for _, anchor, pct in SUBSEQUENCES:
        m = max(1, -(-pct * length // 100))  # ceil(pct * length / 100) in integers
        bounds.append((0, m) if anchor in ("all", "first") else (length - m, length))
    return bounds


def _block_stats(V: np.ndarray) -> np.ndarray:
    """Statistics over axis 1 of ``V`` (n, hours, D) ignoring NaN -> (n, D, 6)."""
    mask = ~np.isnan(V)
    count = mask.sum(axis=1)  # (n, D)
    has = count > 0
    safe = np.where(has, count, 1)
    total = np.where(mask, V, 0.0).sum(axis=1)
    mean = np.where(has, total / safe, np.nan)
    vmin = np.where(has, np.where(mask, V, np.inf).min(axis=1), np.nan)
    vmax = np.where(has, np.where(mask, V, -np.inf).max(axis=1), np.nan)
    dev = np.where(mask, V - np.where(has, mean, 0.0)[:, None, :], 0.0)
    dev2 = dev * dev
    m2 = dev2.sum(axis=1) / safe
    m3 = (dev2 * dev).sum(axis=1) / safe
    constant = has & (vmax == vmin)  # exactly equal values: sd and skew are exactly 0
    m2 = np.where(constant, 0.0, m2)
    sd = np.where(has, np.sqrt(m2), np.nan)
    positive = has & ~constant & (m2 > 0)
    skew = np.where(constant, 0.0, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        skew = np.where(positive, m3 / np.where(positive, m2, 1.0) ** 1.5, skew)
    return np.stack([vmin, vmax, mean, sd, skew, count.astype(np.float64)], axis=-1)


def _equal_length_features(X: np.ndarray) -> np.ndarray:
    """Features of series that all have ``X.shape[1]`` hours: (n, L, D) -> (n, D, 7, 6)."""
    n, length, n_dims = X.shape
    out = np.empty((n, n_dims, N_SUB, N_STAT), dtype=np.float64)
    bounds = subsequence_bounds(length)
    chunk = max(1, _CHUNK_ELEMENTS // max(length * n_dims, 1))  # bounds temporary memory
    for lo in range(0, n, chunk):
        block = X[lo : lo + chunk]
        for s, (start, stop) in enumerate(bounds):
            out[lo : lo + chunk, :, s, :] = _block_stats(block[:, start:stop, :])
    return out


def benchmark_features(X: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Benchmark features of every series.

    Parameters
    ----------
    X : ndarray, shape (n_series, max_length, n_dims)
        Hourly series, NaN = null; series ``i`` occupies hours ``[0, lengths[i])`` and any later
        hour is ignored.
    lengths : ndarray of int, shape (n_series,)
        Length of each series in hours, ``1 <= lengths[i] <= max_length``.

    Returns
    -------
    ndarray float64, shape (n_series, n_dims * 7 * 6)
        Columns per dimension, then subsequence (:data:`SUBSEQUENCES`), then statistic
        (:data:`STATISTICS`). Series are processed in groups of equal length,
        vectorised within a group.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 3:
        raise InputDataError(f"benchmark_features: X must be (n, length, dims), got {X.shape}")
    lengths = np.asarray(lengths)
    if lengths.shape != (X.shape[0],):
        raise InputDataError(
            f"benchmark_features: lengths must have shape ({X.shape[0]},), got {lengths.shape}"
        )
    lengths = lengths.astype(np.int64)
    if len(lengths) and (lengths.min() < 1 or lengths.max() > X.shape[1]):
        raise InputDataError(
            f"benchmark_features: lengths must lie in [1, {X.shape[1]}], "
            f"got [{lengths.min()}, {lengths.max()}]"
        )
    n, _, n_dims = X.shape
    out = np.empty((n, n_dims, N_SUB, N_STAT), dtype=np.float64)
    for length in np.unique(lengths):
        idx = np.flatnonzero(lengths == length)
        out[idx] = _equal_length_features(X[idx, :length, :])
    return out.reshape(n, n_dims * N_SUB * N_STAT)


def _length_column(index: pd.DataFrame, length_col: str | None) -> str:
    if length_col is not None:
        return length_col
    for cand in ("length", "duration_class", "class_length"):
        if cand in index.columns:
            return cand
    raise InputDataError(
        "series index: expected a length column ('length', 'duration_class' or "
        f"'class_length'), found columns {list(index.columns)}"
    )


def features_from_long(
    long: pd.DataFrame,
    index: pd.DataFrame,
    key_col: str,
    dims: list[str],
    length_col: str | None = None,
    fill: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Benchmark features of the series listed in ``index``, straight from a long table.

    Parameters
    ----------
    long : DataFrame
        One row per (series, hour): ``key_col``, ``hour`` (int, 0-based), one float column per
        name in ``dims`` (NaN/NA = null). Rows of keys absent from ``index`` and hours outside
        ``[0, length)`` are ignored; hours absent from the table are null.
    index : DataFrame
        One row per series: ``key_col`` (unique) and its length in hours, read from
        ``length_col`` or, if None, the first of ``length``, ``duration_class``,
        ``class_length`` present. Series with length < 1 (suppressed) are left out.
    key_col : str
        ``icustay_id`` (private artefacts) or ``pseudonym`` (release).
    dims : list of str
        Series dimensions, in feature order.
    length_col : str, optional
    fill : callable, optional
        Applied to the hourly array ``(n_l, l, len(dims))`` of each set of series sharing a
        length ``l`` before its features are computed, e.g.
        :func:`mimic_deid.deid.missing.fill_missing_hours` (the like-for-like original side of
        the trust settings); must return an array of the same shape.

    Returns
    -------
    keys : ndarray, shape (n,)
        Series keys in ascending order (the row order of the other outputs).
    X_feat : ndarray float64, shape (n, len(dims) * 42)
    lengths : ndarray int64, shape (n,)
        Lengths in hours.
    """
    lcol = _length_column(index, length_col)
    require_columns(index, [key_col, lcol], "series index")
    require_columns(long, [key_col, "hour", *dims], "series long table")
    if index[key_col].isna().any():
        raise InputDataError(f"series index: column '{key_col}' has null keys")
    if index[key_col].duplicated().any():
        raise InputDataError(f"series index: column '{key_col}' has duplicate keys")

    idx = index[[key_col, lcol]]
    idx = idx[idx[lcol].to_numpy(dtype=np.int64) >= 1].sort_values(key_col, kind="stable")
    keys = idx[key_col].to_numpy()
    lengths = idx[lcol].to_numpy(dtype=np.int64)
    n, n_dims = len(keys), len(dims)
    X_feat = np.empty((n, n_dims * N_SUB * N_STAT), dtype=np.float64)
    if n == 0:
        return keys, X_feat, lengths

    pos = pd.Index(keys).get_indexer(long[key_col])
    hours = long["hour"].to_numpy(dtype=np.int64)
    inside = pos >= 0
    inside[inside] = (hours[inside] >= 0) & (hours[inside] < lengths[pos[inside]])
    rows = np.flatnonzero(inside)
    pos, hours = pos[rows], hours[rows]
    values = long[dims].to_numpy(dtype=np.float64, na_value=np.nan)[rows]
    flat = pos * (lengths.max() + 1) + hours
    n_repeated = len(flat) - len(np.unique(flat))
    if n_repeated:
        raise InputDataError(
            f"series long table: {n_repeated} repeated ({key_col}, hour) row(s); "
            f"expected at most one row per ({key_col}, hour)"
        )

    row_len = lengths[pos]
    order = np.argsort(row_len, kind="stable")
    group_lengths, group_starts = np.unique(row_len[order], return_index=True)
    bounds = dict(
        zip(
            group_lengths.tolist(),
            zip(group_starts.tolist(), [*group_starts[1:].tolist(), len(order)], strict=True),
            strict=True,
        )
    )
    local = np.empty(n, dtype=np.int64)
    for length in np.unique(lengths).tolist():
        members = np.flatnonzero(lengths == length)
        local[members] = np.arange(len(members))
        X = np.full((len(members), length, n_dims), np.nan, dtype=np.float64)
        if length in bounds:
            lo, hi = bounds[length]
            sel = order[lo:hi]
            X[local[pos[sel]], hours[sel]] = values[sel]
        if fill is not None:
            X = fill(X)
        X_feat[members] = _equal_length_features(X).reshape(len(members), -1)
    return keys, X_feat, lengths


def datasets_from_long(
    long: pd.DataFrame,
    index: pd.DataFrame,
    key_col: str,
    dims: list[str],
    label_col: str = "label",
    split_col: str = "split",
    length_col: str | None = None,
    fill: Callable[[np.ndarray], np.ndarray] | None = None,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per-split ``(X_feat, y)`` for the trust settings of :mod:`mimic_deid.evaluate.utility`.

    ``index`` must also carry ``label_col`` (0/1; ``label`` in a release index, ``mortality``
    in the private meta) and ``split_col``. Returns ``{split: (X_feat (n_s, D*42) float64,
    y (n_s,) int64)}`` with rows in ascending key order within each split. Each split's
    features are computed on their own, so ``fill`` (:func:`features_from_long`) sees the
    series of one split and one length at a time, as a release's duration class of a
    per-split release (``ihm48``) holds the series of one split and one length.
    """
    require_columns(index, [key_col, label_col, split_col], "series index")
    out = {}
    splits = index[split_col].astype(str)
    for s in sorted(set(splits.tolist())):
        part = index[(splits == s).to_numpy()]
        keys, X_feat, _ = features_from_long(long, part, key_col, dims, length_col, fill)
        if len(keys) == 0:  # every series of the split suppressed
            continue
        labels = part.set_index(key_col).loc[keys, label_col]
        if labels.isna().any():
            raise InputDataError(f"series index: column '{label_col}' has null labels")
        out[s] = (X_feat, labels.to_numpy(dtype=np.int64))
    return out
