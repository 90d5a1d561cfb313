"""Figures of the report, regenerated from a run (seed chapters 5-6).

Every ``plot_*`` function takes already-loaded objects (arrays, DataFrames, dicts), writes one
PNG atomically at ``out_path`` and returns a :data:`FigureInfo` dict describing what was drawn
(title, and per axes its title, axis labels, scales and legend entries) so that callers and
tests can check it without parsing the image. Figures are built with
:class:`matplotlib.figure.Figure` directly (rendered by Agg), never through ``pyplot``, so no
global figure state is touched and nothing needs closing.

Empty inputs never crash: the affected panel says "no data" and keeps its axis labels.

Colours: original (pre-release) data is green, the de-identified release blue, as in the
seed's Fig. 6.6 (:mod:`mimic_deid.report.plotting`). The disagreement figures are in
:mod:`mimic_deid.report.disagreement`.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from mimic_deid.core.errors import InputDataError, require_columns
from mimic_deid.core.numbers import auc as fmt_auc
from mimic_deid.core.numbers import measure, percent
from mimic_deid.deid.examples import GA_STATS, series_features
from mimic_deid.report import shaping
from mimic_deid.report.plotting import (
    ORIGINAL_COLOR,
    RELEASE_COLOR,
    SUPPRESSED_COLOR,
    FigureInfo,
    corner_note,
    legend,
    new_figure,
    no_data,
    save,
    two_decimals,
)
from mimic_deid.report.shaping import utility_rows
from mimic_deid.report.tables import ALL_VARIABLES, SEED_TRUST_SETTINGS, SETTING_LABELS, SETTINGS

if TYPE_CHECKING:  # matplotlib is imported where drawn (report/plotting.py)
    from matplotlib.axes import Axes

UTILITY_FIGURE_COLUMNS = ("setting", "split", "roc_auc", "pr_auc")
# --------------------------------------------------------------------------------------------
# duration classes (seed section 6.1, Fig. 6.1)


def plot_duration_classes(
    lengths: np.ndarray, class_lengths: np.ndarray, out_path: str | os.PathLike
) -> FigureInfo:
    """Seed Fig. 6.1 and the effect of duration de-identification on class sizes.

    Left: x = minimum length of stay in whole days (``length // 24``); y (log) = the mean size
    of the day-resolution duration classes of the series at or above that minimum, and the
    number of those series. A mean class size near 1 means durations alone almost identify
    the long stays. Right: size of every hour-resolution duration class against its length
    (hours, log-log), before (original lengths) and after (released class lengths), with the
    smallest released class marked.

    Parameters
    ----------
    lengths : (n,) int
        Original series lengths (hours = grid points).
    class_lengths : (n,) int
        Released class length of each series; 0 = suppressed.
    """
    lengths, class_lengths = shaping.duration_inputs(lengths, class_lengths)
    fig = new_figure(11.5, 4.4)
    ax_days, ax_sizes = fig.subplots(1, 2)
    n = lengths.size
    suppressed = int((class_lengths == 0).sum())
    fig.suptitle(f"Duration classes: {n} series, {suppressed} suppressed")

    ax_days.set_title("Day resolution, original lengths (seed Fig. 6.1)")
    ax_days.set_xlabel("minimum length of stay (whole days)")
    ax_days.set_ylabel("series (count, log scale)")
    ax_sizes.set_title("Hour resolution, before and after de-identification")
    ax_sizes.set_xlabel("duration class length (hours, log scale)")
    ax_sizes.set_ylabel("series in the class (count, log scale)")

    if n == 0:
        no_data(ax_days)
        no_data(ax_sizes)
        return save(fig, out_path)

    days = lengths // 24
    counts = np.bincount(days)
    n_above = np.cumsum(counts[::-1])[::-1]
    classes_above = np.cumsum((counts > 0)[::-1])[::-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_size = n_above / classes_above
    x = np.arange(counts.size)
    ax_days.set_yscale("log")
    ax_days.plot(x, n_above, color="0.35", label="series at or above the minimum")
    ax_days.plot(x, mean_size, color="tab:purple", label="mean size of day classes at or above it")
    ax_days.axhline(1.0, color="0.6", linestyle=":", linewidth=1)
    unique_day = np.flatnonzero(counts == 1)
    if unique_day.size:
        corner_note(ax_days, f"{unique_day.size} day classes hold a single series")
    ax_days.set_xlim(0, max(1, x[-1]))
    legend(ax_days, loc="upper right")

    ax_sizes.set_xscale("log")
    ax_sizes.set_yscale("log")
    pos = lengths[lengths > 0]
    if pos.size:
        u, c = np.unique(pos, return_counts=True)
        ax_sizes.scatter(
            u,
            c,
            s=8,
            color=ORIGINAL_COLOR,
            alpha=0.8,
            linewidths=0,
            zorder=3,
            label=f"original lengths ({u.size} classes)",
        )
    kept = class_lengths[class_lengths > 0]
    if kept.size:
        u2, c2 = np.unique(kept, return_counts=True)
        ax_sizes.scatter(
            u2,
            c2,
            s=22,
            marker="D",
            facecolors="none",
            edgecolors=RELEASE_COLOR,
            linewidths=0.9,
            zorder=2,
            label=f"released classes ({u2.size} classes)",
        )
        smallest = int(c2.min())
        ax_sizes.axhline(
            smallest,
            color=RELEASE_COLOR,
            linestyle="--",
            linewidth=1,
            label=f"smallest released class: {smallest} series",
        )
    if not pos.size and not kept.size:
        no_data(ax_sizes)
    legend(ax_sizes, loc="lower left")
    return save(fig, out_path)


def plot_records_lost(
    lengths: np.ndarray,
    class_lengths: np.ndarray,
    records_lost: np.ndarray,
    out_path: str | os.PathLike,
) -> FigureInfo:
    """Distribution of records (hours) lost per series by duration de-identification.

    Left: histogram of hours lost per series (log count). Right: hours lost against the
    original length (log x), kept series in blue, suppressed ones in red. The title gives the
    mean and standard deviation (population, ddof=0) of the hours lost and of the percentage of
    the series lost. A suppressed series counts all its hours as lost. ``records_lost`` (the
    hours each series loses, as rule ``duration_classes`` wrote them) is drawn as given.
    """
    lengths, class_lengths = shaping.duration_inputs(lengths, class_lengths)
    lost = shaping.as_1d(records_lost, "records_lost").astype(np.int64, copy=False)
    if lost.shape != lengths.shape:
        raise InputDataError(
            f"records_lost: expected one value per series ({lengths.shape[0]}), got {lost.shape[0]}"
        )
    fig = new_figure(11.5, 4.4)
    ax_hist, ax_scatter = fig.subplots(1, 2)
    ax_hist.set_title("Hours lost per series")
    ax_hist.set_xlabel("records lost per series (hours)")
    ax_hist.set_ylabel("series (count, log scale)")
    ax_scatter.set_title("Hours lost against original length")
    ax_scatter.set_xlabel("original series length (hours, log scale)")
    ax_scatter.set_ylabel("records lost (hours)")
    if lengths.size == 0:
        fig.suptitle("Records lost per series: no series")
        no_data(ax_hist)
        no_data(ax_scatter)
        return save(fig, out_path)

    with np.errstate(invalid="ignore", divide="ignore"):
        pct = np.where(lengths > 0, 100.0 * lost / np.maximum(lengths, 1), 0.0)
    suppressed = class_lengths == 0
    moved = int(((lost > 0) & ~suppressed).sum())
    fig.suptitle(
        f"Records lost per series: mean {measure(lost.mean())} h (sd {measure(lost.std())}), "
        f"{percent(pct.mean() / 100)} of the series (sd {percent(pct.std() / 100)})\n"
        f"{lengths.size} series, {moved} shortened, {int(suppressed.sum())} suppressed "
        "(all their hours lost)"
    )

    top = int(lost.max())
    if top <= 60:
        bins = np.arange(-0.5, top + 1.5, 1.0)
    else:  # a bar of its own for "nothing lost", then 60 equal bins
        bins = np.concatenate([[-0.5], np.linspace(0.5, top + 0.5, 61)])
    ax_hist.hist(lost, bins=bins, color=RELEASE_COLOR, alpha=0.85, log=True)
    ax_hist.set_yscale("log")
    ax_hist.axvline(lost.mean(), color="k", linestyle="--", linewidth=1, label="mean")
    corner_note(ax_hist, f"{int((lost == 0).sum())} series lose nothing (bar at 0)")
    legend(ax_hist, loc="upper right")

    ax_scatter.set_xscale("log")
    ok = lengths > 0
    groups = (
        (ok & ~suppressed, 7, 0.4, RELEASE_COLOR, "kept (shortened or not)"),
        (ok & suppressed, 9, 0.7, SUPPRESSED_COLOR, "suppressed"),
    )
    for mask, size, alpha, color, label in groups:
        if mask.any():
            ax_scatter.scatter(
                lengths[mask],
                lost[mask],
                s=size,
                alpha=alpha,
                linewidths=0,
                color=color,
                label=label,
                rasterized=True,
            )
    legend(ax_scatter, loc="upper left")
    return save(fig, out_path)


# --------------------------------------------------------------------------------------------
# genetic-algorithm example (seed Fig. 6.2 / 6.3)


def plot_ga_example(
    original: np.ndarray,
    perturbed: np.ndarray,
    features: Mapping[str, Any],
    out_path: str | os.PathLike,
    variable_label: str,
    unit: str,
    title: str | None = None,
) -> FigureInfo:
    """Seed Fig. 6.2 / 6.3: one series before and after constraint optimisation.

    Top: the original and perturbed values of one dimension against the hour, with the
    targets of minimum and maximum (dotted) and mean (dash-dot). Bottom: a table of the
    feature values (min, max, mean, variance) of the original series, the targets and the
    achieved result. The title gives the unfeasibility (sum over these features of
    |target - achieved|) and distortion (mean |perturbation| per non-null record).

    Parameters
    ----------
    original, perturbed : (L,) float
        The dimension before and after; NaN = null (same positions in both).
    features : dict
        ``{"original": {min, max, mean, var}, "target": {...}, "achieved": {...}}``; a missing
        ``original`` / ``achieved`` block is computed from the series (population variance).
    variable_label, unit : str
        E.g. ``"Heart rate"``, ``"bpm"``.
    """
    original = shaping.as_1d(original, "original").astype(float)
    perturbed = shaping.as_1d(perturbed, "perturbed").astype(float)
    if original.shape != perturbed.shape:
        raise InputDataError(
            f"GA example: original and perturbed series differ in length "
            f"({original.size} vs {perturbed.size})"
        )
    orig_f = shaping.feature_block(features, "original") or series_features(original)
    target_f = shaping.feature_block(features, "target") or dict.fromkeys(GA_STATS, math.nan)
    achieved_f = shaping.feature_block(features, "achieved") or series_features(perturbed)
    both = np.isfinite(original) & np.isfinite(perturbed)
    distortion = float(np.abs(perturbed[both] - original[both]).mean()) if both.any() else math.nan
    unfeasibility = float(
        np.nansum([abs(target_f[s] - achieved_f[s]) for s in GA_STATS])
        if any(math.isfinite(target_f[s]) and math.isfinite(achieved_f[s]) for s in GA_STATS)
        else math.nan
    )

    fig = new_figure(9.0, 6.2)
    grid = fig.add_gridspec(2, 1, height_ratios=[3.2, 1.0])
    ax = fig.add_subplot(grid[0])
    ax_table = fig.add_subplot(grid[1])
    heading = title or f"Constraint optimisation example: {variable_label}"
    ax.set_title(
        f"{heading}\nunfeasibility {two_decimals(unfeasibility)}, "
        f"distortion {two_decimals(distortion)} {unit} per record"
    )
    ax.set_xlabel("hour of the series (h)")
    ax.set_ylabel(f"{variable_label} ({unit})")
    ax_table.axis("off")
    if not np.isfinite(original).any() and not np.isfinite(perturbed).any():
        no_data(ax, "no data (series is all null)")
        return save(fig, out_path)

    hours = np.arange(original.size)
    marker = "o" if original.size <= 80 else None
    ax.plot(hours, original, color=ORIGINAL_COLOR, marker=marker, markersize=3.5, label="original")
    ax.plot(hours, perturbed, color=RELEASE_COLOR, marker=marker, markersize=3.5, label="perturbed")
    labels = {"min": "target minimum / maximum", "max": "_nolegend_", "mean": "target mean"}
    if not math.isfinite(target_f["min"]):
        labels["max"] = labels["min"]
    for stat, style in (("min", ":"), ("max", ":"), ("mean", "-.")):
        value = target_f[stat]
        if math.isfinite(value):
            ax.axhline(value, color="0.35", linestyle=style, linewidth=1.1, label=labels[stat])
    legend(ax, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    ax.set_xlim(-0.5, max(original.size - 0.5, 0.5))

    col_labels = ["minimum", "maximum", "mean", f"variance ({unit}²)"]
    rows = [("original", orig_f), ("target", target_f), ("achieved", achieved_f)]
    table = ax_table.table(
        cellText=[[two_decimals(block[s]) for s in GA_STATS] for _, block in rows],
        rowLabels=[name for name, _ in rows],
        colLabels=col_labels,
        loc="center",
        cellLoc="center",
    )
    table.auto_set_font_size(False)
    table.set_fontsize(9.5)
    table.scale(1.0, 1.35)
    return save(fig, out_path)


# --------------------------------------------------------------------------------------------
# linkage attack


def plot_linkage(
    linkage: Mapping[str, Any],
    out_path: str | os.PathLike,
    title: str = "Linkage attack on the features",
) -> FigureInfo:
    """Linkage attack: re-identification rate and reconstruction error vs estimation error.

    Left: top-1 (solid) and top-5 (dashed) re-identification rates (% of targets) against the
    attacker's relative feature-estimation error (%), for the original data (green) and the
    release (blue). Right: reconstruction error (Euclidean distance between the target's
    original series and the linked released series: root-mean-square difference per compared
    value, in the series' units) against the same x.

    ``linkage`` is ``{"baseline": {"0.0": {"top1", "top5", "reconstruction_error", "n"}, ...},
    "release": {...}}``; rates are fractions in [0, 1]. Each of the two blocks may instead be
    the output of ``evaluate.linkage.aggregate_linkage`` (``{"n", "by_error": [{"error",
    "top1", "top5", "reconstruction_error", ...}]}``).
    """
    parts = [
        ("original", ORIGINAL_COLOR, shaping.linkage_points(linkage.get("baseline"))),
        ("de-identified", RELEASE_COLOR, shaping.linkage_points(linkage.get("release"))),
    ]
    fig = new_figure(11.5, 4.6)
    ax_rate, ax_recon = fig.subplots(1, 2)
    counts = sorted({int(v) for _, _, df in parts for v in df["n"] if math.isfinite(v)})
    fig.suptitle(title + (f" ({', '.join(map(str, counts))} targets)" if counts else ""))
    ax_rate.set_title("Re-identification rate")
    ax_rate.set_xlabel("relative feature-estimation error (%)")
    ax_rate.set_ylabel("targets re-identified (%)")
    ax_recon.set_title("Reconstruction error of the linked series")
    ax_recon.set_xlabel("relative feature-estimation error (%)")
    ax_recon.set_ylabel("reconstruction error (RMS per value, series units)")
    if all(df.empty for _, _, df in parts):
        no_data(ax_rate)
        no_data(ax_recon)
        return save(fig, out_path)

    for who, color, df in parts:
        if df.empty:
            continue
        x = 100.0 * df["error"].to_numpy()
        ax_rate.plot(x, 100.0 * df["top1"], color=color, marker="o", label=f"top-1, {who}")
        ax_rate.plot(
            x,
            100.0 * df["top5"],
            color=color,
            marker="s",
            linestyle="--",
            label=f"top-5, {who}",
        )
        ax_recon.plot(x, df["reconstruction_error"], color=color, marker="o", label=who)
    # headroom above 100 % keeps the two-column legend clear of the curves
    ax_rate.set_ylim(-3, 128)
    ax_rate.set_yticks(np.arange(0, 101, 20))
    ax_recon.set_ylim(bottom=0)
    legend(ax_rate, loc="upper center", ncol=2)
    legend(ax_recon, loc="best")
    return save(fig, out_path)


# --------------------------------------------------------------------------------------------
# trust settings (seed Tables 6.3 / 6.4 as a figure)


#: How each row of a trust-settings panel is drawn: (key, legend label, marker, colour).
TRUST_SERIES: tuple[tuple[str, str, str, str], ...] = (
    ("shipped", "shipped (original side as recorded)", "o", "tab:purple"),
    ("gap_filled", "like-for-like (original side gap-filled)", "s", "tab:orange"),
    ("seed", "seed Tables 6.3/6.4", "x", "black"),
)
TASK_TITLES = {"mortality": "In-hospital mortality", "long_stay": "Length of stay > 7 days"}


def plot_trust_settings(
    utility: pd.DataFrame, out_path: str | os.PathLike, task: str = "mortality"
) -> FigureInfo:
    """ROC-AUC and PR-AUC per trust setting with bootstrap 95 % intervals, shipped and
    like-for-like beside the seed, with the data owner's baseline in front.

    One panel per metric (rows) and evaluated split (columns: train = seed Table 6.3, test =
    6.4). x = the data owner's baseline (orig. / orig. on every series variable), then the four
    trust settings (training data / test data: orig. or de-id., on the released variables);
    y = area under the curve (unitless, 0-1) with error bars from ``*_lo`` / ``*_hi``.
    Purple circles: the original side as recorded (``shipped``); orange squares: gap-filled
    like the release (``gap_filled``); black crosses: the seed's figures (mortality only).
    Reference lines: 0.5 (chance ROC-AUC) and the split's share of positives (chance PR-AUC),
    when ``positives`` and ``n`` are given.
    """
    if len(utility):
        require_columns(utility, UTILITY_FIGURE_COLUMNS, "utility (trust settings)")
    fig = new_figure(12.5, 8.0)
    axes = fig.subplots(2, 2, sharey="row")
    fig.suptitle(
        f"{TASK_TITLES.get(task, task)} prediction: the owner's baseline and the four trust settings"
    )
    columns = [("all", SETTINGS[0])] + [("released", s) for s in SETTINGS]
    ticks = [ALL_VARIABLES.replace(", ", "\n")] + [SETTING_LABELS[s] for s in SETTINGS]
    splits = ("train", "test")
    metrics = (("roc_auc", "ROC-AUC"), ("pr_auc", "PR-AUC"))
    for (metric, name), row_axes in zip(metrics, axes, strict=True):
        for split, ax in zip(splits, row_axes, strict=True):
            table = "6.3" if split == "train" else "6.4"
            seed = f" (seed Table {table})" if task == "mortality" else ""
            ax.set_title(f"{name}, evaluated on {split}{seed}")
            ax.set_xlabel("training data / test data")
            ax.set_ylabel(f"{name} (unitless, 95 % bootstrap CI)")
            ax.set_xticks(range(len(columns)), ticks)
            ax.set_xlim(-0.5, len(columns) - 0.5)
            ax.set_ylim(0, 1.02)
            rows = utility_rows(utility, split, task) if len(utility) else utility
            if len(rows) == 0:
                no_data(ax)
                continue
            _trust_panel(ax, rows, columns, metric, split, task)
    legend(axes[0][0], loc="lower left", fontsize=8)
    return save(fig, out_path)


def _trust_panel(
    ax: Axes,
    rows: pd.DataFrame,
    columns: list[tuple[str, str]],
    metric: str,
    split: str,
    task: str,
) -> None:
    """One panel of :func:`plot_trust_settings`: the rows of one split, one metric."""
    by_key = {
        (str(r["variables"]), str(r["cross"]), str(r["setting"])): r for _, r in rows.iterrows()
    }
    seed = SEED_TRUST_SETTINGS.get((split, metric)) if task == "mortality" else None
    offsets = np.linspace(-0.22, 0.22, len(TRUST_SERIES))
    for (key, label, marker, color), offset in zip(TRUST_SERIES, offsets, strict=True):
        xs, ys, lo, hi = [], [], [], []
        for i, (variables, setting) in enumerate(columns):
            if key == "seed":
                if seed is None or variables != "released":
                    continue
                v = low = high = seed[SETTINGS.index(setting)]
            else:
                cross = "shipped" if variables == "all" else key
                row = by_key.get((variables, cross, setting))
                if row is None or (variables == "all" and key != "shipped"):
                    continue
                v = shaping.float_or_nan(row[metric])
                low = shaping.float_or_nan(row.get(f"{metric}_lo"))
                high = shaping.float_or_nan(row.get(f"{metric}_hi"))
            if not math.isfinite(v):
                continue
            xs.append(i + offset)
            ys.append(v)
            lo.append(v - low if math.isfinite(low) else 0.0)
            hi.append(high - v if math.isfinite(high) else 0.0)
        if not xs:
            continue
        ax.errorbar(
            xs,
            ys,
            yerr=[np.maximum(lo, 0), np.maximum(hi, 0)],
            fmt=marker,
            color=color,
            capsize=3,
            markersize=6,
            linestyle="none",
            label=label,
        )
        for xv, yv, below in zip(xs, ys, lo, strict=True):  # under the lower bar
            ax.annotate(
                fmt_auc(yv),
                (xv, yv - below),
                textcoords="offset points",
                xytext=(0, -10),
                ha="center",
                fontsize=7,
                color=color,
            )
    if metric == "roc_auc":
        ax.axhline(0.5, color="0.5", linestyle=":", linewidth=1, label="chance (0.5)")
    elif {"positives", "n"} <= set(rows.columns):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            prevalence = float(
                np.nanmean(
                    pd.to_numeric(rows["positives"], errors="coerce")
                    / pd.to_numeric(rows["n"], errors="coerce")
                )
            )
        if math.isfinite(prevalence):
            ax.axhline(prevalence, color="0.5", linestyle=":", linewidth=1,
                       label=f"share of positives ({percent(prevalence)})")  # fmt: skip
