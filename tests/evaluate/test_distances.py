"""Masked distance matrices against straightforward loops."""

from __future__ import annotations

import numpy as np
import pytest

from mimic_deid.evaluate.distances import (
    feature_distances,
    series_distances,
)


def loop_distance(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    """Reference: Euclidean distance over entries non-null in both, and their count."""
    a, b = a.reshape(-1), b.reshape(-1)
    both = ~np.isnan(a) & ~np.isnan(b)
    if not both.any():
        return float("nan"), 0
    return float(np.sqrt(np.sum((a[both] - b[both]) ** 2))), int(both.sum())


def loop_matrix(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    out = np.empty((A.shape[0], B.shape[0]))
    cnt = np.empty((A.shape[0], B.shape[0]), dtype=np.int64)
    for i in range(A.shape[0]):
        for j in range(B.shape[0]):
            out[i, j], cnt[i, j] = loop_distance(A[i], B[j])
    return out, cnt


def random_series(rng, n, L, D, null_frac=0.4, offset=0.0):
    X = offset + rng.normal(0, 10, size=(n, L, D))
    X[rng.random(X.shape) < null_frac] = np.nan
    X[0, :, 1] = np.nan  # an all-null dimension
    return X


def test_feature_distances_match_loop_with_nulls_and_scale():
    rng = np.random.default_rng(1)
    A = rng.normal(50, 20, size=(23, 7))
    B = rng.normal(50, 20, size=(17, 7))
    A[rng.random(A.shape) < 0.3] = np.nan
    B[rng.random(B.shape) < 0.3] = np.nan
    A[3] = np.nan  # no feature at all
    B[5] = A[4]  # identical rows
    ref, _ = loop_matrix(A, B)
    got = feature_distances(A, B, block_elements=50)  # several blocks
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    assert np.isnan(got[3]).all()
    assert got[4, 5] == 0.0

    scale = np.array([1.0, 2.0, 0.0, np.nan, 5.0, 0.5, 3.0])
    s = np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)
    ref_s, _ = loop_matrix(A / s, B / s)
    np.testing.assert_allclose(feature_distances(A, B, scale), ref_s, rtol=1e-12, atol=1e-12)


def test_feature_distances_equal_pairs_compare_equal():
    rng = np.random.default_rng(2)
    F = rng.normal(1e4, 3.0, size=(30, 22))
    F[10] = F[3]
    F[11] = F[3]
    D = feature_distances(F, F)
    assert np.all(np.diag(D) == 0.0)
    np.testing.assert_array_equal(D[:, 10], D[:, 3])
    np.testing.assert_array_equal(D[:, 11], D[:, 3])
    np.testing.assert_array_equal(D, D.T)


@pytest.mark.parametrize("offset", [0.0, 1e5])
def test_series_distances_match_loop(offset):
    rng = np.random.default_rng(3)
    Xa = random_series(rng, 19, 11, 4, offset=offset)
    Xb = random_series(rng, 13, 11, 4, offset=offset)
    Xb[2] = Xa[5]  # identical series: distance exactly 0
    Xb[3] = Xa[6] + 1e-6  # nearly identical: needs the exact recomputation
    Xa[7] = np.nan  # nothing in common with anyone
    ref, ref_cnt = loop_matrix(Xa, Xb)
    got, cnt = series_distances(Xa, Xb, return_counts=True, block_elements=200)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(cnt, ref_cnt)
    assert got[5, 2] == 0.0
    assert np.isnan(got[7]).all()


def test_series_self_distance_exactly_zero_and_symmetric():
    rng = np.random.default_rng(4)
    X = random_series(rng, 40, 30, 5, offset=120.0)
    X[9] = X[8]
    D = series_distances(X, X)
    assert np.all(np.diag(D) == 0.0)
    assert D[8, 9] == 0.0
    ref, _ = loop_matrix(X, X)
    np.testing.assert_allclose(D, ref, rtol=1e-9, atol=1e-9)


def test_series_distances_blocking_invariant():
    rng = np.random.default_rng(5)
    Xa = random_series(rng, 25, 8, 3)
    Xb = random_series(rng, 21, 8, 3)
    whole = series_distances(Xa, Xb)
    blocked = series_distances(Xa, Xb, block_elements=30)
    np.testing.assert_allclose(blocked, whole, rtol=1e-12, atol=1e-12)


def test_shapes_are_checked():
    with pytest.raises(ValueError) as info:
        feature_distances(np.zeros((2, 3)), np.zeros((2, 4)))
    assert str(info.value) == "feature counts differ: F_a has 3, F_b has 4"
    with pytest.raises(ValueError) as info:
        series_distances(np.zeros((2, 3, 4)), np.zeros((2, 5, 4)))
    assert str(info.value) == (
        "series shapes must be (n, L, D) with equal L and D, got (2, 3, 4) and (2, 5, 4)"
    )


def test_nearest_feature_distances_are_the_exact_ones_where_they_decide():
    from mimic_deid.evaluate.distances import feature_distances, nearest_feature_distances

    rng = np.random.default_rng(5)
    F_b = rng.normal(0, 1, (40, 7))
    F_b[rng.random(F_b.shape) < 0.2] = np.nan
    F_b[10:14] = F_b[3]  # identical candidates: tied at once
    F_a = np.vstack([F_b[[3, 20]] + 1e-12, rng.normal(0, 1, (30, 7))])
    F_a[rng.random(F_a.shape) < 0.2] = np.nan
    F_a[5] = np.nan  # nothing in common with anyone
    scale = np.nanstd(np.vstack([F_a, F_b]), axis=0)
    tie = 1e-9
    whole = feature_distances(F_a, F_b, scale)
    near = nearest_feature_distances(F_a, F_b, scale, tie=tie)
    full = np.where(np.isnan(whole), np.inf, whole)
    best = full.min(axis=1, keepdims=True)
    decide = full <= best + tie
    decide[5] = False
    # every pair within the tie of its row's minimum: the same bits as the whole matrix
    assert np.array_equal(near[decide], whole[decide])
    assert decide[0, [3, 10, 11, 12, 13]].all()
    # a pair left out is farther than that; the row with nothing in common stays NaN
    rows = np.arange(len(F_a)) != 5
    near_inf = np.where(np.isnan(near), np.inf, near)[rows]
    assert (
        near_inf[~decide[rows]] > np.broadcast_to(best + tie, near.shape)[rows][~decide[rows]]
    ).all()
    assert np.isnan(near[5]).all()
