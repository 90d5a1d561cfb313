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
is the project's greedy rule, which replaces the literal "top up to exactly k, then send leftovers back"
of the seed's Algorithm 3: here nothing is moved that could stay.

The seed's literal Algorithm 3 (seed §5.4) is available as ``method="algorithm3"``
(:func:`algorithm3_classes`): a first-in first-out queue of the series not yet placed, longest
first; at each length with at least ``k`` series queued, exactly ``k`` are taken from the front
of the queue into the class of that length; the series still queued at the end go back to
their own length, and lengths left with fewer than ``k`` series are suppressed. It moves more
series (and loses more records) than the greedy rule but suppresses only the series shorter
than its last filled class, i.e. nothing when the shortest lengths can fill a class (seed §6.1).
:data:`DURATION_METHODS` lists both; the greedy rule is the default.

Shortening keeps the LAST hours of a series (the end of a stay matters most for mortality):
a series of length ``l`` in class ``c`` drops its first ``l - c`` hours and the remaining hours
are renumbered from 0.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from mimic_deid.core.errors import (
    InputDataError,
    require_choice,
    require_columns,
    require_int,
)
from mimic_deid.core.logs import get_logger
from mimic_deid.deid.duration_stats import (
    check_lengths,
    duration_summary,
    duration_uniqueness,
    records_lost,
)

__all__ = [
    "DURATION_METHODS",
    "GROUP_BY_SPLIT",
    "LABELLED",
    "LABELS",
    "algorithm3_classes",
    "assign_duration_classes",
    "assign_duration_classes_grouped",
    "deid_groups",
    "duration_classes",
    "duration_summary",
    "duration_uniqueness",
    "outcome_diverse",
    "records_lost",
    "unpublished_groups",
]

log = get_logger(__name__)

#: Duration-class assignment rules (config ``duration/method``): the project's greedy rule
#: (default) and the seed's literal Algorithm 3 (seed §5.4).
DURATION_METHODS: tuple[str, ...] = ("greedy", "algorithm3")


def _check_method(method: str) -> str:
    return require_choice(method, DURATION_METHODS, "duration method (duration/method)")


def _check_k(k: int, name: str = "k") -> int:
    return require_int(k, f"duration {name} (dk)" if name == "k" else f"duration {name}")


def assign_duration_classes(lengths: np.ndarray, k: int, method: str = "greedy") -> np.ndarray:
    """Class length of every series; 0 = suppressed.

    Parameters
    ----------
    lengths : ndarray of int, shape (n,)
        Number of hours of each series, all >= 1.
    k : int
        Minimum number of series per released class (>= 1).
    method : {"greedy", "algorithm3"}
        The project's greedy rule (module docstring) or the seed's literal Algorithm 3
        (:func:`algorithm3_classes`).

    Returns
    -------
    ndarray of int32, shape (n,)
        Class length (``<= lengths``) of each series, 0 where the series is suppressed.
        Every non-zero class length is shared by at least ``k`` series.

    Raises
    ------
    ConfigError
        ``k`` is not an integer >= 1, or ``method`` is not one of :data:`DURATION_METHODS`.
    InputDataError
        ``lengths`` is not 1-D, not whole numbers, or has a value < 1.

    Notes
    -----
    If ``k`` exceeds the number of series, every series is suppressed and a ``UserWarning`` is
    emitted (not an exception: the caller records the suppression). The loop runs over the
    distinct lengths only.
    """
    k = _check_k(k)
    method = _check_method(method)
    lengths = check_lengths(lengths)
    n = lengths.size
    out = np.zeros(n, dtype=np.int32)
    if n == 0:
        return out
    if k > n:
        msg = f"duration k={k} exceeds the number of series ({n}): all series are suppressed"
        warnings.warn(msg, UserWarning, stacklevel=2)
        log.warning(msg)
        return out

    if method == "algorithm3":
        out[:] = algorithm3_classes(lengths, k)
    else:
        out[:] = _greedy_classes(lengths, k)
    released = out > 0
    log.info(
        "duration k=%d (%s): %d series, %d released in %d classes, %d moved, %d suppressed",
        k,
        method,
        n,
        int(released.sum()),
        int(np.unique(out[released]).size),
        int(np.sum(released & (out < lengths))),
        int(n - released.sum()),
    )
    return out


def _greedy_classes(lengths: np.ndarray, k: int) -> np.ndarray:
    """The greedy rule of the module docstring on checked ``lengths`` (n >= k >= 1)."""
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
    return target[inverse]


