"""Tuning runs of the constraint optimisers: the seed's Tables 6.1 (ad-hoc) and 6.2 (genetic).

Seed §6.2: 20 series are drawn from each of 5 duration classes (lengths 5, 25, 50, 75, 100),
among the series without any missing value in the feature dimensions; on hourly ICU data that
rule leaves a handful of series per class, so by default (``eligibility="two_records"``) a
series is eligible when every feature dimension has at least 2 non-null records (a variance
needs two), and ``"complete"`` restores the seed's rule. Mondrian (k = 5, range
heuristic) is run on the *whole* class, on the features of §5.1 without height and weight; the
optimiser then moves the drawn series towards their Mondrian targets. Per duration class and
over all classes the tables report

- average cumulative unfeasibility: per series and feature dimension, the sum over that
  dimension's features of ``|target - achieved|``, averaged over series and dimensions;
- average cumulative distortion: per series ``sum |perturbation| / length``, averaged;
- (genetic only) average iterations.

Library functions only: nothing is written here. Typical use::

    tspec = tuning_spec(spec)                      # drop height and weight
    sel = select_tuning_series(classes, tspec, rng=rng)
    runs = {L: TuningRun(tc, optimise_adhoc(tc.X, tc.targets, tc.spec, 50, 0.01, rng))
            for L, tc in sel.items()}
    table = optimiser_table(runs)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.core.logs import get_logger
from mimic_deid.core.seeding import derive_rng
from mimic_deid.deid.classes import ClassArray, map_classes
from mimic_deid.deid.features import FeatureSpec, compute_features, feature_spec
from mimic_deid.deid.methods import method_label, parse_method_label, run_method
from mimic_deid.deid.optimise import OptimiseResult, dimension_unfeasibility

log = get_logger(__name__)

SEED_LENGTHS = (5, 25, 50, 75, 100)
ALL_CLASSES = "All classes"
# Named as the report reads them (report.tables.optimiser_table prints the seed's labels).
COLUMNS = ("duration", "series", "unfeasibility", "distortion", "iterations")

Partition = Callable[..., np.ndarray]  # (F, k, heuristic, X) -> labels
Targets = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (F, labels) -> targets


@dataclass(frozen=True)
class TuningClass:
    """The series drawn from one duration class and their Mondrian targets.

    Attributes
    ----------
    requested_length : int
        The length asked for (e.g. 25).
    length : int
        The class length used (the nearest available one when ``requested_length`` is missing).
    rows : ndarray of int64, shape (n_sel,)
        Drawn series, as row indices into that class array (sorted).
    X : ndarray of float64, shape (n_sel, length, D)
    targets : ndarray of float64, shape (n_sel, m)
        Mondrian class means computed on the whole class.
    spec : FeatureSpec
        The features used (height and weight excluded).
    n_complete : int
        Eligible series of the class (:func:`eligible_series`).
    """

    requested_length: int
    length: int
    rows: np.ndarray
    X: np.ndarray
    targets: np.ndarray
    spec: FeatureSpec
    n_complete: int


@dataclass(frozen=True)
class TuningRun:
    """An optimiser's result on one :class:`TuningClass`."""

    tuning: TuningClass
    result: OptimiseResult


def tuning_spec(spec: FeatureSpec, exclude: Iterable[str] = ("height", "weight")) -> FeatureSpec:
    """``spec`` without the features of the variables in ``exclude`` (seed §6.2)."""
    exclude = set(exclude)
    keep = [
        j
        for j, (name, stat) in enumerate(zip(spec.names, spec.stats, strict=True))
        if name.removesuffix(f"_{stat}") not in exclude
    ]
    return FeatureSpec(
        spec.dims[keep],
        tuple(spec.stats[j] for j in keep),
        tuple(spec.names[j] for j in keep),
    )


ELIGIBILITY = ("two_records", "complete")


