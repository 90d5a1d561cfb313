"""The release-method registry: how the series of a duration class are changed before release.

A *release method* takes one duration class and returns the series to publish. It is a name,
the parameters that spell its label, and one function with this signature::

    run(X, targets, spec, params, rng) -> OptimiseResult

    X       : ndarray float64 (n, L, D)   the class's series, NaN = null record
    targets : ndarray float64 (n, m)      Mondrian feature targets, NaN = unconstrained
    spec    : FeatureSpec                 which statistic of which dimension each target is
    params  : dict                        the method's parameters, parsed from its label
    rng     : numpy.random.Generator      the class's own stream (mimic_deid.core.seeding)
    returns : OptimiseResult              X (n, L, D) released, and per series unfeasibility,
                                          distortion and iterations (mimic_deid.deid.optimise)

The workflow names a method by its *label*, ``<name>-<key><value>-...`` with the parameters in
the order the method declares them (``adhoc-it50-ns0.01``,
``genetic-NA-pop24-tour5-par2-msd3-mp0.2-isd1-pat100-max600-norm0-layseries_dimension-initmean_shift``), so that a result path
names every parameter that produced it; a method without parameters (``mdav``, whose k is the
point's fk) is labelled by its bare name. ``deid.methods`` in the config lists, per method name,
a sweep list per parameter; :func:`method_labels` expands them.

Adding a method (docs/architecture.md has a worked example): write its module with a ``run``
function of the signature above, add one :class:`ReleaseMethod` to :data:`REGISTRY`, and add
its parameters under ``deid.methods`` in ``config/schema.yaml``. Sweeps, release, check,
privacy, utility and report pick it up with no other change. A method whose classes can be split
into independent parts may also give a ``plan`` (:class:`ReleaseMethod`), so that one large
class is spread over the job's threads.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError
from mimic_deid.core.logs import Progress, get_logger
from mimic_deid.core.seeding import derive_rng
from mimic_deid.core.threads import map_tasks
from mimic_deid.deid import adhoc, genetic, kapra, mdav, noise
from mimic_deid.deid.classes import KEY, ClassArray, class_frame, map_classes, split_cells
from mimic_deid.deid.features import FeatureSpec, feature_spec
from mimic_deid.deid.optimise import OptimiseResult, evaluate
from mimic_deid.deid.plausible import PlausibleValues, project
from mimic_deid.deid.targets import class_target_matrix

__all__ = [
    "REGISTRY",
    "ReleaseMethod",
    "get_method",
    "method_of",
    "method_label",
    "method_labels",
    "parse_method_label",
    "apply_method",
    "run_method",
]

log = get_logger(__name__)

Run = Callable[
    [np.ndarray, np.ndarray, FeatureSpec, Mapping[str, Any], np.random.Generator], OptimiseResult
]


@dataclass(frozen=True)
class ReleaseMethod:
    """One entry of the registry.

    Attributes
    ----------
    name : str
        The method's name: first word of its label and its key under ``deid.methods``.
    params : tuple of (name, label key, type)
        The parameters in label order. A parameter whose label key is ``""`` is written as
        its bare value and must be one of ``choices`` (e.g. the genetic fitness ``NA``).
    run : callable
        ``run(X, targets, spec, params, rng) -> OptimiseResult`` (module docstring).
    choices : dict of str to tuple of str
        Allowed values of the bare-value parameters.
    k_from_fk : bool
        The method takes the sweep point's feature k (fk) as its parameter ``k`` (the
        (k,P)-anonymity methods); :func:`run_method` adds it to ``params``.
    promises : str
        What a release made by the method guarantees (its release card, issue 26).
    not_promised : str
        What it does not guarantee.
    check_config : callable, optional
        ``check_config(name, grid, deid)``: the method's rules across config parameters
        (``grid``: its ``deid.methods`` entry; ``deid``: the ``deid`` section), raising
        ``ConfigError``; run at start-up by :func:`mimic_deid.config.check_cross_fields`.
    summarise : callable, optional
        ``summarise(per_series) -> dict``: entries the method adds to its summary
        (``method.json``); a ``sweep`` entry's items become columns of the sweep summary.
    sweep_columns : mapping of str to str, optional
        Those columns' captions for the report (column -> caption).
    claims : callable, optional
        ``claims(per_series, series_public, pseudonyms, params, k) -> dict``: the method's
        own privacy claims (claim 11 of :mod:`mimic_deid.deid.check`), raising
        ``ReleaseCheckError``; ``k`` is the point's fk for a ``k_from_fk`` method.
    groups : callable, optional
        ``groups(per_series) -> DataFrame``: ``icustay_id`` and one column per grouping a
        recipient can recover from the released values (-1: not grouped); in a labelled
        release each must hold ``deid.outcome_l`` outcomes (claim 10).
    group_name : str
        What those groups are called in messages (``"k-group"``).
    examples : bool
        The private report draws worked examples of this method's series (the genetic
        optimiser's, seed Fig. 3.1).
    knob : str
        The privacy knob the sweep turns for this method, which moves its releases along the
        privacy-utility frontier (:mod:`mimic_deid.evaluate.frontier`): ``"fk"`` (the point's
        feature k, the default: Mondrian's k, MDAV's and the (k,P) methods' k) or the name of
        one of its ``params`` (``noise``: ``scale``).
    takes_outcomes : bool
        In a labelled release the method gets the outcome labels of its unit as
        ``params["outcomes"]`` (ndarray (n, t)) and ``params["ell"]``, and keeps at least
        ``ell`` distinct values of each in every group it publishes (:func:`run_method`).
    plan : callable, optional
        ``plan(X, targets, spec, params, rng)`` splitting one class into independent chunks
        (an object with ``tasks()``, ``chunk_costs()``, ``chunk_sizes()`` and
        ``assemble(results)``, e.g. :class:`~mimic_deid.deid.genetic.GeneticPlan`), so that
        :func:`apply_method` can spread one large class over the job's threads. Must give the
        same result as ``run``. None: a class is one task.
    """

    name: str
    params: tuple[tuple[str, str, type], ...]
    run: Run
    choices: Mapping[str, tuple[str, ...]] | None = None
    k_from_fk: bool = False
    plan: Callable[..., Any] | None = None
    promises: str = ""
    not_promised: str = ""
    check_config: Callable[[str, Mapping, Mapping], None] | None = None
    summarise: Callable[[pd.DataFrame], dict] | None = None
    sweep_columns: Mapping[str, str] | None = None
    claims: Callable[..., dict] | None = None
    groups: Callable[[pd.DataFrame], pd.DataFrame] | None = None
    group_name: str = "group"
    examples: bool = False
    knob: str = "fk"
    takes_outcomes: bool = False


def _run_adhoc(X, targets, spec, params, rng) -> OptimiseResult:
    return adhoc.optimise_adhoc(
        X, targets, spec, iterations=params["iterations"], noise_sd=params["noise_sd"], rng=rng
    )


def _run_genetic(X, targets, spec, params, rng) -> OptimiseResult:
    return genetic.optimise_genetic(X, targets, spec, genetic.GeneticParams.from_dict(params), rng)


def _plan_genetic(X, targets, spec, params, rng) -> genetic.GeneticPlan:
    return genetic.plan_genetic(X, targets, spec, genetic.GeneticParams.from_dict(params), rng)


#: What every Mondrian-targeted method promises (claims 5-7, 10, 14 and 15 of deid.check).
_MONDRIAN_PROMISES = (
    "every duration class holds at least dk series; every cell of duration class and "
    "published demographics at least fk; every Mondrian equivalence class, inside one cell, at "
    "least fk series whose released features are pushed towards one shared target; in a labelled "
    "release every class holds at least l distinct outcomes; the strong attacker's top-1 "
    "re-identification rate is at most 1/fk"
)


#: Every release method, by name (label order of the config's sweep is this order).
REGISTRY: dict[str, ReleaseMethod] = {
    m.name: m
    for m in (
        ReleaseMethod(
            "adhoc",
            (("iterations", "it", int), ("noise_sd", "ns", float)),
            _run_adhoc,
            promises=_MONDRIAN_PROMISES,
            not_promised=(
                "features reach their targets only as far as the iterations allow (the "
                "residual is the unfeasibility); released values are close to the originals, "
                "so an attacker who knows a series' exact values can still find it"
            ),
        ),
        ReleaseMethod(
            "genetic",
            (("fitness", "", str), *genetic.LABEL_PARAMS),
            _run_genetic,
            choices={"fitness": genetic.FITNESS_VARIANTS},
            plan=_plan_genetic,
            summarise=genetic.summarise,
            examples=True,
            promises=_MONDRIAN_PROMISES,
            not_promised=(
                "features reach their targets only as far as the search converges (the "
                "residual is the unfeasibility); the search is randomised, so two runs with "
                "different seeds release different series"
            ),
        ),
        *(
            ReleaseMethod(
                name,
                (("P", "P", int), ("paa", "paa", int), ("level", "sax", int), ("impute", "", str)),
                run,
                choices={"impute": kapra.IMPUTE_RULES},
                k_from_fk=True,
                check_config=kapra.check_config,
                summarise=kapra.summarise,
                sweep_columns={
                    "kp_joint_unique_pct": "unique k-group combination % ((k,P) methods)"
                },
                claims=kapra.claims,
                groups=kapra.k_groups,
                group_name="k-group",
                takes_outcomes=True,
                promises=(
                    "every cell of duration class and published demographics holds at least "
                    "k series; per variable, every k-group, inside one cell, holds at least k "
                    "series (k = fk) publishing "
                    "one value envelope's midpoint, and every pattern word within a k-group is "
                    "shared by at least P series; the strong attacker's top-1 rate is at most "
                    "1/k, or the release is refused"
                ),
                not_promised=(
                    "k-groups are formed per variable: the combination of a series' groups "
                    "over the published variables can be unique (kp_joint_unique_pct), which "
                    "the strong attacker exploits"
                ),
            )
            for name, run in (("kapra", kapra.run_kapra), ("pc-kapra", kapra.run_pc_kapra))
        ),
        ReleaseMethod(
            "mdav",
            (),
            mdav.run_mdav,
            k_from_fk=True,
            summarise=mdav.summarise,
            claims=mdav.claims,
            groups=mdav.clusters,
            group_name="cluster",
            takes_outcomes=True,
            promises=(
                "every cell of duration class and published demographics holds at least k "
                "series (k = fk); inside one cell the whole series are microaggregated (MDAV) "
                "into clusters of at least k, and every series of a cluster publishes the "
                "cluster's hourly mean, so every published value of a series, hour by hour and "
                "variable by variable, is that of at least k - 1 others: any attacker, also "
                "one who knows a target's whole original series (its shape and values) and "
                "its published demographics, is left with at least k identical candidates "
                "(top-1 at most 1/k); in a labelled release every cluster holds at least l "
                "distinct outcomes; the strong attacker's top-1 rate is at most 1/k, or the "
                "release is refused"
            ),
            not_promised=(
                "the published series are cluster means, not any patient's values: "
                "within-series detail (peaks, timing of changes) is averaged away, and a "
                "cluster's members are alike only as far as MDAV's nearest-neighbour "
                "grouping makes them; membership of a cluster is visible (its members are "
                "identical)"
            ),
        ),
        ReleaseMethod(
            "noise",
            (("scale", "sc", float),),
            noise.run_noise,
            knob="scale",
            promises=(
                "nothing by construction: every published value of a protected variable is "
                "its original value plus independent Gaussian noise of sd scale x that "
                "variable's sd over the unit (duration class x published demographics), then "
                "moved onto the variable's plausible values; every cell of duration class and "
                "published demographics holds at least fk series; the release is certified "
                "only by measurement: every member of the attacker family (summary, rich, "
                "raw_hours, shape, values) links at most 1/fk of the series to their own "
                "top-1, or the release is refused"
            ),
            not_promised=(
                "no bound of its own: an attacker outside the measured family, or one who "
                "knows more of a target's values, may link more; every published series is "
                "its own original series plus noise (no group of identical series), so the "
                "measured rate falls only as the scale grows; at large scales the values "
                "pile up at their variables' range limits and the Mondrian feature targets "
                "are not imposed"
            ),
        ),
    )
}


def method_of(label: str) -> ReleaseMethod:
    """The registry entry of the method a label names (:func:`parse_method_label`)."""
    return REGISTRY[parse_method_label(label)[0]]


def get_method(name: str) -> ReleaseMethod:
    """The registered method ``name``; ``ConfigError`` listing the known names otherwise."""
    if name not in REGISTRY:
        raise ConfigError(f"unknown release method '{name}', expected one of {sorted(REGISTRY)}")
    return REGISTRY[name]


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def method_label(name: str, params: Mapping[str, Any]) -> str:
    """The label of method ``name`` with ``params`` (module docstring); a method without
    parameters (``mdav``, whose k is the point's fk) is labelled by its name alone."""
    method = get_method(name)
    return "-".join([name] + [f"{key}{_fmt(params[p])}" for p, key, _ in method.params])


def parse_method_label(label: str) -> tuple[str, dict[str, Any]]:
    """Inverse of :func:`method_label`: ``(name, params)``; ``ConfigError`` if malformed.

    A method name may itself hold a hyphen (``pc-kapra``): the longest registered name that
    starts the label wins.
    """
    name = next(
        (m for m in sorted(REGISTRY, key=len, reverse=True) if label.startswith(m + "-")),
        label.split("-")[0],
    )
    if name not in REGISTRY:
        raise ConfigError(f"method label '{label}': unknown release method '{name}'")
    method = REGISTRY[name]
    rest = label[len(name) + 1 :].split("-") if len(label) > len(name) else []
    if len(rest) != len(method.params):
        raise ConfigError(f"method label '{label}': expected {len(method.params)} parameters")
    params: dict[str, Any] = {}
    for part, (param, key, typ) in zip(rest, method.params, strict=True):
        if not key:
            allowed = (method.choices or {}).get(param, ())
            if part not in allowed:
                raise ConfigError(f"method label '{label}': expected a {param} in {tuple(allowed)}")
            params[param] = part
            continue
        if not part.startswith(key):
            raise ConfigError(f"method label '{label}': expected '{key}<value>', got '{part}'")
        raw = part[len(key) :]
        try:
            params[param] = bool(int(raw)) if typ is bool else typ(raw)
        except ValueError as exc:
            raise ConfigError(f"method label '{label}': bad value for {param}: {raw!r}") from exc
    return name, params


def method_labels(methods: Mapping[str, Mapping[str, list]]) -> list[str]:
    """Expand the ``deid.methods`` sweep lists into the labels of their product, config order."""
    labels: list[str] = []
    for name, grid in methods.items():
        keys = [p for p, _, _ in get_method(name).params]
        for values in itertools.product(*(grid[k] for k in keys)):
            labels.append(method_label(name, dict(zip(keys, values, strict=True))))
    return labels


def run_method(
    label: str,
    X: np.ndarray,
    targets: np.ndarray,
    spec: FeatureSpec,
    rng: np.random.Generator,
    fk: int | None = None,
    outcomes: np.ndarray | None = None,
    ell: int = 1,
) -> OptimiseResult:
    """Run the method named by ``label`` on one duration class (signature in the docstring).

    ``fk`` (the sweep point's feature k) is passed as ``params["k"]`` to a method with
    ``k_from_fk``; such a method without ``fk`` is a ``ConfigError``. ``outcomes`` (n, t), the
    labels a labelled release publishes, and ``ell`` reach a method with ``takes_outcomes``
    as ``params["outcomes"]`` and ``params["ell"]``.
    """
    name, params = parse_method_label(label)
    if REGISTRY[name].k_from_fk:
        if fk is None:
            raise ConfigError(
                f"release method '{name}' takes its k from the feature k (fk): none given"
            )
        params["k"] = fk
    if REGISTRY[name].takes_outcomes and outcomes is not None and ell > 1:
        params["outcomes"], params["ell"] = np.asarray(outcomes), int(ell)
    return REGISTRY[name].run(X, targets, spec, params, rng)


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
    (:attr:`~mimic_deid.deid.classes.ClassArray.stream`). A
    method with a ``plan`` (the genetic optimiser) splits every class into chunks of series
    with generators derived from the class's, and the chunks of all classes run as one list
    of tasks over ``threads`` worker processes (largest first), so one large class uses all
    threads; other methods run one task per class. Either way the output does not depend on
    ``threads``.

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
    spec = feature_spec(dict(features), dims)
    if "cell" in targets.columns:
        cell_of = pd.Series(targets["cell"].to_numpy(np.int64), index=targets[KEY].to_numpy())
    else:  # a targets table without cells: one cell per class
        cell_of = pd.Series(
            np.repeat(np.arange(len(classes), dtype=np.int64), [len(c.keys) for c in classes]),
            index=np.concatenate([c.keys for c in classes]) if classes else [],
        )
    classes = split_cells(classes, cell_of)
    T = [class_target_matrix(targets, cls, spec) for cls in classes]
    n = len(classes)
    if outcomes is not None and method_of(label).takes_outcomes:
        by_key = outcomes.set_index(KEY)
        per_unit_outcomes = [by_key.loc[cls.keys].to_numpy() for cls in classes]
    else:
        per_unit_outcomes = [None] * n
    if REGISTRY[parse_method_label(label)[0]].plan is not None:
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
    moved = np.zeros(len(dims), dtype=np.int64)
    if plausible is not None:
        plausible = plausible.select(dims)
        projected = []
        for cls, t, result in zip(classes, T, results, strict=True):
            result, counts = _plausible_result(cls.X, result, t, spec, plausible)
            projected.append(result)
            moved += counts
        results = projected
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
    if plausible is not None:
        summary["projected_values"] = {d: int(c) for d, c in zip(dims, moved, strict=True)}
    method = method_of(label)
    if method.summarise is not None:
        summary.update(method.summarise(per_series))
    imputed = [c for c in per_series.columns if c.startswith("imputed_")]
    if imputed:  # records filled by the method's imputation rule, per variable
        summary["imputed_records"] = {
            c.removeprefix("imputed_"): int(per_series[c].sum()) for c in imputed
        }
    log.info(
        "%s: unfeasibility %.3f, distortion %.3f per record",
        label,
        summary["unfeasibility_mean"],
        summary["distortion_mean"],
    )
    perturbed = pd.concat(perturbed, ignore_index=True).sort_values([*order, "hour"], kind="stable")
    return perturbed.reset_index(drop=True), per_series, summary
