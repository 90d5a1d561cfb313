"""What duration classes cost and leave: the hours each series loses, the public summary of a
duration de-identification (seed §6.1) and how unique the lengths are before it; the check of
a lengths array shared with the class rules of :mod:`mimic_deid.deid.duration`."""

from __future__ import annotations

import numpy as np

from mimic_deid.core.errors import InputDataError, require_int

__all__ = ["check_lengths", "duration_summary", "duration_uniqueness", "records_lost"]


def check_lengths(lengths: np.ndarray, name: str = "lengths") -> np.ndarray:
    arr = np.asarray(lengths)
    if arr.ndim != 1:
        raise InputDataError(f"{name} must be one-dimensional (n_series,), got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        as_int = arr.astype(np.int64) if np.all(np.isfinite(arr)) else None
        if as_int is None or not np.array_equal(as_int, arr):
            raise InputDataError(f"{name} must be whole numbers of hours, got dtype {arr.dtype}")
        arr = as_int
    arr = arr.astype(np.int64, copy=False)
    if arr.size and arr.min() < 1:
        bad = int(np.sum(arr < 1))
        raise InputDataError(
            f"{name}: {bad} series have length < 1 hour (minimum {int(arr.min())}); "
            "every series must have at least one hour"
        )
    return arr


def _check_pair(lengths: np.ndarray, class_lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lengths = check_lengths(lengths)
    class_lengths = np.asarray(class_lengths).astype(np.int64, copy=False)
    if class_lengths.shape != lengths.shape:
        raise InputDataError(
            f"class_lengths must have the shape of lengths {lengths.shape}, "
            f"got {class_lengths.shape}"
        )
    outside = (class_lengths < 0) | (class_lengths > lengths)
    if outside.any():
        first = int(np.flatnonzero(outside)[0])
        raise InputDataError(
            f"class_lengths must lie in [0, length] for every series; {int(outside.sum())} "
            f"series lie outside (first: class length {int(class_lengths[first])} for length "
            f"{int(lengths[first])})"
        )
    return lengths, class_lengths


def records_lost(lengths: np.ndarray, class_lengths: np.ndarray) -> np.ndarray:
    """Hours each series loses to its duration class.

    Parameters
    ----------
    lengths, class_lengths : ndarray of int, shape (n,)
        Original lengths and class lengths (0 = suppressed), in hours.

    Returns
    -------
    ndarray of int64, shape (n,)
        ``length - class_length``: the leading hours dropped; a suppressed series loses all.
    """
    lengths, class_lengths = _check_pair(lengths, class_lengths)
    return lengths - class_lengths


def duration_summary(lengths: np.ndarray, class_lengths: np.ndarray) -> dict:
    """Public summary of a duration de-identification (seed §6.1).

    Parameters
    ----------
    lengths, class_lengths : ndarray of int, shape (n,)
        Original lengths and class lengths (0 = suppressed).

    Returns
    -------
    dict
        ``series_in``, ``released``, ``moved`` (released with a shorter class), ``suppressed``,
        ``classes`` (number of released class lengths), ``smallest_class`` (size of the
        smallest released class, None if nothing is released), ``records_in``,
        ``records_lost`` (total), ``records_lost_mean`` / ``records_lost_sd`` (hours lost per
        series) and ``records_lost_pct_mean`` / ``records_lost_pct_sd`` (percent of the series'
        hours lost).

    Notes
    -----
    Conventions: a suppressed series counts as losing ALL its records (100 %), so suppression
    is never hidden by the averages; means and standard deviations are over every input series
    (released and suppressed); standard deviations are population SDs (``ddof=0``). With no
    input series the per-series statistics are None.
    """
    lengths, class_lengths = _check_pair(lengths, class_lengths)
    n = int(lengths.size)
    released = class_lengths > 0
    lost = records_lost(lengths, class_lengths).astype(np.float64)
    pct = 100.0 * lost / np.maximum(lengths, 1)
    _, sizes = np.unique(class_lengths[released], return_counts=True)

    def stat(values: np.ndarray, fn) -> float | None:
        return float(fn(values)) if n else None

    return {
        "series_in": n,
        "released": int(released.sum()),
        "moved": int(np.sum(released & (class_lengths < lengths))),
        "suppressed": int(n - released.sum()),
        "classes": int(sizes.size),
        "smallest_class": int(sizes.min()) if sizes.size else None,
        "records_in": int(lengths.sum()),
        "records_lost": int(lost.sum()),
        "records_lost_mean": stat(lost, np.mean),
        "records_lost_sd": stat(lost, np.std),
        "records_lost_pct_mean": stat(pct, np.mean),
        "records_lost_pct_sd": stat(pct, np.std),
    }


def duration_uniqueness(lengths: np.ndarray, at_most: int = 5) -> dict:
    """How identifying the lengths are before de-identification (seed §6.1).

    Parameters
    ----------
    lengths : ndarray of int, shape (n,)
        Original series lengths in hours (one hour class per distinct length).
    at_most : int
        Size bound of a "small" hour class (the seed counts classes of at most 5 series).

    Returns
    -------
    dict
        ``unique_series`` (series alone in their hour class), ``small_series`` (series in an
        hour class of at most ``at_most`` series), ``small_pct`` (percent of all series),
        ``small_min_length`` (shortest length with a small class, None if there is none) and
        ``at_most``.
    """
    lengths = check_lengths(lengths)
    at_most = require_int(at_most, "duration uniqueness bound")
    _, inverse, sizes = np.unique(lengths, return_inverse=True, return_counts=True)
    per_series = sizes[inverse]
    small = per_series <= at_most
    return {
        "at_most": at_most,
        "unique_series": int(np.sum(per_series == 1)),
        "small_series": int(small.sum()),
        "small_pct": float(100.0 * small.mean()) if lengths.size else None,
        "small_min_length": int(lengths[small].min()) if small.any() else None,
    }
