"""Seed §6.1 for every duration method: the table the duration rule writes beside its classes
(the report draws it as read), and the hours each series loses to its class."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mimic_deid.core.errors import require_columns
from mimic_deid.deid.classes import KEY
from mimic_deid.deid.duration import DURATION_METHODS, assign_duration_classes
from mimic_deid.deid.duration_stats import duration_summary, duration_uniqueness, records_lost

__all__ = ["DURATION_COLUMNS", "duration_methods_table", "records_lost_table"]

#: Columns of :func:`duration_methods_table` (seed §6.1), in order.
DURATION_COLUMNS: tuple[str, ...] = (
    "method",
    "chosen",
    "dk",
    "series",
    "moved",
    "suppressed",
    "records_lost_mean",
    "records_lost_sd",
    "records_lost_pct_mean",
    "records_lost_pct_sd",
    "classes",
    "smallest_class",
    "unique_before",
    "at_most_5_before",
)


def duration_methods_table(
    lengths: np.ndarray, class_lengths: np.ndarray, dk: int, method: str
) -> pd.DataFrame:
    """Seed §6.1 for every duration method on one release.

    Parameters
    ----------
    lengths, class_lengths : ndarray of int, shape (n,)
        Original lengths (hours) and the run's class lengths (0 = suppressed).
    dk : int
        The run's duration k.
    method : str
        The run's ``duration/method``; its row uses ``class_lengths`` as released, every
        other method's row is computed from ``lengths`` as one group without an outcome rule
        (exact for ``stays``, the release the report draws).

    Returns
    -------
    DataFrame
        One row per method of :data:`~mimic_deid.deid.duration.DURATION_METHODS`, columns
        :data:`DURATION_COLUMNS`: series moved and suppressed (counts), hours lost per series
        (mean and population sd, hours; and percent of the series' hours), released class
        count and smallest class size, and the series alone in their hour class
        (``unique_before``) or in one of at most 5 series (``at_most_5_before``) before
        de-identification (the same for every method).
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    before = duration_uniqueness(lengths, at_most=5) if lengths.size else None
    rows = []
    for name in DURATION_METHODS:
        if name == method:
            cls = np.asarray(class_lengths)
        elif lengths.size and dk <= lengths.size:
            cls = assign_duration_classes(lengths, dk, name)
        else:
            cls = np.zeros(lengths.size, dtype=np.int32)
        s = duration_summary(lengths, cls)
        rows.append(
            {
                "method": name,
                "chosen": "yes" if name == method else "no",
                "dk": int(dk),
                "series": s["series_in"],
                "moved": s["moved"],
                "suppressed": s["suppressed"],
                **{k: s[k] for k in DURATION_COLUMNS[6:10]},
                "classes": s["classes"],
                "smallest_class": s["smallest_class"],
                "unique_before": before["unique_series"] if before else 0,
                "at_most_5_before": before["small_series"] if before else 0,
            }
        )
    return pd.DataFrame(rows, columns=list(DURATION_COLUMNS))


def records_lost_table(classes: pd.DataFrame) -> pd.DataFrame:
    """The hours each series of a release loses to its duration class.

    Parameters
    ----------
    classes : DataFrame
        :func:`~mimic_deid.deid.duration.duration_classes`' table (``icustay_id``,
        ``length``, ``class_length``; 0 = suppressed).

    Returns
    -------
    DataFrame
        ``icustay_id`` and ``records_lost`` (int64 hours: ``length - class_length``, all of
        a suppressed series' hours), in the rows' order.
    """
    require_columns(classes, [KEY, "length", "class_length"], "duration classes table")
    lost = records_lost(classes["length"].to_numpy(), classes["class_length"].to_numpy())
    return pd.DataFrame({KEY: classes[KEY].to_numpy(), "records_lost": lost})