def algorithm3_classes(lengths: np.ndarray, k: int) -> np.ndarray:
    """Seed Algorithm 3 (§5.4): duration classes from a first-in first-out queue.

    Parameters
    ----------
    lengths : ndarray of int, shape (n,)
        Number of hours of each series, all >= 1 (checked by the caller).
    k : int
        Minimum number of series per released class, ``1 <= k <= n``.

    Returns
    -------
    ndarray of int32, shape (n,)
        Class length of each series (``<= lengths``), 0 where suppressed.

    Notes
    -----
    The queue always holds the unplaced series in decreasing length (ties in input order),
    because series enter it at their own length while lengths are visited from the longest
    down. Taking ``k`` from its front therefore takes the next ``k`` series of the whole
    release sorted that way, so the queue is one position ``placed`` in that order: at each
    distinct length ``l`` (longest first) with ``#{length >= l} - placed >= k``, positions
    ``[placed, placed + k)`` form the class of length ``l``. The loop runs over the distinct
    lengths only; the placement is one ``np.repeat``. Series never placed return to their own
    length, and every length then held by fewer than ``k`` series is suppressed (the seed's
    ``drop_rare_lengths``).
    """
    n = lengths.size
    order = np.argsort(-lengths, kind="stable")  # queue order: longest first, FIFO within ties
    distinct, counts = np.unique(lengths, return_counts=True)
    distinct, counts = distinct[::-1], counts[::-1]  # longest first
    at_least = np.cumsum(counts)  # series of length >= distinct[i]
    filled: list[int] = []
    placed = 0
    for i in range(distinct.size):
        if at_least[i] - placed >= k:
            filled.append(int(distinct[i]))
            placed += k
    in_order = np.zeros(n, dtype=np.int64)
    in_order[:placed] = np.repeat(np.asarray(filled, dtype=np.int64), k)
    in_order[placed:] = lengths[order[placed:]]  # leftovers back to their own length
    out = np.empty(n, dtype=np.int64)
    out[order] = in_order
    _, inverse, sizes = np.unique(out, return_inverse=True, return_counts=True)
    out[(sizes < k)[inverse]] = 0  # drop_rare_lengths
    return out.astype(np.int32)


def assign_duration_classes_grouped(
    lengths: np.ndarray, groups: np.ndarray | None, k: int, method: str = "greedy"
) -> np.ndarray:
    """:func:`assign_duration_classes` run separately within each group (e.g. split).

    Parameters
    ----------
    lengths : ndarray of int, shape (n,)
    groups : ndarray, shape (n,), or None
        Group label of each series (``ihm48`` is de-identified per split); None = one group.
    k : int
    method : {"greedy", "algorithm3"}
        As in :func:`assign_duration_classes`.

    Returns
    -------
    ndarray of int32, shape (n,)
        Class lengths; classes are counted within a group.
    """
    k = _check_k(k)
    method = _check_method(method)
    lengths = check_lengths(lengths)
    if groups is None:
        return assign_duration_classes(lengths, k, method)
    groups = np.asarray(groups)
    if groups.shape != lengths.shape:
        raise InputDataError(
            f"groups must have the shape of lengths {lengths.shape}, got {groups.shape}"
        )
    out = np.zeros(lengths.size, dtype=np.int32)
    codes, uniques = pd.factorize(pd.Series(groups), sort=True)
    for g in range(len(uniques)):
        idx = np.flatnonzero(codes == g)
        out[idx] = assign_duration_classes(lengths[idx], k, method)
    return out


#: Releases that publish the outcome labels (:data:`LABELS`): only the one that needs them.
LABELLED: dict[str, bool] = {"stays": False, "ihm48": True}

#: The labels a labelled release publishes: meta column (``meta.parquet``) -> column of the
#: public index. In-hospital mortality keeps its historical name ``label``; the long stay
#: (``los_hours > 168``, :func:`mimic_deid.pipeline.cohort.long_stay`) is published on ``ihm48`` and
#: not on ``stays``, where a series' duration class states its length, so the label would be
#: read off the public class. Every published class holds >= ``deid.outcome_l`` distinct
#: values of each (:func:`outcome_diverse`, claim 10 of :mod:`mimic_deid.deid.check`).
LABELS: dict[str, str] = {"mortality": "label", "long_stay": "long_stay"}

