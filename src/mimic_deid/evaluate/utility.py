"""Utility of a release: the benchmark in-hospital-mortality baseline under four trust settings.

The model is the logistic-regression baseline of YerevaNN/mimic3-benchmarks (seed 5.7): the
7 x 6 hand-engineered features of :mod:`mimic_deid.evaluate.benchmark_features`, mean
imputation and standard scaling fitted on the training split, L2-regularised logistic
regression with C chosen by ROC-AUC on the validation split. It is evaluated by ROC-AUC and
PR-AUC (average precision) with percentile-bootstrap 95 % intervals, under the trust settings
of seed 5.7 / Tables 6.3-6.4 (training / test data: orig/orig, deid/deid, orig/deid, deid/orig).

:func:`utility_table` separates what a release costs into rows (issue 27):

- the data owner's baseline, orig. / orig. on **all** series variables, beside orig. / orig. on
  the released ones: their gap is the cost of withholding variables (``release.variables``);
- the four settings with the original side as recorded (``shipped``) and gap-filled like the
  release (``gap_filled``): in the cross settings the shipped original side differs from the
  release both in its perturbation and in its measurement pattern (which hours are null, a
  pattern the release withholds, :mod:`mimic_deid.deid.missing`, and which the benchmark's
  subsequence statistics see), the gap-filled one by the perturbation only.

Nothing here writes files; the workflow script writes the CSV/JSON/markdown.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.core.logs import get_logger
from mimic_deid.core.numbers import auc as fmt_auc
from mimic_deid.core.seeding import derive_rng, library_seed
from mimic_deid.deid.duration import LABELS

if TYPE_CHECKING:  # scikit-learn is imported where a model is fitted or scored: importing
    # this module (as the workflow does when it starts) stays light
    from sklearn.pipeline import Pipeline
from mimic_deid.deid.missing import fill_missing_hours
from mimic_deid.evaluate.benchmark_features import (
    STATISTICS,
    SUBSEQUENCES,
    benchmark_features,
    datasets_from_long,
    feature_names,
    features_from_long,
    subsequence_bounds,
)

__all__ = [
    "CROSS",
    "DEFAULT_CS",
    "KEY_COLUMNS",
    "METRIC_COLUMNS",
    "SEED_TRUST_SETTINGS",
    "SETTINGS",
    "TASKS",
    "VARIABLES",
    "STATISTICS",
    "SUBSEQUENCES",
    "benchmark_features",
    "datasets_from_long",
    "evaluate_model",
    "feature_names",
    "features_from_long",
    "fit_mortality_model",
    "subsequence_bounds",
    "trust_settings",
    "utility_table",
]

log = get_logger(__name__)

TASKS: dict[str, tuple[str, str]] = {task: (task, public) for task, public in LABELS.items()}
"""Prediction tasks of the utility table, one per published label
(:data:`mimic_deid.deid.duration.LABELS`): task -> (label column of the original ``ihm48``
meta table, label column of the release index). ``mortality``: in-hospital mortality (seed
5.7); ``long_stay``: the ICU stay lasts more than 7 days (mimic3-benchmarks' long-stay cut),
predicted from the same first 48 hours."""

VARIABLES: tuple[str, ...] = ("all", "released")
"""Which variables the models of a row see: ``all`` series variables of the original data
(the data owner's baseline, orig. / orig. only) or the ``released`` ones (every setting)."""

CROSS: tuple[str, ...] = ("shipped", "gap_filled")
"""How the original side of the trust settings is prepared (config ``evaluate.utility.cross``
picks which one the sweep summary's headline columns use): ``shipped``, the original series
as recorded (missing hours null), or ``gap_filled``, like-for-like with the release: the
missing hours filled by the release's own rule (:func:`mimic_deid.deid.missing.fill_missing_hours`,
applied to the series of one split and one length, as to a duration class of ``ihm48``)."""

KEY_COLUMNS: tuple[str, ...] = (
    "task",
    "variables",
    "cross",
    "setting",
    "train_data",
    "test_data",
    "split",
)
"""The columns that identify a row of the utility table (``trust_settings.csv``)."""

DEFAULT_CS: tuple[float, ...] = (1e-3, 1e-2, 1e-1, 1.0, 10.0)
"""Inverse regularisation strengths tried by default, as config ``evaluate.utility.C`` (the
benchmark's own default is 1e-3)."""

MAX_ITER = 10_000

SETTINGS: tuple[tuple[str, str, str], ...] = (
    ("orig. / orig.", "orig", "orig"),
    ("de-id. / de-id.", "deid", "deid"),
    ("orig. / de-id.", "orig", "deid"),
    ("de-id. / orig.", "deid", "orig"),
)
"""(label as in seed Tables 6.3/6.4, training-data side, test-data side)."""

#: Seed 000, Table 6.3 (split ``train``) and Table 6.4 (split ``test``): in-hospital mortality
#: ROC-AUC and PR-AUC per trust setting, in :data:`SETTINGS` order (orig. / orig.,
#: de-id. / de-id., orig. / de-id., de-id. / orig.).
SEED_TRUST_SETTINGS: dict[tuple[str, str], tuple[float, float, float, float]] = {
    ("train", "roc_auc"): (0.87, 0.87, 0.86, 0.64),
    ("train", "pr_auc"): (0.54, 0.54, 0.51, 0.22),
    ("test", "roc_auc"): (0.85, 0.83, 0.82, 0.64),
    ("test", "pr_auc"): (0.49, 0.45, 0.40, 0.22),
}

METRIC_COLUMNS: tuple[str, ...] = (
    "roc_auc",
    "roc_auc_lo",
    "roc_auc_hi",
    "pr_auc",
    "pr_auc_lo",
    "pr_auc_hi",
    "n",
    "positives",
)

_BOOTSTRAP_CHUNK_ELEMENTS = 2_000_000  # resamples x series per vectorised block (~16 MB each)

Dataset = tuple[np.ndarray, np.ndarray]


# --------------------------------------------------------------------------------------------
# model


def _check_xy(X: np.ndarray, y: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise InputDataError(
            f"{what}: expected X (n, n_features) and y (n,), got {X.shape} and {y.shape}"
        )
    if y.size and not np.isin(y, (0, 1)).all():
        raise InputDataError(f"{what}: labels must be 0/1")
    return X, y.astype(np.int64)


def _check_cs(Cs: Sequence[float]) -> list[float]:
    cs = sorted({float(c) for c in Cs})
    if not cs or any(not math.isfinite(c) or c <= 0 for c in cs):
        raise ConfigError(f"utility Cs: expected a non-empty list of positive numbers, got {Cs}")
    return cs


def _pipeline(C: float, seed: int, max_iter: int) -> Pipeline:
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    return Pipeline(
        [
            ("impute", SimpleImputer(strategy="mean", keep_empty_features=True)),
            ("scale", StandardScaler()),
            (
                "logreg",
                LogisticRegression(
                    C=C,
                    l1_ratio=0.0,
                    solver="lbfgs",
                    max_iter=max_iter,
                    random_state=library_seed(seed, "scikit-learn", "utility", "logreg"),
                ),
            ),
        ]
    )


def _fit(pipe: Pipeline, X: np.ndarray, y: np.ndarray) -> Pipeline:
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        pipe.fit(X, y)
    if any(issubclass(w.category, ConvergenceWarning) for w in caught):
        log.warning("logistic regression (C=%g) did not converge in %d iterations",
                    pipe[-1].C, pipe[-1].max_iter)  # fmt: skip
    return pipe


def fit_mortality_model(
    train: Dataset,
    validation: Dataset,
    Cs: Sequence[float] = DEFAULT_CS,
    seed: int = 0,
    max_iter: int = MAX_ITER,
) -> tuple[Pipeline, float]:
    """Fit the benchmark logistic regression, choosing C on the validation split.

    Parameters
    ----------
    train, validation : (X_feat, y)
        ``X_feat`` (n, n_features) float64 with NaN for missing features (e.g. from
        :func:`benchmark_features`); ``y`` (n,) 0/1 in-hospital mortality. Both classes must
        occur in ``train``; where ``validation`` holds one, C is not chosen on it and the
        middle of ``Cs`` (sorted) is used, with a warning.
    Cs : sequence of float
        Candidate inverse L2 strengths. Each gets a pipeline (mean imputation -> standard
        scaling -> ``LogisticRegression(l1_ratio=0 (L2), solver='lbfgs')``) fitted on
        ``train`` only; the C with the highest validation ROC-AUC wins, ties going to the
        smaller C (stronger regularisation).
    seed : int
        The master seed; the estimator's ``random_state`` is derived from it in
        scikit-learn's range by :func:`mimic_deid.core.seeding.library_seed` (lbfgs itself is
        deterministic).
    max_iter : int
        lbfgs iteration cap.

    Returns
    -------
    model : Pipeline
        Fitted on ``train`` with the chosen C; ``model.predict_proba(X)[:, 1]`` is P(death).
    C : float
        The chosen C.
    """
    X_tr, y_tr = _check_xy(*train, what="utility training split")
    X_va, y_va = _check_xy(*validation, what="utility validation split")
    if X_va.shape[1] != X_tr.shape[1]:
        raise InputDataError(
            f"utility: validation has {X_va.shape[1]} features, training has {X_tr.shape[1]}"
        )
    if len(np.unique(y_tr)) < 2:
        raise InputDataError(
            "utility training split: expected both labels 0 and 1, "
            f"got only {np.unique(y_tr).tolist()} in {len(y_tr)} series"
        )
    Cs = _check_cs(Cs)
    if len(np.unique(y_va)) < 2:
        # A small release (the 100-subject demo) can leave one label in the validation split:
        # no C can be chosen on it, so the model takes the middle of the grid.
        C = Cs[(len(Cs) - 1) // 2]
        log.warning(
            "utility validation split holds one label in %d series: C not chosen on it, "
            "the middle of the grid (C=%g) is used",
            len(y_va),
            C,
        )
        return _fit(_pipeline(C, seed, max_iter), X_tr, y_tr), C
    from sklearn.metrics import roc_auc_score

    best: tuple[float, float, Pipeline] | None = None
    for C in Cs:
        pipe = _fit(_pipeline(C, seed, max_iter), X_tr, y_tr)
        auc = float(roc_auc_score(y_va, pipe.predict_proba(X_va)[:, 1]))
        log.info("C=%g: validation ROC-AUC %s", C, fmt_auc(auc))
        if best is None or auc > best[0]:
            best = (auc, C, pipe)
    assert best is not None
    return best[2], best[1]


# --------------------------------------------------------------------------------------------
# metrics with bootstrap intervals


def _weighted_auc_ap(y: np.ndarray, scores: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """ROC-AUC and average precision of many weighted copies of one scored sample.

    Parameters
    ----------
    y : (n,) 0/1 labels; scores : (n,) classifier scores;
    counts : (B, n) non-negative weights, one row per copy (bootstrap multiplicities).

    Returns
    -------
    ndarray (2, B): row 0 ROC-AUC (ties count 1/2, as ``roc_auc_score``), row 1 average
    precision (as ``average_precision_score``, ties grouped into one threshold); NaN for a
    copy without both classes. Equals sklearn with ``sample_weight=counts[b]``.
    """
    order = np.argsort(-scores, kind="stable")  # descending score
    s = scores[order]
    pos = y[order].astype(np.float64)
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])  # tie groups
    c = counts[:, order].astype(np.float64)
    wp = np.add.reduceat(c * pos, starts, axis=1)  # (B, G) positive weight per tie group
    wn = np.add.reduceat(c * (1.0 - pos), starts, axis=1)
    P = wp.sum(axis=1)
    N = wn.sum(axis=1)
    tp = np.cumsum(wp, axis=1)
    fp = np.cumsum(wn, axis=1)
    neg_below = N[:, None] - fp  # negative weight strictly below each group's score
    valid = (P > 0) & (N > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = (wp * (neg_below + 0.5 * wn)).sum(axis=1) / (P * N)
        precision = np.where(tp + fp > 0, tp / (tp + fp), 0.0)
        ap = (wp * precision).sum(axis=1) / P
    return np.stack([np.where(valid, auc, np.nan), np.where(valid, ap, np.nan)])


def _bootstrap(
    y: np.ndarray, scores: np.ndarray, n_bootstrap: int, rng: np.random.Generator
) -> np.ndarray:
    """(2, n_bootstrap) ROC-AUC / AP over resamples drawn with replacement, vectorised."""
    n = len(y)
    out = np.empty((2, n_bootstrap), dtype=np.float64)
    chunk = max(1, _BOOTSTRAP_CHUNK_ELEMENTS // max(n, 1))
    for lo in range(0, n_bootstrap, chunk):
        b = min(chunk, n_bootstrap - lo)
        draws = rng.integers(0, n, size=(b, n))
        flat = (np.arange(b)[:, None] * n + draws).ravel()
        counts = np.bincount(flat, minlength=b * n).reshape(b, n)
        out[:, lo : lo + b] = _weighted_auc_ap(y, scores, counts)
    return out


def evaluate_model(
    model: Pipeline, X: np.ndarray, y: np.ndarray, n_bootstrap: int = 1000, seed: int = 0
) -> dict[str, float | int]:
    """ROC-AUC and PR-AUC of ``model`` on ``(X, y)`` with percentile-bootstrap 95 % intervals.

    Parameters
    ----------
    model : fitted classifier with ``predict_proba``
    X : (n, n_features) float64; y : (n,) 0/1
    n_bootstrap : int
        Resamples of the n series with replacement (0: no interval, bounds NaN). Resamples
        lacking one class are dropped from the percentiles.
    seed : int
        Master seed of the resampling generator (:func:`mimic_deid.core.seeding.derive_rng`;
        same seed, same data -> same intervals).

    Returns
    -------
    dict with ``roc_auc``, ``roc_auc_lo``, ``roc_auc_hi``, ``pr_auc`` (average precision),
    ``pr_auc_lo``, ``pr_auc_hi`` (floats in [0, 1]; lo/hi are the 2.5 / 97.5 percentiles),
    ``n`` (series) and ``positives`` (deaths). All metrics NaN if y has a single class.
    """
    X, y = _check_xy(X, y, what="utility evaluation data")
    if n_bootstrap < 0:
        raise ConfigError(f"utility n_bootstrap: expected >= 0, got {n_bootstrap}")
    out: dict[str, float | int] = dict.fromkeys(METRIC_COLUMNS[:6], math.nan)
    out["n"], out["positives"] = len(y), int(y.sum())
    if len(np.unique(y)) < 2:
        log.warning("evaluation data has a single class; metrics are NaN")
        return out
    from sklearn.metrics import average_precision_score, roc_auc_score

    scores = model.predict_proba(X)[:, 1]
    out["roc_auc"] = float(roc_auc_score(y, scores))
    out["pr_auc"] = float(average_precision_score(y, scores))
    if n_bootstrap > 0:
        boot = _bootstrap(y, scores, n_bootstrap, derive_rng(seed))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=RuntimeWarning)  # all-NaN row
            lo, hi = np.nanpercentile(boot, [2.5, 97.5], axis=1)
        out["roc_auc_lo"], out["roc_auc_hi"] = float(lo[0]), float(hi[0])
        out["pr_auc_lo"], out["pr_auc_hi"] = float(lo[1]), float(hi[1])
    return out


# --------------------------------------------------------------------------------------------
# trust settings


def _as_dataset(value: tuple, where: str) -> Dataset:
    """Accept ``(X_feat, y)`` or ``(X (n, L, D), lengths, y)`` (features computed here)."""
    if len(value) == 2:
        return np.asarray(value[0], dtype=np.float64), np.asarray(value[1])
    if len(value) == 3:
        X, lengths, y = value
        return benchmark_features(X, lengths), np.asarray(y)
    raise InputDataError(f"utility {where}: expected (X_feat, y) or (X, lengths, y)")


_SIDE_NAMES = {
    "orig": "original",
    "all": "original",
    "shipped": "original",
    "gap_filled": "original",
    "deid": "de-identified",
}


def _side_data(splits: Mapping[str, tuple], side: str) -> dict[str, Dataset]:
    """The splits of one side that hold series; a split absent or empty (a release that could
    not publish it, :func:`mimic_deid.deid.duration.unpublished_groups`) is left out, and the
    rows that need it are not computable (:func:`_not_computable`)."""
    out = {}
    for s in ("train", "validation", "test"):
        if s in splits:
            data = _as_dataset(splits[s], f"{side} {s}")
            if len(data[1]):
                out[s] = data
    return out


def _not_computable(side: str, split: str, n: int = 0, labels: Sequence = ()) -> str:
    name = _SIDE_NAMES.get(side, side)
    if not n:
        return f"not computable: the {name} data hold no series of split '{split}'"
    return (
        f"not computable: the {name} {split} split holds one label ({labels[0]}) in {n} "
        "series; a model needs both"
    )


#: A fitted model of one training side: (pipeline, chosen C, validation ROC-AUC at that C),
#: or (None, NaN, NaN, reason) where no model can be fitted.
_Fitted = tuple


def _fit_side(splits: Mapping[str, Dataset], Cs: Sequence[float], seed: int, side: str) -> _Fitted:
    from sklearn.metrics import roc_auc_score

    key = side.split()[-1]
    for needed in ("train", "validation"):
        if needed not in splits:
            reason = _not_computable(key, needed)
            log.warning("%s: %s", side, reason)
            return None, math.nan, math.nan, reason
    y_tr = splits["train"][1]
    if len(np.unique(y_tr)) < 2:
        reason = _not_computable(key, "training", len(y_tr), np.unique(y_tr).tolist())
        log.warning("%s: %s", side, reason)
        return None, math.nan, math.nan, reason
    model, C = fit_mortality_model(splits["train"], splits["validation"], Cs, seed)
    X_va, y_va = splits["validation"]
    val_auc = (
        float(roc_auc_score(y_va, model.predict_proba(X_va)[:, 1]))
        if len(np.unique(y_va)) == 2
        else float("nan")
    )
    log.info("%s training data: chose C=%g (validation ROC-AUC %s)", side, C, fmt_auc(val_auc))
    return model, C, val_auc, ""


def _setting_rows(
    settings: Sequence[tuple[str, str, str]],
    models: Mapping[str, _Fitted],
    data: Mapping[str, Mapping[str, Dataset]],
    seed: int,
    n_bootstrap: int,
) -> list[dict]:
    """One row per (setting, split ``train``/``test``): ``models[train side]`` scored on the
    ``data`` of the test side (see :func:`trust_settings` for why)."""
    rows = []
    for label, train_side, test_side in settings:
        model, C, val_auc, reason = models[train_side]
        for split in ("train", "test"):
            if not reason and split not in data[test_side]:
                why = _not_computable(test_side, split)
            else:
                why = reason
            if why:
                metrics = dict.fromkeys(METRIC_COLUMNS[:6], math.nan)
                metrics["n"] = len(data[test_side][split][1]) if split in data[test_side] else 0
                metrics["positives"] = (
                    int(data[test_side][split][1].sum()) if split in data[test_side] else 0
                )
            else:
                X, y = data[test_side][split]
                metrics = evaluate_model(model, X, y, n_bootstrap=n_bootstrap, seed=seed)
            rows.append(
                {
                    "setting": label,
                    "train_data": train_side,
                    "test_data": test_side,
                    "split": split,
                    "C": C,
                    "validation_roc_auc": val_auc,
                    **metrics,
                    "not_computable": why,
                }
            )
    return rows


def _frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows).astype({"n": "int64", "positives": "int64"})


def trust_settings(
    original: Mapping[str, tuple],
    deidentified: Mapping[str, tuple],
    Cs: Sequence[float] = DEFAULT_CS,
    seed: int = 0,
    n_bootstrap: int = 1000,
) -> pd.DataFrame:
    """In-hospital-mortality model performance under the four trust settings (seed 5.7).

    One model is fitted per training side (original, de-identified) with
    :func:`fit_mortality_model` and evaluated on both sides.

    Decisions:

    - **Validation side = training side.** C is chosen on the validation split from the same
      side as the training data: the model builder tunes on data like the data it trains on
      and never sees the test party's data before testing (in the de-id./orig. setting the
      builder only holds de-identified data, seed 5.7's "stolen" validation set).
    - **Evaluated data = test side.** The ``train`` row of a setting scores the model on the
      training split *as the test party holds it* (e.g. de-id. / orig. scores the
      de-identified-trained model on the original training split). This is how seed Table 6.3
      reads: its de-id. / orig. training ROC-AUC (0.64) equals the test one, far below the
      de-id. / de-id. training value, which a model scored on its own training data could not
      show. The ``test`` row scores the test split of the test side.
    - Bootstrap resampling uses ``seed`` for every row, so rows on the same data are paired.

    Parameters
    ----------
    original, deidentified : mapping split -> (X_feat, y) or (X, lengths, y)
        Splits ``train``, ``validation`` and ``test``; ``X_feat`` (n, n_features) with the
        same features on both sides (e.g. :func:`benchmark_features`), or hourly arrays
        ``X`` (n, L, D) + ``lengths`` (n,) from which they are computed; ``y`` 0/1 labels.
        De-identified splits may hold fewer series (suppressed ones are absent).
    Cs : candidate C values; seed : int; n_bootstrap : int
        See :func:`fit_mortality_model` and :func:`evaluate_model`.

    Returns
    -------
    DataFrame, 8 rows (``SETTINGS`` order x split ``train``, ``test``), columns:
    ``setting`` (label as in the seed tables), ``train_data``, ``test_data`` (``orig``/``deid``),
    ``split``, ``C`` (chosen), ``validation_roc_auc`` (at the chosen C), then
    ``METRIC_COLUMNS``, then ``not_computable``: empty, or why the row's metrics are NaN
    (``not computable: ...``: a split the release does not publish, a training split of one
    label); n and positives then count the evaluated split as held (0 when absent).
    """
    data = {"orig": _side_data(original, "orig"), "deid": _side_data(deidentified, "deid")}
    widths = {d[0].shape[1] for splits in data.values() for d in splits.values()}
    widths = widths or {0}
    if len(widths) != 1:
        raise InputDataError(f"utility: feature counts differ between splits/sides: {widths}")
    models = {side: _fit_side(data[side], Cs, seed, side) for side in ("orig", "deid")}
    return _frame(_setting_rows(SETTINGS, models, data, seed, n_bootstrap))


def utility_table(
    series: pd.DataFrame,
    meta: pd.DataFrame,
    release_series: pd.DataFrame,
    release_index: pd.DataFrame,
    Cs: Sequence[float] = DEFAULT_CS,
    n_bootstrap: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """The data owner's baseline and :func:`trust_settings` of an ``ihm48`` release, shipped
    and like-for-like (:data:`VARIABLES`, :data:`CROSS`).

    Parameters
    ----------
    series, meta : DataFrame
        The original ``ihm48`` series (icustay_id, hour, one column per series variable) and
        their meta table (icustay_id, length, split and each task's label column,
        :data:`TASKS`).
    release_series, release_index : DataFrame
        The release (pseudonym, hour, the published variables) and its index (pseudonym,
        duration_class, split, each task's label column).
    Cs, n_bootstrap, seed
        As :func:`trust_settings`.

    Returns
    -------
    DataFrame (``trust_settings.csv``), per task of :data:`TASKS`: 2 rows of the data owner's
    baseline (``variables`` ``all``, ``cross`` ``shipped``, ``setting`` ``orig. / orig.``,
    split ``train``/``test``), then the 8 rows of :func:`trust_settings` on the released
    variables with the original side as recorded (``cross`` ``shipped``), then the same 8
    with the original side gap-filled (``cross`` ``gap_filled``; its de-id. / de-id. rows
    equal the shipped ones). Columns :data:`KEY_COLUMNS`, ``C``, ``validation_roc_auc``,
    then ``METRIC_COLUMNS``, then ``not_computable`` (as :func:`trust_settings`): a release
    without one of its splits, or an original side too small for a model, gives rows of NaN
    metrics with the reason instead of stopping the run.
    """
    released = [c for c in release_series.columns if c not in ("pseudonym", "hour")]
    every = [c for c in series.columns if c not in ("icustay_id", "hour")]
    if missing := sorted(set(released) - set(every)):
        raise InputDataError(
            f"utility: released variable(s) {missing} are not columns of the original series; "
            f"expected a subset of {every}"
        )
    frames = []
    for task, (meta_col, index_col) in TASKS.items():

        def original(dims: list[str], fill=None, label: str = meta_col) -> dict:
            return datasets_from_long(
                series, meta, "icustay_id", dims, label, length_col="length", fill=fill
            )

        data = {
            "all": original(every),
            "shipped": original(released),
            "gap_filled": original(released, fill=fill_missing_hours),
            "deid": datasets_from_long(
                release_series,
                release_index,
                "pseudonym",
                released,
                label_col=index_col,
                length_col="duration_class",
            ),
        }
        data = {side: _side_data(splits, side) for side, splits in data.items()}
        models = {side: _fit_side(d, Cs, seed, f"{task} {side}") for side, d in data.items()}
        parts = [("all", "shipped", SETTINGS[:1], "all")]
        parts += [("released", cross, SETTINGS, cross) for cross in CROSS]
        for variables, cross, settings, orig_side in parts:
            rows = _setting_rows(
                settings,
                {"orig": models[orig_side], "deid": models["deid"]},
                {"orig": data[orig_side], "deid": data["deid"]},
                seed,
                n_bootstrap,
            )
            keys = {"task": task, "variables": variables, "cross": cross}
            frames.append(_frame([{**keys, **row} for row in rows]))
    table = pd.concat(frames, ignore_index=True)
    for row in table.itertuples():
        log.info("%s, %s variables, %s: %s on %s: ROC-AUC %s", row.task, row.variables,
                 row.cross, row.setting, row.split, fmt_auc(row.roc_auc))  # fmt: skip
    return table


# --------------------------------------------------------------------------------------------
# tables
