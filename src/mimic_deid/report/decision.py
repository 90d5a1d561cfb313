"""The report's first screen: what may be handed out, one sentence per release (issue 44.5).

The public report opens on a decision, built from each release's card (``card.json``,
:func:`mimic_deid.evaluate.card.release_card`) and nothing else:

- a headline: how many releases are certified and which folders to hand out, or, when none
  is, that nothing in the run is fit to publish;
- one sentence per release of the sweep: certified or refused; the strongest attacker on its
  card, its top-1 re-identification rate with the 95 % interval against the bound 1/k stated
  before the attack; for ``ihm48`` the test ROC-AUC of mortality models trained and tested on
  the release (de-id. / de-id.) and trained on it and tested on original data (de-id. /
  orig.) against the data owner's baseline (orig. / orig. on every series variable); and the
  folder to hand out, or the reasons of the refusal;
- for a release refused because a group (a split of ``ihm48``, the whole of ``stays``) cannot
  be formed at the configured sizes (the card's ``unpublished``), a paragraph after the
  headline: nothing of that release is published at that dk, why (each group, its series,
  the parameter), and the largest values with which every group forms a class
  (:func:`mimic_deid.deid.sizes.sizes_advice`).

A card whose attack or utility figures are missing or null is said to be so, with the reason
the card gives (``privacy_not_computable``, ``utility_reason``) where it gives one; the
sentence never fails on it.
:func:`certified_names` tells the report which releases it may draw: the public report draws
certified releases only and lists the refused ones here with their reasons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mimic_deid.core.numbers import auc_ci, finite, percent, percent_ci
from mimic_deid.deid.sizes import sizes_advice
from mimic_deid.evaluate.pairing import release_name

__all__ = [
    "BASELINE",
    "DECISION_TITLE",
    "card_name",
    "certified_names",
    "decision_section",
    "refusal_reasons",
    "release_sentence",
    "strongest_attacker",
    "utility_clause",
]

#: The first section's title.
DECISION_TITLE = "What to hand out"
#: The data owner's baseline in a card's utility entries: (variables, setting).
BASELINE = ("all", "orig. / orig.")
#: The trust settings a release's sentence gives, beside the baseline: (setting, short name).
_SETTINGS = (("de-id. / de-id.", "de-id./de-id."), ("de-id. / orig.", "de-id./orig."))
#: What the frontier draws of a refused release (report.frontier): its card's figures, public.
_FRONTIER_NOTE = "which places every release by its public card's figures (refused ones hollow)"
_ATTACKER_NAMES = {
    "seed": "the seed's attacker (de-identified features)",
    "strong": "the strong attacker (every published variable's statistics)",
    "alternative": "the alternative-feature attacker",
}


def card_name(card: Mapping[str, Any]) -> str:
    """The card's release as the sweep names it (``stays_50_10_range_adhoc-...``)."""
    return release_name(str(card["release"]), dict(card["point"]))


def certified_names(cards: Sequence[Mapping[str, Any]]) -> set[str]:
    """The names (:func:`card_name`) of the releases whose card says certified."""
    return {card_name(c) for c in cards if c.get("passed") is True}


def refusal_reasons(card: Mapping[str, Any]) -> list[str]:
    """Why a release was refused: the card's ``reasons`` where it lists them, else its
    verdict without the ``refused:`` prefix."""
    reasons = card.get("reasons")
    if isinstance(reasons, Sequence) and not isinstance(reasons, str) and reasons:
        return [str(r) for r in reasons]
    verdict = str(card.get("verdict") or "").strip()
    text = verdict.removeprefix("refused:").strip()
    return [text] if text else ["the card gives no reason"]


