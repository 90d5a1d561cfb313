"""Duration classes as arrays: trimming series to their class and iterating over classes.

A *class* is the set of series released with the same length within one de-identification
group (``"all"`` for a task-agnostic release; the split name when train, validation and test
are de-identified separately). Series are trimmed by dropping their FIRST hours, so that the
last hours (the most informative for mortality) are kept.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.core.errors import InputDataError
from mimic_deid.core.logs import Progress, get_logger
from mimic_deid.core.threads import map_tasks
from mimic_deid.deid.duration import LABELS
from mimic_deid.deid.missing import fill_missing_hours

__all__ = [
    "KEY",
    "ClassArray",
    "class_arrays",
    "class_frame",
    "dims_of",
    "iter_class_arrays",
    "map_classes",
    "outcomes_by_class",
    "read_release_classes",
    "split_cells",
    "unit_keys",
    "trim_to_classes",
]

KEY = "icustay_id"
log = get_logger(__name__)


@dataclass(frozen=True)
class ClassArray:
    """One duration class.

    Attributes
    ----------
    group : str
        De-identification group (``"all"`` or a split name).
    length : int
        Class length in hours.
    keys : ndarray of int64, shape (n,)
        Series keys in ascending order.
    X : ndarray of float64, shape (n, length, n_dims)
        The series, NaN for null records.
    part : int
        Rank of the series' demographic cell within the class (0: the first or only one,
        :func:`split_cells`).
    """

    group: str
    length: int
    keys: np.ndarray
    X: np.ndarray
    part: int = 0

    @property
    def stream(self) -> tuple:
        """What names the class's random stream (:mod:`mimic_deid.core.seeding`): group and length,
        and the cell's rank when it is not the class's first cell."""
        return (self.group, self.length, *((self.part,) if self.part else ()))


def trim_to_classes(series: pd.DataFrame, classes: pd.DataFrame) -> pd.DataFrame:
    """Keep the last ``class_length`` hours of every released series, re-indexed from 0.

    Parameters
    ----------
    series : DataFrame
        Long table (icustay_id, hour, dims...) with every hour 0..length-1 of each series.
    classes : DataFrame
        icustay_id, group, length, class_length (0 = suppressed).

    Returns
    -------
    DataFrame
        group, class_length, icustay_id, hour, dims... sorted by (group, class_length,
        icustay_id, hour); suppressed series removed.
    """
    released = classes.loc[classes["class_length"] > 0, [KEY, "group", "length", "class_length"]]
    merged = series.merge(released, on=KEY, how="inner", validate="many_to_one")
    offset = merged["length"].to_numpy() - merged["class_length"].to_numpy()
    hour = merged["hour"].to_numpy(dtype=np.int64) - offset
    merged = merged.loc[hour >= 0].copy()
    merged["hour"] = hour[hour >= 0].astype(np.int32)
    merged = merged.drop(columns=["length"])
    front = ["group", "class_length", KEY, "hour"]
    merged = merged[front + [c for c in merged.columns if c not in front]]
    return merged.sort_values(front, kind="stable").reset_index(drop=True)


def iter_class_arrays(trimmed: pd.DataFrame, dims: list[str]) -> Iterator[ClassArray]:
    """Yield one :class:`ClassArray` per (group, class_length) of a trimmed long table.

    Classes come in (group, length) order. Every series must have all ``class_length`` hours.
    """
    if trimmed.empty:
        return
    group = trimmed["group"].to_numpy()
    length = trimmed["class_length"].to_numpy(dtype=np.int64)
    change = np.flatnonzero((group[1:] != group[:-1]) | (length[1:] != length[:-1])) + 1
    bounds = np.concatenate([[0], change, [len(trimmed)]])
    values = trimmed[dims].to_numpy(dtype=np.float64)
    keys_col = trimmed[KEY].to_numpy(dtype=np.int64)
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        L = int(length[start])
        n_rows = stop - start
        if n_rows % L:
            raise InputDataError(
                f"series table: class of length {L} has {n_rows} rows, not a multiple of its "
                "length; every series must have one row per hour"
            )
        n = n_rows // L
        yield ClassArray(
            group=str(group[start]),
            length=L,
            keys=keys_col[start:stop:L].copy(),
            X=values[start:stop].reshape(n, L, len(dims)),
        )


def class_frame(cls: ClassArray, X: np.ndarray, dims: list[str]) -> pd.DataFrame:
    """Long table of a class array ``X`` (n, length, D) in the layout of ``trim_to_classes``."""
    n, L, D = X.shape
    frame = pd.DataFrame(X.reshape(n * L, D), columns=dims)
    frame.insert(0, "hour", np.tile(np.arange(L, dtype=np.int32), n))
    frame.insert(0, KEY, np.repeat(cls.keys, L))
    frame.insert(0, "class_length", np.int64(L))
    frame.insert(0, "group", cls.group)
    return frame


def unit_keys(frame: pd.DataFrame) -> list[str]:
    """The columns of ``frame`` naming the unit a release method ran on: ``group``,
    ``class_length`` and, where present, the demographic ``cell`` (a method's own group ids,
    e.g. the (k,P) k-groups, are unique only within it)."""
    return ["group", "class_length", *(["cell"] if "cell" in frame.columns else [])]


def outcomes_by_class(
    outcomes: pd.DataFrame | None, classes: Sequence[ClassArray]
) -> list[np.ndarray | None]:
    """The outcome labels of every class's series, in its key order, shape (n, t) each
    (``outcomes``: ``icustay_id`` and the labels; None: None per class)."""
    if outcomes is None:
        return [None] * len(classes)
    by_key = outcomes.set_index(KEY)
    return [by_key.loc[cls.keys].to_numpy() for cls in classes]


def split_cells(classes: Sequence[ClassArray], cells: pd.Series) -> list[ClassArray]:
    """Every class split into its demographic cells: the units a release method runs on.

    Parameters
    ----------
    classes : sequence of ClassArray
    cells : Series of int64
        The cell of every series, indexed by ``icustay_id`` (``targets.parquet``'s ``cell``,
        :mod:`mimic_deid.deid.demographics`).

    Returns
    -------
    list of ClassArray
        Per class, one array per cell in ascending cell order (``part`` = rank in the class);
        a class of one cell is returned as it is.
    """
    out: list[ClassArray] = []
    for cls in classes:
        of = cells.reindex(cls.keys).to_numpy()
        if pd.isna(of).any():
            raise InputDataError(
                f"targets table: {int(pd.isna(of).sum())} series of the class of length "
                f"{cls.length} h (group {cls.group}) have no demographic cell"
            )
        values, inverse = np.unique(of.astype(np.int64), return_inverse=True)
        if values.size == 1:
            out.append(cls)
            continue
        for part in range(values.size):
            rows = inverse == part
            out.append(ClassArray(cls.group, cls.length, cls.keys[rows], cls.X[rows], part))
    return out


def dims_of(series: pd.DataFrame) -> list[str]:
    """The dimension columns of a series long table, in table order."""
    return [c for c in series.columns if c not in (KEY, "hour", "pseudonym")]


def class_arrays(
    series: pd.DataFrame, classes: pd.DataFrame, fill_missing: bool = False
) -> tuple[list[ClassArray], list[str]]:
    """The duration classes of a release as arrays, and the dimension names.

    Parameters
    ----------
    series : DataFrame
        Long table (icustay_id, hour, dims...), e.g. ``series.parquet``.
    classes : DataFrame
        icustay_id, group, length, class_length (``duration.parquet``).
    fill_missing : bool
        Withhold the missing-hours pattern (:func:`~mimic_deid.deid.missing.fill_missing_hours`)
        of every class: the input of de-identification, so that the release methods meet the
        targets on exactly what is published.

    Returns
    -------
    list of ClassArray
        One per (group, class_length), in that order; views of one array.
    list of str
        The dimension columns of ``series``.
    """
    dims = dims_of(series)
    arrays = list(iter_class_arrays(trim_to_classes(series, classes), dims))
    if fill_missing:
        arrays = [ClassArray(c.group, c.length, c.keys, fill_missing_hours(c.X)) for c in arrays]
    return arrays, dims


def read_release_classes(
    series: str, classes: str, meta: str, ell: int | None
) -> tuple[list[ClassArray], list[str], pd.DataFrame | None]:
    """What the steps that de-identify a release read: its classes and, if published, labels.

    Parameters
    ----------
    series, classes, meta : str
        Paths of ``series.parquet``, the release's ``duration.parquet`` and ``meta.parquet``.
    ell : int or None
        ``deid.outcome_l`` of a release that publishes the outcome labels; None: it publishes
        none, and no label is read.

    Returns
    -------
    list of ClassArray, list of str
        :func:`class_arrays` with the missing-hours pattern withheld (``fill_missing``).
    DataFrame or None
        icustay_id and the :data:`~mimic_deid.deid.duration.LABELS` columns; None without ``ell``.
    """
    arrays, dims = class_arrays(
        pd.read_parquet(series), pd.read_parquet(classes), fill_missing=True
    )
    outcomes = pd.read_parquet(meta, columns=[KEY, *LABELS]) if ell else None
    return arrays, dims, outcomes


def map_classes(
    fn: Callable[..., Any],
    classes: Sequence[ClassArray],
    *per_class: Sequence[Any],
    label: str,
    threads: int = 1,
) -> list[Any]:
    """``[fn(cls, *args_of_cls) for cls in classes]``, with progress, in one or more processes.

    The one loop over the duration classes of a release (Mondrian, release methods, tuning,
    privacy evaluation). Each class must be independent of the others and draw randomness
    only from a generator derived from its own description (:mod:`mimic_deid.core.seeding`), so
    the results do not depend on ``threads``.

    Parameters
    ----------
    fn : callable
        ``fn(cls, *args)``; a module-level function (or ``functools.partial`` of one) when
        ``threads > 1``, as it runs in worker processes.
    classes : sequence of ClassArray
    *per_class : sequences, each of len(classes)
        Further arguments, one element per class.
    label : str
        Names the work in the progress lines.
    threads : int
        Worker processes; with more than one, the largest classes start first.

    Returns
    -------
    list
        ``fn``'s results in ``classes`` order.
    """
    for extra in per_class:
        if len(extra) != len(classes):
            raise InputDataError(
                f"{label}: {len(extra)} per-class arguments for {len(classes)} classes"
            )
    tasks = [
        functools.partial(fn, cls, *(extra[i] for extra in per_class))
        for i, cls in enumerate(classes)
    ]
    sizes = [int(cls.X.shape[0]) for cls in classes]
    progress = Progress(label, sum(sizes), log, unit="series")
    results = map_tasks(
        tasks,
        threads=threads,
        costs=[cls.X.shape[0] * cls.X.shape[1] for cls in classes],
        on_done=lambda i: progress.update(sizes[i]),
    )
    progress.close()
    return results
