"""The diagnosis-code stage's report items (seed 002): its distinguishability curves and the
GCCens and LDA tables, drawn from the stage's public aggregates.

:func:`codes_outputs` selects them among the report's inputs (``codes_audit``,
``codes_gccens``, ``codes_lda``: :data:`mimic_deid.codes.stage.REPORT_INPUTS`, present when
the stage is selected); each item of :data:`ITEMS` draws an empty figure or table with its
columns when the stage did not run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from mimic_deid.codes.audit import plot_dis_cdf_points
from mimic_deid.report.items import ReportData, ReportItem
from mimic_deid.report.tables import write_table

__all__ = [
    "GCCENS_COLUMNS",
    "ITEMS",
    "LDA_COLUMNS",
    "codes_outputs",
    "gccens_table",
    "lda_table",
    "plot_distinguishability",
]

#: The columns of the report's GCCens table (seed 002 Tables 1 and 2).
GCCENS_COLUMNS = ("table", "k", "cap", "mean", "sd", "median", "skewness", "modified_percent")
#: The columns of the report's LDA table.
LDA_COLUMNS = ("alignment", "k", "ilm", "alm", "lm", "avg_re", "clusters")


def codes_outputs(data: ReportData) -> dict[str, Any]:
    """The codes stage's public outputs among the report's inputs: ``audit`` (audit.json, a
    dict), ``gccens`` and ``lda`` (DataFrames), each present when the run produced it."""
    return {
        name: data.inputs[f"codes_{name}"]
        for name in ("audit", "gccens", "lda")
        if f"codes_{name}" in data.inputs
    }


def plot_distinguishability(codes: Mapping[str, Any], out: str | os.PathLike) -> None:
    """The audit's distinguishability CDF from ``audit.json``'s points (public aggregates)."""
    plot_dis_cdf_points(codes.get("audit"), out)


def _table(table: pd.DataFrame | None, columns: tuple[str, ...], out: str | os.PathLike) -> None:
    """A codes-stage table, or an empty one with its columns when the stage did not run."""
    df = pd.DataFrame(columns=list(columns)) if table is None else table[list(columns)]
    write_table(df, out, Path(out).with_suffix(".md"), float_format="{:.3f}")


def gccens_table(codes: Mapping[str, Any], out: str | os.PathLike) -> None:
    """The GCCens table (:data:`GCCENS_COLUMNS`)."""
    _table(codes.get("gccens"), GCCENS_COLUMNS, out)


def lda_table(codes: Mapping[str, Any], out: str | os.PathLike) -> None:
    """The LDA table (:data:`LDA_COLUMNS`)."""
    _table(codes.get("lda"), LDA_COLUMNS, out)


#: The codes stage's report items, in page order.
ITEMS: tuple[ReportItem, ...] = (
    ReportItem(
        "codes_distinguishability",
        "figure",
        "Diagnosis codes (seed 002)",
        "Distinguishability of the cohort's diagnosis codes: percent of records matching at "
        "most x population records (seed Fig. 2).",
        lambda d, out: plot_distinguishability(codes_outputs(d), out),
    ),
    ReportItem(
        "codes_gccens",
        "table",
        "Diagnosis codes (seed 002)",
        "GCCens: CUL statistics by k and by cap (seed Tables 1/2).",
        lambda d, out: gccens_table(codes_outputs(d), out),
    ),
    ReportItem(
        "codes_lda",
        "table",
        "Diagnosis codes (seed 002)",
        "LDA: information loss and query error of k-anonymous (ICD, age) trajectories, "
        "Baseline vs A-GS alignment.",
        lambda d, out: lda_table(codes_outputs(d), out),
    ),
)
