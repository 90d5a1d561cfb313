"""The individual disagreement curves of one class of a release, for seed Figs 3.1 and 5.4.

The privacy evaluation keeps only the summary of a class's curves (per inclusion count,
:mod:`mimic_deid.evaluate.privacy`). The report also draws every curve of one *main class*
(the class length closest to the seed's 30 hours) and one target's step curve with its
thresholds; :func:`main_class_curves` computes them once, whole class at once, in the
evaluation (rule ``privacy_curves``), and :func:`curves_table` / :func:`curves_from_table` are
the artefact's layout, so the report reads them and computes nothing.

The artefact (owner-only: it holds the class's original features and the original values of
one variable) is a Parquet table with one row per series of the class, in class order:
``auc``, ``first_threshold``, ``first_disagreement``, ``t_max``, ``n_reachable``,
``first_included``, and the list columns ``curves``, ``thresholds``, ``F_orig``, ``F_rel``,
``X_orig``, ``X_rel``; the schema metadata (key ``mimic_deid``) holds ``class_length``,
``variable``, ``names`` (the features) and ``series_distance``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from mimic_deid.core.errors import InputDataError
from mimic_deid.deid.classes import KEY, ClassArray, class_arrays, iter_class_arrays
from mimic_deid.deid.features import FeatureSpec, compute_features, feature_spec
from mimic_deid.evaluate.disagreement import (
    DisagreementResult,
    check_class,
    disagreement_from_distances,
    standardised_class,
)
from mimic_deid.evaluate.distances import feature_distances
from mimic_deid.evaluate.evaluators import disagreement_distances
from mimic_deid.evaluate.privacy import (
    DTW_WINDOW,
    check_dtw_window,
    check_series_distance,
    released_by_key,
)

__all__ = [
    "MAIN_CLASS_HOURS",
    "ORIGINAL_KEYS",
    "closest_class",
    "curves_from_table",
    "curves_table",
    "first_included",
    "main_class_curves",
    "main_class_keys",
]

#: The seed shows the class of 30 hours (Figs 3.1, 5.4); the main class is the closest length.
MAIN_CLASS_HOURS = 30
#: The entries of :func:`main_class_curves` that hold original values (private report only).
ORIGINAL_KEYS = ("X_orig", "F_orig")
#: Per-series columns of the artefact besides the lists.
_ROW_FIELDS = ("auc", "first_threshold", "first_disagreement", "t_max", "n_reachable")
_LISTS = ("curves", "thresholds", "F_orig", "F_rel", "X_orig", "X_rel")
_META = b"mimic_deid"


def _class_distances(
    orig: ClassArray,
    rel: ClassArray,
    spec: FeatureSpec,
    standardise: bool,
    series_distance: str,
    dtw_window: int | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The disagreement's feature and series distances of one class (n, n), and its original
    and released features (n, m)."""
    series_distance = check_series_distance(series_distance)
    dtw_window = check_dtw_window(dtw_window)
    F_o, F_r = compute_features(orig.X, spec), compute_features(rel.X, spec)
    _, _, X_o, X_r = check_class(F_o, F_r, orig.X, rel.X)
    scale = None
    if standardise:
        scale, X_o, X_r = standardised_class(F_o, X_o, X_r)
    DS = disagreement_distances(X_o, X_r, series_distance, dtw_window)
    return feature_distances(F_o, F_r, scale), DS, F_o, F_r


def closest_class(summary: pd.DataFrame, hours: int) -> int | None:
    """The class length in ``summary`` closest to ``hours`` (lowest on a tie; None if empty).

    Parameters
    ----------
    summary : DataFrame
        Any table with a ``class_length`` column (e.g. a disagreement summary).
    hours : int
    """
    lengths = np.unique(summary["class_length"].to_numpy()) if len(summary) else np.array([])
    if lengths.size == 0:
        return None
    return int(lengths[np.argmin(np.abs(lengths - hours))])


def first_included(DF: np.ndarray) -> np.ndarray:
    """The released series each target's disagreement includes first, (n,) (-1: none).

    ``DF`` is the disagreement's feature distances of the class (n, n; NaN = undefined; in
    std units with ``standardise``); ties go to the lowest row, as the disagreement's stable
    sort orders them.
    """
    defined = ~np.isnan(DF)
    best = np.argmin(np.where(defined, DF, np.inf), axis=1)
    return np.where(defined.any(axis=1), best, -1)


def main_class_keys(classes: pd.DataFrame, class_length: int | None) -> np.ndarray:
    """The icustay_ids of the main class (group ``all``, length ``class_length``), in
    ``classes`` order; empty without a class. A caller reads only these series."""
    if class_length is None:
        return classes[KEY].to_numpy()[:0]
    keep = (classes["class_length"] == class_length) & (classes["group"] == "all")
    return classes.loc[keep, KEY].to_numpy()


