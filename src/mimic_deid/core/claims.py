"""What every release's check shares: its verdict and the identifier test of its columns.

A release of any stage is staged privately, re-checked claim by claim by its own check rule
(the series releases: :mod:`mimic_deid.deid.check`; the sequence releases:
:mod:`mimic_deid.sequences.check`; the tabular release: :mod:`mimic_deid.tabular.check`) and
published only when certified. :func:`verdict` turns the claims into ``check.json``;
:func:`identifier_columns` is the test of claim 1 (no identifier, timestamp or age column)
that every release's columns pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from mimic_deid.core.errors import ReleaseCheckError
from mimic_deid.core.logs import get_logger

__all__ = [
    "ClaimInputs",
    "FORBIDDEN_COLUMNS",
    "FORBIDDEN_SUBSTRINGS",
    "identifier_columns",
    "verdict",
]


@dataclass(frozen=True)
class ClaimInputs:
    """What a release method's own claims hook is given (``ReleaseMethod.claims``).

    Attributes
    ----------
    per_series : DataFrame
        The method's per-series table (``method.parquet``).
    series_public, pseudonyms : DataFrame
        The staged release's series and the pseudonym table.
    params : mapping
        The method label's parameters.
    k : int
        The point's k (fk for a ``k_from_fk`` method).
    plausible : PlausibleValues or None
        The projection onto plausible values the release went through.
    """

    per_series: pd.DataFrame
    series_public: pd.DataFrame
    pseudonyms: pd.DataFrame
    params: Mapping[str, Any]
    k: int
    plausible: Any = None


log = get_logger(__name__)

FORBIDDEN_COLUMNS = ("subject_id", "hadm_id", "icustay_id", "row_id")
FORBIDDEN_SUBSTRINGS = ("time", "date", "dob", "dod", "age")
_ISO_TIMESTAMP = re.compile(r"^\s*\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?")


def identifier_columns(
    df: pd.DataFrame,
    table: str,
    forbidden_columns: Iterable[str],
    forbidden_substrings: Iterable[str],
) -> list[str]:
    """Problems ("table.column: why") with columns that look like ids, times or ages."""
    problems = []
    exact = {c.lower() for c in forbidden_columns}
    for col in df.columns:
        name = str(col).lower()
        if name in exact:
            problems.append(f"{table}.{col}: identifier column")
            continue
        hit = [s for s in forbidden_substrings if s in name]
        if hit:
            problems.append(f"{table}.{col}: name contains '{hit[0]}'")
            continue
        dtype = df[col].dtype
        if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype):
            problems.append(f"{table}.{col}: datetime-typed column")
            continue
        if pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
            values = pd.Series(pd.unique(df[col].dropna())).astype(str)
            if values.str.match(_ISO_TIMESTAMP).any():
                problems.append(f"{table}.{col}: values look like ISO timestamps")
    return problems


def verdict(claims: Callable[[dict], None], strict: bool, fields: dict) -> dict:
    """``check.json`` of a release: ``claims(checks)`` fills ``checks`` claim by claim; the
    first :class:`ReleaseCheckError` is raised with ``strict``, otherwise it is the verdict
    ``refused: <claim and figures>`` (the figures of the claims checked before it are kept)."""
    checks: dict = {}
    try:
        claims(checks)
    except ReleaseCheckError as exc:
        if strict:
            raise
        log.warning("release refused: %s", exc)
        return {"passed": False, "verdict": f"refused: {exc}", **fields, "checks": checks}
    return {"passed": True, "verdict": "certified", **fields, "checks": checks}
