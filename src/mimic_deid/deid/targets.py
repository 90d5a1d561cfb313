"""Mondrian feature targets of a whole release, duration class by duration class (seed §4.1).

Within each duration class (of each de-identification group) the series' features are
partitioned by :func:`~mimic_deid.deid.mondrian.mondrian_partition` into equivalence classes of
at least ``fk`` series, and every series gets its class's mean features as targets
(:func:`~mimic_deid.deid.mondrian.class_targets`). The release methods then move the series
towards these targets (:mod:`mimic_deid.deid.methods`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError
from mimic_deid.core.logs import get_logger
from mimic_deid.deid.classes import KEY, ClassArray, map_classes, outcomes_by_class
from mimic_deid.deid.demographics import DemographicCodes, demographic_cells
from mimic_deid.deid.features import FeatureSpec, compute_features, feature_spec
from mimic_deid.deid.mondrian import class_targets, mondrian_partition

__all__ = ["class_target_matrix", "mondrian_targets"]

log = get_logger(__name__)


def _partition_class(
    cls: ClassArray,
    spec: FeatureSpec,
    fk: int,
    heuristic: str,
    outcomes: np.ndarray | None = None,
    ell: int = 1,
    demographics: DemographicCodes | None = None,
):
    n = len(cls.keys)
    if n < fk:
        raise ConfigError(
            f"parameter fk={fk} is larger than duration class of length {cls.length} h "
            f"(group {cls.group}) with {n} series; use fk <= dk"
        )
    F = compute_features(cls.X, spec)
    cells = levels = codes = None
    if demographics is not None:
        codes = demographics.rows(cls.keys)
        cells, levels = demographic_cells(codes, demographics, fk, outcomes, ell)
    labels = mondrian_partition(
        F,
        fk,
        heuristic,
        X=cls.X if heuristic == "diversity" else None,
        outcomes=outcomes,
        ell=ell,
        cells=cells,
    )
    if cells is None:
        cells = np.zeros(len(cls.keys), dtype=np.int64)
    return F, labels, class_targets(F, labels), cells, codes, levels


def mondrian_targets(
    classes: Sequence[ClassArray],
    dims: list[str],
    features: Mapping[str, list[str]],
    fk: int,
    heuristic: str,
    outcomes: pd.DataFrame | None = None,
    ell: int = 1,
    demographics: DemographicCodes | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Mondrian equivalence classes and class-mean feature targets of every series.

    Parameters
    ----------
    classes : sequence of ClassArray
        The release's duration classes (:func:`~mimic_deid.deid.classes.class_arrays`).
    dims : list of str
        Dimension names of the class arrays.
    features : mapping of variable to list of statistics
        The features the attacker is assumed to know (config ``deid.features``).
    fk : int
        Minimum series per equivalence class.
    heuristic : {"range", "diversity"}
    outcomes : DataFrame, optional
        ``icustay_id`` and the outcome labels the release publishes (one row per series): the
        partition is ℓ-diverse in them (:func:`~mimic_deid.deid.mondrian.mondrian_partition`).
    ell : int
        Distinct outcomes every equivalence class keeps (config ``deid.outcome_l``).
    demographics : DemographicCodes, optional
        The demographics the release publishes (config ``release.demographics``): each
        duration class is first split into demographic cells of at least ``fk`` series
        (:func:`~mimic_deid.deid.demographics.demographic_cells`), and the Mondrian partition
        runs inside each cell.

    Returns
    -------
    targets : DataFrame
        icustay_id, group, class_length (int32), eq_class (int64, unique over the release),
        cell (int64, the demographic cell, unique over the release; one per duration class
        without demographics), the published label of every demographic (str, one column
        each, named as in the config), then ``orig_<feature>`` and ``target_<feature>`` per
        feature (``targets.parquet``).
    summary : dict
        fk, heuristic, features, duration_classes, equivalence_classes,
        smallest_equivalence_class, mean_equivalence_class, demographics (the published
        columns), demographic_cells, smallest_demographic_cell (``mondrian.json``).
    """
    spec = feature_spec(dict(features), dims)
    per_class = outcomes_by_class(outcomes, classes)
    results = map_classes(
        _partition_class,
        classes,
        [spec] * len(classes),
        [fk] * len(classes),
        [heuristic] * len(classes),
        per_class,
        [ell] * len(classes),
        [demographics] * len(classes),
        label="mondrian duration classes",
    )
    frames, sizes, cell_sizes = [], [], []
    offset = cell_offset = 0
    for cls, (F, labels, T, cells, codes, levels) in zip(classes, results, strict=True):
        columns = {
            KEY: cls.keys,
            "group": cls.group,
            "class_length": np.int32(cls.length),
            "eq_class": labels.astype(np.int64) + offset,
            "cell": cells + cell_offset,
        }
        if demographics is not None:
            columns.update({c: v.to_numpy() for c, v in demographics.labels(codes, levels).items()})
        cell_sizes.append(np.bincount(cells))
        cell_offset += int(cells.max()) + 1 if len(cells) else 0
        for j, name in enumerate(spec.names):
            columns[f"orig_{name}"] = F[:, j]
            columns[f"target_{name}"] = T[:, j]
        frames.append(pd.DataFrame(columns))
        sizes.append(np.bincount(labels))
        offset += int(labels.max()) + 1
    targets = pd.concat(frames, ignore_index=True) if frames else _no_targets(spec, demographics)
    all_sizes = np.concatenate(sizes) if sizes else np.zeros(0, dtype=np.int64)
    all_cells = np.concatenate(cell_sizes) if cell_sizes else np.zeros(0, dtype=np.int64)
    summary = {
        "fk": fk,
        "heuristic": heuristic,
        "outcome_l": int(ell) if outcomes is not None else None,
        "features": list(spec.names),
        "duration_classes": len(frames),
        "equivalence_classes": int(all_sizes.size),
        "smallest_equivalence_class": int(all_sizes.min()) if all_sizes.size else 0,
        "mean_equivalence_class": float(all_sizes.mean()) if all_sizes.size else 0.0,
        "demographics": list(demographics.columns) if demographics is not None else [],
        "demographic_cells": int(all_cells.size),
        "smallest_demographic_cell": int(all_cells.min()) if all_cells.size else 0,
    }
    log.info("fk=%d %s: %d equivalence classes", fk, heuristic, summary["equivalence_classes"])
    return targets, summary


