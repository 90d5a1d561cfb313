"""The utility model and its metrics: the benchmark logistic-regression baseline (mean
imputation, standard scaling, L2 logistic regression with C chosen by ROC-AUC on the
validation split; seed 5.7) and ROC-AUC / PR-AUC with percentile-bootstrap 95 % intervals.
The trust settings that use them are :mod:`mimic_deid.evaluate.utility`."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from mimic_deid.core.arrays import distinct_rows
from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.core.logs import get_logger
from mimic_deid.core.numbers import auc as fmt_auc
from mimic_deid.core.seeding import derive_rng, library_seed

if TYPE_CHECKING:  # scikit-learn is imported where a model is fitted or scored: importing
    # this module (as the workflow does when it starts) stays light
    from sklearn.pipeline import Pipeline

__all__ = [
    "DEFAULT_CS",
    "MAX_ITER",
    "METRIC_COLUMNS",
    "SCORE_COLUMNS",
    "Dataset",
    "evaluate_model",
    "fit_mortality_model",
    "roc_auc_ceiling",
]

log = get_logger(__name__)

DEFAULT_CS: tuple[float, ...] = (1e-3, 1e-2, 1e-1, 1.0, 10.0)
"""Inverse regularisation strengths tried by default, as config ``evaluate.utility.C`` (the
benchmark's own default is 1e-3)."""

MAX_ITER = 10_000

METRIC_COLUMNS: tuple[str, ...] = (
    "roc_auc",
    "roc_auc_lo",
    "roc_auc_hi",
    "pr_auc",
    "pr_auc_lo",
    "pr_auc_hi",
    "roc_auc_ceiling",
    "n",
    "positives",
)
"""The figures of an evaluation (:func:`evaluate_model`), in the order of ``trust_settings.csv``."""

SCORE_COLUMNS: tuple[str, ...] = METRIC_COLUMNS[:7]
"""The figures that need both labels (NaN where the evaluated data hold one): every figure but
``n`` and ``positives``."""


Dataset = tuple[np.ndarray, np.ndarray]

_BOOTSTRAP_CHUNK_ELEMENTS = 2_000_000  # resamples x series per vectorised block (~16 MB each)


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


def roc_auc_ceiling(X: np.ndarray, y: np.ndarray) -> float:
    """The highest ROC-AUC that any score computed from the features can reach on ``(X, y)``.

    A model gives series with the same feature vector one score, so what it can tell apart is
    bounded by the groups of identical feature vectors. Here every series is scored by the
    share of label 1 in its group, as an oracle holding the labels would; ordering the groups by
    that share maximises the ROC-AUC over every score constant on the groups (swapping two
    adjacent groups ``i``, ``j`` changes the count of correctly ordered pairs by
    ``P_i N_j - P_j N_i``), and the series of one group tie (1/2 a pair). It is 1 where no two
    series of different labels share a feature vector, and falls where a release publishes
    identical series with both labels: a microaggregation release, whose clusters hold
    ``ell`` labels each (docs/mdav.md), caps every model tested on it at this figure.

    Parameters
    ----------
    X : ndarray of float64, shape (n, n_features)
        NaN = missing feature; two vectors are the same when equal bit for bit, NaN in the
        same places (:func:`mimic_deid.core.arrays.distinct_rows`).
    y : ndarray of 0/1, shape (n,)

    Returns
    -------
    float
        In [0.5, 1]; NaN when ``y`` holds one label.
    """
    X, y = _check_xy(X, y, what="utility evaluation data")
    if len(np.unique(y)) < 2:
        return math.nan
    _, inverse, counts = distinct_rows(X)
    share = np.bincount(inverse, weights=y.astype(np.float64)) / counts
    ones = np.ones((1, len(y)), dtype=np.int64)
    return float(_weighted_auc_ap(y, share[inverse], ones)[0, 0])


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
    ``roc_auc_ceiling`` (the best ROC-AUC any model of the features can reach on the data,
    :func:`roc_auc_ceiling`), ``n`` (series) and ``positives`` (deaths). All metrics NaN if y
    has a single class.
    """
    X, y = _check_xy(X, y, what="utility evaluation data")
    if n_bootstrap < 0:
        raise ConfigError(f"utility n_bootstrap: expected >= 0, got {n_bootstrap}")
    out: dict[str, float | int] = dict.fromkeys(SCORE_COLUMNS, math.nan)
    out["n"], out["positives"] = len(y), int(y.sum())
    if len(np.unique(y)) < 2:
        log.warning("evaluation data has a single class; metrics are NaN")
        return out
    out["roc_auc_ceiling"] = roc_auc_ceiling(X, y)
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
