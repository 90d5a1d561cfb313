"""Applying a release method to a whole release: every duration class (a demographic cell of
one) through the method's ``run`` (or its ``plan``'s chunks over worker processes), the result
projected onto the plausible values, and the method's per-series table and summary.

The registry and the method contract are in :mod:`mimic_deid.deid.methods`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.core.logs import Progress, get_logger
from mimic_deid.core.seeding import derive_rng
from mimic_deid.core.threads import map_tasks
from mimic_deid.deid.classes import (
    KEY,
    ClassArray,
    class_frame,
    map_classes,
    outcomes_by_class,
    split_cells,
)
from mimic_deid.deid.features import FeatureSpec, feature_spec
from mimic_deid.deid.methods import REGISTRY, method_of, parse_method_label, run_method
from mimic_deid.deid.optimise import OptimiseResult, evaluate
from mimic_deid.deid.plausible import PlausibleValues, project
from mimic_deid.deid.targets import class_target_matrix

__all__ = ["apply_method"]

log = get_logger(__name__)


def _release_class(
    cls, targets: np.ndarray, spec: FeatureSpec, label: str, seed: int, fk, outcomes, ell
):
    """One class through method ``label`` (module level, so worker processes can run it)."""
    rng = derive_rng(seed, label, *cls.stream)
    return run_method(label, cls.X, targets, spec, rng, fk=fk, outcomes=outcomes, ell=ell)


def _release_planned(
    classes: Sequence[ClassArray],
    T: Sequence[np.ndarray],
    spec: FeatureSpec,
    label: str,
    seed: int,
    threads: int,
) -> list[OptimiseResult]:
    """Every class through a method with a ``plan``: all chunks of all classes as one task list.

    Each class's generator is the one :func:`_release_class` uses; its chunks' generators are
    derived from it, so the results equal ``run_method``'s whatever ``threads`` is.
    """
    name, params = parse_method_label(label)
    plan = REGISTRY[name].plan
    plans = [
        plan(cls.X, t, spec, params, derive_rng(seed, label, *cls.stream))
        for cls, t in zip(classes, T, strict=True)
    ]
    tasks: list[Any] = []
    costs: list[float] = []
    sizes: list[int] = []
    for p in plans:
        tasks += p.tasks()
        costs += p.chunk_costs()
        sizes += p.chunk_sizes()
    log.info("method %s: %d classes in %d chunks", label, len(plans), len(tasks))
    progress = Progress(f"method {label}", sum(sizes), log, unit="problems")
    done = map_tasks(
        tasks, threads=threads, costs=costs, on_done=lambda i: progress.update(sizes[i])
    )
    progress.close()
    results, start = [], 0
    for p in plans:
        results.append(p.assemble(done[start : start + p.n_chunks]))
        start += p.n_chunks
    return results


def _detail_columns(detail: Mapping[str, np.ndarray] | None) -> dict[str, Any]:
    """A method's per-series detail as DataFrame columns; (n, L) arrays become lists."""
    return {
        name: list(values) if values.ndim == 2 else values
        for name, values in (detail or {}).items()
    }


def _plausible_result(
    X: np.ndarray,
    result: OptimiseResult,
    targets: np.ndarray,
    spec: FeatureSpec,
    plausible: PlausibleValues,
) -> tuple[OptimiseResult, np.ndarray]:
    """A method's result projected onto the plausible values
    (:func:`~mimic_deid.deid.plausible.project`), its unfeasibility and distortion measured
    again on the projected series; and the number of values moved per dimension, shape (D,)."""
    projected = project(result.X, plausible)
    moved = (projected != result.X) & ~np.isnan(result.X)
    measured = evaluate(X, projected, targets, spec, result.iterations)
    result = replace(
        result,
        X=projected,
        unfeasibility=measured.unfeasibility,
        distortion=measured.distortion,
    )
    return result, moved.sum(axis=(0, 1))


