"""The frontier's tests' helpers: real release cards of a small sweep
(evaluate.card.release_card) and the check of a frontier table against docs/outputs.md."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from doc_schemas import documented_schema, schema_problems

from mimic_deid.evaluate.card import release_card
from mimic_deid.evaluate.frontier import FRONTIER_SETTINGS, METRICS
from mimic_deid.evaluate.utility import SETTINGS, TASKS

CERTIFIED = {"passed": True, "verdict": "certified"}
REFUSED = {"passed": False, "verdict": "refused: linkage bound: attacker 'shape' links top-1"}


def trust_settings(shift: float) -> pd.DataFrame:
    """A whole trust_settings.csv: per task the owner's baseline (2 rows), then the released
    variables' four settings, shipped and gap-filled, train and test. Test ROC-AUC: owner 0.86,
    de-id./de-id. 0.70 + shift, de-id./orig. 0.75 + shift (gap-filled + 0.01), long stay - 0.1."""
    auc = {"orig. / orig.": 0.80, "de-id. / de-id.": 0.70, "orig. / de-id.": 0.60,
           "de-id. / orig.": 0.75}  # fmt: skip
    rows = []
    for task in TASKS:
        down = 0.0 if task == "mortality" else 0.1
        parts = [("all", "shipped", SETTINGS[:1])]
        parts += [("released", cross, SETTINGS) for cross in ("shipped", "gap_filled")]
        for variables, cross, settings in parts:
            for setting, train, test in settings:
                for split in ("train", "test"):
                    value = 0.86 if variables == "all" else auc[setting] + shift
                    value += (0.01 if cross == "gap_filled" and "de-id. / orig." == setting
                              else 0.0) - down + (0.05 if split == "train" else 0.0)  # fmt: skip
                    value = round(value, 4)
                    rows.append(dict(task=task, variables=variables, cross=cross,
                                     setting=setting, train_data=train, test_data=test,
                                     split=split, C=0.1, validation_roc_auc=0.8,
                                     roc_auc=value, roc_auc_lo=value - 0.04,
                                     roc_auc_hi=value + 0.03, pr_auc=value / 2,
                                     pr_auc_lo=value / 2 - 0.05, pr_auc_hi=value / 2 + 0.05,
                                     roc_auc_ceiling=0.79 - down if test == "deid" else 1.0,
                                     n=245, positives=32, not_computable=""))  # fmt: skip
    return pd.DataFrame(rows)


def linkage(k: int, top1: float, name: str = "shape") -> dict:
    """A linkage.json with the attacker family: ``name`` the strongest at ``top1``."""
    figures = {"top1": top1, "top1_ci": [top1 / 2, top1 * 1.5], "top5": min(1.0, 3 * top1),
               "top5_ci": [top1, min(1.0, 4 * top1)], "n": 245}  # fmt: skip
    within = top1 <= 1 / k
    return {
        "release": {"0": figures},
        "strong": {"release": {"0": figures}},
        "bound": {
            "error": 0.0,
            "k": k,
            "top1": 1 / k,
            "strong_top1": top1,
            "strong_top1_ci": figures["top1_ci"],
            "n": 245,
            "within": within,
        },  # fmt: skip
        "family": {name: {"knows": "the whole series", "release": {"0": figures}}},
        "strongest": {
            "name": name,
            "knows": "the whole series",
            **figures,
            "bound": 1 / k,
            "within": within,
            "refused_by": [] if within else [name],
        },  # fmt: skip
    }


def card(release: str, method: str, fk: int, top1: float, shift: float = 0.0) -> dict:
    """A real release card (evaluate.card.release_card), written and read back as JSON."""
    point = {"dk": 50, "fk": fk, "heuristic": "range", "method": method}
    check = CERTIFIED if top1 <= 1 / fk else REFUSED
    made = release_card(release, point, check, linkage(fk, top1), 2 if release == "ihm48" else None,
                        trust_settings(shift) if release == "ihm48" else None)  # fmt: skip
    return json.loads(json.dumps(made))


def sweep() -> list[dict]:
    """Three points, both releases each: mdav at fk 5 and 10, noise at scale 4, fk 10."""
    return [
        card("stays", "mdav", 5, 0.15),
        card("ihm48", "mdav", 5, 0.25, shift=0.05),  # refused: 25 % > 1/5
        card("stays", "mdav", 10, 0.08),
        card("ihm48", "mdav", 10, 0.06, shift=0.02),
        card("stays", "noise-sc4", 10, 0.5),
        card("ihm48", "noise-sc4", 10, 0.04, shift=0.02),  # certified, ties mdav fk 10
    ]


def _documented() -> dict[str, tuple[str, ...]]:
    """docs/outputs.md's frontier table with its templated utility columns expanded (per task,
    setting and metric: the metric, then its interval's ends; then a column of one setting
    written out, the de-id. / de-id. ceiling)."""
    schema, templates = {}, {}
    for key, types in documented_schema("The privacy-utility frontier").items():
        (templates if key.startswith("<task>") else schema)[key] = types
    for task in TASKS:
        for tag, _, _ in FRONTIER_SETTINGS:
            for metric in METRICS:
                for key, types in templates.items():
                    if "<setting>" in key:
                        name = key.replace("<task>", task).replace("<setting>", tag)
                        schema[name.replace("<metric>", metric)] = types
            for key, types in templates.items():  # the ceiling, written out for its setting
                if key.startswith(f"<task>_{tag}_"):
                    schema[key.replace("<task>", task)] = types
    return schema


def documented_problems(table: pd.DataFrame) -> list[str]:
    """Where a frontier table's columns or cells differ from docs/outputs.md."""
    schema = _documented()
    problems = [] if list(schema) == list(table.columns) else [
        f"columns: documented {list(schema)}, table {list(table.columns)}"
    ]  # fmt: skip
    for row in table.to_dict("records"):
        cells = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}
        problems += schema_problems(cells, schema)
    return problems
