"""Privacy evaluation of a release, duration class by duration class (seed §5.2-§5.3, §6.3).

For every duration class the attacker's view is compared with the truth:

- **disagreement** (:mod:`~mimic_deid.evaluate.disagreement`, Algorithm 2): how far the
  series that look closest by features are from a target's true series, as the attacker
  includes more series;
- **linkage attack** (:mod:`~mimic_deid.evaluate.linkage`): how often an
  attacker who knows a target's features up to a relative error links it to its own released
  series. The attackers measured are the entries of the evaluator registry
  (:data:`~mimic_deid.evaluate.registry.EVALUATORS`: the seed's, the strong, the
  alternative-feature attacker and the attacker family), each one class and one registry
  line, all run in one pass over each class's blocks. The release promises the strong
  attacker and the family no more than :func:`linkage_bound`.

The *baseline* is the same evaluation of the original series released unchanged.

Targets. Every series of a class is a target, except in a class of more than
``max_targets`` series (config ``evaluate/max_targets``): there a random sample of that many
series, drawn from ``derive_rng(seed, "targets", group, length)``, is the targets of the
disagreement and of every attacker, on both sides and in the baseline (the same sample), while
every series of the class stays a candidate
(:func:`~mimic_deid.evaluate.linkage.sample_targets`). A class's cost is then
``O(targets x n)``: linear in the class, where it was quadratic (the ``ihm48`` release puts
every stay of 48 h or more of a split in one class: 11,000 training series at full MIMIC-III
size). Per-series results are the targets' rows.

Memory and work per class (:func:`evaluate_class`, over the evaluators and the blocked kernel
of :mod:`mimic_deid.evaluate.evaluators`). The two series-distance matrices a class
needs (original vs released, original vs original) are each computed once and shared by the
disagreement and by every attacker's linkage attack on both sides; everything is computed a
block of ``block_rows`` target series at a time (all of a target's quantities are local to its
row), so the only class-sized array held is the ``targets x n`` disagreement curves that the
summary's per-column quantiles need. With ``series_distance="dtw"`` (or ``standardise``) the disagreement's
distances are a third matrix, computed block by block in the same way. The results do not depend on ``block_rows``: series distances are centred on
the class-wide column means whatever the block, and class totals are summed once over the
whole class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError, InputDataError, require_choice
from mimic_deid.core.seeding import derive_rng
from mimic_deid.deid.classes import KEY, ClassArray, map_classes
from mimic_deid.deid.features import ATTACKER_STATS, FeatureSpec, compute_features, feature_spec
from mimic_deid.evaluate.attackers import check_attackers, strongest_attacker
from mimic_deid.evaluate.disagreement import check_class, check_series, class_std
from mimic_deid.evaluate.distances import ROW_CHUNK
from mimic_deid.evaluate.evaluators import (
    AttackerLinkage,
    ClassSeries,
    Disagreement,
    Linkage,
    class_series,
    run_blocks,
)
from mimic_deid.evaluate.linkage import MAX_TARGETS, sample_targets
from mimic_deid.evaluate.registry import (
    EVALUATORS,
    NO_SERIES,
    TOP,
    ClassContext,
    Evaluation,
    ReleaseResult,
    Request,
    class_frames,
    no_release,
)

#: Target series per block of the privacy evaluation (config ``evaluate/block_rows``).
BLOCK_ROWS = 256

#: Series distances of the disagreement (config ``evaluate/series_distance``): the plain
#: masked Euclidean distance of seed §4.3 (default), the same divided by the number of
#: records (hours) of the class, as the distances of seed §6.3 are reported, or seed §4.3's
#: alternative, dynamic time warping (:func:`~mimic_deid.evaluate.distances.dtw_distances`).
SERIES_DISTANCES: tuple[str, ...] = ("euclidean", "per_record", "dtw")

#: Sakoe-Chiba band of the DTW series distance, in records (config ``evaluate/dtw_window``).
DTW_WINDOW = 6

__all__ = [
    "BLOCK_ROWS",
    "DTW_WINDOW",
    "NO_SERIES",
    "SERIES_DISTANCES",
    "baseline_disagreement",
    "check_dtw_window",
    "check_series_distance",
    "evaluate_class",
    "evaluate_release",
    "linkage_bound",
    "released_by_key",
]


def _check_block_rows(block_rows: int) -> int:
    ok = (
        not isinstance(block_rows, bool)
        and isinstance(block_rows, (int, np.integer))
        and block_rows >= ROW_CHUNK
        and block_rows % ROW_CHUNK == 0
    )
    if not ok:
        raise ConfigError(
            "privacy block size (evaluate/block_rows) must be a positive multiple of "
            f"{ROW_CHUNK} series, got {block_rows!r}"
        )
    return int(block_rows)


def check_series_distance(name: str) -> str:
    """``name`` if it is one of :data:`SERIES_DISTANCES`, else a ConfigError naming the parameter."""
    return require_choice(name, SERIES_DISTANCES, "series distance (evaluate/series_distance)")


def check_dtw_window(window: int | None) -> int | None:
    """``window`` as an int or None if it is a valid DTW band, else a ConfigError naming it."""
    ok = window is None or (
        not isinstance(window, bool) and isinstance(window, (int, np.integer)) and window >= 0
    )
    if not ok:
        raise ConfigError(
            "DTW window (evaluate/dtw_window) must be a non-negative integer or null, "
            f"got {window!r}"
        )
    return None if window is None else int(window)


def evaluate_class(
    F_orig: np.ndarray,
    F_rel: np.ndarray,
    X_orig: np.ndarray,
    X_rel: np.ndarray,
    *,
    standardise: bool = False,
    attackers: Mapping[str, tuple[np.ndarray, np.ndarray, np.random.Generator]] | None = None,
    errors: Sequence[float] = (),
    block_rows: int = BLOCK_ROWS,
    series_distance: str = "euclidean",
    dtw_window: int | None = DTW_WINDOW,
    cells: np.ndarray | None = None,
    targets: np.ndarray | None = None,
    family: Mapping[str, tuple[object, np.random.Generator]] | None = None,
) -> tuple[dict[str, np.ndarray], pd.DataFrame, dict]:
    """Disagreement and linkage attacks of one duration class, a block of targets at a time.

    Parameters
    ----------
    F_orig, F_rel : ndarray, shape (n, m)
        Original and released features the disagreement ranks by (NaN = null).
    X_orig, X_rel : ndarray, shape (n, L, D)
        Original and released series (baseline: ``X_rel`` is ``X_orig``).
    standardise : bool
        Divide every feature, and every series dimension, of the disagreement by its
        class-wide std over the original non-null values (std 0 or undefined: unscaled);
        its distances are then in std units.
    attackers : mapping, optional
        ``name -> (F_known, F_released, rng)``: each attacker's original features (its
        knowledge before the error, (n, m_a)), the same features of the released series, and
        the generator of its estimation noise, attacked on both sides with the same noise.
    errors : sequence of float
        The attackers' relative estimation errors.
    block_rows : int
        Target series per block (config ``evaluate/block_rows``), a multiple of
        :data:`~mimic_deid.evaluate.distances.ROW_CHUNK`; peak memory is the curves
        (``n x n``) plus about a dozen ``block_rows x n`` arrays, and no result depends on it.
    series_distance : {"euclidean", "per_record", "dtw"}
        The disagreement's ``d_S`` (:data:`SERIES_DISTANCES`); the linkage attack's
        reconstruction error is always the per-value RMS of :mod:`~mimic_deid.evaluate.linkage`.
    dtw_window : int or None
        The DTW band in records (config ``evaluate/dtw_window``; None: unconstrained); used
        only with ``series_distance="dtw"``.
    cells : ndarray of int, shape (n,), optional
        The published demographics of each series, coded (equal codes: equal labels). The
        attackers know a target's demographics: they link it only among the released series
        that publish the same (:mod:`mimic_deid.deid.demographics`). None: no demographics.
    targets : ndarray of int, shape (t,), optional
        The series attacked (ascending class indices,
        :func:`~mimic_deid.evaluate.linkage.sample_targets`); every series is a candidate.
        None: every series.
    family : mapping, optional
        ``name -> (attacker, rng)``: members of the attacker family
        (:mod:`mimic_deid.evaluate.attackers`) run against the release side with exact
        knowledge, each with its random stream for the class
        (:class:`~mimic_deid.evaluate.evaluators.AttackerLinkage`).

    Returns
    -------
    per_row : dict of str to ndarray, shape (t,)
        ``auc``, ``first_threshold``, ``first_disagreement``, ``t_max``, ``n_reachable``
        (:class:`~mimic_deid.evaluate.disagreement.DisagreementResult`).
    summary : DataFrame
        :func:`~mimic_deid.evaluate.disagreement.summarise_curve_matrix` of the class.
    linkage : dict
        ``name -> {"baseline": result, "release": result}``: ``n``, ``top`` and ``by_error``
        (:func:`~mimic_deid.evaluate.linkage.finish_score` per error); with ``family`` also
        ``"family" -> {name: {"release": result}}`` (one error, 0).
    """
    block_rows = _check_block_rows(block_rows)
    series_distance = check_series_distance(series_distance)
    dtw_window = check_dtw_window(dtw_window)
    F_o, F_r, X_o, X_r = check_class(F_orig, F_rel, X_orig, X_rel)
    if X_rel is X_orig:
        X_r = X_o  # the baseline: one array, so the kernel shares its distances
    series = class_series(X_o, X_r, standardise, series_distance, dtw_window)
    rows = (
        np.arange(X_o.shape[0], dtype=np.int64)
        if targets is None
        else np.asarray(targets, np.int64)
    )
    f_scale = class_std(F_o, axis=0) if standardise else None
    disagreement = Disagreement(F_o, F_r, f_scale, block_rows, targets=rows.size)
    errors = tuple(float(e) for e in errors)
    linkages = {
        name: Linkage(F_k, F_kr, rng, errors, TOP, cells)
        for name, (F_k, F_kr, rng) in (attackers or {}).items()
    }
    members = {
        name: AttackerLinkage(attacker, X_o, X_r, rng, TOP, cells)
        for name, (attacker, rng) in (family or {}).items()
    }
    run_blocks(series, rows, [disagreement, *linkages.values(), *members.values()], block_rows)
    per_row, summary = disagreement.finish()
    linkage = {name: attack.finish() for name, attack in linkages.items()}
    if members:
        linkage["family"] = {name: member.finish() for name, member in members.items()}
    return per_row, summary, linkage


@dataclass(frozen=True)
class _Settings:
    """How every class of one evaluation is evaluated (validated once, shared by the
    classes): the keywords of :func:`evaluate_class`, and the targets' sample."""

    standardise: bool
    block_rows: int
    series_distance: str
    dtw_window: int | None
    seed: int
    max_targets: int

    def targets(self, cls: ClassArray) -> np.ndarray:
        """The targets of one class: the same sample for a release and for its baseline."""
        rng = derive_rng(self.seed, "targets", cls.group, cls.length)
        return sample_targets(len(cls.keys), self.max_targets, rng)

    def evaluate(
        self, F_o, F_r, X_o, X_r, targets
    ) -> tuple[dict[str, np.ndarray], pd.DataFrame, dict]:
        """:func:`evaluate_class` of one class with these settings (the disagreement alone)."""
        return evaluate_class(
            F_o, F_r, X_o, X_r, standardise=self.standardise, block_rows=self.block_rows,
            series_distance=self.series_distance, dtw_window=self.dtw_window, targets=targets,
        )  # fmt: skip

    def series(self, X_o: np.ndarray, X_r: np.ndarray) -> ClassSeries:
        """The kernel's arrays of one class with these settings."""
        return class_series(X_o, X_r, self.standardise, self.series_distance, self.dtw_window)


