"""Privacy evaluation of a release, duration class by duration class (seed §5.2-§5.3, §6.3).

For every duration class the attacker's view is compared with the truth:

- **disagreement** (:mod:`~mimic_deid.evaluate.disagreement`, Algorithm 2): how far the
  series that look closest by features are from a target's true series, as the attacker
  includes more series;
- **linkage attack** (:mod:`~mimic_deid.evaluate.linkage`): how often an
  attacker who knows a target's features up to a relative error links it to its own released
  series. Two attackers are measured: the seed's, who knows the features de-identification
  targets (config ``deid.features``), and a *strong* attacker who knows the mean, variance,
  min, max and number of observed hours of every released variable
  (:func:`~mimic_deid.deid.features.attacker_features`). The release promises the strong
  attacker no more than :func:`linkage_bound`.

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
disagreement and by both attackers' linkage attacks on both sides; everything is computed a
block of ``block_rows`` target series at a time (all of a target's quantities are local to its
row), so the only class-sized array held is the ``targets x n`` disagreement curves that the
summary's per-column quantiles need. With ``series_distance="dtw"`` (or ``standardise``) the disagreement's
distances are a third matrix, computed block by block in the same way. The results do not depend on ``block_rows``: series distances are centred on
the class-wide column means whatever the block, and class totals are summed once over the
whole class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError, InputDataError, require_choice
from mimic_deid.core.seeding import derive_rng
from mimic_deid.deid.classes import KEY, ClassArray, map_classes
from mimic_deid.deid.features import ATTACKER_STATS, FeatureSpec, compute_features, feature_spec
from mimic_deid.evaluate.attackers import ATTACKERS, check_attackers, strongest_attacker
from mimic_deid.evaluate.disagreement import check_class, standardised_class
from mimic_deid.evaluate.distances import ROW_CHUNK, series_centre
from mimic_deid.evaluate.evaluators import (
    AttackerLinkage,
    Block,
    ClassSeries,
    Disagreement,
    Linkage,
)
from mimic_deid.evaluate.linkage import MAX_TARGETS, aggregate_linkage, sample_targets

#: Target series per block of the privacy evaluation (config ``evaluate/block_rows``).
BLOCK_ROWS = 256

#: Series distances of the disagreement (config ``evaluate/series_distance``): the plain
#: masked Euclidean distance of seed §4.3 (default), the same divided by the number of
#: records (hours) of the class, as the distances of seed §6.3 are reported, or seed §4.3's
#: alternative, dynamic time warping (:func:`~mimic_deid.evaluate.distances.dtw_distances`).
SERIES_DISTANCES: tuple[str, ...] = ("euclidean", "per_record", "dtw")

#: Sakoe-Chiba band of the DTW series distance, in records (config ``evaluate/dtw_window``).
DTW_WINDOW = 6

#: Ranks at which the linkage attack's success is reported.
TOP = (1, 5)

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
    "linkage_summary",
    "released_by_key",
]


def _frames(
    per_row: Mapping[str, np.ndarray],
    summary: pd.DataFrame,
    cls: ClassArray,
    keys: np.ndarray | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-series rows (``keys``: the targets' pseudonyms) and the summary of one class."""
    per_series = pd.DataFrame(
        {
            "class_length": np.int32(cls.length),
            "auc": per_row["auc"],
            "first_threshold": per_row["first_threshold"],
            "first_disagreement": per_row["first_disagreement"],
        }
    )
    if keys is None:
        per_series.insert(0, "group", cls.group)
    else:
        per_series.insert(0, "pseudonym", keys)
        per_series.insert(1, "group", cls.group)
    summary = summary.copy()
    summary.insert(0, "class_length", np.int32(cls.length))
    summary.insert(0, "group", cls.group)
    return per_series, summary


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
        the generator of its estimation noise. Each is attacked on both sides (``baseline``:
        the original series released unchanged; ``release``) with the same noise, as
        the whole-class attack of ``tests/privacy_reference.py`` with its defaults.
    errors : sequence of float
        The attackers' relative estimation errors.
    block_rows : int
        Target series per block (config ``evaluate/block_rows``), a multiple of
        :data:`~mimic_deid.evaluate.distances.ROW_CHUNK`; peak memory is the curves
        (``n x n``) plus about a dozen ``block_rows x n`` arrays, and no result depends on it.
    series_distance : {"euclidean", "per_record", "dtw"}
        The disagreement's ``d_S`` (:data:`SERIES_DISTANCES`); ``per_record`` divides the
        Euclidean distance by the class length ``L`` (records); ``dtw`` is
        :func:`~mimic_deid.evaluate.distances.dtw_distances`. The linkage attack's
        reconstruction error is always the per-value RMS (Euclidean) of
        :mod:`~mimic_deid.evaluate.linkage`.
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
        :func:`~mimic_deid.evaluate.disagreement.summarise_curves` of the class.
    linkage : dict
        ``name -> {"baseline": result, "release": result}``: ``n``, ``top`` and ``by_error``
        (:func:`~mimic_deid.evaluate.linkage.finish_score` per error); with ``family`` also
        ``"family" -> {name: {"release": result}}`` (one error, 0).
    """
    block_rows = _check_block_rows(block_rows)
    series_distance = check_series_distance(series_distance)
    dtw_window = check_dtw_window(dtw_window)
    F_o, F_r, X_o, X_r = check_class(F_orig, F_rel, X_orig, X_rel)
    n = X_o.shape[0]
    attackers = dict(attackers or {})
    errors = tuple(float(e) for e in errors)
    same = X_rel is X_orig
    if same:
        X_r = X_o  # the baseline: one array, so the kernel shares its distances
    centre_rel = series_centre(X_o, X_r)
    centre_base = centre_rel if same else series_centre(X_o, X_o)
    f_scale = None
    X_os, X_rs, centre_dis = X_o, X_r, centre_rel
    if standardise:
        f_scale, X_os, X_rs = standardised_class(F_o, X_o, X_r)
        centre_dis = series_centre(X_os, X_rs)
    series = ClassSeries(
        X_o, X_r, centre_rel, centre_base, X_os, X_rs, centre_dis, series_distance, dtw_window,
        # the Euclidean distance of the unscaled series is shared by the linkage attack's
        # reconstruction error and (without standardise) the Euclidean disagreement
        shared=series_distance != "dtw" and not standardise,
    )  # fmt: skip
    rows = np.arange(n, dtype=np.int64) if targets is None else np.asarray(targets, np.int64)
    disagreement = Disagreement(F_o, F_r, f_scale, block_rows, targets=rows.size)
    linkages = {
        name: Linkage(F_k, F_kr, rng, errors, TOP, cells)
        for name, (F_k, F_kr, rng) in attackers.items()
    }
    members = {
        name: AttackerLinkage(attacker, X_o, X_r, rng, TOP, cells)
        for name, (attacker, rng) in (family or {}).items()
    }
    evaluators = [disagreement, *linkages.values(), *members.values()]
    for s in range(0, rows.size, block_rows):
        part = slice(s, min(rows.size, s + block_rows))
        block = Block(series, rows[part], part)
        for evaluator in evaluators:
            evaluator.block(block)
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
        self, F_o, F_r, X_o, X_r, targets, attackers=None, errors=(), cells=None, family=None
    ) -> tuple[dict[str, np.ndarray], pd.DataFrame, dict]:
        """:func:`evaluate_class` of one class with these settings."""
        return evaluate_class(
            F_o, F_r, X_o, X_r, standardise=self.standardise, attackers=attackers,
            errors=errors, block_rows=self.block_rows, series_distance=self.series_distance,
            dtw_window=self.dtw_window, cells=cells, targets=targets, family=family,
        )  # fmt: skip


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
    return _frames(per_row, summary, cls)


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
    max_targets : int
        Targets per class at most (config ``evaluate/max_targets``, module docstring).

    Returns
    -------
    per_series : DataFrame
        group, class_length, auc, first_threshold, first_disagreement, a row per target; no
        key, as the baseline is compared with releases through distributions only.
    summary : DataFrame
        group, class_length, then :func:`summarise_curves` columns.
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
    spec: FeatureSpec,
    strong: FeatureSpec | None,
    errors: tuple[float, ...],
    alt: FeatureSpec | None,
    cells: np.ndarray | None,
    settings: _Settings,
    family: tuple[str, ...] = (),
):
    if orig.length != rel.length or not np.array_equal(orig.keys, rel.keys):
        raise InputDataError(
            f"release series: the released series of class {orig.group}/{orig.length} h do not "
            "match the original duration classes"
        )
    seed, where = settings.seed, (orig.group, orig.length)
    F_orig = compute_features(orig.X, spec)
    F_rel = compute_features(rel.X, spec)
    # The same estimation noise for both sides, so before/after are paired.
    attackers = {"seed": (F_orig, F_rel, derive_rng(seed, "linkage", *where))}
    if strong is not None:
        attackers["strong"] = (
            compute_features(orig.X, strong),
            compute_features(rel.X, strong),
            derive_rng(seed, "linkage", "strong", *where),
        )
    targets = settings.targets(orig)
    members = {
        name: (ATTACKERS[name], derive_rng(seed, "attacker", name, *where)) for name in family
    }
    per_row, summary, linkage = settings.evaluate(
        F_orig, F_rel, orig.X, rel.X, targets, attackers, errors, cells, members
    )
    frames = _frames(per_row, summary, orig, pseudonyms[targets])
    if alt is not None:
        F_alt, F_alt_rel = compute_features(orig.X, alt), compute_features(rel.X, alt)
        rng = derive_rng(seed, "linkage", "alternative", *where)
        alt_row, _, alt_linkage = settings.evaluate(
            F_alt, F_alt_rel, orig.X, rel.X, targets,
            {"alternative": (F_alt, F_alt_rel, rng)}, errors, cells,
        )  # fmt: skip
        per_series = frames[0]
        for col in ("auc", "first_threshold", "first_disagreement"):
            per_series[f"{col}_alt"] = alt_row[col]
        linkage.update(alt_linkage)
    return frames, linkage


#: The reason recorded in ``linkage.json`` (``not_computable``) and on the card
#: (``privacy_not_computable``) of a release with no published series.
NO_SERIES = (
    "not computable: the release publishes no series (no duration class formed at the "
    "configured sizes; its check names each group, its series and what would fit)"
)


def _no_release(alt: bool) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """:func:`evaluate_release`'s outputs for a release with no published series: tables
    without rows (their columns and types as measured ones) and a ``linkage`` of no attack,
    ``{"not_computable": NO_SERIES, "details": {}}``."""
    figures = ("auc", "first_threshold", "first_disagreement")
    per_series = pd.DataFrame(
        {
            "pseudonym": np.zeros(0, dtype=object),
            "group": np.zeros(0, dtype=object),
            "class_length": np.zeros(0, dtype=np.int32),
            **{c: np.zeros(0) for c in figures},
            **{f"{c}_alt": np.zeros(0) for c in figures if alt},
        }
    )
    summary = pd.DataFrame(
        {
            "group": np.zeros(0, dtype=object),
            "class_length": np.zeros(0, dtype=np.int32),
            "inclusion": np.zeros(0),
            "stat": np.zeros(0, dtype=object),
            "value": np.zeros(0),
            "normalised": np.zeros(0),
        }
    )
    return per_series, summary, {"not_computable": NO_SERIES, "details": {}}


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
        Master seed: the attacker's noise in class (group, length) comes from
        ``derive_rng(seed, "linkage", group, length)`` (the strong attacker's with
        ``"strong"`` after ``"linkage"``).
    strong_features : mapping, optional
        The strong attacker's knowledge (:func:`~mimic_deid.deid.features.attacker_features`
        of the released variables); no strong attack when None.
    fk : int, optional
        The release's k (feature k; a (k,P) method's k-group size), for :func:`linkage_bound`.
    block_rows : int
        Target series per block (:func:`evaluate_class`, config ``evaluate/block_rows``).
    series_distance : {"euclidean", "per_record", "dtw"}
        The disagreement's series distance (:data:`SERIES_DISTANCES`).
    dtw_window : int or None
        The DTW band (:func:`evaluate_class`).
    alt_features : mapping, optional
        Seed §6.3's attacker who knows other features than Mondrian's (config
        ``evaluate/attacker_features``); empty or None: none. Its disagreement is ranked by
        these features and its linkage attack uses the noise of
        ``derive_rng(seed, "linkage", "alternative", group, length)``.
    demographics : DataFrame, optional
        ``pseudonym`` and the published demographics (the release index's columns): every
        attacker knows a target's and links it only among the series publishing the same
        (:func:`evaluate_class`'s ``cells``). None or no column: none published.
    max_targets : int
        Targets per class at most (config ``evaluate/max_targets``, module docstring); the
        sample of class (group, length) comes from ``derive_rng(seed, "targets", group,
        length)``.
    family : sequence of str, optional
        Members of the attacker family (:data:`~mimic_deid.evaluate.attackers.ATTACKERS`
        names) run against the release with exact knowledge; member ``name``'s random stream
        in class (group, length) is ``derive_rng(seed, "attacker", name, group, length)``.
        None or empty: none (the bound is then the strong attacker's alone).

    Returns
    -------
    per_series : DataFrame
        A row per target: pseudonym, group, class_length, auc, first_threshold,
        first_disagreement, and with
        ``alt_features`` the same three for that attacker with the suffix ``_alt``.
    summary : DataFrame
        group, class_length, then :func:`summarise_curves` columns.
    linkage : dict
        :func:`linkage_summary` of the seed's attacker (keys ``baseline``, ``release``,
        ``details``), and with ``strong_features`` the strong attacker's under ``strong`` and
        ``bound`` (:func:`linkage_bound`); with ``alt_features`` that attacker's under
        ``alternative``. With ``family``: ``family`` (name -> :func:`linkage_summary` of its
        ``release`` side, with ``knows``) and ``strongest``
        (:func:`~mimic_deid.evaluate.attackers.strongest_attacker`, with ``fk`` its bound).
    """
    family = tuple(check_attackers(family or ()))
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
    alt = feature_spec(dict(alt_features), dims) if alt_features else None
    to_pseudonym = pseudonyms.set_index(KEY)["pseudonym"]
    n = len(original)
    if n == 0:  # nothing published: no attack can be measured (the check refuses it first)
        return _no_release(alt is not None)
    cells: list[np.ndarray | None] = [None] * n
    columns = [
        c for c in (demographics.columns if demographics is not None else []) if c != "pseudonym"
    ]
    if columns:
        code = pd.Series(
            demographics.groupby(columns, sort=True).ngroup().to_numpy(),
            index=demographics["pseudonym"].to_numpy(),
        )
        cells = [code.reindex(to_pseudonym.loc[cls.keys]).to_numpy() for cls in original]
        if any(np.isnan(c.astype(np.float64)).any() for c in cells):
            raise InputDataError("release index: some released series have no demographics")
    results = map_classes(
        _release_class,
        original,
        released,
        [to_pseudonym.loc[cls.keys].to_numpy() for cls in original],
        [spec] * n,
        [strong] * n,
        [tuple(linkage_errors)] * n,
        [alt] * n,
        cells,
        [_settings(standardise, block_rows, series_distance, dtw_window, seed, max_targets)] * n,
        [family] * n,
        label="privacy evaluation classes",
    )
    per_series, summary = _concat([r[0] for r in results])

    def attack(name: str) -> dict:
        return linkage_summary(
            {side: [r[1][name][side] for r in results] for side in ("baseline", "release")}
        )

    linkage = attack("seed")
    if alt is not None:
        linkage["alternative"] = attack("alternative")
    if family:
        linkage["family"] = {
            name: {
                "knows": ATTACKERS[name].knows,
                **linkage_summary({"release": [r[1]["family"][name]["release"] for r in results]}),
            }
            for name in family
        }
        linkage["strongest"] = strongest_attacker(linkage["family"], fk)
    if strong is not None:
        linkage["strong"] = attack("strong")
        if fk is not None:
            linkage["bound"] = linkage_bound(linkage, fk)
    return per_series, summary, linkage


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


def linkage_summary(per_class: Mapping[str, list[dict]]) -> dict:
    """Class-size-weighted linkage results per side, keyed by the estimation error.

    ``{side: {"<error>": {top1, top1_ci, top5, top5_ci, reconstruction_error, n}},
    "details": {side: ...}}``; ``*_ci`` are 95 % Wilson intervals
    (:func:`~mimic_deid.evaluate.linkage.rate_interval`).
    """
    out: dict = {"details": {}}
    for side, results in per_class.items():
        agg = aggregate_linkage(results)
        out["details"][side] = agg
        out[side] = {
            f"{row['error']:g}": {
                "top1": row.get("top1"),
                "top1_ci": row.get("top1_ci"),
                "top5": row.get("top5"),
                "top5_ci": row.get("top5_ci"),
                "reconstruction_error": row["reconstruction_error"],
                "n": row["n_targets"],
            }
            for row in agg["by_error"]
        }
    return out
