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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError
from mimic_deid.core.logs import get_logger
from mimic_deid.deid import adhoc, genetic, kapra, mdav, noise
from mimic_deid.deid.features import FeatureSpec
from mimic_deid.deid.optimise import OptimiseResult

__all__ = [
    "REGISTRY",
    "ReleaseMethod",
    "get_method",
    "method_of",
    "method_label",
    "method_labels",
    "parse_method_label",
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
        ``claims(point) -> dict`` (``point``: :class:`mimic_deid.core.claims.ClaimInputs`,
        the per-series table, the staged release, the label's parameters, the point's k and
        the plausible values): the method's own privacy claims (claim 11 of
        :mod:`mimic_deid.deid.check`), raising ``ReleaseCheckError``; ``k`` is the point's fk
        for a ``k_from_fk`` method.
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
        :func:`~mimic_deid.deid.apply.apply_method` can spread one large class over the job's threads. Must give the
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
def _grouping_method(name, params, run, hooks, groups, **entry) -> ReleaseMethod:
    """A method that publishes groups of at least k = fk series (KAPRA's k-groups, MDAV's
    clusters): its summary and claims are ``hooks``' (its module's ``summarise`` and
    ``claims``), ``groups`` is ``(groups hook, group name)``, and a labelled release keeps
    the outcome rule in every group."""
    return ReleaseMethod(
        name, params, run, k_from_fk=True, summarise=hooks.summarise, claims=hooks.claims,
        groups=groups[0], group_name=groups[1], takes_outcomes=True, **entry,
    )  # fmt: skip


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
            _grouping_method(
                name,
                (("P", "P", int), ("paa", "paa", int), ("level", "sax", int), ("impute", "", str)),
                run,
                kapra,
                (kapra.k_groups, "k-group"),
                choices={"impute": kapra.IMPUTE_RULES},
                check_config=kapra.check_config,
                sweep_columns={
                    "kp_joint_unique_pct": "unique k-group combination % ((k,P) methods)"
                },
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
        *(
            _grouping_method(
                name,
                (),
                run,
                mdav,
                (mdav.clusters, "cluster"),
                promises=(
                    "every cell of duration class and published demographics holds at least "
                    "k series (k = fk); inside one cell the whole series are microaggregated "
                    f"(MDAV) into clusters of at least k, and every series of a cluster "
                    f"publishes {publishes}, so every published value of a series, hour by "
                    "hour and variable by variable, is that of at least k - 1 others: any "
                    "attacker, also one who knows a target's whole original series (its shape "
                    "and values) and its published demographics, is left with at least k "
                    "identical candidates (top-1 at most 1/k); in a labelled release every "
                    "cluster holds at least l distinct outcomes; the strong attacker's top-1 "
                    "rate is at most 1/k, or the release is refused"
                ),
                not_promised=(
                    f"the published series are {what}, not any patient's values: "
                    f"within-series detail (peaks, timing of changes) is averaged away{kept}, "
                    "and a cluster's members are alike only as far as MDAV's nearest-neighbour "
                    "grouping makes them; membership of a cluster is visible (its members are "
                    "identical)"
                ),
            )
            for name, run, publishes, what, kept in (
                ("mdav", mdav.run_mdav, "the cluster's hourly mean", "cluster means", ""),
                (
                    "mdav-spread",
                    mdav.run_mdav_spread,
                    "the cluster's hourly mean stretched about its own mean to the members' "
                    "typical within-series sd",
                    "stretched cluster means",
                    " (only the typical spread over the hours is restored)",
                ),
            )
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
    name = (
        label
        if label in REGISTRY  # a bare label (mdav-spread), not mdav with a parameter "spread"
        else next(
            (m for m in sorted(REGISTRY, key=len, reverse=True) if label.startswith(m + "-")),
            label.split("-")[0],
        )
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
