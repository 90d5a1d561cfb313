"""Report items of the sequences stage (seed 004 Figs. 2-5, the Friedman tests, the attack).

Drawn from the stage's public sweep tables (``results/sequences/<table>/sweep.csv``) and
Friedman tables, concatenated over the tables, and its verbatim-copy attacks
(``attack.json``, :mod:`mimic_deid.sequences.attack`), as the report's reader read them
(inputs ``sequences_<artefact>_<table>``, :data:`mimic_deid.sequences.stage.REPORT_INPUTS`).
:data:`ITEMS` are the stage's report items.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

import numpy as np
import pandas as pd

from mimic_deid.report.items import ReportData, ReportItem, table_item
from mimic_deid.report.plotting import FigureInfo, new_figure, no_data, save
from mimic_deid.sequences.card import GUARANTEE

__all__ = [
    "ATTACK_COLUMNS",
    "GUARANTEE",
    "ITEMS",
    "attack_table",
    "plot_sequences",
    "sequences_table",
    "sweep_rows",
]

MEASURES = (
    ("similarity", "Definition 4 similarity"),
    ("top20_intersection", "top-20 2-gram intersection (%)"),
    ("mean_support", "mean support of released counts"),
    ("suppression_rate", "suppressed share of the counts (%)"),
)
#: The measures that are shares: the report shows them in percent, as every other section
#: (the stage's sweep.csv keeps fractions 0-1), under these column names.
PERCENT_MEASURES = {
    "top20_intersection": "top20_intersection_pct",
    "suppression_rate": "suppressed_pct",
}


def _in_percent(sweep: pd.DataFrame) -> pd.DataFrame:
    """``sweep`` with the share measures (:data:`PERCENT_MEASURES`) times 100."""
    out = sweep.copy()
    for col in PERCENT_MEASURES:
        if col in out.columns:
            out[col] = 100.0 * out[col]
    return out


def _eps_x(eps: pd.Series) -> np.ndarray:
    """Plot positions: finite eps as they are, inf one step past the largest."""
    finite = eps[np.isfinite(eps)]
    top = float(finite.max()) if len(finite) else 1.0
    return np.where(np.isfinite(eps), eps, top * 1.3 + 0.1)


def plot_sequences(sweep: pd.DataFrame, out_path: str | os.PathLike) -> FigureInfo:
    """The four seed measures against eps: one row of panels per measure, a line per table and
    mechanism (mean over |H|, w and repetitions; refused points, whose measures are empty, are
    left out); inf is drawn to the right of the largest eps.
    Mean support is on a log scale."""
    sweep = _in_percent(sweep)
    fig = new_figure(11.5, 7.5)
    axes = fig.subplots(2, 2).ravel()
    fig.suptitle("Sequences (seed 004): quality and anonymity against eps")
    for ax, (col, label) in zip(axes, MEASURES, strict=True):
        ax.set_title(label)
        ax.set_xlabel("eps (rightmost point: inf)")
        if sweep.empty:
            no_data(ax)
            continue
        for (table, mech), d in sweep.groupby(["table", "mechanism"], sort=True):
            m = d.groupby("epsilon")[col].mean()
            ax.plot(_eps_x(m.index.to_series()), m.to_numpy(), marker="o",
                    linestyle="-" if mech == "seed_ratio" else "--", label=f"{table} {mech}")  # fmt: skip
        if col == "mean_support":
            ax.set_yscale("log")  # Laplace noise on empty cells dwarfs the seed's counts
        ax.legend()
    return save(fig, out_path)


def sequences_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """Mean of each measure per table, mechanism and eps, with what the mechanism promises.

    The shares are in percent (columns ``top20_intersection_pct``, ``suppressed_pct``); the
    similarity is a score in [0, 1] and the mean support a count.
    """
    if sweep.empty:
        return pd.DataFrame({"note": ["no sequences sweep in this run"]})
    cols = [c for c, _ in MEASURES]
    out = _in_percent(sweep).groupby(["table", "mechanism", "epsilon"], sort=True)[cols].mean()
    out = out.reset_index().rename(columns=PERCENT_MEASURES)
    out["epsilon"] = [("inf" if math.isinf(e) else f"{e:g}") for e in out["epsilon"]]
    out["guarantee"] = out["mechanism"].map(GUARANTEE)
    return out


#: The columns of the attack table: the release's copies, then the holdout comparison.
ATTACK_COLUMNS = (
    "table",
    "released",
    "verbatim_pct",
    "verbatim_unique_pct",
    "unique_reproduced",
    "member_hit_rate_pct",
    "holdout_hit_rate_pct",
    "advantage_pct",
    "advantage_se_pct",
    "verdict",
)


def attack_table(attacks: list[dict], verdicts: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per table of the verbatim-copy attack (``attack.json`` of each table).

    ``verdicts`` maps a table name (as ``attack.json`` spells it, e.g. ``TRANSFERS``) to its
    release's verdict (``check.json``: ``certified`` or ``refused: ...``); ``verdict`` is
    ``n/a`` for a table without one.

    All shares in percent (``attack.json`` holds fractions): ``verbatim_pct`` and
    ``verbatim_unique_pct``: released sequences that copy a source sequence, and one unique in
    the source; ``unique_reproduced``: how many unique source sequences the release holds;
    ``member_hit_rate_pct`` / ``holdout_hit_rate_pct``: unique paths of the member and the
    holdout half found in the release fitted on the member half; ``advantage_pct`` their
    difference (percentage points), ``advantage_se_pct`` its standard error.
    """
    if not attacks:
        return pd.DataFrame({"note": ["no sequences release in this run"]})
    rows = [
        {
            "table": a["table"],
            "released": a["release"]["released"],
            "verbatim_pct": 100.0 * a["release"]["verbatim"],
            "verbatim_unique_pct": 100.0 * a["release"]["verbatim_unique"],
            "unique_reproduced": a["release"]["unique_reproduced"],
            "member_hit_rate_pct": 100.0 * a["members"]["unique_reproduced_share"],
            "holdout_hit_rate_pct": 100.0 * a["holdout"]["unique_reproduced_share"],
            "advantage_pct": 100.0 * a["advantage"],
            "advantage_se_pct": 100.0 * a["advantage_se"],
            "verdict": (verdicts or {}).get(a["table"], "n/a"),
        }
        for a in attacks
    ]
    return pd.DataFrame(rows, columns=list(ATTACK_COLUMNS))