def _settings(
    standardise: bool,
    block_rows: int,
    series_distance: str,
    dtw_window: int | None,
    seed: int,
    max_targets: int,
) -> _Settings:
    return _Settings(
        bool(standardise),
        _check_block_rows(block_rows),
        check_series_distance(series_distance),
        check_dtw_window(dtw_window),
        int(seed),
        int(max_targets),
    )


def _baseline_class(cls: ClassArray, spec: FeatureSpec, settings: _Settings):
    F = compute_features(cls.X, spec)
    per_row, summary, _ = settings.evaluate(F, F, cls.X, cls.X, settings.targets(cls))
    return class_frames(per_row, summary, cls)


def baseline_disagreement(
    classes: Sequence[ClassArray],
    dims: list[str],
    features: Mapping[str, list[str]],
    standardise: bool = False,
    block_rows: int = BLOCK_ROWS,
    series_distance: str = "euclidean",
    dtw_window: int | None = DTW_WINDOW,
    seed: int = 0,
    max_targets: int = MAX_TARGETS,
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
    block_rows : int
        Series per block (:func:`evaluate_class`).
    series_distance : {"euclidean", "per_record", "dtw"}
        The disagreement's series distance (:data:`SERIES_DISTANCES`).
    dtw_window : int or None
        The DTW band (:func:`evaluate_class`).
    seed : int
        Master seed of the targets' sample (the release's, so both sample the same series).
    max_targets : int, targets per class at most (config ``evaluate/max_targets``).

    Returns
    -------
    per_series : DataFrame
        group, class_length, auc, first_threshold, first_disagreement, a row per target; no
        key, as the baseline is compared with releases through distributions only.
    summary : DataFrame
        group, class_length, then :func:`summarise_curve_matrix` columns.
    """
    spec = feature_spec(dict(features), dims)
    n = len(classes)
    settings = _settings(standardise, block_rows, series_distance, dtw_window, seed, max_targets)
    results = map_classes(
        _baseline_class,
        classes,
        [spec] * n,
        [settings] * n,
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


def _release_class(
    orig: ClassArray,
    rel: ClassArray,
    pseudonyms: np.ndarray,
    cells: np.ndarray | None,
    settings: _Settings,
    request: Request,
) -> dict:
    """One class through every wanted entry of :data:`EVALUATORS` in one pass over its blocks:
    ``{name: the entry's finish()}``."""
    if orig.length != rel.length or not np.array_equal(orig.keys, rel.keys):
        raise InputDataError(
            f"release series: the released series of class {orig.group}/{orig.length} h do not "
            "match the original duration classes"
        )
    X_o, X_r = check_series(orig.X, rel.X)
    targets = settings.targets(orig)
    ctx = ClassContext(
        request, orig, rel, settings.series(X_o, X_r), targets, pseudonyms[targets], cells
    )
    evaluators = {name: entry.start(ctx) for name, entry in _wanted(request).items()}
    run_blocks(ctx.series, targets, list(evaluators.values()), settings.block_rows)
    return {name: evaluator.finish() for name, evaluator in evaluators.items()}


def _wanted(request: Request) -> dict[str, Evaluation]:
    return {name: entry for name, entry in EVALUATORS.items() if entry.wanted(request)}


def _cells(
    original: Sequence[ClassArray], to_pseudonym: pd.Series, demographics: pd.DataFrame | None
) -> list[np.ndarray | None]:
    """Every class's published demographics, coded (None per class without any)."""
    columns = [
        c for c in (demographics.columns if demographics is not None else []) if c != "pseudonym"
    ]
    if not columns:
        return [None] * len(original)
    code = pd.Series(
        demographics.groupby(columns, sort=True).ngroup().to_numpy(),
        index=demographics["pseudonym"].to_numpy(),
    )
    cells = [code.reindex(to_pseudonym.loc[cls.keys]).to_numpy() for cls in original]
    if any(np.isnan(c.astype(np.float64)).any() for c in cells):
        raise InputDataError("release index: some released series have no demographics")
    return cells


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
    block_rows: int = BLOCK_ROWS,
    series_distance: str = "euclidean",
    alt_features: Mapping[str, list[str]] | None = None,
    dtw_window: int | None = DTW_WINDOW,
    demographics: pd.DataFrame | None = None,
    max_targets: int = MAX_TARGETS,
    family: Sequence[str] | None = None,
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
        Master seed of every random stream (:mod:`~mimic_deid.evaluate.registry`).
    strong_features : mapping, optional
        The strong attacker's knowledge (:func:`~mimic_deid.deid.features.attacker_features`
        of the released variables); no strong attack when None.
    fk : int, optional
        The release's k (feature k; a (k,P) method's k-group size), for :func:`linkage_bound`.
    block_rows, series_distance, dtw_window : as in :func:`evaluate_class`.
    alt_features : mapping, optional
        Seed §6.3's attacker who knows other features than Mondrian's (config
        ``evaluate/attacker_features``); empty or None: none.
    demographics : DataFrame, optional
        ``pseudonym`` and the published demographics (the release index's columns), known
        to every attacker (:func:`evaluate_class`'s ``cells``). None or no column: none.
    max_targets : int, targets per class at most (config ``evaluate/max_targets``).
    family : sequence of str, optional
        Members of the attacker family (:data:`~mimic_deid.evaluate.attackers.ATTACKERS`
        names) run against the release with exact knowledge. None or empty: none (the bound
        is then the strong attacker's alone).

    Returns
    -------
    per_series : DataFrame
        A row per target: pseudonym, group, class_length, auc, first_threshold,
        first_disagreement (with ``alt_features`` the same three with the suffix ``_alt``).
    summary : DataFrame
        group, class_length, then :func:`summarise_curve_matrix` columns.
    linkage : dict
        Each entry's results (:mod:`~mimic_deid.evaluate.registry`), and with the strong
        attacker and ``fk`` its ``bound`` (:func:`linkage_bound`); with no class,
        :func:`~mimic_deid.evaluate.registry.no_release`'s.
    """
    if len(original) != len(released):
        raise InputDataError(
            f"release series: {len(released)} released duration classes for "
            f"{len(original)} original ones"
        )
    knowledge = {"seed": feature_spec(dict(features), dims)}
    if strong_features is not None:
        knowledge["strong"] = feature_spec(dict(strong_features), dims, allowed=ATTACKER_STATS)
    if alt_features:
        knowledge["alternative"] = feature_spec(dict(alt_features), dims)
    settings = _settings(standardise, block_rows, series_distance, dtw_window, seed, max_targets)
    request = Request(
        knowledge, tuple(float(e) for e in linkage_errors), tuple(check_attackers(family or ())),
        settings.seed, settings.standardise, settings.block_rows, fk, tuple(dims),
    )  # fmt: skip
    to_pseudonym = pseudonyms.set_index(KEY)["pseudonym"]
    n = len(original)
    if n == 0:  # nothing published: no attack (the check refuses it first)
        return astuple(no_release("alternative" in knowledge))
    results = map_classes(
        _release_class,
        original,
        released,
        [to_pseudonym.loc[cls.keys].to_numpy() for cls in original],
        _cells(original, to_pseudonym, demographics),
        [settings] * n,
        [request] * n,
        label="privacy evaluation classes",
    )
    out = ReleaseResult()
    for name, entry in _wanted(request).items():  # every class's results of one entry
        entry.collect(request, [r[name] for r in results], out)
    if "strong" in out.linkage and fk is not None:
        out.linkage["bound"] = linkage_bound(out.linkage, fk)
    return out.per_series, out.summary, out.linkage


def linkage_bound(linkage: Mapping, k: int) -> dict:
    """The promise to the strong attacker, stated before the attack, and whether it holds.

    A release whose every published group (Mondrian equivalence class; (k,P) k-group) holds
    at least ``k`` series with the same protected values hides a target among ``k``: an
    attacker who knows the target exactly links it to its own series with probability at most
    ``1 / k``. The bound is that figure and nothing else (it never grows with a measured
    rate, seed §7.2); it is compared with the strong attacker's top-1 rate at its most precise
    knowledge (the smallest error measured), reported with its 95 % Wilson interval.

    Parameters
    ----------
    linkage : mapping
        :func:`evaluate_release`'s linkage result with the strong attacker (key ``strong``).
    k : int
        The release's k: feature k for a Mondrian method, the k-group size for a (k,P)
        method (which takes it from fk, :mod:`mimic_deid.deid.kapra`).

    With the attacker family measured (``linkage["family"]``,
    :mod:`mimic_deid.evaluate.attackers`) the same bound is promised to every member, with
    exact knowledge: the release is within only if the strong attacker and every member are.

    Returns
    -------
    dict
        ``error`` (the knowledge error), ``k``, ``top1`` (the bound, a fraction),
        ``strong_top1`` (measured), ``strong_top1_ci`` ([low, high]), ``n`` (targets) and
        ``within`` (bool: measured <= bound); with the family also ``strong_within`` (the
        strong attacker alone), ``strongest_attacker`` (the member with the highest top-1),
        ``strongest_top1``, ``strongest_top1_ci`` and ``refused_by`` (every member above the
        bound, in registry order).
    """
    if k < 1:
        raise ConfigError(f"linkage bound: k must be at least 1, got {k}")
    strong = linkage["strong"]["release"]
    error = min(strong, key=float)  # the most precise knowledge measured
    measured = strong[error]
    bound = 1.0 / k
    out = {
        "error": float(error),
        "k": int(k),
        "top1": bound,
        "strong_top1": measured["top1"],
        "strong_top1_ci": measured["top1_ci"],
        "n": measured["n"],
        "within": bool(measured["top1"] <= bound + 1e-12),
    }
    strongest = strongest_attacker(linkage.get("family") or {}, k)
    if strongest is not None:
        out["strong_within"] = out["within"]
        out["strongest_attacker"] = strongest["name"]
        out["strongest_top1"] = strongest["top1"]
        out["strongest_top1_ci"] = strongest["top1_ci"]
        out["refused_by"] = strongest["refused_by"]
        out["within"] = bool(out["strong_within"] and strongest["within"])
    return out
