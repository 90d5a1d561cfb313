"""The privacy claims of a release, one function per claim, checked before anything is published.

A release (``release/series.parquet`` and ``release/index.parquet``) claims:

1. **no identifiers**: no SUBJECT_ID, HADM_ID, ICUSTAY_ID or ROW_ID column, no column whose
   name speaks of a time, date, birth, death or age, no datetime-typed column and no value that
   looks like an ISO timestamp (:func:`check_no_identifiers`);
2. **pseudonyms**: every released series has one pseudonym, unique in the index, and series
   and index name the same pseudonyms (:func:`check_pseudonyms`);
3. **accounting**: released + suppressed = series that entered de-identification
   (:func:`check_accounting`);
4. **hours**: each series has exactly the hours ``0 .. duration_class - 1``
   (:func:`check_hours`);
5. **duration k**: every duration class of every de-identification group has at least ``dk``
   series (:func:`check_duration_k`); the index publishes ``split`` only when the group is
   the split (a release de-identified as a whole withholds it: :func:`check_sweep_point`);
6. **coverage**: the Mondrian equivalence classes cover exactly the released series
   (:func:`check_coverage`);
7. **feature k**: every equivalence class has at least ``fk`` series
   (:func:`check_feature_k`);
8. **protected variables**: every published variable is one whose features de-identification
   protects; the others are withheld (:func:`check_released_variables`);
9. **missing hours withheld**: within a duration class each published variable is complete
   for every series or null for every series (:func:`check_missing_withheld`);
10. **outcomes**: a release publishes labels only if it needs them, then all of
    :data:`~mimic_deid.deid.duration.LABELS` (mortality, long stay), and every published class
    holds at least ``l`` distinct values of each (:func:`check_outcomes`); so does every group
    an attacker can recover from the released values: each Mondrian equivalence class and
    every group the method itself publishes (its ``groups`` hook: the k-groups of every
    variable for a (k,P) method) (:func:`check_group_outcomes`);
11. **the method's own claims** (a :class:`~mimic_deid.deid.methods.ReleaseMethod`'s
    ``claims`` hook), e.g. the (k,P) groups of KAPRA and PC-KAPRA
    (:func:`mimic_deid.deid.kapra.check_kp_groups`): per variable, every k-group has at least
    ``k`` series, every pattern word within a k-group is shared by at least ``P`` of its
    series, and all series of a k-group publish the same values, the midpoint of the k-group's
    envelope; and MDAV's clusters (:func:`mimic_deid.deid.mdav.check_mdav_clusters`): every
    published series is one of at least ``k`` identical series of its unit.

Claims 12 and 13 are those of a synthetic sequence release (:mod:`mimic_deid.sequences.check`);
the tabular release's claims are in :mod:`mimic_deid.tabular.check`.

The privacy evaluation of a series release (``privacy/linkage.json``,
:mod:`mimic_deid.evaluate.privacy`) claims:

14. **linkage bound**: the strong attacker, who knows every released variable's mean,
    variance, extremes and observed hours exactly, links at most ``1 / k`` of the series to
    their own (k = fk; a (k,P) method's k-group size), a bound stated before the attack and
    never widened by a measured rate (:func:`check_linkage_bound`); where the privacy
    evaluation ran the attacker family (:mod:`mimic_deid.evaluate.attackers`: summary and
    rich statistics, raw values at known hours, the whole series by shape and by value), so
    does every member.

A series release that publishes demographics (config ``release.demographics``,
:mod:`mimic_deid.deid.demographics`) also claims, checked by :func:`check_release` after
claim 7:

15. **demographics**: the index publishes exactly the configured demographics, every value a
    label of its hierarchy at a publishable level (never an age: claim 1 leaves these
    columns to this claim); every (split,) duration class x published demographics holds at
    least ``fk`` series, and every Mondrian equivalence class lies inside one such cell
    (:func:`check_demographics`).

Every series release also claims, checked by :func:`check_release` after claim 9 when it is
given the variables' plausible values (``config/variables.yaml``, as the workflow always does):

16. **plausible values**: every published value lies in its variable's valid range, every
    value of a discrete variable (the Glasgow coma scale, capillary refill) is in its value
    set, and a static variable (height) publishes one value throughout each series
    (:func:`check_plausible_values`; every method's output is projected onto these values by
    :func:`mimic_deid.deid.plausible.project`).

Each function raises :class:`~mimic_deid.core.errors.ReleaseCheckError` naming the claim that
failed, or returns the figures it checked; :func:`check_release` runs them all in this order.

A failed claim is a result, not a crash: :func:`check_sweep_point` with ``strict=False``
returns the point refused (``verdict`` ``"refused: <claim>: <figures>"``) and the workflow
withholds its public files (config ``strict``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd

from mimic_deid.core.claims import (
    FORBIDDEN_COLUMNS,
    FORBIDDEN_SUBSTRINGS,
    ClaimInputs,
    verdict,
)
from mimic_deid.core.errors import ReleaseCheckError, require_columns
from mimic_deid.core.logs import get_logger
from mimic_deid.core.numbers import percent
from mimic_deid.deid.claim_checks import (
    check_accounting,
    check_coverage,
    check_demographics,
    check_duration_k,
    check_feature_k,
    check_group_outcomes,
    check_hours,
    check_missing_withheld,
    check_no_identifiers,
    check_outcomes,
    check_plausible_values,
    check_pseudonyms,
    check_released_variables,
)
from mimic_deid.deid.classes import KEY
from mimic_deid.deid.duration import unpublished_groups
from mimic_deid.deid.methods import REGISTRY, parse_method_label
from mimic_deid.deid.plausible import PlausibleValues

__all__ = [
    "FORBIDDEN_COLUMNS",
    "FORBIDDEN_SUBSTRINGS",
    "check_linkage_bound",
    "check_release",
    "check_sweep_point",
]

log = get_logger(__name__)


def check_release(
    series_public: pd.DataFrame,
    index_public: pd.DataFrame,
    *,
    dk: int,
    fk: int,
    eq_classes: pd.DataFrame,
    n_input: int,
    n_suppressed: int,
    variables: Iterable[str] | None = None,
    labelled: bool | None = None,
    outcome_l: int = 1,
    forbidden_columns: Iterable[str] = FORBIDDEN_COLUMNS,
    forbidden_substrings: Iterable[str] = FORBIDDEN_SUBSTRINGS,
    demographics: Mapping[str, Iterable[str]] | None = None,
    plausible: PlausibleValues | None = None,
) -> dict:
    """Verify every privacy claim of a release (module docstring); raise on the first violation.

    Parameters
    ----------
    series_public : DataFrame
        ``pseudonym``, ``hour``, dims.
    index_public : DataFrame
        ``pseudonym``, ``duration_class``, ``split`` (optional; classes are counted within
        (split, duration_class)), [``label``].
    dk, fk : int
        Duration and feature k.
    eq_classes : DataFrame
        One row per released series: ``split`` (optional, as in the index), ``class_length``,
        ``eq_class``, optionally ``pseudonym``.
    n_input, n_suppressed : int
        Series entering the de-identification and series suppressed by it.
    variables : iterable of str, optional
        The protected variables; checks claims 8 and 9 when given.
    labelled : bool, optional
        Whether the release must publish the outcome label; checks claim 10 when given.
    outcome_l : int
        Distinct outcomes required per published class (claim 10).
    forbidden_columns, forbidden_substrings : iterable of str
        Column names (exact, case-insensitive) and name fragments that must not appear.
    demographics : mapping of str to iterable of str, optional
        The published demographics and the labels each may show (claim 15, checked after
        claim 7). None: the release publishes none, and its index may show none.
    plausible : PlausibleValues, optional
        The plausible values of the published variables; checks claim 16 (after claim 9)
        when given.

    Returns
    -------
    dict
        One entry per passed claim with its figures.

    Raises
    ------
    ReleaseCheckError
        A required column is missing, or a claim fails (checked in the module's order).
    """
    require_columns(series_public, ["pseudonym", "hour"], "release series table", ReleaseCheckError)
    require_columns(
        index_public, ["pseudonym", "duration_class"], "release index", ReleaseCheckError
    )
    require_columns(
        eq_classes, ["class_length", "eq_class"], "equivalence-class table", ReleaseCheckError
    )
    result = {
        "no_identifiers": check_no_identifiers(
            series_public,
            index_public,
            forbidden_columns,
            forbidden_substrings,
            demographics=demographics or {},
        ),
        "pseudonyms": check_pseudonyms(series_public, index_public),
        "series_accounted": check_accounting(index_public, n_input, n_suppressed),
        "hours_match_class": check_hours(series_public, index_public),
        "duration_classes": check_duration_k(index_public, dk),
    }
    check_coverage(index_public, eq_classes)
    result["equivalence_classes"] = check_feature_k(index_public, eq_classes, fk)
    result["demographics"] = check_demographics(index_public, eq_classes, demographics or {}, fk)
    if variables is not None:
        result["variables_protected"] = check_released_variables(series_public, variables)
        result["missing_hours_withheld"] = check_missing_withheld(series_public, index_public)
    if plausible is not None:
        result["plausible_values"] = check_plausible_values(series_public, plausible)
    if labelled is not None:
        result["outcomes"] = check_outcomes(index_public, labelled, outcome_l)
    log.info(
        "release check passed: %d series, %d rows",
        result["series_accounted"]["released"],
        result["hours_match_class"]["rows"],
    )
    return result


def check_linkage_bound(linkage: Mapping) -> dict:
    """Claim 14: the strong attacker's top-1 rate, and that of every member of the attacker
    family where it was measured, is within the bound stated before the attack.

    A strong attacker above the bound is named first (its message as before the family, then
    the family's strongest member); else the strongest member of the family; each time with
    every member above the bound.

    Parameters
    ----------
    linkage : mapping
        The privacy evaluation's ``linkage.json``; its ``bound`` entry
        (:func:`mimic_deid.evaluate.privacy.linkage_bound`).

    Returns
    -------
    dict
        The bound entry (bound, measured rate and its 95 % interval, k, targets).

    Raises
    ------
    ReleaseCheckError
        No bound was evaluated, or the measured rate exceeds it.
    """
    bound = linkage.get("bound")
    if bound is None:
        raise ReleaseCheckError(
            "linkage bound: the privacy evaluation holds no strong attacker's bound"
        )
    if not bound["within"] and bound.get("strong_within", False):
        # the strong attacker holds; a member of the attacker family does not
        low, high = bound["strongest_top1_ci"]
        raise ReleaseCheckError(
            f"linkage bound: attacker '{bound['strongest_attacker']}' links top-1 "
            f"{percent(bound['strongest_top1'])} > bound 1/{bound['k']} = {percent(bound['top1'])} "
            f"(95 % interval {percent(low)} to {percent(high)}, {bound['n']} series; above the "
            f"bound: {', '.join(bound['refused_by'])})"
        )
    if not bound["within"]:
        low, high = bound["strong_top1_ci"]
        raise ReleaseCheckError(
            f"linkage bound: strong attacker's top-1 {percent(bound['strong_top1'])} > bound "
            f"1/{bound['k']} = {percent(bound['top1'])} (95 % interval {percent(low)} to "
            f"{percent(high)}, {bound['n']} series)" + _strongest(bound)
        )
    return dict(bound)


def _strongest(bound: Mapping) -> str:
    """The attacker family's strongest member, after a strong attacker's refusal."""
    if "strongest_attacker" not in bound:
        return ""
    low, high = bound["strongest_top1_ci"]
    return (
        f"; strongest attacker '{bound['strongest_attacker']}' links top-1 "
        f"{percent(bound['strongest_top1'])} (95 % interval {percent(low)} to {percent(high)}; above "
        f"the bound: {', '.join(bound['refused_by'])})"
    )


def check_sweep_point(
    series_public: pd.DataFrame,
    index_public: pd.DataFrame,
    classes: pd.DataFrame,
    targets: pd.DataFrame,
    pseudonyms: pd.DataFrame,
    *,
    dk: int,
    fk: int,
    group_by_split: bool,
    variables: Iterable[str] | None = None,
    labelled: bool | None = None,
    outcome_l: int = 1,
    method: str | None = None,
    per_series: pd.DataFrame | None = None,
    linkage: Mapping | None = None,
    strict: bool = True,
    demographics: Mapping[str, Iterable[str]] | None = None,
    plausible: PlausibleValues | None = None,
    labels: pd.DataFrame | None = None,
) -> dict:
    """:func:`check_release` of one sweep point's release, from its private artefacts.

    Classes are counted within the de-identification group: the split for a release
    de-identified per split, the whole release otherwise
    (:data:`mimic_deid.deid.duration.GROUP_BY_SPLIT`).

    Parameters
    ----------
    series_public, index_public : DataFrame
        The release (``release/series.parquet``, ``release/index.parquet``).
    classes, targets, pseudonyms : DataFrame
        ``duration.parquet``, ``targets.parquet`` and ``pseudonyms.parquet`` of the point.
    dk, fk : int
    group_by_split : bool
    variables, labelled, outcome_l
        As :func:`check_release`.
    method : str, optional
        The point's method label; a method with a ``claims`` hook adds its claims (claim 11),
        with ``k = fk`` for a method that takes its k from the fk.
    per_series : DataFrame, optional
        The method's ``method.parquet`` (required for a (k,P) method).
    linkage : mapping, optional
        The point's ``linkage.json``; adds claim 14 (:func:`check_linkage_bound`).
    strict : bool
        Raise on a failed claim (config ``strict: true``); otherwise return the point
        refused.
    demographics : mapping, optional
        As :func:`check_release` (claim 15).
    plausible : PlausibleValues, optional
        As :func:`check_release` (claim 16); also given to the method's ``claims`` hook.
    labels : DataFrame, optional
        The release's ``meta.parquet`` (icustay_id and its labels), for a labelled release: the
        reason a group is not published names the outcomes it lacks.

    Returns
    -------
    dict
        ``check.json``: ``passed``, ``verdict`` (``"certified"`` or ``"refused: <the failed
        claim and its figures>"``), ``dk``, ``fk``, ``unpublished`` (the groups of which no
        series is published, :func:`mimic_deid.deid.duration.unpublished_groups`; the release
        is refused first on them: ``refused: not formed at the configured sizes: split
        'test': 36 series, fewer than deid.dk = 50 ...``) and ``checks`` (the figures of every claim
        checked: all of them, or when refused those checked before the failed one; claims 1-10
        are checked as one step).

    Raises
    ------
    ReleaseCheckError
        With ``strict``, the first failed claim.
    """
    unpublished = (
        unpublished_groups(classes, dk, labels, outcome_l if labelled else None)
        if "group" in classes.columns
        else []
    )

    def claims(checks: dict) -> None:
        if unpublished:  # the release cannot serve as one of its kind: refused first
            raise ReleaseCheckError(
                "not formed at the configured sizes: " + "; ".join(u["reason"] for u in unpublished)
            )
        _point_claims(
            checks, series_public, index_public, classes, targets, pseudonyms, dk=dk, fk=fk,
            group_by_split=group_by_split, variables=variables, labelled=labelled,
            outcome_l=outcome_l, method=method, per_series=per_series, linkage=linkage,
            demographics=demographics, plausible=plausible,
        )  # fmt: skip

    return verdict(claims, strict, {"dk": dk, "fk": fk, "unpublished": unpublished})


def _point_claims(
    result, series_public, index_public, classes, targets, pseudonyms, *, dk, fk,
    group_by_split, variables, labelled, outcome_l, method, per_series, linkage, demographics,
    plausible,
) -> None:  # fmt: skip
    """Fill ``result`` claim by claim (claims 1-10 with 15 and 16, then 11 and 14), so that a
    refusal keeps the figures of the claims checked before the one that failed."""
    if not group_by_split and "split" in index_public.columns:
        raise ReleaseCheckError(
            "duration k: the release index publishes 'split', but the release is de-identified "
            "as a whole, so its duration classes (dk) and demographic cells (fk) are counted "
            "over all splits; expected no 'split' column (a split would divide them below "
            "their k)"
        )
    eq = targets[[KEY, "group", "class_length", "eq_class"]].merge(pseudonyms, on=KEY)
    index_for_check = index_public
    eq_classes = (
        eq.rename(columns={"group": "split"}) if group_by_split else eq.drop(columns=["group"])
    )
    result |= check_release(
        series_public,
        index_for_check,
        dk=dk,
        fk=fk,
        eq_classes=eq_classes.drop(columns=[KEY]),
        n_input=len(classes),
        n_suppressed=int((classes["class_length"] == 0).sum()),
        variables=variables,
        labelled=labelled,
        outcome_l=outcome_l,
        demographics=demographics,
        plausible=plausible,
    )
    diverse = labelled and outcome_l is not None and outcome_l > 1
    if diverse:  # the Mondrian classes can be read off the released values
        # (group, eq_class) is unique over the release
        eq_groups = eq[["pseudonym", "eq_class"]]
        result["outcomes_per_equivalence_class"] = check_group_outcomes(
            index_public, eq_groups, outcome_l, "equivalence class"
        )
    if method is not None:  # the method's own claims and recoverable groups (its hooks)
        name, params = parse_method_label(method)
        entry = REGISTRY[name]
        if (entry.claims or entry.groups) and per_series is None:
            raise ReleaseCheckError(
                f"method '{method}': its claims need its per-series table (method.parquet)"
            )
        if entry.claims:
            k = fk if entry.k_from_fk else params.get("k", fk)
            point = ClaimInputs(per_series, series_public, pseudonyms, params, k, plausible)
            result |= entry.claims(point)
        if entry.groups and diverse:
            groups = entry.groups(per_series).merge(pseudonyms, on=KEY).drop(columns=[KEY])
            result[f"outcomes_per_{entry.group_name.replace('-', '_')}"] = check_group_outcomes(
                index_public, groups, outcome_l, entry.group_name
            )
    if linkage is not None:
        result["linkage_bound"] = check_linkage_bound(linkage)
