"""Privacy evaluation of a release, duration class by duration class (seed §5.2-§5.3, §6.3).

For every duration class the attacker's view is compared with the truth:

- **disagreement** (:func:`~mimic_deid.evaluate.disagreement.disagreement`): how far the
  series that look closest by features are from a target's true series, as the attacker
  includes more series;
- **linkage attack** (:func:`~mimic_deid.evaluate.linkage.linkage_attack`): how often an
  attacker who knows a target's features up to a relative error links it to its own released
  series. Two attackers are measured: the seed's, who knows the features de-identification
  targets (config ``deid.features``), and a *strong* attacker who knows the mean, variance,
  min, max and number of observed hours of every released variable
  (:func:`~mimic_deid.deid.features.attacker_features`). The release promises the strong
  attacker no more than :func:`linkage_bound`.

The *baseline* is the same evaluation of the original series released unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from mimic_deid.deid.classes import KEY, ClassArray, map_classes
from mimic_deid.deid.features import ATTACKER_STATS, FeatureSpec, compute_features, feature_spec
from mimic_deid.errors import InputDataError
from mimic_deid.evaluate.disagreement import DisagreementResult, disagreement, summarise_curves
from mimic_deid.evaluate.linkage import aggregate_linkage, linkage_attack
from mimic_deid.seeding import derive_rng

__all__ = [
    "baseline_disagreement",
    "evaluate_release",
    "linkage_bound",
    "linkage_summary",
    "released_by_key",
]


def _frames(
    result: DisagreementResult, cls: ClassArray, keys: np.ndarray | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    per_series = pd.DataFrame(
        {
            "class_length": np.int32(cls.length),
            "auc": result.auc,
            "first_threshold": result.first_threshold,
            "first_disagreement": result.first_disagreement,
        }
    )
    if keys is None:
        per_series.insert(0, "group", cls.group)
    else:
        per_series.insert(0, "pseudonym", keys)
        per_series.insert(1, "group", cls.group)
    summary = summarise_curves(result)
    summary.insert(0, "class_length", np.int32(cls.length))
    summary.insert(0, "group", cls.group)
    return per_series, summary


def _baseline_class(cls: ClassArray, spec: FeatureSpec, standardise: bool):
    F = compute_features(cls.X, spec)
    return _frames(disagreement(F, F, cls.X, cls.X, standardise=standardise), cls)


def baseline_disagreement(
    classes: Sequence[ClassArray],
    dims: list[str],
    features: Mapping[str, list[str]],
    standardise: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Disagreement of the original series against themselves, per duration class.

    Parameters
    ----------
    classes : sequence of ClassArray
        The original series in their duration classes.
    dims : list of str
    features : mapping of variable to list of statistics
        The attacker's features (config ``deid.features``).
    standardise : bool
        Standardise features and series per class before distances.

    Returns
    -------
    per_series : DataFrame
        group, class_length, auc, first_threshold, first_disagreement; no key, as the baseline
        is compared with releases through distributions only.
    summary : DataFrame
        group, class_length, then :func:`summarise_curves` columns.
    """
    spec = feature_spec(dict(features), dims)
    n = len(classes)
    results = map_classes(
        _baseline_class,
        classes,
        [spec] * n,
        [standardise] * n,
        label="baseline disagreement classes",
    )
    return _concat(results)


