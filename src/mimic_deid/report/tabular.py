"""Report figures and tables of the tabular stage (seed 003 chapter 6 on MIMIC-III).

:func:`tabular_outputs` selects the stage's public outputs among the report's inputs (input
names ``tabular_*``, :data:`mimic_deid.tabular.stage.REPORT_INPUTS`, read by
:mod:`mimic_deid.report.inputs`); each ``*_table`` returns a printable DataFrame and each
``plot_*`` writes one PNG. An empty ``tabular`` mapping (stage not run) gives a one-row note or
a "no data" panel. :data:`ITEMS` are the stage's report items.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.report.items import ReportData, ReportItem, table_item
from mimic_deid.report.plotting import FigureInfo, legend, new_figure, no_data, save
from mimic_deid.tabular.stage import REPORT_INPUTS

__all__ = [
    "ITEMS",
    "concealing_table",
    "dps_table",
    "inverse_table",
    "joint_risk_table",
    "tabular_outputs",
    "nodes_checked_table",
    "ola_release_table",
    "plot_epsilon_la",
    "plot_loss_vs_suppression",
    "uniqueness_table",
]

NOT_RUN = pd.DataFrame({"note": ["tabular stage not run"]})
NO_MODELS = pd.DataFrame(
    {"note": ["no m-concealing model: tabular.procedures is 0 (PROCEDURES_ICD not read)"]}
)
METRIC_LABELS = {
    "prec": "Prec (normalised)",
    "dm_star": "DM* - DM*(original), normalised",
    "entropy": "Entropy (normalised)",
}


def tabular_outputs(data: ReportData) -> dict[str, Any]:
    """The tabular stage's outputs among the report's inputs, by the name its tables use
    (:data:`~mimic_deid.tabular.stage.REPORT_INPUTS`); empty when the stage did not run."""
    return {key: data.inputs[name] for name, key in REPORT_INPUTS.items() if name in data.inputs}


def uniqueness_table(tab: Mapping[str, Any]) -> pd.DataFrame:
    """Seed §3.1 / §3.2: rows, mean class size and records alone in their class per view."""
    if "uniqueness" not in tab:
        return NOT_RUN
    demo, procs = tab["uniqueness"]["demographics"], tab["uniqueness"]["procedures"]
    draws = demo["draws"]
    rows = []
    for law, label in (("normal", "YOB ~ N(mean, sd)"), ("uniform", "age uniform 0-99")):
        s = demo[law]
        rows.append(
            {
                "view": f"demographics, {label} ({draws} draws)",
                "rows": demo["rows"],
                "mean class size": f"{s['mean_class_size']['mean']:.2f} "
                f"[{s['mean_class_size']['min']:.2f}, {s['mean_class_size']['max']:.2f}]",
                "unique": f"{s['unique']['mean']:.0f} [{s['unique']['min']:.0f}, {s['unique']['max']:.0f}]",
                "unique %": f"{s['unique_percent']['mean']:.1f}",
            }
        )
    for name, s in (("demographics without YOB", demo["without_yob"]), *procs.items()):
        rows.append(
            {
                "view": name.replace("_", " "),
                "rows": s["rows"],
                "mean class size": f"{s['mean_class_size']:.2f}",
                "unique": f"{s['unique']}",
                "unique %": f"{s['unique_percent']:.1f}",
            }
        )
    return pd.DataFrame(rows)


def nodes_checked_table(tab: Mapping[str, Any]) -> pd.DataFrame:
    """Seed Table 6.9: nodes checked by OLA per k (rows) and max_sup (columns)."""
    if "ola" not in tab:
        return NOT_RUN
    grid = tab["ola"]
    first = grid["metric"].iloc[0]
    pivot = grid[grid["metric"] == first].pivot(index="k", columns="max_sup", values="checked")
    pivot.columns = [f"max_sup {c:g}" for c in pivot.columns]
    pivot = pivot.astype("Int64")  # counts; a k not computed has none
    pivot.insert(0, "lattice nodes", int(grid["lattice_size"].dropna().iloc[0]))
    reasons = _not_computable(grid)
    if reasons.any():  # a k above the table's rows: its row says why it has no figures
        pivot["not computable"] = reasons.groupby(grid["k"]).first().reindex(pivot.index)
    return pivot.reset_index()


def _not_computable(grid: pd.DataFrame) -> pd.Series:
    """Each grid row's reason for having no figures, without its prefix ('' if computed)."""
    if "not_computable" not in grid.columns:  # an older grid: every point computed
        return pd.Series("", index=grid.index)
    reasons = grid["not_computable"].fillna("").astype(str)
    return reasons.str.removeprefix("not computable: ")


