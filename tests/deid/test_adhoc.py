"""Ad-hoc constraint optimiser (seed §5.5) and the shared optimiser metrics."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.deid.adhoc import optimise_adhoc
from mimic_deid.deid.features import compute_features, feature_spec
from mimic_deid.deid.optimise import (
    OptimiseResult,
    dimension_unfeasibility,
    distortion,
    unfeasibility,
)

DIMS = ["diastolic_blood_pressure", "glucose", "heart_rate", "height", "ph", "weight"]
FEATURES = {
    "heart_rate": ["mean", "var", "min", "max"],
    "diastolic_blood_pressure": ["mean", "var", "min", "max"],
    "glucose": ["mean", "var", "min", "max"],
    "height": ["mean"],
    "weight": ["mean"],
}
# level, between sd, innovation sd, fraction observed (ph is not a feature dimension)
PHYS = {
    "diastolic_blood_pressure": (62, 10, 4, 0.9),
    "glucose": (135, 35, 15, 0.3),
    "heart_rate": (85, 15, 4, 0.95),
    "ph": (7.38, 0.06, 0.02, 0.5),
}


def make_class(rng: np.random.Generator, n: int, L: int) -> np.ndarray:
    """(n, L, 6) AR(1) physiology with nulls; height/weight static and sparse."""
    X = np.full((n, L, len(DIMS)), np.nan)
    for name, (level, between, within, observed) in PHYS.items():
        d = DIMS.index(name)
        base = level + between * rng.standard_normal(n)
        dev = np.zeros(n)
        for t in range(L):
            dev = 0.8 * dev + within * rng.standard_normal(n)
            X[:, t, d] = np.where(rng.random(n) < observed, base + dev, np.nan)
    for name, level, sd in (("height", 170, 10), ("weight", 80, 18)):
        d = DIMS.index(name)
        X[:, :, d] = np.where(
            rng.random((n, L)) < 0.1, level + sd * rng.standard_normal((n, 1)), np.nan
        )
    return X


def group_targets(F: np.ndarray, k: int) -> np.ndarray:
    """Stand-in for Mondrian: class means of groups of k sorted on the first feature."""
    order = np.argsort(np.nan_to_num(F[:, 0], nan=np.inf), kind="stable")
    labels = np.empty(len(F), dtype=int)
    labels[order] = np.arange(len(F)) // k
    T = np.full_like(F, np.nan)
    for c in np.unique(labels):
        rows = labels == c
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            means = np.nanmean(F[rows], axis=0)
        T[rows] = np.where(np.isnan(F[rows]), np.nan, means)
    return T


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(7)
    spec = feature_spec(FEATURES, DIMS)
    X = make_class(rng, 120, 24)
    X[0, :, DIMS.index("glucose")] = np.nan  # an all-null feature dimension
    X[1, :, DIMS.index("heart_rate")] = 80.0  # a constant series (zero variance)
    X[2, 1:, DIMS.index("glucose")] = np.nan  # a single record
    F = compute_features(X, spec)
    return X, group_targets(F, 5), spec


def test_adhoc_meets_mean_and_variance(problem):
    X, T, spec = problem
    res = optimise_adhoc(X, T, spec, iterations=50, noise_sd=0.01, rng=np.random.default_rng(0))
    assert isinstance(res, OptimiseResult)
    F = compute_features(res.X, spec)
    for j, (d, stat) in enumerate(zip(spec.dims, spec.stats, strict=True)):
        cnt = (~np.isnan(X[:, :, d])).sum(axis=1)
        rows = ~np.isnan(T[:, j]) & (cnt >= 2)
        if stat in ("mean", "var"):
            np.testing.assert_allclose(F[rows, j], T[rows, j], rtol=1e-9, atol=1e-9)
        if stat in ("min", "max"):  # approximately: within a few % of the class spread
            spread = np.nanstd(T[:, j])
            assert np.nanmedian(np.abs(F[rows, j] - T[rows, j])) < 0.05 * spread
    # mean-only dimensions (height, weight) meet their mean even with one record
    for j in np.flatnonzero(np.isin(spec.dims, [DIMS.index("height"), DIMS.index("weight")])):
        rows = ~np.isnan(T[:, j])
        np.testing.assert_allclose(F[rows, j], T[rows, j], rtol=1e-9)
    # the unfeasibility collapses compared with the unperturbed series
    assert res.unfeasibility.mean() < 0.05 * unfeasibility(compute_features(X, spec), T).mean()


def test_adhoc_touches_only_feature_records(problem):
    X, T, spec = problem
    res = optimise_adhoc(X, T, spec, iterations=5, noise_sd=0.01, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(np.isnan(res.X), np.isnan(X))
    ph = DIMS.index("ph")
    assert np.array_equal(res.X[:, :, ph], X[:, :, ph], equal_nan=True)  # bit-identical
    assert res.X[:, :, ph].tobytes() == X[:, :, ph].tobytes()
    # a series whose targets are all null is unchanged
    T2 = T.copy()
    T2[3] = np.nan
    res2 = optimise_adhoc(X, T2, spec, iterations=5, noise_sd=0.01, rng=np.random.default_rng(0))
    assert res2.X[3].tobytes() == X[3].tobytes()
    assert res2.unfeasibility[3] == 0 and res2.distortion[3] == 0


def test_adhoc_metrics_and_determinism(problem):
    X, T, spec = problem
    a = optimise_adhoc(X, T, spec, iterations=10, noise_sd=0.01, rng=np.random.default_rng(3))
    b = optimise_adhoc(X, T, spec, iterations=10, noise_sd=0.01, rng=np.random.default_rng(3))
    assert a.X.tobytes() == b.X.tobytes()
    np.testing.assert_array_equal(a.iterations, 10)
    L = X.shape[1]
    np.testing.assert_allclose(a.distortion, np.nansum(np.abs(a.X - X), axis=(1, 2)) / L)
    F = compute_features(a.X, spec)
    np.testing.assert_allclose(a.unfeasibility, np.nansum(np.abs(F - T), axis=1))
    per_dim = dimension_unfeasibility(F, T, spec)
    assert per_dim.shape == (len(X), len(spec.feature_dims))
    np.testing.assert_allclose(np.nansum(per_dim, axis=1), a.unfeasibility)
    # all-null glucose of series 0: no glucose target -> NaN in the per-dimension table
    assert np.isnan(per_dim[0, list(spec.feature_dims).index(DIMS.index("glucose"))])


def test_metric_functions_by_hand():
    X0 = np.array([[[1.0, np.nan], [3.0, 5.0]]])  # n=1, L=2, D=2
    X1 = np.array([[[2.0, np.nan], [1.0, 6.0]]])
    np.testing.assert_allclose(distortion(X0, X1), [(1 + 2 + 1) / 2])
    F = np.array([[1.0, 2.0, np.nan]])
    T = np.array([[1.5, np.nan, 3.0]])
    np.testing.assert_allclose(unfeasibility(F, T), [0.5])


def test_adhoc_bad_input(problem):
    X, T, spec = problem
    with pytest.raises(ConfigError) as info:
        optimise_adhoc(X, T, spec, iterations=0, noise_sd=0.01, rng=np.random.default_rng(0))
    assert str(info.value) == "ad-hoc 'iterations' must be >= 1, got 0"
    with pytest.raises(ConfigError) as info:
        optimise_adhoc(X, T, spec, iterations=1, noise_sd=-1.0, rng=np.random.default_rng(0))
    assert str(info.value) == "ad-hoc 'noise_sd' must be a finite number >= 0, got -1.0"
    with pytest.raises(InputDataError) as info:
        optimise_adhoc(X, T[:, :3], spec, iterations=1, noise_sd=0.0, rng=None)
    assert str(info.value) == (
        "targets must have shape (n_series, n_features) = (120, 14), got (120, 3)"
    )