def main_class_curves(
    series: pd.DataFrame,
    classes: pd.DataFrame,
    release_series: pd.DataFrame,
    pseudonyms: pd.DataFrame,
    class_length: int | None,
    features: Mapping[str, list[str]],
    standardise: bool,
    series_distance: str,
    dtw_window: int | None = DTW_WINDOW,
) -> dict:
    """Every disagreement curve of one class (group ``all``) of a release.

    Parameters
    ----------
    series, classes : DataFrame
        The original series and the release's duration classes.
    release_series, pseudonyms : DataFrame
        The staged release and its pseudonym map.
    class_length : int or None
        The class shown (:func:`closest_class`); None: none.
    features : mapping of variable to list of statistics
        The features the disagreement ranks by (config ``deid.features``).
    standardise, series_distance, dtw_window
        As in :func:`~mimic_deid.evaluate.privacy.evaluate_class` (config ``evaluate``).

    Returns
    -------
    dict
        ``result`` (:class:`~mimic_deid.evaluate.disagreement.DisagreementResult`),
        ``first_included`` (:func:`first_included`, (n,)), ``F_orig`` / ``F_rel`` (n, m) and
        ``names`` of the features, ``X_orig`` / ``X_rel`` (n, L) of the first feature
        variable, ``variable``, ``class_length`` and ``series_distance``; empty when the class
        is missing.
    """
    keys = main_class_keys(classes, class_length)
    if not len(keys):
        return {}
    classes = classes[classes[KEY].isin(keys)]
    original, dims = class_arrays(series[series[KEY].isin(keys)], classes)
    released = list(
        iter_class_arrays(released_by_key(release_series, pseudonyms, classes, dims), dims)
    )
    if len(original) != 1 or len(released) != 1:
        return {}
    spec = feature_spec(dict(features), dims)
    DF, DS, F_o, F_r = _class_distances(
        original[0], released[0], spec, standardise, series_distance, dtw_window
    )
    d = int(spec.dims[0])
    return {
        "result": disagreement_from_distances(DF, DS),
        "first_included": first_included(DF),
        "F_orig": F_o,
        "F_rel": F_r,
        "names": list(spec.names),
        "X_orig": original[0].X[:, :, d],
        "X_rel": released[0].X[:, :, d],
        "variable": dims[d],
        "class_length": int(class_length),
        "series_distance": series_distance,
    }


def curves_table(curves: Mapping[str, Any]) -> pa.Table:
    """The artefact of :func:`main_class_curves` (module docstring); no row when empty."""
    columns: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    if curves:
        r = curves["result"]
        columns = {name: getattr(r, name) for name in _ROW_FIELDS}
        columns["first_included"] = curves["first_included"]
        lists = {"curves": r.curves, "thresholds": r.thresholds}
        lists.update({k: curves[k] for k in ("F_orig", "F_rel", "X_orig", "X_rel")})
        for name, values in lists.items():
            values = np.ascontiguousarray(values, dtype=np.float64)
            flat = pa.array(values.reshape(-1))
            columns[name] = pa.FixedSizeListArray.from_arrays(flat, values.shape[1])
        meta = {k: curves[k] for k in ("class_length", "variable", "names", "series_distance")}
    table = pa.table(columns)
    return table.replace_schema_metadata({_META: json.dumps(meta, sort_keys=True).encode()})


def curves_from_table(table: pa.Table, source: str = "main class curves") -> dict:
    """:func:`main_class_curves`' dict from its artefact (``{}`` for an empty one).

    Raises
    ------
    InputDataError
        ``source`` lacks the metadata or a column of the layout (module docstring).
    """
    raw = (table.schema.metadata or {}).get(_META)
    if raw is None:
        raise InputDataError(
            f"{source}: no 'mimic_deid' metadata; expected a privacy_curves output"
        )
    meta = json.loads(raw)
    if not meta:
        return {}
    missing = [c for c in (*_ROW_FIELDS, "first_included", *_LISTS) if c not in table.column_names]
    if missing:
        raise InputDataError(f"{source}: missing column(s) {missing}")

    def matrix(name: str) -> np.ndarray:
        column = table.column(name).combine_chunks()
        flat = column.flatten().to_numpy(zero_copy_only=False).astype(np.float64)
        return flat.reshape(len(column), flat.size // max(len(column), 1))

    row = {name: table.column(name).to_numpy() for name in (*_ROW_FIELDS, "first_included")}
    result = DisagreementResult(
        *(row[name] for name in _ROW_FIELDS), matrix("curves"), matrix("thresholds")
    )
    out = {"result": result, "first_included": row["first_included"]}
    out.update({k: matrix(k) for k in ("F_orig", "F_rel", "X_orig", "X_rel")})
    out.update(meta)
    return out