def _concat(results: list[tuple[pd.DataFrame, pd.DataFrame]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (
        pd.concat([r[0] for r in results], ignore_index=True),
        pd.concat([r[1] for r in results], ignore_index=True),
    )


def released_by_key(
    release_series: pd.DataFrame,
    pseudonyms: pd.DataFrame,
    classes: pd.DataFrame,
    dims: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The released series keyed back to private ids, laid out like ``trim_to_classes``.

    With ``dims`` the dimensions are those, in that order; a dimension the release withholds
    is entirely null.
    """
    released = release_series.merge(pseudonyms, on="pseudonym", how="inner", validate="many_to_one")
    if dims is not None:
        released = released.reindex(columns=["pseudonym", KEY, "hour", *dims])
    released = released.drop(columns=["pseudonym"]).merge(
        classes[[KEY, "group", "class_length"]], on=KEY, how="inner", validate="many_to_one"
    )
    front = ["group", "class_length", KEY, "hour"]
    released = released[front + [c for c in released.columns if c not in front]]
    return released.sort_values(front, kind="stable").reset_index(drop=True)


def _linkage(orig, rel, spec, errors, seed, attacker) -> dict:
    """Both sides of one attacker's linkage attack on one class."""
    F_orig = compute_features(orig.X, spec)
    F_rel = compute_features(rel.X, spec)
    out = {}
    for side, (F_r, X_r) in {"baseline": (F_orig, orig.X), "release": (F_rel, rel.X)}.items():
        # The same estimation noise for both sides, so before/after are paired.
        parts = (
            ("linkage", orig.group, orig.length)
            if attacker == "seed"
            else ("linkage", attacker, orig.group, orig.length)
        )
        rng = derive_rng(seed, *parts)
        out[side] = linkage_attack(F_orig, F_r, orig.X, X_r, errors=errors, rng=rng)
    return out


def _release_class(
    orig: ClassArray,
    rel: ClassArray,
    pseudonyms: np.ndarray,
    spec: FeatureSpec,
    strong: FeatureSpec | None,
    standardise: bool,
    errors: tuple[float, ...],
    seed: int,
):
    if orig.length != rel.length or not np.array_equal(orig.keys, rel.keys):
        raise InputDataError(
            f"release series: the released series of class {orig.group}/{orig.length} h do not "
            "match the original duration classes"
        )
    F_orig = compute_features(orig.X, spec)
    F_rel = compute_features(rel.X, spec)
    frames = _frames(
        disagreement(F_orig, F_rel, orig.X, rel.X, standardise=standardise), orig, pseudonyms
    )
    linkage = {"seed": _linkage(orig, rel, spec, errors, seed, "seed")}
    if strong is not None:
        linkage["strong"] = _linkage(orig, rel, strong, errors, seed, "strong")
    return frames, linkage


def evaluate_release(
    original: Sequence[ClassArray],
    released: Sequence[ClassArray],
    pseudonyms: pd.DataFrame,
    dims: list[str],
    features: Mapping[str, list[str]],
    standardise: bool,
    linkage_errors: Sequence[float],
    seed: int,
    strong_features: Mapping[str, list[str]] | None = None,
    fk: int | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Disagreement (original vs released) and linkage attacks, per duration class.

    Parameters
    ----------
    original, released : sequence of ClassArray
        The original series and the released series keyed back to their ids
        (:func:`released_by_key`), in the same duration classes and order.
    pseudonyms : DataFrame
        icustay_id, pseudonym.
    dims : list of str
    features : mapping of variable to list of statistics
    standardise : bool
    linkage_errors : sequence of float
        The attacker's relative feature-estimation errors.
    seed : int
        Master seed: the attacker's noise in class (group, length) comes from
        ``derive_rng(seed, "linkage", group, length)`` (the strong attacker's with
        ``"strong"`` after ``"linkage"``).
    strong_features : mapping, optional
        The strong attacker's knowledge (:func:`~mimic_deid.deid.features.attacker_features`
        of the released variables); no strong attack when None.
    fk : int, optional
        Feature k of the release, for :func:`linkage_bound`.

    Returns
    -------
    per_series : DataFrame
        pseudonym, group, class_length, auc, first_threshold, first_disagreement.
    summary : DataFrame
        group, class_length, then :func:`summarise_curves` columns.
    linkage : dict
        :func:`linkage_summary` of the seed's attacker (keys ``baseline``, ``release``,
        ``details``), and with ``strong_features`` the strong attacker's under ``strong`` and
        ``bound`` (:func:`linkage_bound`).
    """
    if len(original) != len(released):
        raise InputDataError(
            f"release series: {len(released)} released duration classes for "
            f"{len(original)} original ones"
        )
    spec = feature_spec(dict(features), dims)
    strong = (
        feature_spec(dict(strong_features), dims, allowed=ATTACKER_STATS)
        if strong_features is not None
        else None
    )
    to_pseudonym = pseudonyms.set_index(KEY)["pseudonym"]
    n = len(original)
    results = map_classes(
        _release_class,
        original,
        released,
        [to_pseudonym.loc[cls.keys].to_numpy() for cls in original],
        [spec] * n,
        [strong] * n,
        [standardise] * n,
        [tuple(linkage_errors)] * n,
        [seed] * n,
        label="privacy evaluation classes",
    )
    per_series, summary = _concat([r[0] for r in results])

    def attack(name: str) -> dict:
        return linkage_summary(
            {side: [r[1][name][side] for r in results] for side in ("baseline", "release")}
        )

    linkage = attack("seed")
    if strong is not None:
        linkage["strong"] = attack("strong")
        if fk is not None:
            linkage["bound"] = linkage_bound(linkage, fk)
    return per_series, summary, linkage


def linkage_bound(linkage: Mapping, fk: int) -> dict:
    """The promise to the strong attacker, and whether the release keeps it.

    With exact knowledge (error 0, or the smallest error measured) the strong attacker's top-1 rate on the release must not
    exceed ``1 / fk`` (a target hidden among at least fk series with the same feature
    targets) plus the seed attacker's top-1 rate, which measures what the release method
    leaves unmet (its residual unfeasibility).

    Returns
    -------
    dict
        ``top1`` (the bound, a fraction), ``strong_top1`` (measured), ``within`` (bool).
    """
    error = min(linkage["release"], key=float)  # the most precise knowledge measured
    seed_top1 = linkage["release"][error]["top1"]
    strong_top1 = linkage["strong"]["release"][error]["top1"]
    bound = 1.0 / fk + seed_top1
    return {
        "error": float(error),
        "top1": bound,
        "strong_top1": strong_top1,
        "within": bool(strong_top1 <= bound),
    }


def linkage_summary(per_class: Mapping[str, list[dict]]) -> dict:
    """Class-size-weighted linkage results per side, keyed by the estimation error.

    ``{side: {"<error>": {top1, top5, reconstruction_error, n}}, "details": {side: ...}}``.
    """
    out: dict = {"details": {}}
    for side, results in per_class.items():
        agg = aggregate_linkage(results)
        out["details"][side] = agg
        out[side] = {
            f"{row['error']:g}": {
                "top1": row.get("top1"),
                "top5": row.get("top5"),
                "reconstruction_error": row["reconstruction_error"],
                "n": row["n_targets"],
            }
            for row in agg["by_error"]
        }
    return out
