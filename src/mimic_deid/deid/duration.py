"""Duration k-classes: hide each series' length in a crowd of at least ``k`` series.

An adversary who knows a patient's length of stay could single out series of rare lengths
(seed §6.1). Every released series therefore gets a *class length* shared by at least ``k``
released series. Lengths are processed from the longest to the shortest:

- the series of the current length join a pool together with the series carried down from
  longer lengths whose own class was too small;
- if the pool holds at least ``k`` series, the whole pool forms the class of the current
  length (a class that already has ``k`` series of its own also absorbs everything carried
  to it) and the pool is emptied;
- otherwise the pool is carried down to the next shorter length;
- whatever is still carried after the shortest length is suppressed (class length 0).

Hence a series is only ever shortened, it moves only when its own length class has fewer than
``k`` series, and then to the nearest shorter length where the class can be completed. This
follows DESIGN §5, which replaces the literal "top up to exactly k, then send leftovers back"
of the seed's Algorithm 3: here nothing is moved that could stay.

Shortening keeps the LAST hours of a series (the end of a stay matters most for mortality):
a series of length ``l`` in class ``c`` drops its first ``l - c`` hours and the remaining hours
are renumbered from 0.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from mimic_deid.errors import ConfigError, InputDataError
from mimic_deid.logs import get_logger

log = get_logger(__name__)


def _check_k(k: int, name: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise ConfigError(f"duration {name} must be an integer >= 1, got {k!r}")
    if k < 1:
        raise ConfigError(f"duration {name} must be >= 1, got {k}")
    return int(k)


def _check_lengths(lengths: np.ndarray, name: str = "lengths") -> np.ndarray:
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


def assign_duration_classes(lengths: np.ndarray, k: int) -> np.ndarray:
    """Class length of every series; 0 = suppressed.

    Parameters
    ----------
    lengths : ndarray of int, shape (n,)
        Number of hours of each series, all >= 1.
    k : int
        Minimum number of series per released class (>= 1).

    Returns
    -------
    ndarray of int32, shape (n,)
        Class length (``<= lengths``) of each series, 0 where the series is suppressed.
        Every non-zero class length is shared by at least ``k`` series.

    Raises
    ------
    ConfigError
        ``k`` is not an integer >= 1.
    InputDataError
        ``lengths`` is not 1-D, not whole numbers, or has a value < 1.

    Notes
    -----
    If ``k`` exceeds the number of series, every series is suppressed and a ``UserWarning`` is
    emitted (not an exception: the caller records the suppression). The loop runs over the
    distinct lengths only.
    """
    k = _check_k(k)
    lengths = _check_lengths(lengths)
    n = lengths.size
    out = np.zeros(n, dtype=np.int32)
    if n == 0:
        return out
    if k > n:
        msg = f"duration k={k} exceeds the number of series ({n}): all series are suppressed"
        warnings.warn(msg, UserWarning, stacklevel=2)
        log.warning(msg)
        return out

    distinct, inverse, counts = np.unique(lengths, return_inverse=True, return_counts=True)
    # target[i] = class length assigned to every series whose own length is distinct[i]
    target = np.zeros(distinct.size, dtype=np.int32)
    pending: list[int] = []  # indices into `distinct` carried down, not yet placed
    carried = 0
    for i in range(distinct.size - 1, -1, -1):
        pending.append(i)
        carried += int(counts[i])
        if carried >= k:
            target[pending] = distinct[i]
            pending.clear()
            carried = 0
    # whatever is left in `pending` stays 0 (suppressed)
    out[:] = target[inverse]
    released = out > 0
    log.info(
        "duration k=%d: %d series, %d released in %d classes, %d moved, %d suppressed",
        k,
        n,
        int(released.sum()),
        int(np.unique(out[released]).size),
        int(np.sum(released & (out < lengths))),
        int(n - released.sum()),
    )
    return out


def assign_duration_classes_grouped(
    lengths: np.ndarray, groups: np.ndarray | None, k: int
) -> np.ndarray:
    """:func:`assign_duration_classes` run separately within each group (e.g. split).

    Parameters
    ----------
    lengths : ndarray of int, shape (n,)
    groups : ndarray, shape (n,), or None
        Group label of each series (``ihm48`` is de-identified per split); None = one group.
    k : int

    Returns
    -------
    ndarray of int32, shape (n,)
        Class lengths; classes are counted within a group.
    """
    k = _check_k(k)
    lengths = _check_lengths(lengths)
    if groups is None:
        return assign_duration_classes(lengths, k)
    groups = np.asarray(groups)
    if groups.shape != lengths.shape:
        raise InputDataError(
            f"groups must have the shape of lengths {lengths.shape}, got {groups.shape}"
        )
    out = np.zeros(lengths.size, dtype=np.int32)
    codes, uniques = pd.factorize(pd.Series(groups), sort=True)
    for g in range(len(uniques)):
        idx = np.flatnonzero(codes == g)
        out[idx] = assign_duration_classes(lengths[idx], k)
    return out


def _check_pair(lengths: np.ndarray, class_lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lengths = _check_lengths(lengths)
    class_lengths = np.asarray(class_lengths).astype(np.int64, copy=False)
    if class_lengths.shape != lengths.shape:
        raise InputDataError(
            f"class_lengths must have the shape of lengths {lengths.shape}, "
            f"got {class_lengths.shape}"
        )
    if np.any(class_lengths < 0) or np.any(class_lengths > lengths):
        raise InputDataError("class_lengths must lie in [0, length] for every series")
    return lengths, class_lengths


def trim_offsets(lengths: np.ndarray, class_lengths: np.ndarray) -> np.ndarray:
    """Number of leading hours each series drops to fit its class.

    Parameters
    ----------
    lengths, class_lengths : ndarray of int, shape (n,)

    Returns
    -------
    ndarray of int64, shape (n,)
        ``length - class_length``; for a suppressed series (class 0) this is its whole length.
        Hours ``offset .. length-1`` are kept and renumbered ``0 .. class_length-1``.
    """
    lengths, class_lengths = _check_pair(lengths, class_lengths)
    return lengths - class_lengths


def trim_array(X: np.ndarray, offsets: np.ndarray, class_length: int) -> np.ndarray:
    """Keep the last ``class_length`` hours of every series of a (padded) array.

    Parameters
    ----------
    X : ndarray, shape (n, L, D)
        Series aligned at hour 0, with ``L >= offsets + class_length``.
    offsets : ndarray of int, shape (n,)
        Leading hours to drop per series (:func:`trim_offsets`).
    class_length : int

    Returns
    -------
    ndarray, shape (n, class_length, D)
        ``out[i, t] = X[i, offsets[i] + t]``.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    n, L, _ = X.shape
    if offsets.shape != (n,):
        raise InputDataError(f"offsets must have shape ({n},), got {offsets.shape}")
    if n and (offsets.min() < 0 or offsets.max() + class_length > L):
        raise InputDataError(
            f"cannot take {class_length} hours after the offsets from arrays of length {L}"
        )
    hours = offsets[:, None] + np.arange(class_length, dtype=np.int64)[None, :]
    return X[np.arange(n)[:, None], hours]