def complete_series(X: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """``(n,)`` bool: series with no null record in the dimensions ``dims``."""
    if X.shape[1] == 0:
        return np.zeros(X.shape[0], dtype=bool)
    return ~np.isnan(X[:, :, dims]).any(axis=(1, 2))


def eligible_series(X: np.ndarray, dims: np.ndarray, rule: str = "two_records") -> np.ndarray:
    """``(n,)`` bool: series a tuning run may draw (module docstring).

    Parameters
    ----------
    X : ndarray of float64, shape (n, L, D)
    dims : ndarray of int
        The feature dimensions.
    rule : {"two_records", "complete"}
        At least 2 non-null records in every dimension of ``dims``, or no null record there.
    """
    if rule == "complete":
        return complete_series(X, dims)
    if rule != "two_records":
        raise ConfigError(f"tuning eligibility must be one of {ELIGIBILITY}, got {rule!r}")
    return (~np.isnan(X[:, :, dims])).sum(axis=1).min(axis=1, initial=2) >= 2


def _choose_lengths(
    requested: Iterable[int], available: Mapping[int, int], n_per_class: int
) -> list[tuple[int, int]]:
    """``[(requested, used)]``: the nearest unused class (ties: shorter), preferring classes
    with at least ``n_per_class`` complete series; ``available`` = {length: complete count}."""
    used: set[int] = set()
    out = []
    for req in requested:
        free = [L for L, c in available.items() if c > 0 and L not in used]
        if not free:
            log.warning("tuning: no class left for requested length %d", req)
            continue
        full = [L for L in free if available[L] >= n_per_class]
        pool = full or free
        best = min(pool, key=lambda L: (abs(L - req), L))
        if best != req:
            log.info("tuning: length %d not available, using class length %d", req, best)
        used.add(best)
        out.append((int(req), int(best)))
    return out


def select_tuning_series(
    classes: Mapping[int, np.ndarray],
    spec: FeatureSpec,
    n_per_class: int = 20,
    lengths: Iterable[int] = SEED_LENGTHS,
    rng: np.random.Generator | None = None,
    *,
    k: int = 5,
    heuristic: str = "range",
    eligible: Mapping[int, np.ndarray] | None = None,
    partition: Partition | None = None,
    targets_of: Targets | None = None,
    eligibility: str = "two_records",
) -> dict[int, TuningClass]:
    """Draw the tuning series and compute their Mondrian targets (seed §6.2).

    Parameters
    ----------
    classes : mapping {class length: X (n, length, D)}
        Every series of each duration class (one split group).
    spec : FeatureSpec
        The tuning features, already without height and weight (see :func:`tuning_spec`).
        Completeness is checked on ``spec.feature_dims``.
    n_per_class : int
        Series drawn per class (fewer if a class has fewer complete series).
    lengths : iterable of int
        Requested class lengths; a missing one is replaced by the nearest unused class length
        (ties: the shorter), preferring classes with >= ``n_per_class`` complete series.
    rng : numpy.random.Generator
        Draws the series (without replacement).
    k, heuristic : Mondrian parameters (seed: 5, ``"range"``), run on the whole class.
    eligible : mapping {class length: (n,) bool}, optional
        Restricts the draw (e.g. to validation series); Mondrian still sees the whole class.
    partition, targets_of : callables, optional
        Replace ``mondrian_partition(F, k, heuristic, X)`` and ``class_targets(F, labels)``
        (tests); by default imported from :mod:`mimic_deid.deid.mondrian`.
    eligibility : {"two_records", "complete"}
        Which series may be drawn (:func:`eligible_series`); a class with fewer than
        ``n_per_class`` eligible series is used with what it has, with a warning.

    Returns
    -------
    dict {used class length: TuningClass}, in the order of ``lengths``.
    """
    if isinstance(n_per_class, bool) or not isinstance(n_per_class, int) or n_per_class < 1:
        raise ConfigError(f"tuning: n_per_class must be an integer >= 1, got {n_per_class!r}")
    if rng is None:
        raise ConfigError("tuning: a numpy Generator 'rng' is required to draw the series")
    if partition is None or targets_of is None:
        from mimic_deid.deid.mondrian import class_targets, mondrian_partition

        partition = partition or mondrian_partition
        targets_of = targets_of or class_targets
    dims = spec.feature_dims
    complete: dict[int, np.ndarray] = {}
    for L, X in classes.items():
        X = np.asarray(X)
        if X.ndim != 3 or X.shape[1] != L:
            raise InputDataError(
                f"tuning: class {L} must be an array (n, {L}, dims), got shape {X.shape}"
            )
        ok = eligible_series(X, dims, eligibility)
        if eligible is not None and L in eligible:
            ok &= np.asarray(eligible[L], dtype=bool)
        complete[int(L)] = ok
    plan = _choose_lengths(lengths, {L: int(c.sum()) for L, c in complete.items()}, n_per_class)
    out: dict[int, TuningClass] = {}
    for req, L in plan:
        X = np.asarray(classes[L], dtype=np.float64)
        cand = np.flatnonzero(complete[L])
        rows = np.sort(rng.choice(cand, size=min(n_per_class, cand.size), replace=False))
        F = compute_features(X, spec)
        labels = partition(F, k, heuristic, X)
        T = np.asarray(targets_of(F, labels), dtype=np.float64)
        out[L] = TuningClass(req, L, rows.astype(np.int64), X[rows], T[rows], spec, cand.size)
        log.info(
            "tuning: class %d (requested %d): %d of %d eligible series drawn",
            L,
            req,
            rows.size,
            cand.size,
        )
        if rows.size < n_per_class:
            log.warning(
                "tuning: class %d has only %d eligible series (%s); %d asked for",
                L,
                rows.size,
                eligibility,
                n_per_class,
            )
    return out


def _row(duration: str, unf: np.ndarray, dist: np.ndarray, iters: np.ndarray) -> dict:
    with np.errstate(invalid="ignore"):
        finite = unf[~np.isnan(unf)]
        return {
            "duration": duration,
            "series": int(dist.size),
            "unfeasibility": float(finite.mean()) if finite.size else float("nan"),
            "distortion": float(dist.mean()) if dist.size else float("nan"),
            "iterations": float(iters.mean()) if iters.size else float("nan"),
        }


def optimiser_table(
    results_by_length: Mapping[int, TuningRun], iterations: bool = False
) -> pd.DataFrame:
    """The seed's Table 6.1 (``iterations=False``) or 6.2 (``iterations=True``).

    Parameters
    ----------
    results_by_length : mapping {class length: TuningRun}
        One :class:`TuningRun` per tuning class; rows follow its order.
    iterations : bool
        Add the ``iterations`` column (genetic optimiser).

    Returns
    -------
    DataFrame
        One row per class length then an ``"All classes"`` row (pooled over all series);
        columns ``duration`` (str: the class length, or "All classes"), ``series`` (series
        tuned), ``unfeasibility`` (mean over series and constrained feature dimensions of the
        per-dimension sum of ``|target - achieved|``), ``distortion`` (mean over series
        and feature dimensions of ``sum |perturbation| / length``) and, if asked,
        ``iterations``.

    Both averages are per feature dimension: the seed states it for unfeasibility, and its
    distortion figures (about 9-11 for 5 dimensions) only match a per-dimension average too;
    the per-series totals are in the optimiser step's own output.
    """
    rows, pooled = [], ([], [], [])
    for L, run in results_by_length.items():
        tc, res = run.tuning, run.result
        per_dim = dimension_unfeasibility(compute_features(res.X, tc.spec), tc.targets, tc.spec)
        n_dims = max(len(tc.spec.feature_dims), 1)
        parts = (
            per_dim.ravel(),
            np.asarray(res.distortion) / n_dims,
            np.asarray(res.iterations),
        )
        rows.append(_row(str(L), *parts))
        for acc, part in zip(pooled, parts, strict=True):
            acc.append(part)
    cat = [np.concatenate(p) if p else np.empty(0) for p in pooled]
    rows.append(_row(ALL_CLASSES, *cat))
    columns = list(COLUMNS if iterations else COLUMNS[:4])
    return pd.DataFrame(rows)[columns]


def _tune_class(tc: TuningClass, label: str, seed: int) -> OptimiseResult:
    rng = derive_rng(seed, label, "tuning", tc.X.shape[1])
    return run_method(label, tc.X, tc.targets, tc.spec, rng)


def tuning_table(
    classes: Sequence[ClassArray],
    dims: list[str],
    features: Mapping[str, list[str]],
    label: str,
    seed: int,
    series_per_class: int = 20,
    eligibility: str = "two_records",
) -> pd.DataFrame:
    """The seed's Table 6.1/6.2 for release method ``label`` on the ``stays`` release.

    Draws the tuning series (:func:`select_tuning_series`, with the generator
    ``derive_rng(seed, "tuning")``, so every method sees the same series), runs the method on
    them with ``derive_rng(seed, label, "tuning", class_length)`` and tabulates the result
    (:func:`optimiser_table`, with the iterations column).

    Parameters
    ----------
    classes : sequence of ClassArray
        Duration classes of a release de-identified as one group.
    dims : list of str
    features : mapping of variable to list of statistics
        Config ``deid.features``; height and weight are left out (:func:`tuning_spec`).
    label : str
        Release-method label.
    seed : int
    series_per_class : int
        Series drawn per class (seed: 20).
    eligibility : {"two_records", "complete"}
        Which series may be drawn (:func:`eligible_series`).

    Returns
    -------
    DataFrame
        ``duration``, ``series``, ``unfeasibility``, ``distortion``, ``iterations``.
    """
    spec = tuning_spec(feature_spec(dict(features), dims))
    arrays = {cls.length: cls.X for cls in classes}
    selection = select_tuning_series(
        arrays,
        spec,
        n_per_class=series_per_class,
        rng=derive_rng(seed, "tuning"),
        eligibility=eligibility,
    )
    tuned = list(selection.values())
    n = len(tuned)
    results = map_classes(_tune_class, tuned, [label] * n, [seed] * n, label=f"tuning {label}")
    runs = {L: TuningRun(tc, res) for (L, tc), res in zip(selection.items(), results, strict=True)}
    table = optimiser_table(runs, iterations=True)
    log.info("tuning table for %s: %d class lengths", label, len(table) - 1)
    return table


#: The release methods Tables 6.1/6.2 are made for (the constraint optimisers): name ->
#: (what the report calls it, the seed's table).
TUNED_METHODS = {"adhoc": ("Ad-hoc", "6.1"), "genetic": ("Genetic", "6.2")}
#: The method the tuning grid (config ``deid.tuning_grid``) sweeps.
TUNING_GRID_METHOD = "genetic"


def tuning_labels(labels: Sequence[str], fitness: Sequence[str]) -> list[str]:
    """The method labels of the ``tuning_tables`` target, in sweep order, without repeats.

    Every ad-hoc label, and every genetic label once per fitness variant in ``fitness`` (the
    label with its fitness replaced; seed §6.2 compares the four variants side by side).
    Other release methods have no tuning table.
    """
    out: list[str] = []
    for label in labels:
        name, params = parse_method_label(label)
        if name not in TUNED_METHODS:
            continue
        variants = (
            [dict(params, fitness=f) for f in fitness] if name == TUNING_GRID_METHOD else [params]
        )
        for p in variants:
            new = method_label(name, p)
            if new not in out:
                out.append(new)
    return out


def tuning_tables_summary(labels: Sequence[str], tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Tables 6.1/6.2 of several methods in one long table (one block per method).

    Returns
    -------
    DataFrame
        ``method`` (label), ``name`` (adhoc/genetic), ``fitness`` (genetic only, else empty),
        then the :func:`tuning_table` columns.
    """
    parts = []
    for label, table in zip(labels, tables, strict=True):
        name, params = parse_method_label(label)
        head = pd.DataFrame(
            {"method": label, "name": name, "fitness": params.get("fitness", "")},
            index=table.index,
        )
        parts.append(pd.concat([head, table], axis=1))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


#: Seed §6.2's comparison of the fitness variants, as far as the seed gives figures: only NA
#: has a table (Table 6.2, "All classes"); DF and CI are said to converge in fewer than 500
#: iterations on average, and the annealed fitness to overflow in most runs.
SEED_FITNESS = {
    "annealed": {"note": "overflow in most runs (every fitness infinite)"},
    "DF": {"iterations_below": 500.0, "note": "converged in fewer than 500 iterations"},
    "CI": {"iterations_below": 500.0, "note": "converged in fewer than 500 iterations"},
    "NA": {
        "unfeasibility": 2.13,
        "distortion": 9.41,
        "iterations": 1728.39,
        "note": "least unfeasible; slowest (Table 6.2)",
    },
}


def fitness_comparison(summary: pd.DataFrame) -> pd.DataFrame:
    """Seed §6.2's fitness comparison: one row per genetic point and fitness variant.

    Parameters
    ----------
    summary : DataFrame
        :func:`tuning_tables_summary` of the ``tuning_tables`` target.

    Returns
    -------
    DataFrame
        ``method`` (label), ``fitness``, the "All classes" ``unfeasibility``, ``distortion``
        and ``iterations`` measured here, then the seed's figures beside them
        (:data:`SEED_FITNESS`): ``seed_unfeasibility``, ``seed_distortion``,
        ``seed_iterations`` (NaN where the seed gives none), ``seed_iterations_below`` (an
        upper bound the seed states instead) and ``seed_note``; rows in the order of
        ``summary``.
    """
    overall = summary[
        (summary["name"] == TUNING_GRID_METHOD) & (summary["duration"].astype(str) == ALL_CLASSES)
    ]
    rows = []
    for _, row in overall.iterrows():
        seed = SEED_FITNESS.get(row["fitness"], {})
        rows.append(
            {
                "method": row["method"],
                "fitness": row["fitness"],
                "unfeasibility": float(row["unfeasibility"]),
                "distortion": float(row["distortion"]),
                "iterations": float(row["iterations"]),
                "seed_unfeasibility": seed.get("unfeasibility", np.nan),
                "seed_distortion": seed.get("distortion", np.nan),
                "seed_iterations": seed.get("iterations", np.nan),
                "seed_iterations_below": seed.get("iterations_below", np.nan),
                "seed_note": seed.get("note", ""),
            }
        )
    columns = [
        "method",
        "fitness",
        "unfeasibility",
        "distortion",
        "iterations",
        "seed_unfeasibility",
        "seed_distortion",
        "seed_iterations",
        "seed_iterations_below",
        "seed_note",
    ]
    return pd.DataFrame(rows, columns=columns)


def tuning_grid_summary(labels: Sequence[str], tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """One row per genetic tuning-grid point: its parameters and "All classes" results.

    Rows are sorted by unfeasibility, then distortion: the seed chose the parameters that
    minimised both (§6.2).

    Parameters
    ----------
    labels : sequence of str
        Method labels of the grid points.
    tables : sequence of DataFrame
        Their :func:`tuning_table` results, in the same order.

    Returns
    -------
    DataFrame
        ``method``, the method's parameters, ``unfeasibility``, ``distortion``, ``iterations``.
    """
    rows = []
    for label, table in zip(labels, tables, strict=True):
        overall = table[table["duration"].astype(str) == ALL_CLASSES].iloc[0]
        _, params = parse_method_label(label)
        rows.append(
            {
                "method": label,
                **params,
                "unfeasibility": float(overall["unfeasibility"]),
                "distortion": float(overall["distortion"]),
                "iterations": float(overall["iterations"]),
            }
        )
    summary = pd.DataFrame(rows).sort_values(["unfeasibility", "distortion"], kind="stable")
    log.info("tuning grid: %d points; best %s", len(summary), summary.iloc[0]["method"])
    return summary