def _stacked(data: ReportData, prefix: str) -> pd.DataFrame:
    """The per-table frames of inputs ``<prefix><table>`` stacked, in input-name order."""
    frames = [v for k, v in sorted(data.inputs.items()) if k.startswith(prefix)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def sweep_rows(data: ReportData) -> pd.DataFrame:
    """The stage's sweep rows over its tables (empty when the stage is not part of the run)."""
    return _stacked(data, "sequences_sweep_")


def _friedman(data: ReportData) -> pd.DataFrame:
    tests = _stacked(data, "sequences_friedman_")
    return tests if not tests.empty else pd.DataFrame({"note": ["no sequences sweep in this run"]})


def _attacks(data: ReportData) -> pd.DataFrame:
    attacks = [v for k, v in sorted(data.inputs.items()) if k.startswith("sequences_attack_")]
    verdicts = {  # keyed as attack.json names its table (input sequences_check_<t>)
        k.removeprefix("sequences_check_").upper(): v["verdict"]
        for k, v in sorted(data.inputs.items())
        if k.startswith("sequences_check_")
    }
    return attack_table(attacks, verdicts)


#: The sequences stage's report items, in page order.
ITEMS: tuple[ReportItem, ...] = (
    ReportItem(
        "sequences_measures",
        "figure",
        "Sequences (seed 004)",
        "Markov-model synthesis of TRANSFERS and CPTEVENTS: the seed's four measures against "
        "eps (seed Figs. 2-5). seed_ratio is the seed's ratio test and is NOT eps-differential "
        "privacy; laplace is eps-DP for the released counts.",
        lambda d, out: plot_sequences(sweep_rows(d), out),
    ),
    ReportItem(
        "sequences_summary",
        "table",
        "Sequences (seed 004)",
        "Mean measures per table, mechanism and eps, with what each mechanism promises.",
        table_item(lambda d: sequences_table(sweep_rows(d))),
    ),
    ReportItem(
        "sequences_friedman",
        "table",
        "Sequences (seed 004)",
        "Friedman tests across the LSH settings (|H|, w), blocks = (eps, repetition).",
        table_item(_friedman),
    ),
    ReportItem(
        "sequences_attack",
        "table",
        "Sequences (seed 004)",
        "Verbatim-copy attack on each release: released sequences that copy a source sequence "
        "unique in the source, and the membership advantage against a holdout half.",
        table_item(_attacks),
    ),
)