def trim_long(
    series_long: pd.DataFrame,
    keys: np.ndarray,
    lengths: np.ndarray,
    class_lengths: np.ndarray,
    key_col: str = "icustay_id",
) -> pd.DataFrame:
    """Trim a long series table to the duration classes, keeping the last hours.

    Parameters
    ----------
    series_long : DataFrame
        Columns ``key_col``, ``hour`` (0-based) and the dimensions.
    keys, lengths, class_lengths : ndarray, shape (n,)
        Series key, original length and class length (0 = suppressed) of every series.
    key_col : str

    Returns
    -------
    DataFrame
        Same columns; rows of suppressed series, of series not in ``keys`` and of the dropped
        leading hours removed; ``hour`` shifted so the first kept hour is 0 (int32). Sorted by
        (key, hour).
    """
    lengths, class_lengths = _check_pair(lengths, class_lengths)
    keys = np.asarray(keys, dtype=np.int64)
    if keys.shape != lengths.shape:
        raise InputDataError(f"keys must have the shape of lengths {lengths.shape}")
    if np.unique(keys).size != keys.size:
        raise InputDataError(f"series keys ('{key_col}') must be unique")
    for col in (key_col, "hour"):
        if col not in series_long.columns:
            raise InputDataError(f"series table has no column '{col}'")
    offsets = lengths - class_lengths
    if keys.size == 0:
        return series_long.iloc[0:0].copy()
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    row_keys = series_long[key_col].to_numpy(dtype=np.int64)
    pos_c = np.minimum(np.searchsorted(sorted_keys, row_keys), len(sorted_keys) - 1)
    known = sorted_keys[pos_c] == row_keys
    idx = order[pos_c]
    hour = series_long["hour"].to_numpy(dtype=np.int64) - offsets[idx]
    keep = known & (class_lengths[idx] > 0) & (hour >= 0) & (hour < class_lengths[idx])
    out = series_long.loc[keep].copy()
    out["hour"] = hour[keep].astype(np.int32)
    return out.sort_values([key_col, "hour"], kind="stable").reset_index(drop=True)


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
    lost = (lengths - class_lengths).astype(np.float64)  # suppressed: class 0 -> whole length
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
