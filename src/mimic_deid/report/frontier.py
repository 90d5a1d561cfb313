"""The report's privacy-utility frontier: its figure and the first screen's best releases.

Both read ``results/frontier.csv`` (:func:`mimic_deid.evaluate.frontier.frontier_table`), whose
every figure is a release card's: the cards are public, refused ones included, so the frontier
draws every release of the sweep and tells a refused one from a certified one by its marker
(hollow against filled), where the rest of the public report draws certified releases only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.core.numbers import auc_ci, percent, percent_ci
from mimic_deid.evaluate.frontier import BOTH, CEILING_TAG, best_certified, utility_column
from mimic_deid.evaluate.utility import SEED_TRUST_SETTINGS, SETTINGS, TASKS
from mimic_deid.report.plotting import FigureInfo, legend, new_figure, no_data, save

__all__ = [
    "FRONTIER_PANELS",
    "SEED_POINT",
    "best_lines",
    "plot_frontier",
]

#: The panels of the figure and the first screen's settings: (setting tag, its name).
FRONTIER_PANELS: tuple[tuple[str, str], ...] = (
    ("deid_deid", "de-id. / de-id."),
    ("deid_orig", "de-id. / orig."),
)
#: The seed's point (seed 000, Table 6.4: ad hoc, fk 10, test split): its feature k and, per
#: setting tag, its mortality ROC-AUC; the seed measured no top-1 of this attacker family, so
#: the figure places it at its bound 1/k.
SEED_POINT: dict[str, Any] = {
    "k": 10,
    "owner": SEED_TRUST_SETTINGS[("test", "roc_auc")][0],
    **{
        tag: SEED_TRUST_SETTINGS[("test", "roc_auc")][[s for s, _, _ in SETTINGS].index(name)]
        for tag, name in FRONTIER_PANELS
    },
}
_TASK_NAMES = {"mortality": "in-hospital mortality", "long_stay": "length of stay > 7 days"}
_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "<", ">")


def _bars(values: pd.Series, low: pd.Series, high: pd.Series) -> np.ndarray:
    below = (values - low).fillna(0.0).clip(lower=0.0).to_numpy(dtype=float)
    above = (high - values).fillna(0.0).clip(lower=0.0).to_numpy(dtype=float)
    return np.vstack([below, above])


def plot_frontier(
    frontier: pd.DataFrame, out_path: str | os.PathLike, task: str = "mortality"
) -> FigureInfo:
    """The privacy-utility frontier of the ``ihm48`` releases: risk against utility.

    One panel per setting of :data:`FRONTIER_PANELS`. x = the strongest attacker's top-1
    re-identification rate (%, exact knowledge) with its 95 % Wilson interval as a bar; y =
    ``task``'s test ROC-AUC with its 95 % bootstrap interval. One colour and marker per release
    method, every release of the sweep one point: filled when certified, hollow when refused.
    Dotted vertical lines: the bound 1/k of every k of the sweep; dashed horizontal line: the data
    owner's baseline (orig. / orig. on every series variable) with its interval as a band; a
    star: the seed's point (Table 6.4, ad hoc at fk 10, mortality only), placed at its bound
    1/10 (the seed measured no top-1 of this attacker family), its owner's baseline as a tick.
    In de-id. / de-id., a tick in the method's colour above each release: its ROC-AUC ceiling,
    the best any model of the published series can reach on its test split
    (:func:`mimic_deid.evaluate.model.roc_auc_ceiling`; absent from a frontier without it).
    """
    fig = new_figure(12.5, 5.2)
    axes = fig.subplots(1, len(FRONTIER_PANELS), sharey=True)
    fig.suptitle(
        f"Privacy-utility frontier, {_TASK_NAMES.get(task, task)}: every ihm48 release of the "
        "sweep (filled: certified, hollow: refused)"
    )
    rows = frontier[frontier["release"] == "ihm48"] if len(frontier) else frontier
    methods = list(dict.fromkeys(rows["method"])) if len(rows) else []
    owner = utility_column(task, "orig_orig_all", "roc_auc")
    for (tag, name), ax in zip(FRONTIER_PANELS, axes, strict=True):
        ax.set_title(f"trained / tested on {name}")
        ax.set_xlabel("strongest attacker's top-1 re-identification (%, 95 % interval)")
        ax.set_ylabel("test ROC-AUC (95 % bootstrap interval)")
        column = utility_column(task, tag, "roc_auc")
        ceiling, ceiling_drawn = utility_column(task, tag, "roc_auc", "ceiling"), False
        drawn = rows[rows[column].notna()] if len(rows) else rows
        if len(drawn) == 0:
            no_data(ax, "no ihm48 release with this figure")
            continue
        for k in sorted(set(drawn["k"].astype(int))):
            ax.axvline(100.0 / k, color="0.45", linestyle=":", linewidth=1)
            ax.annotate(f"1/{k}", (100.0 / k, 1.0), xycoords=("data", "axes fraction"),
                        xytext=(2, -10), textcoords="offset points", fontsize=8, color="0.35")  # fmt: skip
        baseline = drawn[[owner, f"{owner}_lo", f"{owner}_hi"]].dropna().head(1)
        if len(baseline):  # the same in every row: the owner's model of the original data
            value, low, high = (float(v) for v in baseline.iloc[0])
            ax.axhspan(low, high, color="0.85", alpha=0.5, linewidth=0)
            ax.axhline(value, color="0.2", linestyle="--", linewidth=1.2,
                       label=f"owner's baseline {auc_ci(value, low, high)}")  # fmt: skip
        for i, method in enumerate(methods):
            colour = f"C{i % 10}"
            marker = _MARKERS[i % len(_MARKERS)]
            mine = drawn[drawn["method"] == method]
            for certified in (True, False):
                part = mine[(mine["verdict"] == "certified") == certified]
                if part.empty:
                    continue
                x = 100.0 * part["attacker_top1"]
                ax.errorbar(
                    x,
                    part[column],
                    xerr=_bars(
                        x, 100.0 * part["attacker_top1_lo"], 100.0 * part["attacker_top1_hi"]
                    ),
                    yerr=_bars(part[column], part[f"{column}_lo"], part[f"{column}_hi"]),
                    fmt=marker,
                    color=colour,
                    markerfacecolor=colour if certified else "white",
                    markeredgewidth=1.4,
                    markersize=7,
                    capsize=2,
                    elinewidth=0.8,
                    linestyle="none",
                    label=f"{method}, {'certified' if certified else 'refused'}",
                )
                ceilinged = part[part[ceiling].notna()] if tag == CEILING_TAG else part[:0]
                if len(ceilinged):  # each release's ceiling, a tick above its point
                    ax.plot(100.0 * ceilinged["attacker_top1"], ceilinged[ceiling], marker="_",
                            markersize=14, markeredgewidth=1.6, color=colour, linestyle="none")  # fmt: skip
                    ceiling_drawn = True
        if ceiling_drawn:  # one grey legend entry for the ticks of every method
            ax.plot([], [], marker="_", markersize=14, markeredgewidth=1.6, color="0.35",
                    linestyle="none", label="ceiling of each release (a tick in its colour): the "
                    "best any model of it can reach")  # fmt: skip
        if task == "mortality":
            x = 100.0 / SEED_POINT["k"]
            ax.plot([x], [SEED_POINT[tag]], marker="*", markersize=13, color="black",
                    linestyle="none", label=f"seed Table 6.4 (ad hoc, fk 10): {SEED_POINT[tag]:.2f}, "
                    f"at its bound 1/10")  # fmt: skip
            ax.plot([x], [SEED_POINT["owner"]], marker="_", markersize=16, color="black",
                    linestyle="none", label=f"seed's orig. / orig. {SEED_POINT['owner']:.2f}")  # fmt: skip
        ax.set_xlim(left=0)
        legend(ax, loc="best", fontsize=7)
    return save(fig, out_path)


def _figure(row: Mapping[str, Any], task: str, tag: str) -> str:
    """The setting's test ROC-AUC with its interval, and in de-id. / de-id. its ceiling."""
    column = utility_column(task, tag, "roc_auc")
    text = auc_ci(row[column], row.get(f"{column}_lo"), row.get(f"{column}_hi"))
    ceiling = row.get(f"{column}_ceiling")
    if tag == CEILING_TAG and ceiling is not None and np.isfinite(ceiling):
        text += f" (ceiling {ceiling:.3f})"
    return text


