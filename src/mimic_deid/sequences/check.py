"""The claims of a synthetic sequence release (seed 004), checked before it is published.

A release of the ``sequences`` stage (``sequences/{table}/release.parquet``) and the
verbatim-copy attack on it (``attack.json``, :mod:`mimic_deid.sequences.attack`) claim
(numbered after the series releases' claims, :mod:`mimic_deid.deid.check`):

12. **sequence columns**: exactly the columns object, section, position and state, with the
    identifier test of claim 1 (:func:`mimic_deid.core.claims.identifier_columns`), and synthetic
    objects numbered ``0 .. n - 1`` (:func:`check_sequence_columns`);
13. **verbatim copies**: the share of released sequences that reproduce a sequence unique in
    the source is measured and at most ``max_verbatim_unique``, and the membership advantage
    of the verbatim-copy attacker (member half minus holdout half) is not significantly above
    ``max_advantage``: ``advantage - 1.96 * advantage_se <= max_advantage``
    (:func:`check_verbatim_copies`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mimic_deid.core.claims import (
    FORBIDDEN_COLUMNS,
    FORBIDDEN_SUBSTRINGS,
    identifier_columns,
    verdict,
)
from mimic_deid.core.errors import ReleaseCheckError
from mimic_deid.core.logs import get_logger
from mimic_deid.core.numbers import percent

__all__ = [
    "SEQUENCE_COLUMNS",
    "Z_ONE_SIDED",
    "check_sequence_columns",
    "check_sequence_release",
    "check_verbatim_copies",
]

log = get_logger(__name__)

#: z of the one-sided 97.5 % bound on the membership advantage (claim 13).
Z_ONE_SIDED = 1.96
#: The columns of a synthetic sequence release, in order (claim 12).
SEQUENCE_COLUMNS = ("object", "section", "position", "state")


def check_sequence_columns(release: pd.DataFrame, table: str) -> dict:
    """Claim 12: a sequence release holds object, section, position and state only (no
    identifier, time or age by the tests of claim 1), objects numbered ``0 .. n - 1``."""
    problems = identifier_columns(release, table, FORBIDDEN_COLUMNS, FORBIDDEN_SUBSTRINGS)
    if problems:
        raise ReleaseCheckError(
            "identifier, timestamp or age in the sequence release: " + "; ".join(problems)
        )
    if tuple(map(str, release.columns)) != SEQUENCE_COLUMNS:
        raise ReleaseCheckError(
            f"sequence release {table}: columns must be {', '.join(SEQUENCE_COLUMNS)}, got "
            f"{', '.join(map(str, release.columns))}"
        )
    objects = np.unique(release["object"].to_numpy())
    if len(objects) and not np.array_equal(objects, np.arange(len(objects))):
        raise ReleaseCheckError(
            f"sequence release {table}: objects must be synthetic numbers 0 .. "
            f"{len(objects) - 1}, got values from {objects.min()} to {objects.max()}"
        )
    return {"columns": list(SEQUENCE_COLUMNS), "objects": int(len(objects)), "rows": len(release)}


def check_verbatim_copies(
    attack: dict, table: str, max_verbatim_unique: float, max_advantage: float
) -> dict:
    """Claim 13: the verbatim-copy attack (``attack.json``) ran on this release and stays
    within both bounds (shares in [0, 1]; the advantage at its one-sided 97.5 % lower
    confidence bound, so a small source does not fail on sampling noise alone)."""
    share = attack.get("release", {}).get("verbatim_unique")
    advantage, se = attack.get("advantage"), attack.get("advantage_se")
    if share is None or advantage is None or se is None:
        raise ReleaseCheckError(
            f"sequence release {table}: the verbatim-copy attack was not measured "
            "(attack.json needs release.verbatim_unique, advantage and advantage_se)"
        )
    if not share <= max_verbatim_unique:
        raise ReleaseCheckError(
            f"sequence release {table}: {percent(share)} of the released sequences copy a "
            f"sequence unique in the source, above sequences.attack.max_verbatim_unique = "
            f"{max_verbatim_unique} ({percent(max_verbatim_unique)})"
        )
    lower = advantage - Z_ONE_SIDED * se
    if not lower <= max_advantage:
        raise ReleaseCheckError(
            f"sequence release {table}: membership advantage of the verbatim-copy attacker "
            f"{percent(advantage)} (standard error {percent(se)}, lower bound {percent(lower)}) "
            f"is above sequences.attack.max_advantage = {max_advantage} "
            f"({percent(max_advantage)})"
        )
    return {
        "verbatim_unique": float(share),
        "max_verbatim_unique": float(max_verbatim_unique),
        "advantage": float(advantage),
        "advantage_se": float(se),
        "advantage_lower": float(lower),
        "max_advantage": float(max_advantage),
    }


def check_sequence_release(
    release: pd.DataFrame,
    attack: dict,
    *,
    table: str,
    max_verbatim_unique: float,
    max_advantage: float,
    strict: bool = True,
) -> dict:
    """Claims 12 and 13 of one sequence release (``check.json``).

    Returns ``{"passed": True, "verdict": "certified", "table", "checks"}``; on the first
    failed claim, with ``strict`` :class:`~mimic_deid.core.errors.ReleaseCheckError`, otherwise
    ``{"passed": False, "verdict": "refused: <claim and figures>", "table", "checks"}`` (the
    figures of the claims checked before the failed one).
    """

    def claims(checks: dict) -> None:
        checks["sequence_columns"] = check_sequence_columns(release, table)
        checks["verbatim_copies"] = check_verbatim_copies(
            attack, table, max_verbatim_unique, max_advantage
        )
        log.info("sequence release check passed: %s, %d rows", table, len(release))

    return verdict(claims, strict, {"table": table})
