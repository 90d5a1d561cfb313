"""The diagnosis-code stage's report items (seed 002): its distinguishability curves and the
GCCens and LDA tables, drawn from the stage's public aggregates.

:func:`load_codes` reads them from the report rule's inputs (``codes_audit``, ``codes_gccens``,
``codes_lda``, present when the stage is selected, :data:`mimic_deid.stages.STAGES`); each
item draws an empty figure or table with its columns when the stage did not run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from mimic_deid.codes.audit import plot_dis_cdf_points
from mimic_deid.core.atomic import read_json
from mimic_deid.report.tables import write_table

__all__ = [
    "GCCENS_COLUMNS",
    "LDA_COLUMNS",
    "gccens_table",
    "lda_table",
    "load_codes",
    "plot_distinguishability",
]

#: The columns of the report's GCCens table (seed 002 Tables 1 and 2).
GCCENS_COLUMNS = ("table", "k", "cap", "mean", "sd", "median", "skewness", "modified_percent")
#: The columns of the report's LDA table.
LDA_COLUMNS = ("alignment", "k", "ilm", "alm", "lm", "avg_re", "clusters")


def load_codes(inputs: Mapping[str, str]) -> dict[str, Any]:
    """The codes stage's public outputs among ``inputs``: ``audit`` (audit.json, a dict),
    ``gccens`` and ``lda`` (DataFrames), each present when the run produced it."""
    out: dict[str, Any] = {}
    if "codes_audit" in inputs:
        out["audit"] = read_json(inputs["codes_audit"])
    for name in ("gccens", "lda"):
        if f"codes_{name}" in inputs:
            out[name] = pd.read_csv(inputs[f"codes_{name}"])
    return out


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