def _release_text(row: Mapping[str, Any], task: str, tag: str) -> str:
    if tag == BOTH:
        figures = ", ".join(f"{name} {_figure(row, task, t)}" for t, name in FRONTIER_PANELS)
    else:
        figures = _figure(row, task, tag)
    knob = f"fk {int(row['fk'])}"
    if row["knob"] != "fk":
        knob += f", {row['knob']} {float(row['knob_value']):g}"
    attack = percent_ci(
        row["attacker_top1"], row.get("attacker_top1_lo"), row.get("attacker_top1_hi")
    )
    return (
        f"{row['method_label']} at {knob} (dk {int(row['dk'])}, {row['heuristic']}), "
        f"{figures}, its strongest "
        f"attacker ('{row['attacker']}') {attack} within 1/{int(row['k'])} = {percent(row['bound'])}"
    )


def _owner_text(frontier: pd.DataFrame, task: str) -> str:
    owner = utility_column(task, "orig_orig_all", "roc_auc")
    rows = frontier[[owner, f"{owner}_lo", f"{owner}_hi"]].dropna(subset=[owner]).head(1)
    if rows.empty:
        return "not measured"
    return auc_ci(*rows.iloc[0])


def best_lines(frontier: pd.DataFrame) -> list[dict[str, str]]:
    """The first screen's lines on the frontier, one per task: for each setting of
    :data:`FRONTIER_PANELS`, the best certified ``ihm48`` release by test ROC-AUC
    (:func:`~mimic_deid.evaluate.frontier.best_certified`) with its strongest attacker against
    its bound, or that none is certified, then the best by the mean of the two settings
    (:data:`~mimic_deid.evaluate.frontier.BOTH`, the rule by which the shipped config chose its
    first method and point); the data owner's baseline beside them.

    Parameters
    ----------
    frontier : DataFrame
        ``results/frontier.csv``; empty (a report without the frontier): no line.

    Returns
    -------
    list of dict
        ``{"status": "best" | "none", "text": ...}`` (the format of the decision section's
        ``decisions``; ``none`` when no setting of the task has a certified release), tasks in
        :data:`~mimic_deid.evaluate.utility.TASKS` order.
    """
    if frontier.empty:
        return []
    lines = []
    for task in TASKS:
        parts, found = [], False
        for tag, name in (*FRONTIER_PANELS, (BOTH, "both (their mean)")):
            row = best_certified(frontier, task, tag)
            found |= row is not None
            best = "none certified" if row is None else _release_text(row, task, tag)
            parts.append(f"{name}: {best}")
        lines.append(
            {
                "status": "best" if found else "none",
                "text": f"BEST CERTIFIED for {_TASK_NAMES.get(task, task)} (test ROC-AUC; the "
                f"data owner's {_owner_text(frontier, task)}): " + "; ".join(parts) + ".",
            }
        )
    return lines
