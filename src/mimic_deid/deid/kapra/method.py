"""KAPRA and PC-KAPRA as release methods: a class's variables grouped one by one, the
method's summary and its registry hooks (config rule, summary, recoverable groups).

What they bring to the release-method contract (:class:`mimic_deid.deid.methods.ReleaseMethod`);
no other module names them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.deid.classes import KEY, unit_keys
from mimic_deid.deid.features import FeatureSpec
from mimic_deid.deid.kapra.groups import diverse_k_groups, kp_anonymise
from mimic_deid.deid.missing import fill_missing_hours
from mimic_deid.deid.optimise import OptimiseResult, check_inputs, evaluate
from mimic_deid.deid.sax import group_envelopes, ivl, words

__all__ = [
    "IMPUTE_RULES",
    "check_config",
    "impute",
    "imputed_records",
    "k_groups",
    "kp_summary",
    "run_kapra",
    "run_pc_kapra",
    "summarise",
]

#: Imputation rules for null records of a grouped variable: ``none`` refuses nulls, ``carry``
#: carries observed values forward and back (class mean for a series without one,
#: :func:`mimic_deid.deid.missing.fill_missing_hours`), ``mean`` takes the class mean of the hour.
IMPUTE_RULES = ("none", "carry", "mean")


def impute(x: np.ndarray, rule: str, who: str, variable: str) -> tuple[np.ndarray, np.ndarray]:
    """Fill the null records of one variable of a class by ``rule`` (:data:`IMPUTE_RULES`).

    Parameters
    ----------
    x : ndarray of float64, shape (n, L)
        With at least one non-null record.
    rule : str
    who, variable : str
        Method and variable named in the error message.

    Returns
    -------
    filled : ndarray of float64, shape (n, L)
    imputed : ndarray of int64, shape (n,)
        Records filled per series.
    """
    if rule not in IMPUTE_RULES:
        raise ConfigError(f"{who} parameter 'impute' must be one of {IMPUTE_RULES}, got {rule!r}")
    null = np.isnan(x)
    imputed = null.sum(axis=1).astype(np.int64)
    if not null.any():
        return x, imputed
    if rule == "none":
        raise InputDataError(
            f"{who}: variable '{variable}' of the duration class of {x.shape[1]} h has "
            f"{int(imputed.sum())} null record(s) in {int((imputed > 0).sum())} series and "
            "parameter 'impute' is 'none'; choose 'carry' or 'mean'"
        )
    if rule == "carry":
        return fill_missing_hours(x[:, :, None])[:, :, 0], imputed
    hour_mean = np.nanmean(np.where(null.all(axis=0), np.nanmean(x), x), axis=0)
    return np.where(null, hour_mean[None, :], x), imputed


def _variable_names(spec: FeatureSpec) -> dict[int, str]:
    """Variable name of each feature dimension (``<variable>_<stat>`` without the stat)."""
    names: dict[int, str] = {}
    for d, stat, name in zip(spec.dims.tolist(), spec.stats, spec.names, strict=True):
        names.setdefault(d, name[: -len(stat) - 1])
    return names


def _run(X, targets, spec, params: Mapping[str, Any], rng, algorithm: str) -> OptimiseResult:
    """Group every feature dimension of a class independently; release envelope midpoints."""
    X, targets = check_inputs(X, targets, spec)
    n, length, _ = X.shape
    if "k" not in params:
        raise ConfigError(f"release method '{algorithm}' needs the feature k (fk) as its k")
    out = X.copy()
    detail: dict[str, np.ndarray] = {}
    iterations = 0
    for d, var in _variable_names(spec).items():
        x = X[:, :, d]
        if np.isnan(x).all():  # not observed in this class: stays null
            detail[f"k_group_{var}"] = np.full(n, -1, dtype=np.int64)
            detail[f"sax_level_{var}"] = np.zeros(n, dtype=np.int64)
            detail[f"word_{var}"] = np.full(n, "", dtype=object)
            detail[f"imputed_{var}"] = np.zeros(n, dtype=np.int64)
            detail[f"lo_{var}"] = np.full((n, length), np.nan)
            detail[f"hi_{var}"] = np.full((n, length), np.nan)
            continue
        x, imputed = impute(x, params["impute"], algorithm, var)
        res = kp_anonymise(
            x, params["k"], params["P"], params["paa"], params["level"], algorithm, rng
        )
        if "outcomes" in params:  # a labelled release: ℓ-diverse k-groups
            merged = diverse_k_groups(x, res.k_group, params["outcomes"], params["ell"])
            lo, hi = group_envelopes(x, merged)
            res = dataclasses.replace(res, k_group=merged, lo=lo[merged], hi=hi[merged])
        out[:, :, d] = res.release
        iterations = max(iterations, res.iterations)
        detail[f"k_group_{var}"] = res.k_group
        detail[f"sax_level_{var}"] = res.levels
        detail[f"word_{var}"] = words(res.codes)
        detail[f"imputed_{var}"] = imputed
        detail[f"lo_{var}"] = res.lo
        detail[f"hi_{var}"] = res.hi
    result = evaluate(X, out, targets, spec, np.full(n, iterations, dtype=np.int64))
    return dataclasses.replace(result, detail=detail)


def run_kapra(X, targets, spec, params, rng) -> OptimiseResult:
    """Release method ``kapra`` (:mod:`mimic_deid.deid.methods` signature).

    ``params``: ``k`` (the sweep's fk), ``P``, ``paa``, ``level`` (max-level), ``impute``, and
    in a labelled release ``outcomes`` and ``ell`` (k-groups made ℓ-diverse by
    :func:`diverse_k_groups`).
    Every feature dimension of ``X`` (n, L, D) is grouped on its own and released as its
    k-group's envelope midpoint; ``detail`` holds per series and variable ``k_group_<var>``,
    ``sax_level_<var>``, ``word_<var>``, ``imputed_<var>`` and the envelope ``lo_<var>``,
    ``hi_<var>`` (L values each).
    """
    return _run(X, targets, spec, params, rng, "kapra")


def run_pc_kapra(X, targets, spec, params, rng) -> OptimiseResult:
    """Release method ``pc-kapra``: as :func:`run_kapra` with k-means pattern clustering."""
    return _run(X, targets, spec, params, rng, "pc-kapra")


def kp_summary(per_series: pd.DataFrame) -> dict:
    """Public aggregates of a (k,P) release, from its private per-series table.

    Parameters
    ----------
    per_series : DataFrame
        ``method.parquet`` rows of a (k,P) method: group, class_length and the
        ``k_group_<var>``, ``lo_<var>``, ``hi_<var>`` columns of :func:`run_kapra`.

    Returns
    -------
    dict
        ``variables``: per grouped variable ``k_groups`` (count over the classes) and ``tivl``
        (mean IVL over those k-groups, seed eq. 3.5, in the variable's unit);
        ``joint_unique_pct``: percentage of series whose combination of k-groups over all
        variables no other series of its class shares (per-variable groups give no joint k).
    """
    keys = unit_keys(per_series)
    names = sorted(
        c.removeprefix("k_group_") for c in per_series.columns if c.startswith("k_group_")
    )
    out: dict = {"variables": {}}
    for var in names:
        grouped = per_series[per_series[f"k_group_{var}"] >= 0]
        first = grouped.drop_duplicates([*keys, f"k_group_{var}"])
        # one envelope per k-group; classes differ in length, so IVL is taken per k-group
        widths = [
            ivl(np.asarray(lo), np.asarray(hi))
            for lo, hi in zip(first[f"lo_{var}"], first[f"hi_{var}"], strict=True)
        ]
        out["variables"][var] = {
            "k_groups": len(first),
            "tivl": float(np.mean(widths)) if widths else None,
        }
    if names and len(per_series):
        combo = [*keys, *(f"k_group_{v}" for v in names)]
        joint = per_series.groupby(combo, sort=False)[combo[0]].transform("size")
        out["joint_unique_pct"] = float(100.0 * np.mean(joint.to_numpy() == 1))
    return out


def check_config(name: str, grid: Mapping[str, list], deid: Mapping[str, Any]) -> None:
    """Every P of the sweep is <= every fk (the k of a (k,P) method): a k-group is made of
    whole P-groups; ``ConfigError`` naming both parameters otherwise."""
    if max(grid["P"]) > min(deid["fk"]):
        raise ConfigError(
            f"config parameters 'deid/methods/{name}/P' and 'deid/fk': every P must be <= "
            f"every fk (k < P: a k-group is made of whole P-groups), got P {grid['P']} "
            f"and fk {deid['fk']}"
        )


def imputed_records(per_series: pd.DataFrame) -> dict[str, int]:
    """Records filled by the imputation rule, per variable (the ``imputed_<var>`` columns of
    :func:`run_kapra`'s ``detail``)."""
    columns = [c for c in per_series.columns if c.startswith("imputed_")]
    return {c.removeprefix("imputed_"): int(per_series[c].sum()) for c in columns}


def summarise(per_series: pd.DataFrame) -> dict:
    """The method summary's (k,P) entry (``kp``: :func:`kp_summary`), its sweep column
    ``kp_joint_unique_pct`` and, where the rule filled any column, ``imputed_records``
    (:func:`imputed_records`)."""
    kp = kp_summary(per_series)
    out = {"kp": kp, "sweep": {"kp_joint_unique_pct": kp.get("joint_unique_pct")}}
    imputed = imputed_records(per_series)
    if imputed:
        out["imputed_records"] = imputed
    return out


def k_groups(per_series: pd.DataFrame) -> pd.DataFrame:
    """The groups a recipient recovers from a (k,P) release: per grouped variable the k-group
    of every series (``k_group_<var>``, numbered over the release; -1: not grouped), with
    ``icustay_id``."""
    columns = [c for c in per_series.columns if c.startswith("k_group_")]
    unit = unit_keys(per_series)
    out = pd.DataFrame({KEY: per_series[KEY].to_numpy()})
    for column in columns:
        code = per_series.groupby([*unit, column], sort=True).ngroup()
        out[column] = code.where(per_series[column] >= 0, -1).to_numpy()
    return out