#: Releases de-identified separately per split. The utility release ``ihm48`` is: the parties
#: that train and test differ (seed §6.4's trust settings), so no training series may share a
#: duration or equivalence class with a test series. ``stays`` is de-identified as one group.
GROUP_BY_SPLIT: dict[str, bool] = {"stays": False, "ihm48": True}


def deid_groups(split: np.ndarray, group_by_split: bool) -> np.ndarray:
    """The de-identification group of each series: its split, or ``"all"``.

    Parameters
    ----------
    split : ndarray of str, shape (n,)
        Each series' split (train / validation / test).
    group_by_split : bool
        :data:`GROUP_BY_SPLIT` of the release.

    Returns
    -------
    ndarray of str, shape (n,)
    """
    split = np.asarray(split).astype(str)
    return split if group_by_split else np.full(split.shape, "all")


def outcome_diverse(
    class_lengths: np.ndarray, groups: np.ndarray, labels: np.ndarray, ell: int
) -> np.ndarray:
    """Class lengths with every published class holding at least ``ell`` distinct outcomes
    of every label.

    A duration class (within its group) whose series share fewer than ``ell`` distinct values
    of a label would disclose it (e.g. a class of patients who all died, or who all stayed
    longer than a week); it is suppressed (class length 0).

    Parameters
    ----------
    class_lengths : ndarray of int, shape (n,)
        From :func:`assign_duration_classes_grouped` (0 = suppressed).
    groups : ndarray, shape (n,)
        De-identification group of each series.
    labels : ndarray, shape (n,) or (n, n_labels)
        Outcome label(s) of each series, one column per published label.
    ell : int
        Distinct outcomes required per class and label (1 = no requirement).

    Returns
    -------
    ndarray of int32, shape (n,)
    """
    ell = require_int(ell, "outcome diversity l (deid/outcome_l)")
    out = np.asarray(class_lengths).astype(np.int32, copy=True)
    if ell <= 1 or out.size == 0:
        return out
    y = np.asarray(labels)
    y = y.reshape(len(out), -1)
    names = [f"y{j}" for j in range(y.shape[1])]
    frame = pd.DataFrame({"g": np.asarray(groups), "c": out, **dict(zip(names, y.T, strict=True))})
    distinct = frame[frame["c"] > 0].groupby(["g", "c"])[names].nunique().min(axis=1)
    poor = distinct[distinct < ell].index
    if len(poor):
        key = pd.MultiIndex.from_arrays([frame["g"], frame["c"]])
        out[key.isin(poor) & (out > 0)] = 0
    return out


def unpublished_groups(
    classes: pd.DataFrame,
    dk: int,
    labels: pd.DataFrame | None = None,
    outcome_l: int | None = None,
) -> list[dict]:
    """The de-identification groups of a release of which no series is published, and why.

    A group (a split of ``ihm48``, the whole of ``stays``) is left out whole when it holds
    fewer than ``dk`` series (no duration class can form) or when none of its classes holds
    ``outcome_l`` distinct outcomes of every label (:func:`outcome_diverse`).

    Parameters
    ----------
    classes : DataFrame
        ``duration.parquet`` (:func:`duration_classes`): icustay_id, group, class_length.
    dk : int
        Duration k of the release.
    labels : DataFrame, optional
        icustay_id and the label columns of :data:`LABELS` (the release's ``meta.parquet``),
        for a release that publishes labels.
    outcome_l : int, optional
        Config ``deid.outcome_l`` for a labelled release, else None.

    Returns
    -------
    list of dict, one per group with series of which none is published, in group order:
    ``group``, ``series`` (series in the group), ``parameter`` (``deid.dk`` or
    ``deid.outcome_l``), ``value`` (its configured value), ``largest`` (the largest value
    of that parameter that would let the group form one class: its series count for dk, its
    fewest distinct outcomes of a label for outcome_l), and ``reason`` (one sentence).
    """
    require_columns(classes, ["icustay_id", "group", "class_length"], "duration classes")
    out = []
    for group, rows in classes.groupby("group", sort=True):
        n = len(rows)
        if n == 0 or (rows["class_length"] > 0).any():
            continue
        what = "the whole release" if group == "all" else f"split '{group}'"
        if n < dk:
            out.append(
                _refusal(
                    group,
                    n,
                    "deid.dk",
                    dk,
                    n,
                    f"{what}: {n} series, fewer than deid.dk = {dk} "
                    f"(a duration class needs dk series of one group); "
                    f"the largest dk that fits: {n}",
                )
            )
            continue
        distinct = None
        if labels is not None and outcome_l is not None and outcome_l > 1:
            cols = [c for c in LABELS if c in labels.columns]
            merged = rows[["icustay_id"]].merge(labels[["icustay_id", *cols]], on="icustay_id")
            distinct = int(merged[cols].nunique().min()) if cols else None
        if distinct is not None:
            out.append(
                _refusal(
                    group,
                    n,
                    "deid.outcome_l",
                    outcome_l,
                    distinct,
                    f"{what}: {n} series, no duration class with deid.outcome_l "
                    f"= {outcome_l} distinct outcomes of every label (the group holds "
                    f"{distinct}); the largest outcome_l that fits: {distinct}, in one class "
                    f"(a larger dk, up to {n}, makes fewer, larger classes)",
                )
            )
        else:
            out.append(
                _refusal(
                    group,
                    n,
                    "deid.dk",
                    dk,
                    n,
                    f"{what}: {n} series, none in a published duration class at deid.dk = {dk}",
                )
            )
    return out


