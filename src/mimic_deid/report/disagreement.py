"""The disagreement figures of the report (seed Figs 3.1, 5.4, 6.4-6.6), from a run.

As in :mod:`mimic_deid.report.figures`, every ``plot_*`` function takes loaded objects,
writes one PNG atomically and returns a :data:`~mimic_deid.report.plotting.FigureInfo`. In the
summary plot each statistic has its own colour, with dashed lines for the original data and
solid lines for the release.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.core.errors import InputDataError
from mimic_deid.evaluate.privacy import check_series_distance
from mimic_deid.report import shaping
from mimic_deid.report.plotting import (
    ORIGINAL_COLOR,
    RELEASE_COLOR,
    FigureInfo,
    legend,
    new_figure,
    no_data,
    save,
    two_decimals,
)

STAT_COLORS = {
    "min": "tab:blue",
    "mean": "tab:orange",
    "max": "tab:red",
    "q10": "tab:purple",
    "q25": "tab:brown",
    "q50": "tab:olive",
    "q75": "tab:pink",
    "q90": "tab:cyan",
}
STAT_LABELS = {
    "min": "minimum",
    "mean": "mean",
    "max": "maximum",
    "q10": "10th percentile",
    "q25": "25th percentile",
    "q50": "median",
    "q75": "75th percentile",
    "q90": "90th percentile",
}
#: Axis unit of disagreement per config ``evaluate/series_distance`` (the series distance d_S;
#: one entry per :data:`~mimic_deid.evaluate.privacy.SERIES_DISTANCES`).
DISTANCE_UNITS = {
    "euclidean": "Euclidean series distance, series units",
    "per_record": "Euclidean series distance per hour of the class, series units",
    "dtw": "DTW series distance, series units",
}


def distance_unit(series_distance: str) -> str:
    """The disagreement axis label of ``series_distance`` (one of
    :data:`~mimic_deid.evaluate.privacy.SERIES_DISTANCES`)."""
    return DISTANCE_UNITS[check_series_distance(series_distance)]


# --------------------------------------------------------------------------------------------
# disagreement (seed Fig. 5.4, 6.4, 6.5, 6.6)


def plot_summary_disagreement(
    baseline: pd.DataFrame | None,
    release: pd.DataFrame | None,
    class_length: int,
    out_path: str | os.PathLike,
    stats: Sequence[str] = ("min", "mean", "max"),
    normalised: bool = False,
    title: str | None = None,
    series_distance: str = "euclidean",
) -> FigureInfo:
    """Summary disagreement plot (seed Fig. 5.4; before vs after as in Fig. 6.4 / 6.5).

    For one duration class, each statistic (min / mean / max / quantiles over the class's
    series) of the disagreement curves is drawn against the inclusion percentage (share of the
    class within the feature-distance threshold, log x axis), dashed for the original data
    (``baseline``) and solid for the release (with a single statistic, also green for the
    original and blue for the release). y is the disagreement (mean series distance
    between the original series and the included released series, in the series' units) or,
    with ``normalised``, its ratio to the value at 100 % inclusion (dotted line at 1).

    Either frame may be None (e.g. baseline only, Fig. 5.4). ``title`` overrides the default.
    """
    unknown = [s for s in stats if s not in STAT_COLORS]
    if unknown:
        raise InputDataError(
            f"stats: unknown statistic(s) {unknown}; expected some of {list(STAT_COLORS)}"
        )
    base = shaping.summary_rows(baseline, class_length, stats, "baseline disagreement summary")
    rel = shaping.summary_rows(release, class_length, stats, "release disagreement summary")
    column = "normalised" if normalised else "value"
    fig = new_figure(8.0, 5.0)
    ax = fig.subplots()
    stat_names = ", ".join(STAT_LABELS[s] for s in stats)
    default = (
        f"Summary disagreement, duration class {class_length} h"
        + (" (normalised)" if normalised else "")
        + f"\n{stat_names} over the class's series"
    )
    ax.set_title(title or default)
    ax.set_xlabel("inclusion percentage (% of the class, log scale)")
    ax.set_ylabel(
        "disagreement / disagreement at 100 % inclusion"
        if normalised
        else f"disagreement ({distance_unit(series_distance)})"
    )
    if base.empty and rel.empty:
        ax.set_xscale("log")
        no_data(ax, f"no data for duration class {class_length}")
        return save(fig, out_path)

    ax.set_xscale("log")
    single = len(stats) == 1  # one statistic: colour by data set, as in seed Fig. 6.4 / 6.5
    for stat in stats:
        for rows, style, who in ((base, "--", "original"), (rel, "-", "de-identified")):
            if single:
                color = ORIGINAL_COLOR if who == "original" else RELEASE_COLOR
            else:
                color = STAT_COLORS[stat]
            part = rows[rows["stat"] == stat]
            y = pd.to_numeric(part[column], errors="coerce").to_numpy(dtype=float)
            x = 100.0 * part["inclusion"].to_numpy(dtype=float)
            ok = np.isfinite(x) & np.isfinite(y) & (x > 0)
            if not ok.any():
                continue
            ax.plot(
                x[ok],
                y[ok],
                linestyle=style,
                color=color,
                drawstyle="steps-post",
                label=f"{STAT_LABELS[stat]}, {who}",
            )
    if normalised:
        ax.axhline(1.0, color="0.5", linestyle=":", linewidth=1)
    ax.set_xlim(right=100.0)
    ax.xaxis.set_major_formatter(_percent_formatter())
    legend(ax, loc="best", ncol=2 if len(stats) > 2 else 1)
    return save(fig, out_path)


def _percent_tick(value: float, _pos: int) -> str:
    if value <= 0:
        return ""
    return f"{value:g}"


def _percent_formatter() -> Any:
    """A matplotlib tick formatter of :func:`_percent_tick`."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(_percent_tick)


def plot_first_disagreement_cdf(
    baseline_series: pd.DataFrame | None,
    release_series: pd.DataFrame | None,
    class_length: int | None,
    out_path: str | os.PathLike,
    series_distance: str = "euclidean",
) -> FigureInfo:
    """Seed Fig. 6.6: cumulative distribution of first-disagreement values, before vs after.

    x (log scale) = first disagreement (disagreement after the first feature-distance
    increment, in the series' units); y = percentage of series whose first disagreement is
    at most x. Zeros cannot sit on a log axis: they are drawn at a floor one decade below the
    smallest positive value (dotted line), and the note gives their share. Undefined values
    (NaN) are left out and counted in the note. ``class_length=None`` pools all classes.
    """
    base = shaping.first_values(baseline_series, class_length, "baseline disagreement series")
    rel = shaping.first_values(release_series, class_length, "release disagreement series")
    where = "all duration classes" if class_length is None else f"duration class {class_length} h"
    fig = new_figure(8.0, 5.0)
    ax = fig.subplots()
    ax.set_title(f"First disagreement, {where}")
    ax.set_xlabel(f"first disagreement ({distance_unit(series_distance)}, log scale)")
    ax.set_ylabel("series with first disagreement ≤ x (%)")
    ax.set_xscale("log")
    finite = np.concatenate([base[np.isfinite(base)], rel[np.isfinite(rel)]])
    if finite.size == 0:
        no_data(ax, f"no data for {where}")
        return save(fig, out_path)

    positive = finite[finite > 0]
    if positive.size:
        floor = 10.0 ** math.floor(math.log10(positive.min()))
        if floor >= positive.min():
            floor /= 10.0
        top = float(positive.max())
    else:
        floor, top = 1e-3, 1e-2
    any_zero = False
    for values, color, who in (
        (base, ORIGINAL_COLOR, "original"),
        (rel, RELEASE_COLOR, "de-identified"),
    ):
        ok = values[np.isfinite(values)]
        undefined = values.size - ok.size
        if ok.size == 0:
            continue
        zeros = 100.0 * float((ok <= 0).mean())
        any_zero = any_zero or zeros > 0
        ok = np.sort(np.maximum(ok, floor))
        pct = 100.0 * np.arange(1, ok.size + 1) / ok.size
        x = np.concatenate([[floor / 10**0.5], ok, [top * 10**0.5]])
        y = np.concatenate([[0.0], pct, [100.0]])
        label = f"{who} (n = {ok.size}; {zeros:.0f} % zero"
        label += f"; {undefined} undefined, left out)" if undefined else ")"
        ax.plot(x, y, drawstyle="steps-post", color=color, label=label)
    if any_zero:
        ax.axvline(floor, color="0.5", linestyle=":", linewidth=1)
        ax.set_title(
            f"First disagreement, {where}\nzero values drawn at x = {floor:g} (dotted line)"
        )
    ax.set_xlim(floor / 10**0.5, top * 10**0.5)
    ax.set_ylim(-2, 102)
    legend(ax, loc="upper left")
    return save(fig, out_path)


def plot_disagreement_curves(
    summary: pd.DataFrame | None,
    curves: np.ndarray,
    n_reachable: np.ndarray,
    class_length: int,
    out_path: str | os.PathLike,
    n_curves: int = 100,
) -> FigureInfo:
    """Seed Fig. 5.4, both panels: the normalised summary plot and the curves behind it.

    Above: the min, mean and max of the normalised disagreement curves of one duration class
    of the release against the inclusion percentage (log x), as
    :func:`plot_summary_disagreement`. Below: up to ``n_curves`` of the individual normalised
    curves (each divided by its value at its largest inclusion), chosen evenly through the
    class's series order, so the spread that the summary hides is visible.

    Parameters
    ----------
    summary : DataFrame or None
        The release's ``disagreement_summary`` rows (any class; ``class_length`` is selected).
    curves : ndarray, shape (n, n)
        :attr:`~mimic_deid.evaluate.disagreement.DisagreementResult.curves` of the class
        (series units).
    n_reachable : ndarray of int, shape (n,)
        Largest inclusion count of each curve.
    class_length : int
    n_curves : int
        Curves drawn in the lower panel.
    """
    stats = ("min", "mean", "max")
    rel = shaping.summary_rows(summary, class_length, stats, "release disagreement summary")
    curves = np.asarray(curves, dtype=np.float64)
    if curves.ndim != 2:
        curves = np.empty((0, 0))
    n = curves.shape[0]
    fig = new_figure(8.0, 8.0)
    ax_top, ax_low = fig.subplots(2, 1, sharex=True)
    ax_top.set_title(
        f"Summary disagreement, duration class {class_length} h (normalised)\n"
        "min, mean and max over the class's series, release"
    )
    shown = np.unique(np.linspace(0, n - 1, min(n_curves, n)).round().astype(np.int64)) if n else []
    ax_low.set_title(f"{len(shown)} of the {n} normalised disagreement curves behind it")
    for ax in (ax_top, ax_low):
        ax.set_xscale("log")
        ax.set_ylabel("disagreement / disagreement at 100 % inclusion")
    ax_low.set_xlabel("inclusion percentage (% of the class, log scale)")
    if rel.empty and n == 0:
        no_data(ax_top, f"no data for duration class {class_length}")
        no_data(ax_low, f"no data for duration class {class_length}")
        return save(fig, out_path)
    for stat in stats:
        part = rel[rel["stat"] == stat]
        y = pd.to_numeric(part["normalised"], errors="coerce").to_numpy(dtype=float)
        x = 100.0 * part["inclusion"].to_numpy(dtype=float)
        ok = np.isfinite(x) & np.isfinite(y) & (x > 0)
        if ok.any():
            ax_top.plot(
                x[ok],
                y[ok],
                color=STAT_COLORS[stat],
                drawstyle="steps-post",
                label=STAT_LABELS[stat],
            )
    ax_top.axhline(1.0, color="0.5", linestyle=":", linewidth=1)
    legend(ax_top, loc="best")
    if n:
        reach = np.asarray(n_reachable, dtype=np.int64)
        x = 100.0 * np.arange(1, n + 1) / n
        for i in shown:
            if reach[i] < 1:
                continue
            final = curves[i, reach[i] - 1]
            if not np.isfinite(final) or final == 0:
                continue
            y = curves[i] / final
            ok = np.isfinite(y)
            ax_low.plot(
                x[ok], y[ok], color=RELEASE_COLOR, alpha=0.25, linewidth=0.8, drawstyle="steps-post"
            )
        ax_low.axhline(1.0, color="0.5", linestyle=":", linewidth=1)
    else:
        no_data(ax_low)
    ax_low.set_xlim(right=100.0)
    ax_low.xaxis.set_major_formatter(_percent_formatter())
    return save(fig, out_path)


def plot_disagreement_example(
    original: np.ndarray | None,
    released: np.ndarray,
    F_known: np.ndarray | None,
    F_released: np.ndarray,
    thresholds: np.ndarray,
    curve: np.ndarray,
    t_max: float,
    auc: float,
    target: int,
    first: int | None,
    class_length: int,
    labels: Mapping[str, str],
    out_path: str | os.PathLike,
) -> FigureInfo:
    """Seed Fig. 3.1 on real data: a target's series, features and disagreement curve.

    Left: one dimension of the target's original series (green) and of the released series
    the attacker includes first (nearest released features; blue). Middle: the class's
    released features on two feature axes, with the attacker's knowledge of the target (its
    original features, star) and the first-included series (blue). Right: the disagreement
    step curve against the feature-distance threshold (mean series distance between the
    target and the series included so far), with its area up to ``t_max`` shaded: Δ-AUC.

    Without ``original`` and ``F_known`` (the public report) the figure holds released values
    only: the left panel shows the target's own released series instead of its original, the
    middle panel marks the target's released features instead of the attacker's knowledge.

    Parameters
    ----------
    original, released : ndarray, shape (n, L)
        The shown dimension of every series of the class, original (None: not shown) and
        released.
    F_known, F_released : ndarray, shape (n, 2)
        Two features (attacker's knowledge = original, None: not shown; released).
    thresholds, curve : ndarray, shape (n,)
        The target's row of ``DisagreementResult.thresholds`` / ``.curves``.
    t_max, auc : float
        The target's ``t_max`` and Δ-AUC.
    target : int
        Row of the target in the class.
    first : int or None
        Row of the released series nearest to the attacker's knowledge over all features
        (the first included); None if none is comparable.
    labels : mapping
        ``variable``, ``unit``, ``feature_x``, ``feature_y``, ``distance`` (axis labels).
    """
    fig = new_figure(14.0, 4.6)
    ax_s, ax_f, ax_d = fig.subplots(1, 3)
    fig.suptitle(
        f"Disagreement of one series, duration class {class_length} h "
        f"(Δ-AUC {two_decimals(auc)}; seed Fig. 3.1)"
    )
    ax_s.set_title("series")
    ax_s.set_xlabel("hour of the series (h)")
    ax_s.set_ylabel(f"{labels.get('variable', '')} ({labels.get('unit', '')})")
    ax_f.set_title("features")
    ax_f.set_xlabel(labels.get("feature_x", "feature 1"))
    ax_f.set_ylabel(labels.get("feature_y", "feature 2"))
    ax_d.set_title("disagreement step curve")
    ax_d.set_xlabel("feature-distance threshold t (feature units)")
    ax_d.set_ylabel(f"disagreement ({labels.get('distance', distance_unit('euclidean'))})")
    thresholds = np.asarray(thresholds, dtype=float)
    curve = np.asarray(curve, dtype=float)
    ok = np.isfinite(thresholds) & np.isfinite(curve)
    if not ok.any():
        for ax in (ax_s, ax_f, ax_d):
            no_data(ax)
        return save(fig, out_path)
    hours = np.arange(np.shape(released)[1])
    if original is not None:
        ax_s.plot(
            hours, original[target], color=ORIGINAL_COLOR, marker=".", label="target, original"
        )
    else:
        ax_s.plot(
            hours, released[target], color=ORIGINAL_COLOR, marker=".", label="target, released"
        )
    if first is not None:
        ax_s.plot(
            hours, released[first], color=RELEASE_COLOR, marker=".", label="first included release"
        )
    legend(ax_s, loc="best")
    _example_features(ax_f, F_known, F_released, target, first)
    # one step per increment: distinct thresholds, the value reached at each
    t, idx = np.unique(thresholds[ok], return_index=True)
    last = np.r_[idx[1:] - 1, ok.sum() - 1]
    v = curve[ok][last]
    edges = np.r_[t, t_max]
    ax_d.stairs(v, edges, color="tab:red", linewidth=1.5, label="disagreement")
    ax_d.stairs(v, edges, fill=True, color="tab:blue", alpha=0.2, label="Δ-AUC")
    legend(ax_d, loc="best")
    return save(fig, out_path)


def _example_features(
    ax: Any,
    F_known: np.ndarray | None,
    F_released: np.ndarray,
    target: int,
    first: int | None,
) -> None:
    """Seed Fig. 3.1's middle panel: the class's released features, the target (the
    attacker's knowledge, or its released features) and the first included series."""
    ax.scatter(F_released[:, 0], F_released[:, 1], s=10, color="0.6", label="released series")
    star = F_known if F_known is not None else F_released
    ax.scatter(
        [star[target, 0]],
        [star[target, 1]],
        marker="*",
        s=140,
        color=ORIGINAL_COLOR,
        label="attacker's knowledge of the target"
        if F_known is not None
        else "the target's released features",
        zorder=3,
    )
    if first is not None:
        ax.scatter(
            [F_released[first, 0]],
            [F_released[first, 1]],
            s=40,
            color=RELEASE_COLOR,
            label="first included",
            zorder=3,
        )
    legend(ax, loc="best")
