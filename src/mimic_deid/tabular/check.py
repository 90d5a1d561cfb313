"""The claims of the tabular stage's release (seed 003's OLA release), checked before it is published.

The release (``results/private/tabular/release.parquet``, made by
:func:`~mimic_deid.tabular.stage.release_table`) and its summary (``release.json``) are
re-checked from the owner's demographics table, claim by claim (numbered T1-T4, beside the
series releases' claims of :mod:`mimic_deid.deid.check`):

T1. **columns**: exactly the configured quasi-identifiers, in order; none is an identifier
    (``subject_id``, ``hadm_id``, ...), datetime-typed or holding timestamp-like values
    (:func:`mimic_deid.core.claims.identifier_columns`; the name substrings of claim 1 are not
    applied, since ``language`` holds ``age``, and the columns are a closed list instead).
T2. **generalisation**: the released rows are exactly the owner's records generalised at the
    lattice node the summary states (``levels``), without the records of classes smaller than
    ``k``: no value is published below its stated level, no record is added or altered.
T3. **k-anonymity**: every released combination of values is shared by at least ``k`` rows
    (``k`` of config ``tabular.release``, which the summary must state).
T4. **suppression**: ``rows_in`` is the owner's record count, ``rows_released`` the release's,
    ``suppressed`` their difference, and at most ``floor(max_sup / 100 * rows_in)``.

:func:`check_tabular_release` gives the public ``results/tabular/check.json``
(:func:`mimic_deid.core.claims.verdict`; a refusal is a result, not a crash, unless ``strict``).
The release itself stays owner-only: OLA may keep the year of birth at level 0, a raw year
of birth, which no release of this project publishes; the stage publishes aggregates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from mimic_deid.core.claims import FORBIDDEN_COLUMNS, identifier_columns, verdict
from mimic_deid.core.errors import ReleaseCheckError
from mimic_deid.core.logs import get_logger
from mimic_deid.deid.hierarchy import encode

__all__ = [
    "check_generalisation",
    "check_k_anonymous",
    "check_release_columns",
    "check_suppression",
    "check_tabular_release",
]

log = get_logger(__name__)
#: How the claims name the release.
TABLE = "tabular/release"


def check_release_columns(release: pd.DataFrame, qis: Sequence[str]) -> dict:
    """T1: the columns are the quasi-identifiers ``qis``, none an identifier or a time."""
    problems = identifier_columns(release, TABLE, FORBIDDEN_COLUMNS, ())
    if problems:
        raise ReleaseCheckError(
            "identifier or timestamp in the tabular release: " + "; ".join(problems)
        )
    if list(map(str, release.columns)) != list(qis):
        raise ReleaseCheckError(
            f"{TABLE}: columns must be the quasi-identifiers {', '.join(qis)}, got "
            f"{', '.join(map(str, release.columns))}"
        )
    return {"columns": list(qis)}


def check_generalisation(
    release: pd.DataFrame,
    demographics: pd.DataFrame,
    hierarchies: Mapping,
    qis: Sequence[str],
    levels: Mapping[str, int],
    k: int,
) -> dict:
    """T2: the release is the owner's table at the stated node, classes below ``k`` removed.

    ``levels`` as the summary states them: ``level_<column>`` -> hierarchy level.
    """
    missing = [c for c in qis if f"level_{c}" not in levels]
    if missing:
        raise ReleaseCheckError(f"{TABLE}: the summary states no level for {missing}")
    enc = encode(demographics, qis, hierarchies, "demographics table")
    node = [int(levels[f"level_{c}"]) for c in qis]
    stated = {f"level_{c}": lv for c, lv in zip(qis, node, strict=True)}
    expected = enc.labels(node)
    sizes = expected.groupby(list(qis), sort=False, dropna=False)[qis[0]].transform("size")
    expected = expected[sizes.to_numpy() >= k]
    order = list(qis)
    got = release[order].astype(str).sort_values(order, kind="stable").reset_index(drop=True)
    want = expected.astype(str).sort_values(order, kind="stable").reset_index(drop=True)
    if len(got) != len(want) or not got.equals(want):
        differ = len(pd.concat([got, want]).drop_duplicates(keep=False))
        raise ReleaseCheckError(
            f"{TABLE}: the rows are not the owner's records generalised at levels "
            f"{dict(zip(qis, node, strict=True))} with the classes below k = {k} removed "
            f"({len(got)} rows released, {len(want)} expected, {differ} distinct rows differ)"
        )
    return {"levels": stated, "rows": len(got)}


def check_k_anonymous(release: pd.DataFrame, qis: Sequence[str], k: int) -> dict:
    """T3: every released combination of the quasi-identifiers has at least ``k`` rows."""
    if release.empty:
        return {"k": int(k), "classes": 0, "smallest_class": 0}
    sizes = release.groupby(list(qis), sort=False, dropna=False).size()
    smallest = int(sizes.min())
    if smallest < k:
        raise ReleaseCheckError(
            f"{TABLE}: {int((sizes < k).sum())} combination(s) of the quasi-identifiers are "
            f"shared by fewer than k = {k} rows (smallest: {smallest})"
        )
    return {"k": int(k), "classes": int(len(sizes)), "smallest_class": smallest}


def check_suppression(
    summary: Mapping, n_records: int, n_released: int, k: int, max_sup: float
) -> dict:
    """T4: the summary's counts are the owner's and the release's, suppression within bound."""
    allowed = math.floor(max_sup / 100.0 * n_records)
    stated = {key: summary.get(key) for key in ("k", "rows_in", "rows_released", "suppressed")}
    actual = {
        "k": int(k),
        "rows_in": int(n_records),
        "rows_released": int(n_released),
        "suppressed": int(n_records - n_released),
    }
    if stated != actual:
        raise ReleaseCheckError(f"{TABLE}: the summary states {stated}, the data give {actual}")
    if actual["suppressed"] > allowed:
        raise ReleaseCheckError(
            f"{TABLE}: {actual['suppressed']} records suppressed, above max_sup = {max_sup} % "
            f"of {n_records} ({allowed})"
        )
    return {**actual, "max_suppressed": allowed}


