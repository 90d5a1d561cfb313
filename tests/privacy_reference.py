"""Whole-class reference implementations of the privacy evaluation, for tests and benchmarks.

The library evaluates a class a block of targets at a time
(:func:`mimic_deid.evaluate.privacy.evaluate_class` over the evaluators of
:mod:`mimic_deid.evaluate.evaluators`). These are the same measures computed on the whole
class at once, every distance matrix recomputed, as the algorithms were first written: the
tests check that the blocked library equals them bit for bit
(``tests/evaluate/test_privacy_blocks.py``), and ``benchmarks/bench_privacy_blocks.py`` and
``benchmarks/bench_disagreement.py`` time them as the code before blocking.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError
from mimic_deid.evaluate.disagreement import (
    DisagreementResult,
    check_class,
    class_std,
    disagreement_from_distances,
    summarise_curve_matrix,
)
from mimic_deid.evaluate.distances import feature_distances, safe_scale, series_distances
from mimic_deid.evaluate.linkage import finish_score, linkage_header, score_rows


def disagreement(
    F_orig: np.ndarray,
    F_rel: np.ndarray,
    X_orig: np.ndarray,
    X_rel: np.ndarray,
    standardise: bool = False,
) -> DisagreementResult:
    """Disagreement curves of one duration class (seed Algorithm 2; conventions in the module docstring).

    Parameters
    ----------
    F_orig : ndarray, shape (n, m)
        Original features (the attacker's knowledge), NaN = null.
    F_rel : ndarray, shape (n, m)
        Features of the released series, row ``j`` = released series ``j``.
    X_orig : ndarray, shape (n, L, D)
        Original series, NaN = null.
    X_rel : ndarray, shape (n, L, D)
        Released series (baseline: ``X_orig``).
    standardise : bool
        Divide every feature, and every series dimension, by its class-wide std over the
        ORIGINAL non-null values (entries with std 0 or undefined are left unscaled) before
        computing distances; distances are then in std units.

    Returns
    -------
    DisagreementResult
    """
    F_o, F_r, X_o, X_r = check_class(F_orig, F_rel, X_orig, X_rel)
    scale = None
    if standardise:
        scale = class_std(F_o, axis=0)
        dim_scale = safe_scale(class_std(X_o, axis=(0, 1)), X_o.shape[2])
        X_o, X_r = X_o / dim_scale, X_r / dim_scale
    DF = feature_distances(F_o, F_r, scale)
    DS = series_distances(X_o, X_r)
    return disagreement_from_distances(DF, DS)


def linkage_attack(
    F_orig: np.ndarray,
    F_rel: np.ndarray,
    X_orig: np.ndarray,
    X_rel: np.ndarray,
    errors: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2),
    rng: np.random.Generator | int = 0,
    standardise: bool = True,
    top: tuple[int, ...] = (1, 5),
) -> dict[str, Any]:
    """Re-identification rates and reconstruction error of a nearest-feature linkage attack.

    Parameters
    ----------
    F_orig : ndarray, shape (n, m)
        Original features of the class (the attacker's knowledge before the error), NaN = null.
    F_rel : ndarray, shape (n, m)
        Released features; row ``i`` belongs to the same person as ``F_orig[i]``.
    X_orig, X_rel : ndarray, shape (n, L, D)
        Original and released series (NaN = null). Baseline: ``X_rel = X_orig``,
        ``F_rel = F_orig``.
    errors : tuple of float
        Relative estimation errors ``e`` (0.1 = 10 %).
    rng : numpy Generator or int seed
        Source of the estimation noise.
    standardise : bool
        Divide features by their class-wide std over the original values (0 / undefined std:
        unscaled) before matching.
    top : tuple of int
        Ranks ``k`` at which success is reported.

    Returns
    -------
    dict
        ``n`` (class size), ``standardise``, ``top``, ``tie_rule``, ``reconstruction_unit`` and
        ``by_error``: one dict per ``e`` (in the given order) with ``error``, ``n_targets``,
        ``unreachable`` (targets whose own release shares no feature with the knowledge),
        for each ``k``: ``top{k}`` (rate in [0, 1]) and ``top{k}_hits`` (expected number of
        successes, to aggregate over classes), and ``reconstruction_error`` (mean per-value
        RMS, see module doc), ``reconstruction_sum`` and ``reconstruction_n`` (targets with a
        defined error).
    """
    F_o, F_r, X_o, X_r = check_class(F_orig, F_rel, X_orig, X_rel)
    top = tuple(int(k) for k in top)
    if any(k < 1 for k in top):
        raise ConfigError(f"top: ranks must be >= 1, got {top}")
    if any(not np.isfinite(e) or e < 0 for e in errors):
        raise ConfigError(f"errors: relative errors must be finite and >= 0, got {errors}")
    gen = np.random.default_rng(rng)
    n = F_o.shape[0]
    scale = class_std(F_o, axis=0) if standardise else None
    z = gen.standard_normal(F_o.shape)

    d_s, counts = series_distances(X_o, X_r, return_counts=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        rms = d_s / np.sqrt(counts)  # NaN where nothing compared

    by_error = []
    for e in errors:
        known = F_o * (1.0 + float(e) * z)
        d_f = feature_distances(known, F_r, scale)
        by_error.append(finish_score([score_rows(d_f, rms, np.arange(n), top)], float(e), top))
    return {**linkage_header(n, standardise, top), "by_error": by_error}


def summarise_curves(
    result: DisagreementResult,
    quantiles: tuple[float, ...] = (0.1, 0.25, 0.5, 0.75, 0.9),
) -> pd.DataFrame:
    """Summary disagreement curves of one class (seed §5.6, Fig. 5.4 / 6.4 / 6.5).

    At each inclusion fraction ``c / n`` the statistics are taken over the series whose curve
    is defined there (NaN values skipped). ``normalised`` uses each series' curve divided by
    its value at its largest inclusion count (100 % when every ``d_F(x, .)`` is defined; a
    final value of 0 or NaN makes that series' normalised curve NaN).

    Returns
    -------
    DataFrame
        Columns ``inclusion`` (float64, fraction in (0, 1]), ``stat`` (``min``, ``mean``,
        ``max``, ``qXX``), ``value`` (series units), ``normalised`` (ratio); ``n * n_stats``
        rows, inclusion-major, stats in that order.
    """
    return summarise_curve_matrix(result.curves, result.n_reachable, quantiles)
