"""The release card: one machine-readable page per release of a sweep point (issue 26).

A data owner reads, for each release (``stays`` or ``ihm48`` at one sweep point), what was run,
what it promises and what it does not, how the attacks went against the bound stated before
them, the verdict of the release's own check, and (``ihm48``) what it costs a mortality and a
long-stay model beside the seed's figures. The card only gathers figures that other rules
measured (``check.json``, ``privacy/linkage.json``, ``utility/trust_settings.csv``,
``cross_release.csv``) and the method's registry entry; it computes none.

Schema (``card.json``, docs/outputs.md):

- ``release``, ``point`` (dk, fk, heuristic, method label), ``passed``, ``verdict``: the
  final verdict, which decides what ``publish_release`` publishes: the check's, unless the
  release's pairing with another certified release of the sweep refuses it
  (:func:`pairing_refusals`, issue 45.2: ``refused: pairing: ...``);
- ``check_passed``, ``check_verdict``: the release's own check (``check.json``);
- ``method``: ``name``, ``params``, ``promises``, ``not_promised`` (the registry entry,
  :class:`~mimic_deid.deid.methods.ReleaseMethod`);
- ``k`` (the bound's k), ``dk``, ``l`` (distinct outcomes per class; null for a release without
  labels);
- ``demographics``: the demographics published with the series and their cells (claim 15 of
  the check: ``columns``, ``classes`` = (duration class x demographics) cells, ``smallest``);
  null when the check did not reach the claim;
- ``plausible_values``: claim 16 of the check (every published value in its variable's valid
  range and value set, static variables constant per series): ``variables``, ``values``
  checked, the ``discrete`` and ``static`` variables; null when the check did not reach it;
- ``attackers``: per attacker (``seed``, ``strong``, ``alternative`` when measured) at its
  most precise knowledge (the smallest error measured): ``error``, ``top1``, ``top1_ci``,
  ``top5``, ``top5_ci``, ``n`` (fractions; intervals 95 % Wilson);
- ``bound``: as ``privacy/linkage.json``;
- ``attacker_family``: per member of the attacker family (:mod:`mimic_deid.evaluate.attackers`,
  exact knowledge): ``knows``, ``top1``, ``top1_ci``, ``top5``, ``top5_ci``, ``n``; empty when
  the family was not measured;
- ``strongest_attacker``: the member with the highest top-1, which decides the verdict's
  linkage claim: ``name``, ``knows``, ``top1``, ``top1_ci`` ([low, high], 95 % Wilson), ``n``,
  ``bound`` (``1 / k``), ``within`` and ``refused_by`` (every member above the bound: where
  the seed's methods pass the seed's attacker but not the family, this says which member
  refuses them); null when the family was not measured;
- ``refused_by_family_only``: true where the strong (summary statistics) attacker alone is
  within the bound and a member of the family is not, i.e. the wider family refuses a
  release that the seed's threat model would certify; false otherwise;
- ``utility``: null for ``stays``; for ``ihm48`` one entry per row of the utility table
  (task x variables x original side x trust setting x split, :func:`_utility`): the seed's
  Table 6.3 (split ``train``) and Table 6.4 (split ``test``) are the mortality rows on the
  released variables with the original side as recorded (``seed_table`` ``"6.3"``/``"6.4"``,
  beside ``seed_roc_auc`` / ``seed_pr_auc``); the like-for-like rows are those with ``cross``
  ``gap_filled``;
- ``pairing``: the cross-release pairing of this release with every other certified release
  of the population the sweep measured (:func:`mimic_deid.evaluate.pairing.pairs_of`:
  ``other``, ``as``, ``rate``, ``rate_lo``, ``rate_hi``, ``targets``, ``candidates``,
  ``chance`` among the candidates of the target's published cell,
  :func:`mimic_deid.evaluate.pairing.cell_chance`); a refused release is published by no
  one, so no pairing with it is listed;
- ``not_protected``: what no method of this project protects (:data:`NOT_PROTECTED`);
- ``unpublished``: the groups (splits of ``ihm48``, the whole of ``stays``) the release could
  not form at the configured sizes, from ``check.json``
  (:func:`mimic_deid.deid.duration.unpublished_groups`: ``group``, ``series``, ``parameter``,
  ``value``, ``largest`` (the largest value that would fit), ``reason``); empty when every
  group is published. A release with one is refused, its verdict naming them;
- ``utility_not_computable``: the distinct reasons (``not computable: ...``) of the utility
  rows whose metrics could not be computed (e.g. a split the release does not publish); their
  ``utility`` entries carry ``not_computable`` and null metrics. Empty for ``stays`` and when
  every row was computed.
- ``privacy_not_computable``: why no attack was measured (``privacy/linkage.json``'s
  ``not_computable``: a release that publishes no series, whose ``attackers``,
  ``attacker_family`` are then empty and ``bound``, ``strongest_attacker`` null); null when
  the attacks ran.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from mimic_deid.core.errors import InputDataError
from mimic_deid.core.numbers import percent, percent_ci
from mimic_deid.deid.methods import get_method, parse_method_label
from mimic_deid.evaluate.model import SCORE_COLUMNS
from mimic_deid.evaluate.pairing import pairs_of, release_k, release_name
from mimic_deid.evaluate.utility import SEED_TRUST_SETTINGS
from mimic_deid.evaluate.utility import SETTINGS as UTILITY_SETTINGS

__all__ = ["NOT_PROTECTED", "SEED_TABLES", "pairing_refusals", "release_card"]

#: What no release of this project protects, whatever the method (every card lists it).
NOT_PROTECTED: tuple[str, ...] = (
    "membership: the release shows that each of its patients had an ICU stay in the source",
    "the duration class of each series (dk-anonymous, not hidden)",
    "the published demographics, generalised (each cell of duration class and demographics "
    "holds at least fk series, but the demographics themselves are shown)",
    "what several releases of one population disclose together: pair them only as the "
    "cross-release measures allow; publish one release per population",
    "population-level facts (means, correlations, the mortality model itself)",
)

_ATTACKERS = {"seed": None, "strong": "strong", "alternative": "alternative"}


def _attack(linkage: Mapping, key: str | None) -> dict[str, Any] | None:
    source = linkage if key is None else linkage.get(key)
    if not source or "release" not in source:
        return None
    error = min(source["release"], key=float)
    row = source["release"][error]
    return {
        "error": float(error),
        **{name: row.get(name) for name in ("top1", "top1_ci", "top5", "top5_ci", "n")},
    }


#: The key of the seed's trust-setting table of each split: Table 6.3 (train), 6.4 (test).
SEED_TABLES: dict[str, str] = {"train": "6.3", "test": "6.4"}

#: The figures of a utility entry, as in ``trust_settings.csv`` (fractions 0-1; ``n`` stays,
#: ``positives`` stays with label 1); ``roc_auc_ceiling`` null in a table of a version that had
#: no such column.
_UTILITY_FIGURES = SCORE_COLUMNS


def _reason(row: Mapping[str, Any]) -> str:
    value = row.get("not_computable", "")
    return value if isinstance(value, str) else ""


def _not_computable(table: pd.DataFrame | None) -> list[str]:
    if table is None or "not_computable" not in table.columns:
        return []
    reasons = table["not_computable"].dropna().astype(str)
    return sorted(set(reasons[reasons != ""]))


def _family(linkage: Mapping) -> dict[str, dict[str, Any]]:
    out = {}
    for name, result in (linkage.get("family") or {}).items():
        figures = _attack(result, None)
        if figures is not None:
            figures.pop("error")
            out[name] = {"knows": result.get("knows", ""), **figures}
    return out


def _utility(table: pd.DataFrame) -> list[dict[str, Any]]:
    """Every row of ``trust_settings.csv``, in its order, with the seed's figure where the seed
    has one: in-hospital mortality on the released variables, original side as recorded
    (Tables 6.3 and 6.4, :data:`SEED_TABLES`); ``seed_*`` null elsewhere."""
    order = [label for label, _, _ in UTILITY_SETTINGS]
    out = []
    for row in table.to_dict("records"):
        split = str(row["split"])
        seeded = (
            row["task"] == "mortality"
            and row["variables"] == "released"
            and row["cross"] == "shipped"
            and split in SEED_TABLES
        )
        at = order.index(row["setting"])
        entry = {key: str(row[key]) for key in ("task", "variables", "cross", "setting")}
        entry["split"] = split
        entry.update({key: float(row.get(key, math.nan)) for key in _UTILITY_FIGURES})
        entry.update(n=int(row["n"]), positives=int(row["positives"]))
        entry["not_computable"] = _reason(row) or None
        entry["seed_table"] = SEED_TABLES[split] if seeded else None
        for metric in ("roc_auc", "pr_auc"):
            entry[f"seed_{metric}"] = SEED_TRUST_SETTINGS[(split, metric)][at] if seeded else None
        out.append(entry)
    return out


def release_card(
    release: str,
    point: Mapping[str, Any],
    check: Mapping,
    linkage: Mapping,
    outcome_l: int | None,
    utility: pd.DataFrame | None = None,
    pairing: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """The card of one release (module docstring).

    Parameters
    ----------
    release : str
        ``stays`` or ``ihm48``.
    point : mapping
        dk, fk, heuristic, method (the sweep point's wildcards; dk and fk as int).
    check : mapping
        The release's ``check.json`` (verdict).
    linkage : mapping
        Its ``privacy/linkage.json``.
    outcome_l : int or None
        Distinct outcomes per published group (config ``deid.outcome_l``) for a labelled
        release, None otherwise.
    utility : DataFrame, optional
        ``utility/trust_settings.csv`` of the point (``ihm48``).
    pairing : DataFrame, optional
        The sweep's cross-release table of every pair (the owner's
        ``results/private/cross_release.csv``, with ``certified_a`` and ``certified_b``); the
        card lists the rows whose other release is certified, and a certified release whose
        pairing with one of them goes above 1/k is refused (:func:`pairing_refusals`).

    Returns
    -------
    dict
        The card, JSON-ready.
    """
    name, params = parse_method_label(point["method"])
    method = get_method(name)
    attackers = {
        attacker: figures
        for attacker, key in _ATTACKERS.items()
        if (figures := _attack(linkage, key)) is not None
    }
    pairings = [] if pairing is None else _pairing(pairing, release_name(release, point))
    passed, verdict = bool(check["passed"]), check["verdict"]
    refusals = pairing_refusals(pairings, int(point["fk"])) if passed else []
    if refusals:
        passed, verdict = False, "refused: pairing: " + "; ".join(refusals)
    return {
        "release": release,
        "point": {key: point[key] for key in ("dk", "fk", "heuristic", "method")},
        "passed": passed,
        "verdict": verdict,
        "check_passed": bool(check["passed"]),
        "check_verdict": check["verdict"],
        "method": {
            "name": name,
            "params": params,
            "promises": method.promises,
            "not_promised": method.not_promised,
        },
        "k": int(point["fk"]),
        "dk": int(point["dk"]),
        "l": None if outcome_l is None else int(outcome_l),
        "demographics": check.get("checks", {}).get("demographics"),
        "plausible_values": check.get("checks", {}).get("plausible_values"),
        "attackers": attackers,
        "bound": linkage.get("bound"),
        "attacker_family": _family(linkage),
        "strongest_attacker": linkage.get("strongest"),
        "refused_by_family_only": bool(
            (bound := linkage.get("bound") or {}).get("strong_within") and not bound["within"]
        ),
        "utility": None if utility is None else _utility(utility),
        "pairing": pairings,
        "not_protected": list(NOT_PROTECTED),
        "unpublished": list(check.get("unpublished", [])),
        "utility_not_computable": _not_computable(utility),
        "privacy_not_computable": linkage.get("not_computable"),
    }


def _pairing(pairing: pd.DataFrame, name: str) -> list[dict]:
    """The pairings of release ``name`` with every certified release: a refused release
    publishes nothing a recipient could pair with (issue 45.3)."""
    missing = [c for c in ("certified_a", "certified_b") if c not in pairing.columns]
    if missing:
        raise InputDataError(
            f"cross-release table: missing column(s) {missing}; expected whether each release "
            "of a pair is certified (rule cross_release)"
        )
    return [
        row
        for row in pairs_of(pairing, name)
        if bool(row["certified_b" if row["as"] == "a" else "certified_a"])
    ]


#: The pairing attackers of a cross-release row: (name, rate column, its interval's columns).
_PAIRING_ATTACKERS = (
    ("summary", "rate", "rate_lo", "rate_hi"),
    ("shape", "shape_rate", "shape_rate_lo", "shape_rate_hi"),
)


def pairing_refusals(pairings: list[Mapping[str, Any]], k: int) -> list[str]:
    """Why a certified release's pairings refuse it (issue 45.2): one reason per pairing with
    a certified other release whose strongest pairing attacker pairs more than the bound of the
    pair, ``1 / max(k, k_other)``.

    Both releases of such a pair are withheld (each card applies the same bound to the same
    row: deterministic and symmetric), as claim 14 does, on the point estimate.

    Parameters
    ----------
    pairings : list of mapping
        The card's ``pairing`` entries (:func:`release_card`: the other release certified by its
        check): ``other``, ``rate``, ``rate_lo``, ``rate_hi`` and, where measured,
        ``shape_rate``, ``shape_rate_lo``, ``shape_rate_hi`` (fractions).
    k : int
        This release's k (its bound is 1/k).

    Returns
    -------
    list of str
        ``with <other>: attacker '<name>' pairs <rate> (95 % interval ...) > bound 1/<k> =
        <bound>``, in the pairings' order; empty when every pairing is within its bound.
    """
    out = []
    for row in pairings:
        rates = [
            (float(row[rate]), name, row.get(lo), row.get(hi))
            for name, rate, lo, hi in _PAIRING_ATTACKERS
            if row.get(rate) is not None and pd.notna(row[rate])
        ]
        if not rates:
            continue
        rate, name, low, high = max(rates, key=lambda r: r[0])
        bound_k = max(int(k), release_k(str(row["other"])))
        if rate > 1.0 / bound_k:
            out.append(
                f"with {row['other']}: attacker '{name}' pairs {percent_ci(rate, low, high)} "
                f"of the series > bound 1/{bound_k} = {percent(1.0 / bound_k)}"
            )
    return out