def _refusal(group, n: int, parameter: str, value, largest: int, reason: str) -> dict:
    """One row of :func:`unpublished_groups`."""
    return {
        "group": str(group),
        "series": n,
        "parameter": parameter,
        "value": int(value),
        "largest": largest,
        "reason": reason,
    }


def duration_classes(
    meta: pd.DataFrame,
    dk: int,
    group_by_split: bool,
    outcome_l: int | None = None,
    method: str = "greedy",
) -> tuple[pd.DataFrame, dict]:
    """Assign every series of a release to a duration class of at least ``dk`` series.

    Parameters
    ----------
    meta : DataFrame
        One row per series: icustay_id, length (hours), split (``meta.parquet``).
    dk : int
        Duration k.
    group_by_split : bool
        Classes within each split (:data:`GROUP_BY_SPLIT`) or over the whole release.
    outcome_l : int, optional
        For a release that publishes labels (:data:`LABELLED`): every class must hold at least
        this many distinct values of each label of :data:`LABELS` (meta columns ``mortality``,
        ``long_stay``), or it is suppressed (:func:`outcome_diverse`); None for a release
        without labels.
    method : {"greedy", "algorithm3"}
        Assignment rule (config ``duration/method``, :data:`DURATION_METHODS`).

    Returns
    -------
    classes : DataFrame
        icustay_id, group, split, length (int32), class_length (int32, 0 = suppressed),
        sorted by icustay_id (``duration.parquet``).
    summary : dict
        ``dk``, ``group_by_split``, :func:`duration_summary` of the release, ``groups``:
        the summary of each group, and with ``outcome_l`` the classes and series suppressed
        for outcome diversity (``duration.json``).
    """
    require_columns(meta, ["icustay_id", "length", "split"], "series meta table")
    meta = meta.sort_values("icustay_id", kind="stable")
    lengths = meta["length"].to_numpy(dtype=np.int64)
    groups = deid_groups(meta["split"].to_numpy(), group_by_split)
    class_lengths = assign_duration_classes_grouped(lengths, groups, dk, method)
    outcome: dict = {}
    if outcome_l is not None:
        require_columns(meta, list(LABELS), "series meta table")
        labels = meta[list(LABELS)].to_numpy()
        diverse = outcome_diverse(class_lengths, groups, labels, outcome_l)
        dropped = (diverse == 0) & (class_lengths > 0)
        outcome = {
            "outcome_l": int(outcome_l),
            "outcome_suppressed_series": int(dropped.sum()),
            "outcome_suppressed_classes": int(
                pd.DataFrame({"g": groups[dropped], "c": class_lengths[dropped]})
                .drop_duplicates()
                .shape[0]
            ),
        }
        class_lengths = diverse
    classes = pd.DataFrame(
        {
            "icustay_id": meta["icustay_id"].to_numpy(dtype=np.int64),
            "group": groups.astype(str),
            "split": meta["split"].astype(str).to_numpy(),
            "length": lengths.astype(np.int32),
            "class_length": class_lengths.astype(np.int32),
        }
    )
    summary = {
        "dk": dk,
        "group_by_split": group_by_split,
        **duration_summary(lengths, class_lengths),
        **outcome,
    }
    summary["groups"] = {
        str(g): duration_summary(lengths[groups == g], class_lengths[groups == g])
        for g in sorted(set(groups.tolist()))
    }
    log.info(
        "dk=%d: %d series, %d moved, %d suppressed, %d classes",
        dk,
        summary["series_in"],
        summary["moved"],
        summary["suppressed"],
        summary["classes"],
    )
    return classes, summary