def check_tabular_release(
    release: pd.DataFrame,
    summary: Mapping,
    demographics: pd.DataFrame,
    hierarchies: Mapping,
    qis: Sequence[str],
    *,
    k: int,
    max_sup: float,
    strict: bool = True,
) -> dict:
    """Claims T1-T4 of the tabular release (``check.json``).

    Parameters
    ----------
    release : DataFrame
        The staged release, one string column per quasi-identifier.
    summary : mapping
        Its ``release.json`` (``k``, ``levels``, ``rows_in``, ``rows_released``, ``suppressed``).
    demographics : DataFrame
        The owner's demographics table the release was made from.
    hierarchies : mapping
        :func:`~mimic_deid.deid.hierarchy.load_hierarchies` of the run.
    qis : sequence of str
        The quasi-identifiers (demographics, then ``proc_<i>``).
    k, max_sup : int, float
        Config ``tabular.release``.
    strict : bool
        Raise :class:`~mimic_deid.core.errors.ReleaseCheckError` on the first failed claim instead
        of returning the refusal.

    Returns
    -------
    dict
        ``{"passed", "verdict", "table", "checks"}`` as :func:`mimic_deid.core.claims.verdict`.
    """

    def claims(checks: dict) -> None:
        checks["columns"] = check_release_columns(release, qis)
        checks["generalisation"] = check_generalisation(
            release, demographics, hierarchies, qis, summary.get("levels", {}), k
        )
        checks["k_anonymity"] = check_k_anonymous(release, qis, k)
        checks["suppression"] = check_suppression(
            summary, len(demographics), len(release), k, max_sup
        )
        log.info("tabular release check passed: %d rows", len(release))

    return verdict(claims, strict, {"table": TABLE})