def inverse_table(tab: Mapping[str, Any]) -> pd.DataFrame:
    """Seed Tables 6.2 / 6.3: best k of Inverse OLA per view, max loss and max suppression."""
    if "inverse" not in tab:
        return NOT_RUN
    cols = [
        "view",
        "max_loss",
        "max_sup",
        "k",
        "loss_normalised",
        "suppressed_percent",
        "procedures",
    ]
    return tab["inverse"][cols].rename(
        columns={"max_loss": "max loss", "max_sup": "max sup. %", "loss_normalised": "Prec",
                 "suppressed_percent": "suppressed %", "procedures": "procedures kept"}
    )  # fmt: skip


def concealing_table(tab: Mapping[str, Any]) -> pd.DataFrame:
    """Seed Tables 6.4-6.8: 1/m per model (columns), max loss and max suppression (rows)."""
    if "concealing" not in tab:
        return NOT_RUN
    if tab["concealing"].empty:
        return NO_MODELS
    conc = tab["concealing"]
    pivot = conc.pivot_table(index=["max_loss", "max_sup"], columns="model", values="inverse_m")
    pivot.columns = [f"1/m model {c}" for c in pivot.columns]
    k = conc.groupby(["max_loss", "max_sup"])["k"].first().rename("k (model A table)")
    return pivot.join(k).round(2).reset_index()


def dps_table(tab: Mapping[str, Any]) -> pd.DataFrame:
    """Seed §6.2.1: δ per admissible (β, ε) and k, the smallest k on the last line."""
    if "dps_grid" not in tab:
        return NOT_RUN
    grid = tab["dps_grid"].copy()
    summary = tab["dps"]
    grid = grid.map(lambda v: f"{v:.3g}" if isinstance(v, float) else v)
    note = {c: "" for c in grid.columns}
    note["beta"] = (
        f"smallest k of those tried with delta <= {summary['delta_max']:g} everywhere: "
        f"{summary['smallest_k_candidates']}; smallest integer k: {summary['smallest_k']}"
    )
    return pd.concat([grid, pd.DataFrame([note])], ignore_index=True)


def ola_release_table(tab: Mapping[str, Any]) -> pd.DataFrame:
    """The OLA release at ``tabular.release``: its node, the records kept and the verdict of
    its check (``check.json``, claims T1-T4 of :mod:`mimic_deid.tabular.check`)."""
    if "release" not in tab:
        return NOT_RUN
    r = tab["release"]
    verdict = tab.get("check", {}).get("verdict", "not checked")
    rows = [
        ("k", str(r["k"])),
        ("max_sup (% of records)", f"{r['max_sup']:g}"),
        ("loss metric", str(r["metric"])),
        *(
            (f"level of {name.removeprefix('level_')}", str(level))
            for name, level in r["levels"].items()
        ),
        ("records in", str(r["rows_in"])),
        ("records released", str(r["rows_released"])),
        ("records suppressed", str(r["suppressed"])),
        ("smallest class", str(r["smallest_class"])),
        ("normalised loss", f"{r['loss_normalised']:.3f}"),
        ("verdict of its check", str(verdict)),
    ]
    return pd.DataFrame(rows, columns=["OLA release", "value"])


def joint_risk_table(tab: Mapping[str, Any]) -> pd.DataFrame:
    """Seed 000 §7.2: classes of the released stays by duration class and demographics."""
    if "joint_risk" not in tab:
        return NOT_RUN
    return tab["joint_risk"].rename(
        columns={"mean_class_size": "mean class size", "unique_percent": "unique %",
                 "smallest_class": "smallest class"}
    )  # fmt: skip


def plot_loss_vs_suppression(tab: Mapping[str, Any], out_path: str | os.PathLike) -> FigureInfo:
    """Seed Fig. 6.1: normalised loss of OLA's node against max_sup, a line per k."""
    metrics = list(dict.fromkeys(tab["ola"]["metric"])) if "ola" in tab else ["prec"]
    fig = new_figure(4.2 * len(metrics), 3.6)
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics, strict=True):
        ax.set_xlabel("maximum suppression (% of records)")
        ax.set_ylabel(METRIC_LABELS.get(metric, metric))
        ax.set_title(metric)
        if "ola" not in tab:
            no_data(ax, "tabular stage not run")
            continue
        grid = tab["ola"][(tab["ola"]["metric"] == metric) & (_not_computable(tab["ola"]) == "")]
        for k, rows in grid.groupby("k"):
            rows = rows.sort_values("max_sup")
            ax.plot(rows["max_sup"], rows["loss_normalised"], marker="o", label=f"k = {k}")
        legend(ax)
    fig.suptitle("Information loss of OLA's node against allowed suppression")
    return save(fig, out_path)