def _no_targets(spec: FeatureSpec, demographics: DemographicCodes | None) -> pd.DataFrame:
    """The targets of a release with no published series: no row, every column and type of
    :func:`mondrian_targets` (its card refuses it, :func:`~mimic_deid.deid.duration.unpublished_groups`)."""
    columns = {
        KEY: np.zeros(0, dtype=np.int64),
        "group": np.zeros(0, dtype=object),
        "class_length": np.zeros(0, dtype=np.int32),
        "eq_class": np.zeros(0, dtype=np.int64),
        "cell": np.zeros(0, dtype=np.int64),
    }
    for col in demographics.columns if demographics is not None else []:
        columns[col] = np.zeros(0, dtype=object)
    for name in spec.names:
        columns[f"orig_{name}"] = np.zeros(0, dtype=np.float64)
        columns[f"target_{name}"] = np.zeros(0, dtype=np.float64)
    return pd.DataFrame(columns)


def class_target_matrix(targets: pd.DataFrame, cls: ClassArray, spec: FeatureSpec) -> np.ndarray:
    """The target matrix of one class, rows in ``cls.keys`` order.

    Returns
    -------
    ndarray of float64, shape (n, m)
        ``target_<feature>`` columns of ``targets`` in ``spec`` order.
    """
    sub = targets.set_index(KEY).loc[cls.keys]
    return sub[[f"target_{name}" for name in spec.names]].to_numpy(dtype=np.float64)