def apply_method(
    classes: Sequence[ClassArray],
    dims: list[str],
    targets: pd.DataFrame,
    features: Mapping[str, list[str]],
    label: str,
    seed: int,
    threads: int = 1,
    fk: int | None = None,
    outcomes: pd.DataFrame | None = None,
    ell: int = 1,
    plausible: PlausibleValues | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Change every released series with method ``label``, cell by cell, then project them
    onto their plausible values.

    The unit a method runs on is a demographic cell of a duration class (the ``cell`` of
    ``targets``, :mod:`mimic_deid.deid.demographics`; without published demographics, the
    whole class). Each unit has its own generator, ``derive_rng(seed, label, group,
    class_length)``, with the cell's rank in its class appended for every cell but the first
    (:attr:`~mimic_deid.deid.classes.ClassArray.stream`). A method with a ``plan`` (the
    genetic optimiser) splits every class into chunks with generators derived from the
    class's, and the chunks of all classes run as one task list over ``threads`` worker
    processes (largest first); other methods run one task per class. The output does not
    depend on ``threads``.

    Parameters
    ----------
    classes : sequence of ClassArray
        The release's duration classes (:func:`~mimic_deid.deid.classes.class_arrays`).
    dims : list of str
    targets : DataFrame
        The Mondrian targets and demographic cells
        (:func:`~mimic_deid.deid.targets.mondrian_targets`).
    features : mapping of variable to list of statistics
    label : str
        Method label (:func:`method_label`).
    seed : int
        Master seed.
    threads : int
    fk : int, optional
        The sweep point's feature k, the ``k`` of methods with ``k_from_fk``.
    outcomes : DataFrame, optional
        ``icustay_id`` and the outcome labels a labelled release publishes; with ``ell`` (config
        ``deid.outcome_l``) given to a method with ``takes_outcomes``.
    ell : int
    plausible : PlausibleValues, optional
        The plausible values of every dimension of ``dims`` (``config/variables.yaml``); the
        workflow always gives them. None: the method's output as it is (tests of a method).

    Returns
    -------
    perturbed : DataFrame
        group, class_length, icustay_id, hour, dims (``perturbed.parquet``), projected.
    per_series : DataFrame
        icustay_id, group, class_length, cell, unfeasibility, distortion, iterations, then the
        method's ``detail`` columns if any (``method.parquet``); sorted by (group,
        class_length, icustay_id). A method's own group ids (the (k,P) k-groups) are unique
        within a cell.
    summary : dict
        Means and sds over the series and per class (``method.json``); with ``plausible``,
        ``projected_values``: per dimension, the non-null values the projection moved.
    """
    parse_method_label(label)  # a bad label fails before any work
    method = method_of(label)
    spec = feature_spec(dict(features), dims)
    cell_of = _cell_of(classes, targets)
    classes = split_cells(classes, cell_of)
    if not classes:  # nothing published at the release's sizes: its card refuses it
        return _no_release(dims, label, plausible)
    T = [class_target_matrix(targets, cls, spec) for cls in classes]
    n = len(classes)
    per_unit_outcomes = outcomes_by_class(outcomes if method.takes_outcomes else None, classes)
    if method.plan is not None:
        results = _release_planned(classes, T, spec, label, seed, threads)
    else:
        results = map_classes(
            _release_class,
            classes,
            T,
            [spec] * n,
            [label] * n,
            [seed] * n,
            [fk] * n,
            per_unit_outcomes,
            [ell] * n,
            label=f"method {label}",
            threads=threads,
        )
    if plausible is not None:
        results, moved = _projected(classes, T, results, spec, plausible.select(dims), len(dims))
    perturbed, per_series, summary = _tables(classes, results, cell_of, dims, label)
    if plausible is not None:
        summary["projected_values"] = {d: int(c) for d, c in zip(dims, moved, strict=True)}
    if method.summarise is not None:
        summary.update(method.summarise(per_series))
    u, d = summary["unfeasibility_mean"], summary["distortion_mean"]
    log.info("%s: unfeasibility %.3f, distortion %.3f per record", label, u, d)
    return perturbed, per_series, summary


def _no_release(
    dims: list[str], label: str, plausible: PlausibleValues | None
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """:func:`apply_method`'s outputs for a release with no published series (no duration
    class formed, :func:`~mimic_deid.deid.duration.unpublished_groups`): no row, every
    common column, a summary of 0 series whose means are None."""
    perturbed = pd.DataFrame(
        {
            "group": np.zeros(0, dtype=object),
            "class_length": np.zeros(0, dtype=np.int64),
            KEY: np.zeros(0, dtype=np.int64),
            "hour": np.zeros(0, dtype=np.int32),
            **{d: np.zeros(0, dtype=np.float64) for d in dims},
        }
    )
    per_series = pd.DataFrame(
        {
            KEY: np.zeros(0, dtype=np.int64),
            "group": np.zeros(0, dtype=object),
            "class_length": np.zeros(0, dtype=np.int32),
            "cell": np.zeros(0, dtype=np.int64),
            "unfeasibility": np.zeros(0, dtype=np.float64),
            "distortion": np.zeros(0, dtype=np.float64),
            "iterations": np.zeros(0, dtype=np.int64),
        }
    )
    summary = {
        "method": label,
        "series": 0,
        **dict.fromkeys(
            (
                "unfeasibility_mean",
                "unfeasibility_sd",
                "distortion_mean",
                "distortion_sd",
                "iterations_mean",
            ),
        ),  # fmt: skip
        "classes": [],
    }
    if plausible is not None:
        summary["projected_values"] = dict.fromkeys(dims, 0)
    log.info("%s: no series to release (no duration class formed)", label)
    return perturbed, per_series, summary


def _cell_of(classes: Sequence[ClassArray], targets: pd.DataFrame) -> pd.Series:
    """The demographic cell of every series (``targets``' ``cell``; without it, its class)."""
    if "cell" in targets.columns:
        return pd.Series(targets["cell"].to_numpy(np.int64), index=targets[KEY].to_numpy())
    return pd.Series(  # a targets table without cells: one cell per class
        np.repeat(np.arange(len(classes), dtype=np.int64), [len(c.keys) for c in classes]),
        index=np.concatenate([c.keys for c in classes]) if classes else [],
    )


def _projected(
    classes: Sequence[ClassArray],
    T: Sequence[np.ndarray],
    results: Sequence[OptimiseResult],
    spec: FeatureSpec,
    plausible: PlausibleValues,
    n_dims: int,
) -> tuple[list[OptimiseResult], np.ndarray]:
    """Every unit's result projected (:func:`_plausible_result`) and the values moved per
    dimension over the release."""
    moved = np.zeros(n_dims, dtype=np.int64)
    projected = []
    for cls, t, result in zip(classes, T, results, strict=True):
        result, counts = _plausible_result(cls.X, result, t, spec, plausible)
        projected.append(result)
        moved += counts
    return projected, moved


def _tables(
    classes: Sequence[ClassArray],
    results: Sequence[OptimiseResult],
    cell_of: pd.Series,
    dims: list[str],
    label: str,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The released series, the per-series table and the summary of every unit's result,
    back in the (group, class_length, icustay_id) layout."""
    perturbed, rows, per_class = [], [], []
    for cls, result in zip(classes, results, strict=True):
        perturbed.append(class_frame(cls, result.X, dims))
        rows.append(
            pd.DataFrame(
                {
                    KEY: cls.keys,
                    "group": cls.group,
                    "class_length": np.int32(cls.length),
                    "cell": cell_of.reindex(cls.keys).to_numpy(dtype=np.int64),
                    "unfeasibility": result.unfeasibility,
                    "distortion": result.distortion,
                    "iterations": result.iterations,
                    **_detail_columns(result.detail),
                }
            )
        )
        per_class.append(
            {
                "group": cls.group,
                "class_length": cls.length,
                "cell": int(cell_of.at[cls.keys[0]]) if len(cls.keys) else None,
                "series": len(cls.keys),
                "unfeasibility_mean": float(np.nanmean(result.unfeasibility)),
                "distortion_mean": float(np.nanmean(result.distortion)),
                "iterations_mean": float(np.mean(result.iterations)),
            }
        )
    # cells of a class ran apart: back to the (group, class_length, icustay_id) layout
    order = ["group", "class_length", KEY]
    per_series = pd.concat(rows, ignore_index=True).sort_values(order, kind="stable")
    per_series = per_series.reset_index(drop=True)
    summary = {
        "method": label,
        "series": len(per_series),
        "unfeasibility_mean": float(per_series["unfeasibility"].mean()),
        "unfeasibility_sd": float(per_series["unfeasibility"].std(ddof=0)),
        "distortion_mean": float(per_series["distortion"].mean()),
        "distortion_sd": float(per_series["distortion"].std(ddof=0)),
        "iterations_mean": float(per_series["iterations"].mean()),
        "classes": per_class,
    }
    perturbed = pd.concat(perturbed, ignore_index=True).sort_values([*order, "hour"], kind="stable")
    return perturbed.reset_index(drop=True), per_series, summary
