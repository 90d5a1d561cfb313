"""The claims of the codes stage's public outputs, checked after the stage ran.

The codes stage releases no record: its public files (``results/codes/``) are aggregates of
the cohort's diagnosis codes (docs/codes.md). The claims, numbered C1-C3 beside the series
releases' claims of :mod:`mimic_deid.deid.check`, state that and are re-checked from the files
as a recipient receives them:

C1. **columns**: no public table has an identifier column (``subject_id``, ``hadm_id``, ...),
    a column named for a time, a date or an age, a datetime-typed column or timestamp-like
    values (:func:`mimic_deid.core.claims.identifier_columns`), and no key of the public JSON
    files is an identifier name.
C2. **aggregates only**: each public table holds exactly one row per configured setting, so
    no row can stand for a record: GCCens one per k of ``codes.gccens.k`` (``table = k``) and
    per cap of ``codes.gccens.caps`` (``table = cap``), LDA one per alignment and k of
    ``codes.lda.k``. An empty table publishes nothing: GCCens writes one when none of its
    codes occurs in the cohort (logged); an empty LDA table passes only when ``lda.json``
    says so (``absent_codes``).
C3. **k-anonymous LDA**: at every k, each published trajectory of the LDA clustering is
    shared by at least k records (``smallest_group >= k``), as seed 002 §IV requires.

:func:`check_codes_outputs` gives the public ``results/codes/check.json``
(:func:`mimic_deid.core.claims.verdict`; a refusal is a result, not a crash, unless
``strict``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pandas as pd

from mimic_deid.codes.stage import gccens_runs
from mimic_deid.core.claims import (
    FORBIDDEN_COLUMNS,
    FORBIDDEN_SUBSTRINGS,
    identifier_columns,
    verdict,
)
from mimic_deid.core.errors import ReleaseCheckError
from mimic_deid.core.logs import get_logger

__all__ = [
    "check_aggregate_rows",
    "check_codes_outputs",
    "check_lda_k_anonymous",
    "check_public_columns",
]

log = get_logger(__name__)


def _json_keys(value: object, where: str) -> Iterator[tuple[str, str]]:
    """(path, key) of every key of a JSON value, depth first."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield where, str(key)
            yield from _json_keys(item, f"{where}.{key}")
    elif isinstance(value, list):
        for item in value:
            yield from _json_keys(item, where)


def check_public_columns(
    tables: Mapping[str, pd.DataFrame], documents: Mapping[str, object]
) -> dict:
    """Claim C1 over the public ``tables`` and JSON ``documents`` (by file name)."""
    problems = []
    for name, table in tables.items():
        problems += identifier_columns(table, name, FORBIDDEN_COLUMNS, FORBIDDEN_SUBSTRINGS)
    forbidden = {c.lower() for c in FORBIDDEN_COLUMNS}
    for name, document in documents.items():
        problems += [
            f"{where}.{key}: identifier key"
            for where, key in _json_keys(document, name)
            if key.lower() in forbidden
        ]
    if problems:
        raise ReleaseCheckError(f"claim C1 (columns): {'; '.join(problems)}")
    return {"tables": sorted(tables), "documents": sorted(documents)}


def _rows_match(table: pd.DataFrame, columns: Sequence[str], expected: list[tuple], name: str):
    got = sorted(map(tuple, table[list(columns)].astype(str).to_numpy().tolist()))
    want = sorted(tuple(str(v) for v in row) for row in expected)
    if got != want:
        raise ReleaseCheckError(
            f"claim C2 (aggregates only): {name} holds {len(got)} row(s) of "
            f"({', '.join(columns)}), expected one per configured setting: {len(want)} "
            f"({', '.join('/'.join(r) for r in want)})"
        )


def check_aggregate_rows(
    gccens: pd.DataFrame,
    lda: pd.DataFrame,
    lda_info: Mapping,
    section: Mapping,
    alignments: Sequence[str],
) -> dict:
    """Claim C2: one row per configured setting in ``gccens_cul.csv`` and ``lda.csv``.

    Parameters
    ----------
    gccens, lda : DataFrame
        The public tables as written.
    lda_info : mapping
        ``lda.json``; its ``absent_codes`` allows an empty LDA table.
    section : mapping
        Config section ``codes``.
    alignments : sequence of str
        The LDA alignments the stage runs (:data:`mimic_deid.codes.lda.ALIGNMENTS`).
    """
    g, lda_cfg = section["gccens"], section["lda"]
    # an empty GCCens table: none of its codes in the cohort (logged by the job); the table
    # then publishes nothing at all
    if len(gccens):
        runs = gccens_runs(g["k"], g["cap"], g["caps"], g["k_caps"])
        _rows_match(gccens, ("table", "k", "cap"), runs, "gccens_cul.csv")
    if len(lda) or "absent_codes" not in lda_info:
        _rows_match(
            lda,
            ("alignment", "k"),
            [(a, k) for a in alignments for k in lda_cfg["k"]],
            "lda.csv",
        )
    return {"gccens_rows": len(gccens), "lda_rows": len(lda)}


def check_lda_k_anonymous(lda: pd.DataFrame) -> dict:
    """Claim C3: ``smallest_group >= k`` in every row of ``lda.csv``."""
    short = lda[lda["smallest_group"] < lda["k"]]
    if len(short):
        rows = ", ".join(
            f"{a} k={k}: {s}"
            for a, k, s in short[["alignment", "k", "smallest_group"]].itertuples(index=False)
        )
        raise ReleaseCheckError(
            f"claim C3 (k-anonymous LDA): a published trajectory is shared by fewer than k "
            f"records ({rows})"
        )
    smallest = lda["smallest_group"] - lda["k"]
    return {"min_margin": int(smallest.min()) if len(lda) else None}


def check_codes_outputs(
    audit: Mapping,
    gccens: pd.DataFrame,
    lda: pd.DataFrame,
    lda_info: Mapping,
    section: Mapping,
    alignments: Sequence[str],
    *,
    strict: bool = True,
) -> dict:
    """Claims C1-C3 of the codes stage's public outputs (``check.json``).

    Parameters
    ----------
    audit : mapping
        ``audit.json``.
    gccens, lda : DataFrame
        ``gccens_cul.csv`` and ``lda.csv`` as written.
    lda_info : mapping
        ``lda.json``.
    section : mapping
        Config section ``codes``.
    alignments : sequence of str
        The LDA alignments the stage runs.
    strict : bool
        Raise :class:`~mimic_deid.core.errors.ReleaseCheckError` on the first failed claim
        instead of returning the refusal.

    Returns
    -------
    dict
        ``{"passed", "verdict", "outputs", "checks"}`` as :func:`mimic_deid.core.claims.verdict`.
    """

    def claims(checks: dict) -> None:
        checks["columns"] = check_public_columns(
            {"gccens_cul.csv": gccens, "lda.csv": lda},
            {"audit.json": audit, "lda.json": lda_info},
        )
        checks["aggregates"] = check_aggregate_rows(gccens, lda, lda_info, section, alignments)
        checks["lda_k_anonymity"] = check_lda_k_anonymous(lda)
        log.info("codes outputs check passed")

    return verdict(claims, strict, {"outputs": "results/codes"})
