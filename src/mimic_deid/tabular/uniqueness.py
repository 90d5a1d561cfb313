"""Uniqueness of MIMIC-III demographics and procedure sequences (seed 003 §3.1, §3.2).

Every statistic is an aggregate: rows, equivalence classes, mean class size and the number
(and percentage) of records alone in their class, i.e. re-identifiable from the columns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError
from mimic_deid.core.logs import Progress, get_logger
from mimic_deid.tabular.anonymity import class_sizes
from mimic_deid.tabular.demographics import DEMOGRAPHIC_QIS, admission_sequences

__all__ = ["PROCEDURE_VIEWS", "demographic_uniqueness", "procedure_uniqueness", "uniqueness"]

log = get_logger(__name__)

#: The procedure views of seed §3.2: (name, SEQ_NUMs, ordered).
PROCEDURE_VIEWS: tuple[tuple[str, tuple[int, ...], bool], ...] = (
    ("first_two", (1, 2), True),
    ("first_three", (1, 2, 3), True),
    ("first_three_unordered", (1, 2, 3), False),
    ("first_and_fifth", (1, 5), True),
)


def _codes(values: np.ndarray) -> tuple[np.ndarray, list[int]]:
    cols, cards = [], []
    for j in range(values.shape[1]):
        _, inv = np.unique(values[:, j].astype(str), return_inverse=True)
        cols.append(inv.astype(np.int64))
        cards.append(int(inv.max()) + 1 if inv.size else 1)
    arr = np.column_stack(cols) if cols else np.zeros((values.shape[0], 0), dtype=np.int64)
    return arr, cards


def uniqueness(values: np.ndarray) -> dict[str, float]:
    """Class statistics of the rows of ``values`` (shape ``(n_rows, n_columns)``, any dtype).

    Returns
    -------
    dict
        ``rows``, ``classes``, ``mean_class_size`` (rows / classes), ``unique`` (rows in
        classes of size 1) and ``unique_percent``.
    """
    n = int(values.shape[0])
    if n == 0:
        return {"rows": 0, "classes": 0, "mean_class_size": 0.0, "unique": 0, "unique_percent": 0.0}
    codes, cards = _codes(values)
    _, sizes = class_sizes(codes, cards)
    unique = int(np.count_nonzero(sizes == 1))
    return {
        "rows": n,
        "classes": int(sizes.size),
        "mean_class_size": n / sizes.size,
        "unique": unique,
        "unique_percent": 100.0 * unique / n,
    }


def _spread(values: Sequence[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=np.float64)
    return {
        "mean": float(arr.mean()),
        "sd": float(arr.std(ddof=1)) if arr.size > 1 else 0.0,
        "min": float(arr.min()),
        "max": float(arr.max()),
    }


def demographic_uniqueness(
    table: pd.DataFrame,
    draws: int,
    rng_for: Callable[[int], np.random.Generator],
    yob_mean: float = 1980.0,
    yob_sd: float = 33.0,
) -> dict:
    """Seed §3.1 over ``draws`` resamplings of the year of birth.

    Parameters
    ----------
    table : DataFrame
        The demographics table without procedures (:func:`demographics` with 0 procedures).
    draws : int
        Number of year-of-birth samples R (seed: 1,000).
    rng_for : callable
        ``rng_for(r)`` is the generator of draw ``r`` (one seeded stream per draw).
    yob_mean, yob_sd : float
        Normal law of the year of birth.

    Returns
    -------
    dict
        ``rows``; ``normal`` and ``uniform`` (age uniform in 0..99 years): per statistic
        (``mean_class_size``, ``unique``, ``unique_percent``) its mean, sd, min and max over the
        draws; ``without_yob``: the statistics with the year of birth dropped.
    """
    if isinstance(draws, bool) or not isinstance(draws, int | np.integer) or draws < 1:
        raise ConfigError(f"parameter 'draws' must be an integer >= 1, got {draws!r}")
    others = table[[c for c in DEMOGRAPHIC_QIS if c != "yob"]].to_numpy(dtype=str)
    n = len(table)
    stats: dict[str, dict[str, list[float]]] = {"normal": {}, "uniform": {}}
    progress = Progress("uniqueness draws", int(draws), log, unit="draws")
    for r in range(int(draws)):
        rng = rng_for(r)
        years = {
            "normal": np.rint(rng.normal(yob_mean, yob_sd, n)),
            "uniform": rng.integers(0, 100, n).astype(np.float64),
        }
        for law, yob in years.items():
            s = uniqueness(np.column_stack([yob.astype(np.int64).astype(str), others]))
            for key in ("mean_class_size", "unique", "unique_percent"):
                stats[law].setdefault(key, []).append(s[key])
        progress.update(1)
    progress.close()
    return {
        "rows": n,
        "draws": int(draws),
        **{law: {k: _spread(v) for k, v in per.items()} for law, per in stats.items()},
        "without_yob": uniqueness(others),
    }


def procedure_uniqueness(procedures: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Seed §3.2: uniqueness of admissions by their first procedures (:data:`PROCEDURE_VIEWS`)."""
    return {
        name: uniqueness(admission_sequences(procedures, positions, ordered))
        for name, positions, ordered in PROCEDURE_VIEWS
    }
