"""Dividing long sequences into sections at a transition-time gap (seed 004 §3.3, Fig. 1)."""

from __future__ import annotations

import numpy as np

from mimic_deid.core.errors import ConfigError
from mimic_deid.sequences.events import EventLog

__all__ = ["histogram_gap", "split_sections", "transition_times"]


def transition_times(log: EventLog) -> np.ndarray:
    """Hours between successive records of each object, shape (n - n_objects,)."""
    same = log.obj[1:] == log.obj[:-1]
    return np.diff(log.time)[same]


def histogram_gap(
    dt: np.ndarray, bins: int = 50, sample: int = 25_000, drop: float = 0.01
) -> float:
    """The splitting point read off the transition-time histogram (seed 004 §3.3).

    The histogram of the first ``sample`` transition times (``bins`` equal-width bins from 0 to
    their maximum) has its mass near zero; the gap is the left edge of the first bin after the
    mode whose count falls to ``drop`` x the mode's count or below, where the regularity ends.

    Parameters
    ----------
    dt : ndarray of float, shape (m,)
        Transition times in hours, in record order.
    bins : int
    sample : int
    drop : float in (0, 1)

    Returns
    -------
    float
        The gap in hours; ``inf`` (no split) when no bin falls that low or ``dt`` is empty.
    """
    if bins < 2 or sample < 1 or not 0 < drop < 1:
        raise ConfigError(
            "sequences.split: histogram_bins must be >= 2, histogram_sample >= 1 and "
            f"drop_fraction in (0, 1), got {bins}, {sample}, {drop}"
        )
    dt = np.asarray(dt, dtype=np.float64)[:sample]
    if len(dt) == 0 or dt.max() <= 0:
        return float("inf")
    counts, edges = np.histogram(dt, bins=bins, range=(0.0, float(dt.max())))
    mode = int(np.argmax(counts))
    low = np.flatnonzero(counts[mode + 1 :] <= drop * counts[mode])
    return float(edges[mode + 1 + low[0]]) if len(low) else float("inf")


def split_sections(log: EventLog, gap_hours: float) -> np.ndarray:
    """Section id of every record: a new section starts where the transition time >= gap.

    Parameters
    ----------
    log : EventLog
    gap_hours : float
        Splitting gap in hours (> 0); ``inf`` keeps each object whole.

    Returns
    -------
    ndarray of int64, shape (n,)
        Section ids 0 .. n_sections - 1, increasing along the log (sections of one object are
        consecutive).
    """
    if not gap_hours > 0:
        raise ConfigError(f"sequences.split: gap_hours must be > 0, got {gap_hours!r}")
    new = np.r_[True, (log.obj[1:] != log.obj[:-1]) | (np.diff(log.time) >= gap_hours)]
    return (np.cumsum(new) - 1).astype(np.int64)
