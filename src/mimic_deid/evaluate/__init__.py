"""Evaluation of a release: disagreement, linkage attack (privacy) and mortality prediction
under four trust settings (utility)."""

from mimic_deid.evaluate.attackers import ATTACKERS, strongest_attacker
from mimic_deid.evaluate.linkage import aggregate_linkage, linkage_summary
from mimic_deid.evaluate.privacy import baseline_disagreement, evaluate_release, released_by_key
from mimic_deid.evaluate.registry import EVALUATORS
from mimic_deid.evaluate.utility import utility_table

__all__ = [
    "ATTACKERS",
    "EVALUATORS",
    "aggregate_linkage",
    "baseline_disagreement",
    "evaluate_release",
    "linkage_summary",
    "released_by_key",
    "strongest_attacker",
    "utility_table",
]