def strongest_attacker(card: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """The attacker that re-identifies most on the card, and its figures.

    A card that names its strongest attacker (``strongest``: the name of one of its
    ``attackers``, or a mapping with ``name`` and the figures) is taken at its word; otherwise
    the attacker of the highest top-1 rate. None when no attacker has a top-1 rate.
    """
    attackers = card.get("attackers") or {}
    named = card.get("strongest")
    if isinstance(named, str) and finite((attackers.get(named) or {}).get("top1")) is not None:
        return named, attackers[named]
    if isinstance(named, Mapping) and finite(named.get("top1")) is not None:
        return str(named.get("name") or named.get("attacker") or "strongest"), named
    measured = [
        (name, figures)
        for name, figures in attackers.items()
        if isinstance(figures, Mapping) and finite(figures.get("top1")) is not None
    ]
    if not measured:
        return None
    return max(measured, key=lambda item: float(item[1]["top1"]))


def _attack_clause(card: Mapping[str, Any]) -> str:
    strongest = strongest_attacker(card)
    bound = card.get("bound") or {}
    k = bound.get("k", card.get("k"))
    bound_rate = bound.get("top1")
    if finite(bound_rate) is None and finite(k):
        bound_rate = 1.0 / float(k)
    known = finite(k) is not None and finite(bound_rate) is not None
    bound_text = f"the bound 1/k = 1/{int(k)} = {percent(bound_rate)}" if known else ""
    if strongest is None and card.get("privacy_not_computable"):
        why = str(card["privacy_not_computable"]).removeprefix("not computable: ")
        return f"attacks not computable: {why}"
    if strongest is None:
        return f"no attack figures on its card ({bound_text or 'no bound stated'})"
    name, figures = strongest
    low, high = figures.get("top1_ci") or (None, None)
    who = _ATTACKER_NAMES.get(name, f"attacker '{name}'")
    rate = percent_ci(figures["top1"], low, high)
    if not known:
        return f"{who} re-identifies {rate}, against no bound stated"
    # said plainly either way: a certified card whose strongest attacker is above 1/k shows it
    where = "within" if float(figures["top1"]) <= float(bound_rate) else "ABOVE"
    return f"{who} re-identifies {rate}, {where} {bound_text}"


def _utility_entry(card: Mapping[str, Any], variables: str, setting: str) -> Mapping | None:
    """The card's mortality entry of ``variables`` and ``setting`` on the test split, original
    side as recorded (a card that lists only those rows has no ``split`` / ``cross`` keys)."""
    for entry in card.get("utility") or []:
        if (
            isinstance(entry, Mapping)
            and entry.get("task", "mortality") == "mortality"
            and entry.get("variables") == variables
            and entry.get("setting") == setting
            and str(entry.get("split", "test")) == "test"
            and entry.get("cross", "shipped") == "shipped"
        ):
            return entry
    return None


def _utility_reason(card: Mapping[str, Any]) -> str | None:
    """Why the card's utility is not computable, in its own words: ``utility_reason``, the
    reasons of ``utility_not_computable``, or the ``not_computable`` of its entries."""
    if card.get("utility_reason"):
        return str(card["utility_reason"])
    utility = card.get("utility")
    if isinstance(utility, Mapping) and utility.get("reason"):
        return str(utility["reason"])
    listed = card.get("utility_not_computable")
    if isinstance(listed, Sequence) and not isinstance(listed, str) and listed:
        return "; ".join(str(r) for r in listed)
    entries = utility if isinstance(utility, Sequence) and not isinstance(utility, str) else []
    reasons = sorted(
        {
            str(e["not_computable"])
            for e in entries
            if isinstance(e, Mapping) and e.get("not_computable")
        }
    )
    return "; ".join(reasons) or None


def _roc(entry: Mapping | None) -> str | None:
    if entry is None or finite(entry.get("roc_auc")) is None:
        return None
    return auc_ci(entry["roc_auc"], entry.get("roc_auc_lo"), entry.get("roc_auc_hi"))


def utility_clause(card: Mapping[str, Any]) -> str | None:
    """The utility part of a release's sentence: None for a release without a utility task
    (``stays``); for ``ihm48`` the test ROC-AUC of mortality de-id./de-id. and de-id./orig.
    against the owner's orig./orig., or why it is not given."""
    if card.get("release") != "ihm48":
        return None
    utility = card.get("utility")
    if isinstance(utility, Mapping):  # {"computable": false, "reason": ...}
        utility = None
    baseline = _roc(_utility_entry(card, "all", BASELINE[1])) if utility else None
    shown = [
        f"{short} {value}"
        for setting, short in _SETTINGS
        if (value := _roc(_utility_entry(card, "released", setting))) is not None
    ]
    if not shown:
        why = _utility_reason(card) or "its card holds no test ROC-AUC"
        return f"utility not computable: {why.removeprefix('not computable: ')}"
    text = "mortality test ROC-AUC " + " and ".join(shown)
    owner = baseline if baseline is not None else "not measured"
    return f"{text}, against the data owner's orig./orig. {owner}"


def _point_text(card: Mapping[str, Any]) -> str:
    p = card.get("point") or {}
    return (
        f"release {card.get('release')}, method {p.get('method')} at dk={p.get('dk')}, "
        f"fk={p.get('fk')} ({p.get('heuristic')} heuristic)"
    )


def release_sentence(card: Mapping[str, Any], folder: str | None = None) -> str:
    """One sentence on one release (module docstring); ``folder`` is its published
    ``release/`` folder (the report's ``releases`` parameter), None when unknown."""
    head = _point_text(card)
    parts = [_attack_clause(card)]
    if (utility := utility_clause(card)) is not None:
        parts.append(utility)
    figures = "; ".join(parts)
    if card.get("passed") is True:
        where = f"hand out {folder}/" if folder else "hand out its release/ folder"
        return f"CERTIFIED: {head}: {figures}; {where}."
    reasons = "; ".join(refusal_reasons(card))
    kept = f" ({folder}/ holds only refused.txt)" if folder else ""
    return f"REFUSED: {head}, not to be published{kept}: {reasons}. Figures: {figures}."


def _sweep_order(cards: Sequence[Mapping[str, Any]], names: list[str]) -> list[Mapping[str, Any]]:
    """Cards in the order of ``names`` (the sweep's, as the report's ``folders`` list them);
    others after them by point (in the order the points first appear), ``stays`` before
    ``ihm48``."""
    points: list[str] = []
    for card in cards:
        key = repr(sorted((card.get("point") or {}).items()))
        if key not in points:
            points.append(key)
    order = {"stays": 0, "ihm48": 1}

    def rank(card: Mapping[str, Any]) -> tuple[int, int, int]:
        name = card_name(card)
        key = repr(sorted((card.get("point") or {}).items()))
        known = names.index(name) if name in names else len(names)
        return known, points.index(key), order.get(str(card.get("release")), 2)

    return sorted(cards, key=rank)


def decision_section(
    cards: Sequence[Mapping[str, Any]], folders: Mapping[str, str] | None = None
) -> dict:
    """The report's first section (format of :func:`mimic_deid.report.html.write_index`):
    the headline and one sentence per card, certified releases first, each in sweep order
    (by point, ``stays`` before ``ihm48``).

    Parameters
    ----------
    cards : sequence of mapping
        Every release's ``card.json``.
    folders : mapping, optional
        :func:`card_name` -> the release's published folder (``results/<release>/.../release``).
    """
    folders = folders or {}
    cards = _sweep_order(cards, list(folders))
    certified = [c for c in cards if c.get("passed") is True]
    refused = [c for c in cards if c.get("passed") is not True]
    if not cards:
        headline = "No release card in this run: nothing is certified, nothing to hand out."
    elif certified:
        headline = (
            f"{len(certified)} of {len(cards)} releases certified: hand out the folder each "
            "CERTIFIED sentence names, and nothing else. Everything below is drawn from "
            f"certified releases only, but the frontier, {_FRONTIER_NOTE}."
        )
    else:
        headline = (
            f"Nothing in this run is fit to publish: none of its {len(cards)} releases is "
            "certified, for the reasons below. No figure or utility table below draws a "
            f"refused release, but the frontier, {_FRONTIER_NOTE}."
        )
    # a release too small for its sizes: why nothing of it is published, what would fit
    advice = dict.fromkeys(
        sizes_advice(str(c.get("release")), (c.get("point") or {}).get("dk"), unpublished)
        for c in refused
        if (unpublished := c.get("unpublished"))
    )
    headline = "\n\n".join([headline, *advice])
    lines = [
        {
            "status": "certified" if c.get("passed") is True else "refused",
            "text": release_sentence(c, folders.get(card_name(c))),
        }
        for c in certified + refused
    ]
    return {
        "title": DECISION_TITLE,
        "class": "decision",
        "lead": True,
        "text": headline,
        "decisions": lines,
        "items": [],
    }
