"""What a release method did to individual series: its worst and its median (seed Figs 6.2/6.3).

The private report shows, for the genetic optimiser (a method whose registry entry has
``examples``), the series with the largest unfeasibility and the median one: the original and
the perturbed values of one variable and that variable's four features (original, target,
achieved). :func:`method_examples` selects and computes them in rule ``method_examples``;
:func:`examples_to_json` / :func:`examples_from_json` are the artefact's layout, so the report
only draws them. The artefact is owner-only: it holds original values of two patients.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.deid.classes import KEY, trim_to_classes
from mimic_deid.deid.features import dimension_stats

__all__ = [
    "GA_STATS",
    "example_keys",
    "examples_from_json",
    "examples_to_json",
    "method_examples",
    "series_features",
]

#: The four features of a shown variable, in the order the figures list them.
GA_STATS = ("min", "max", "mean", "var")


def series_features(x: np.ndarray) -> dict[str, float]:
    """min, max, mean and variance (ddof=0) of one series' non-null values, as the features
    of :func:`mimic_deid.deid.features.dimension_stats`; NaN for an all-null series."""
    x = np.asarray(x, dtype=np.float64)
    if not np.isfinite(x).any():
        return dict.fromkeys(GA_STATS, math.nan)
    stats = dimension_stats(x[None, :])
    return {s: float(stats[s][0]) for s in GA_STATS}


def _chosen(
    targets: pd.DataFrame, per_series: pd.DataFrame, features: Mapping[str, list[str]]
) -> tuple[str, int, dict[str, pd.Series]] | None:
    """The variable shown, the number of candidate series and the ``method.parquet`` rows of
    the worst and the median one (:func:`method_examples`); None when there is none."""
    variable = next((v for v in features if "mean" in features[v] and "var" in features[v]), None)
    if variable is None:
        return None
    stat_cols = [f"target_{variable}_{s}" for s in GA_STATS]
    usable = targets.loc[targets[stat_cols].notna().all(axis=1), KEY]
    per_series = per_series[per_series[KEY].isin(usable)]
    per_series = per_series.sort_values(["unfeasibility", KEY], kind="stable")
    if per_series.empty:
        return None
    n = len(per_series)
    chosen = {"worst": n - 1, "median": (n - 1) // 2}
    return variable, n, {rank: per_series.iloc[i] for rank, i in chosen.items()}


def example_keys(
    targets: pd.DataFrame, per_series: pd.DataFrame, features: Mapping[str, list[str]]
) -> list[int]:
    """The icustay_ids :func:`method_examples` shows (at most two): a caller reads only
    these series."""
    chosen = _chosen(targets, per_series, features)
    return [] if chosen is None else sorted({int(row[KEY]) for row in chosen[2].values()})


def method_examples(
    series: pd.DataFrame,
    classes: pd.DataFrame,
    perturbed: pd.DataFrame,
    targets: pd.DataFrame,
    per_series: pd.DataFrame,
    features: Mapping[str, list[str]],
) -> list[dict]:
    """The worst and the median series of a release method by unfeasibility (seed Figs 6.2/6.3).

    Parameters
    ----------
    series, classes : DataFrame
        The original ``stays`` series and their duration classes.
    perturbed, targets, per_series : DataFrame
        ``perturbed.parquet``, ``targets.parquet`` and ``method.parquet`` of the point (a
        method with ``examples`` in its registry entry: the genetic optimiser).
    features : mapping
        Config ``deid.features``: the first variable with mean and var features is shown.

    Returns
    -------
    list of dict
        Up to two ``{"original", "perturbed", "variable", "features", "rank", "key_stats"}``:
        first the series with the largest unfeasibility (``rank`` ``"worst"``), then the
        median one (``"median"``: position ``(n - 1) // 2`` in increasing unfeasibility, ties
        by key), among the ``n`` series whose shown variable has all four target statistics.
        ``key_stats`` holds the whole series' ``unfeasibility`` and ``distortion`` (all
        feature dimensions, as in ``method.parquet``), ``iterations``, ``class_length``
        and ``n``. Empty when no series has the four target statistics.
    """
    chosen = _chosen(targets, per_series, features)
    if chosen is None:
        return []
    variable, n, rows = chosen
    targets = targets.set_index(KEY)
    keys = [int(row[KEY]) for row in rows.values()]
    original = trim_to_classes(series[series[KEY].isin(keys)], classes)
    out = []
    for rank, row in rows.items():
        key = int(row[KEY])
        orig = original.loc[original[KEY] == key, variable].to_numpy(dtype=np.float64)
        pert = perturbed.loc[perturbed[KEY] == key, variable].to_numpy(dtype=np.float64)
        target = {s: float(targets.loc[key, f"target_{variable}_{s}"]) for s in GA_STATS}
        out.append(
            {
                "original": orig,
                "perturbed": pert,
                "variable": variable,
                "rank": rank,
                "key_stats": {
                    "unfeasibility": float(row["unfeasibility"]),
                    "distortion": float(row["distortion"]),
                    "iterations": int(row["iterations"]),
                    "class_length": int(row["class_length"]),
                    "n": n,
                },
                "features": {
                    "original": series_features(orig),
                    "target": target,
                    "achieved": series_features(pert),
                },
            }
        )
    return out


def examples_to_json(examples: list[dict]) -> list[dict[str, Any]]:
    """:func:`method_examples` as JSON-ready lists (NaN is written as null)."""
    return [
        {**e, "original": e["original"].tolist(), "perturbed": e["perturbed"].tolist()}
        for e in examples
    ]


def examples_from_json(examples: list[Mapping[str, Any]]) -> list[dict]:
    """:func:`method_examples` from the artefact: the series as float arrays (null: NaN) and
    every feature as a float (null: NaN)."""
    out = []
    for e in examples:
        features = {
            role: {s: math.nan if v is None else float(v) for s, v in block.items()}
            for role, block in e["features"].items()
        }
        out.append(
            {
                **e,
                "original": np.asarray(e["original"], dtype=np.float64),
                "perturbed": np.asarray(e["perturbed"], dtype=np.float64),
                "features": features,
            }
        )
    return out
