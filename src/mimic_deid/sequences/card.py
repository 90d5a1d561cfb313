"""The card of a sequence release (seed 004): what its public folder says about it (issue 44).

A sequence release's folder (``results/sequences/{table}/release/``, rule ``sequences_publish``)
carries its card whatever the verdict, as a series release's does
(:mod:`mimic_deid.evaluate.card`). The card gathers figures the stage's rules measured
(``check.json``, ``summary.json``, ``attack.json``) and what the mechanism promises
(:data:`GUARANTEE`); it computes none.

Schema (``card.json``, docs/outputs.md "The card of a sequence release"): ``release``,
``table``, ``passed``, ``verdict``, ``mechanism``, ``guarantee``, ``summary`` (as
``summary.json``), ``attack`` (as ``attack.json``) and ``checks`` (as ``check.json``'s).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["GUARANTEE", "sequence_card"]

#: What each mechanism promises, as the report, the card and docs/methods.md state it.
GUARANTEE = {
    "seed_ratio": "NOT eps-DP: the seed's deterministic ratio test, survivors released exactly",
    "laplace": "eps-DP counts (discrete Laplace, record level, given sections and clusters)",
}


def sequence_card(table: str, check: Mapping, summary: Mapping, attack: Mapping) -> dict[str, Any]:
    """The card of the sequence release of ``table`` (module docstring).

    Parameters
    ----------
    table : str
        ``transfers``, ``cptevents`` or ``vitals``.
    check : mapping
        Its ``check.json`` (:func:`~mimic_deid.sequences.check.check_sequence_release`).
    summary : mapping
        Its ``summary.json`` (settings and measures of the release).
    attack : mapping
        Its ``attack.json`` (:func:`~mimic_deid.sequences.attack.membership_attack`).

    Returns
    -------
    dict
        The card, JSON-ready.
    """
    return {
        "release": f"sequences/{table}",
        "table": table,
        "passed": bool(check["passed"]),
        "verdict": check["verdict"],
        "mechanism": summary["mechanism"],
        "guarantee": GUARANTEE[summary["mechanism"]],
        "summary": dict(summary),
        "attack": dict(attack),
        "checks": dict(check.get("checks", {})),
    }
