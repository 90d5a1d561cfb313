"""The privacy-utility frontier: one row per release of the sweep, from the release cards.

Every release method is swept over its privacy knob (:attr:`ReleaseMethod.knob
<mimic_deid.deid.methods.ReleaseMethod>`: the feature k ``fk`` for the Mondrian optimisers,
MDAV and the (k,P) methods, the noise ``scale`` for ``noise``), and each release of each point
(``stays`` and ``ihm48``) is one point of the frontier: its risk, the strongest member of the
attacker family's top-1 re-identification rate with its 95 % interval against the bound 1/k,
and (``ihm48``) its utility, the test ROC-AUC and PR-AUC of the models trained and tested on the
release (de-id. / de-id.) and trained on it and tested on original data (de-id. / orig.), beside
the data owner's baseline (orig. / orig. on every series variable), per task.

The table only gathers what the cards (:func:`mimic_deid.evaluate.card.release_card`) hold, and
computes nothing; the cards are public at every point, refused ones included (a refused card
keeps its attack and utility figures: docs/outputs.md), so the table is too. Columns
(``results/frontier.csv``, docs/outputs.md): :data:`POINT_COLUMNS`, :data:`ATTACK_COLUMNS`,
``utility_cross``, then per task of :data:`~mimic_deid.evaluate.utility.TASKS` and per
setting of :data:`FRONTIER_SETTINGS` the metric, its low and its high end of the interval
(:func:`utility_column`), and in de-id. / de-id. the ROC-AUC ceiling of the release's test
split (:data:`CEILING_TAG`). Rates are fractions (0-1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.core.errors import InputDataError
from mimic_deid.deid.methods import get_method, parse_method_label
from mimic_deid.evaluate.pairing import release_name
from mimic_deid.evaluate.utility import CROSS, TASKS

__all__ = [
    "ATTACK_COLUMNS",
    "BOTH",
    "CEILING_TAG",
    "FRONTIER_SETTINGS",
    "METRICS",
    "POINT_COLUMNS",
    "best_certified",
    "frontier_columns",
    "frontier_row",
    "frontier_table",
    "knob_of",
    "utility_column",
]

#: The columns that place a release: the sweep point, the method and its knob, the bound.
POINT_COLUMNS: tuple[str, ...] = (
    "release",
    "dk",
    "fk",
    "heuristic",
    "method",
    "method_label",
    "knob",
    "knob_value",
    "k",
    "bound",
    "verdict",
)
#: The strongest attacker of the family on the card, at exact knowledge (fractions).
ATTACK_COLUMNS: tuple[str, ...] = (
    "attacker",
    "attacker_top1",
    "attacker_top1_lo",
    "attacker_top1_hi",
    "attacker_n",
)
#: (column tag, variables, setting of ``trust_settings.csv``): the data owner's baseline on every
#: series variable, then the two settings in which a recipient trains on the release.
FRONTIER_SETTINGS: tuple[tuple[str, str, str], ...] = (
    ("orig_orig_all", "all", "orig. / orig."),
    ("deid_deid", "released", "de-id. / de-id."),
    ("deid_orig", "released", "de-id. / orig."),
)
#: The ``tag`` of :func:`best_certified` that ranks releases by the mean of the two settings in
#: which a recipient trains on the release (the rule of the shipped config's default release:
#: README, "The default release").
BOTH = "both"
#: The setting whose test data are the release's own, where the frontier also reports the
#: ROC-AUC ceiling (the best any model of the published series can reach on them,
#: :func:`mimic_deid.evaluate.model.roc_auc_ceiling`): ``{task}_deid_deid_roc_auc_ceiling``.
CEILING_TAG = "deid_deid"
#: The utility metrics of a setting, each with its 95 % bootstrap interval.
METRICS: tuple[str, ...] = ("roc_auc", "pr_auc")
#: The split the frontier reports (seed Table 6.4's).
_SPLIT = "test"


def utility_column(task: str, tag: str, metric: str, end: str = "") -> str:
    """The frontier's column of ``metric`` (``roc_auc``, ``pr_auc``) of ``task`` in the setting
    ``tag`` of :data:`FRONTIER_SETTINGS`; ``end`` ``"lo"`` or ``"hi"`` names an end of its
    interval (``mortality_deid_deid_roc_auc_lo``), ``"ceiling"`` the ROC-AUC ceiling
    (:data:`CEILING_TAG`)."""
    return "_".join([task, tag, metric, *([end] if end else [])])


def _setting_columns(task: str, tag: str) -> list[str]:
    """The columns of one task and setting: each metric with its interval, and for
    :data:`CEILING_TAG` the ROC-AUC ceiling."""
    out = [utility_column(task, tag, m, end) for m in METRICS for end in ("", "lo", "hi")]
    return out + ([utility_column(task, tag, "roc_auc", "ceiling")] if tag == CEILING_TAG else [])


def frontier_columns() -> list[str]:
    """Every column of the frontier table, in order (module docstring)."""
    utility = [
        c for task in TASKS for tag, _, _ in FRONTIER_SETTINGS for c in _setting_columns(task, tag)
    ]
    return [*POINT_COLUMNS, *ATTACK_COLUMNS, "utility_cross", *utility]


def knob_of(label: str, fk: int) -> tuple[str, float]:
    """The privacy knob of the method labelled ``label`` at feature k ``fk`` and its value:
    ``("fk", fk)`` for a method whose knob is the point's k, else the knob's parameter as the
    label spells it (``noise-sc4`` -> ``("scale", 4.0)``)."""
    name, params = parse_method_label(label)
    knob = get_method(name).knob
    return knob, float(fk if knob == "fk" else params[knob])


def _card_error(card: Mapping[str, Any], what: str) -> InputDataError:
    release, point = card.get("release"), card.get("point") or {}
    try:
        name = release_name(str(release), dict(point))
    except KeyError:
        name = f"{release} {dict(point)}"
    return InputDataError(f"release card of '{name}': {what}")


def _strongest(card: Mapping[str, Any]) -> dict[str, Any]:
    if card.get("privacy_not_computable"):  # a release of no series: no attack (issue 48)
        return {"attacker": "", **dict.fromkeys(ATTACK_COLUMNS[1:], np.nan)}
    strongest = card.get("strongest_attacker")
    if not isinstance(strongest, Mapping) or strongest.get("top1") is None:
        raise _card_error(
            card,
            "no 'strongest_attacker' with a 'top1' (the attacker family was not measured); "
            "the frontier places a release by its strongest attacker",
        )
    low, high = strongest.get("top1_ci") or (None, None)
    return {
        "attacker": str(strongest["name"]),
        "attacker_top1": float(strongest["top1"]),
        "attacker_top1_lo": np.nan if low is None else float(low),
        "attacker_top1_hi": np.nan if high is None else float(high),
        "attacker_n": int(strongest["n"]) if strongest.get("n") is not None else np.nan,
    }


def _entry(card: Mapping[str, Any], task: str, variables: str, setting: str, cross: str):
    for entry in card.get("utility") or []:
        if (
            entry["task"] == task
            and entry["variables"] == variables
            and entry["setting"] == setting
            and entry["split"] == _SPLIT
            # the baseline is measured on the original side as recorded only
            and entry["cross"] == (cross if variables == "released" else "shipped")
        ):
            return entry
    raise _card_error(
        card,
        f"no utility entry of task '{task}', variables '{variables}', setting '{setting}', "
        f"split '{_SPLIT}', cross '{cross}' (expected every row of trust_settings.csv)",
    )


def _utility(card: Mapping[str, Any], cross: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for task in TASKS:
        for tag, variables, setting in FRONTIER_SETTINGS:
            entry = _entry(card, task, variables, setting, cross) if card.get("utility") else {}
            for column in _setting_columns(task, tag):
                value = entry.get(column.removeprefix(f"{task}_{tag}_"))
                out[column] = np.nan if value is None else float(value)
    return out


def frontier_row(card: Mapping[str, Any], cross: str = "shipped") -> dict[str, Any]:
    """One release's row of the frontier (module docstring) from its ``card.json``.

    Parameters
    ----------
    card : mapping
        The release card (:func:`mimic_deid.evaluate.card.release_card`); its
        ``strongest_attacker`` is required (unless its ``privacy_not_computable`` says the
        release publishes no series: then the attacker cells are empty), and for ``ihm48``
        every utility entry the frontier reports (test split).
    cross : {"shipped", "gap_filled"}
        The original side of the de-id. / orig. setting (config ``evaluate.utility.cross``);
        the data owner's baseline is always the one as recorded.

    Returns
    -------
    dict
        Column -> value; a release without utility (``stays``) has NaN utility cells, and so
        has a metric its card says is not computable.
    """
    if cross not in CROSS:
        raise InputDataError(f"frontier: cross '{cross}', expected one of {list(CROSS)}")
    point = card.get("point") or {}
    missing = [key for key in ("release", "passed") if key not in card]
    missing += [f"point.{key}" for key in ("dk", "fk", "heuristic", "method") if key not in point]
    if missing:
        raise _card_error(card, f"missing {', '.join(missing)} (a card of evaluate.card)")
    name, _ = parse_method_label(str(point["method"]))
    knob, value = knob_of(str(point["method"]), int(point["fk"]))
    k = int(card.get("k") or point["fk"])
    row: dict[str, Any] = {
        "release": str(card["release"]),
        "dk": int(point["dk"]),
        "fk": int(point["fk"]),
        "heuristic": str(point["heuristic"]),
        "method": name,
        "method_label": str(point["method"]),
        "knob": knob,
        "knob_value": value,
        "k": k,
        "bound": 1.0 / k,
        "verdict": "certified" if card["passed"] is True else "refused",
    }
    row.update(_strongest(card))
    row["utility_cross"] = cross
    row.update(_utility(card, cross))
    return row


def frontier_table(cards: Iterable[Mapping[str, Any]], cross: str = "shipped") -> pd.DataFrame:
    """The frontier: one row per card (:func:`frontier_row`), in the order given (the
    workflow: sweep order, ``stays`` before ``ihm48`` at each point), columns
    :func:`frontier_columns`."""
    rows = [frontier_row(card, cross) for card in cards]
    return pd.DataFrame(rows, columns=frontier_columns())


def best_certified(
    frontier: pd.DataFrame, task: str, tag: str, metric: str = "roc_auc"
) -> Mapping[str, Any] | None:
    """The certified ``ihm48`` release with the highest ``metric`` of ``task`` in setting ``tag``
    (``deid_deid`` or ``deid_orig``; :data:`BOTH`: the mean of the two, a release needing
    both), ties to the lower attacker top-1, then to the earlier row; None when no certified
    release has that metric.

    Parameters
    ----------
    frontier : DataFrame
        :func:`frontier_table` (or ``results/frontier.csv`` read back).
    task : str
        A task of :data:`~mimic_deid.evaluate.utility.TASKS`.
    tag : str
        A setting tag of :data:`FRONTIER_SETTINGS`, or :data:`BOTH`.
    metric : str
        One of :data:`METRICS`.
    """
    # BOTH: the settings after the owner's baseline, those in which a recipient trains on it
    tags = tuple(t for t, _, _ in FRONTIER_SETTINGS[1:]) if tag == BOTH else (tag,)
    columns = [utility_column(task, t, metric) for t in tags]
    for column, t in zip(columns, tags, strict=True):
        if column not in frontier.columns:
            raise InputDataError(
                f"frontier table: no column '{column}' (task '{task}', setting '{t}'); "
                f"expected the columns of mimic_deid.evaluate.frontier.frontier_columns"
            )
    score = frontier[columns].mean(axis=1, skipna=False)
    chosen = (frontier["verdict"] == "certified") & score.notna()
    rows, score = frontier[chosen], score[chosen].to_numpy()
    if rows.empty:
        return None
    order = np.lexsort((np.arange(len(rows)), rows["attacker_top1"].to_numpy(), -score))
    return rows.iloc[int(order[0])].to_dict()