def plot_epsilon_la(tab: Mapping[str, Any], out_path: str | os.PathLike) -> FigureInfo:
    """Seed Figs. 6.3 / 6.4 (top) and C.1 (bottom) against the penalty factor, per mode.

    Top: probability of a good node; bottom: expected suppressed percent of the sample.
    """
    fig = new_figure(9.0, 6.6)
    axes = fig.subplots(2, 2)
    panels = (("p_good", "P(good node)"), ("expected_suppressed_percent", "expected suppressed %"))
    for row, (column, label) in enumerate(panels):
        for ax, mode in zip(axes[row], ("suppression", "kanonymity"), strict=True):
            ax.set_xlabel("penalty factor")
            ax.set_ylabel(label)
            ax.set_title(f"{mode}-based penalty")
            if "epsilon_la" not in tab:
                no_data(ax, "tabular stage not run")
                continue
            la = tab["epsilon_la"]
            reasons = _not_computable(la)
            if (reasons != "").all():  # la_k above the table's rows: no figure to draw
                no_data(ax, "not computable: la_k exceeds\nthe demographics table's rows")
                continue
            for ep, rows in la[la["mode"] == mode].groupby("epsilon_prime"):
                rows = rows.sort_values("penalty")
                ax.plot(rows["penalty"], rows[column], marker="o", label=f"eps' = {ep:g}")
            base = la[la["mode"] == "uniform"][column]
            if len(base):
                ax.axhline(float(np.mean(base)), color="k", linestyle=":", label="uniform node")
            if column == "p_good":
                ax.set_ylim(-0.02, 1.02)
            legend(ax, fontsize=8)
    fig.suptitle("epsilon-safe LA: good nodes (Prec < 0.5, suppression < 5 %) and suppression")
    return save(fig, out_path)


def _table(make: Callable[[Mapping[str, Any]], pd.DataFrame]) -> Callable[[ReportData, str], None]:
    return table_item(lambda d: make(tabular_outputs(d)))


#: The tabular stage's report items, in page order.
ITEMS: tuple[ReportItem, ...] = (
    ReportItem(
        "tabular_uniqueness",
        "table",
        "Tabular: demographics and procedures",
        "Records alone in their class: demographics and procedure sequences (seed 003 §3.1, §3.2).",
        _table(uniqueness_table),
    ),
    ReportItem(
        "tabular_loss_vs_suppression",
        "figure",
        "Tabular: demographics and procedures",
        "OLA: information loss of the chosen node against allowed suppression (seed 003 Fig. 6.1).",
        lambda d, out: plot_loss_vs_suppression(tabular_outputs(d), out),
    ),
    ReportItem(
        "tabular_nodes_checked",
        "table",
        "Tabular: demographics and procedures",
        "OLA: lattice nodes checked per k and max_sup (seed 003 Table 6.9).",
        _table(nodes_checked_table),
    ),
    ReportItem(
        "tabular_inverse_ola",
        "table",
        "Tabular: demographics and procedures",
        "Inverse OLA: best k within a loss budget (seed 003 Tables 6.2, 6.3).",
        _table(inverse_table),
    ),
    ReportItem(
        "tabular_concealing",
        "table",
        "Tabular: demographics and procedures",
        "m-concealing of Inverse OLA's releases when procedures may be known (seed 003 Tables 6.4-6.8).",
        _table(concealing_table),
    ),
    ReportItem(
        "tabular_dps",
        "table",
        "Tabular: demographics and procedures",
        "DPS: delta per (beta, epsilon) and k (seed 003 §6.2.1).",
        _table(dps_table),
    ),
    ReportItem(
        "tabular_epsilon_la",
        "figure",
        "Tabular: demographics and procedures",
        "epsilon-safe LA: probability of a good node and suppression per penalty (seed 003 Figs. 6.3, 6.4, C.1).",
        lambda d, out: plot_epsilon_la(tabular_outputs(d), out),
    ),
    ReportItem(
        "tabular_release",
        "table",
        "Tabular: demographics and procedures",
        "The OLA release at tabular.release: its node, the records kept and the verdict of "
        "its check (claims T1-T4).",
        _table(ola_release_table),
    ),
    ReportItem(
        "tabular_joint_risk",
        "table",
        "Tabular: demographics and procedures",
        "Released stays by duration class and demographics: what holding both reveals "
        "(seed 000 §7.2).",
        _table(joint_risk_table),
    ),
)
