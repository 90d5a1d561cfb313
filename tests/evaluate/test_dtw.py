"""DTW series distance (seed §4.3's alternative to the Euclidean one) and its use by the
privacy evaluation (config ``evaluate/series_distance: dtw``)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from test_privacy_blocks import DIMS, FEATURES, ROOT, make_class

from mimic_deid.config import validate_config
from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.deid.classes import ClassArray
from mimic_deid.deid.features import compute_features, feature_spec
from mimic_deid.evaluate.curves import _class_distances
from mimic_deid.evaluate.disagreement import class_std, disagreement_from_distances
from mimic_deid.evaluate.distances import dtw_distances, feature_distances, series_distances
from mimic_deid.evaluate.privacy import DTW_WINDOW, evaluate_class


def class_curves(
    orig, rel, spec, standardise=False, series_distance="euclidean", dtw_window=DTW_WINDOW
):
    """Every disagreement curve of one class, whole class at once (the quantities the
    blocked evaluation summarises), and the class's original and released features."""
    DF, DS, F_o, F_r = _class_distances(orig, rel, spec, standardise, series_distance, dtw_window)
    return disagreement_from_distances(DF, DS), F_o, F_r


def ref_dtw_1d(a: np.ndarray, b: np.ndarray, window: int | None) -> float:
    """Squared DTW by the textbook recurrence, band as documented in ``distances``."""
    r, c = len(a), len(b)
    D = np.full((r + 1, c + 1), np.inf)
    D[0, 0] = 0.0
    for i in range(r):
        for j in range(c):
            if window is not None and not (
                i - max(0, r - c) - window <= j <= i + max(0, c - r) + window
            ):
                continue
            D[i + 1, j + 1] = (a[i] - b[j]) ** 2 + min(D[i, j], D[i, j + 1], D[i + 1, j])
    return float(D[r, c])


def ref_dtw(A: np.ndarray, B: np.ndarray, window: int | None) -> np.ndarray:
    """Reference matrix: per dimension, compact each series to its non-null records, sum the
    squared DTW over dimensions non-null in both, square root; NaN with none in common."""
    out = np.full((A.shape[0], B.shape[0]), np.nan)
    for i in range(A.shape[0]):
        for j in range(B.shape[0]):
            total, any_dim = 0.0, False
            for k in range(A.shape[2]):
                a, b = A[i, :, k], B[j, :, k]
                a, b = a[~np.isnan(a)], b[~np.isnan(b)]
                if a.size and b.size:
                    total += ref_dtw_1d(a, b, window)
                    any_dim = True
            if any_dim:
                out[i, j] = np.sqrt(total)
    return out


def random_series(rng, n, L, D, null_frac=0.4):
    X = np.cumsum(rng.normal(0, 3, size=(n, L, D)), axis=1) + 50.0
    X[rng.random(X.shape) < null_frac] = np.nan
    X[0, :, 1] = np.nan  # an all-null dimension
    X[1] = np.nan  # an all-null series
    return X


@pytest.mark.parametrize("window", [None, 0, 1, 3])
def test_dtw_matches_the_textbook_recurrence_with_nulls(window) -> None:
    rng = np.random.default_rng(3)
    A, B = random_series(rng, 7, 9, 3), random_series(rng, 6, 9, 3)
    np.testing.assert_allclose(dtw_distances(A, B, window=window), ref_dtw(A, B, window), 1e-12)


def test_series_compared_with_itself_is_exactly_zero_and_null_pairs_are_nan() -> None:
    X = random_series(np.random.default_rng(4), 12, 20, 4)
    for window in (None, 0, 5):
        D = dtw_distances(X, X, window=window)
        assert np.all(np.diag(D)[[0, *range(2, 12)]] == 0.0)
        # the all-null series shares no dimension with anything: undefined, not 0
        assert np.isnan(D[1]).all() and np.isnan(D[:, 1]).all()
        assert not np.isnan(np.delete(np.delete(D, 1, 0), 1, 1)).any()


def test_a_dimension_null_on_one_side_contributes_nothing() -> None:
    rng = np.random.default_rng(5)
    A = rng.normal(size=(3, 10, 2))
    B = rng.normal(size=(4, 10, 2))
    B_dim0 = B.copy()
    B_dim0[:, :, 1] = np.nan
    np.testing.assert_allclose(
        dtw_distances(A, B_dim0, window=2), dtw_distances(A[:, :, :1], B[:, :, :1], window=2)
    )


def test_window_zero_is_the_masked_euclidean_distance_on_the_same_records() -> None:
    rng = np.random.default_rng(6)
    A = np.cumsum(rng.normal(size=(15, 30, 4)), axis=1)
    B = A[::-1] + rng.normal(size=A.shape)
    mask = rng.random(A.shape[1:]) < 0.3  # the same null records in every series
    A[:, mask], B[:, mask] = np.nan, np.nan
    euclid = series_distances(A, B)
    np.testing.assert_allclose(dtw_distances(A, B, window=0), euclid, rtol=1e-12)
    # warping can only shorten the best path: DTW <= Euclidean then
    for window in (1, 4, None):
        assert np.all(dtw_distances(A, B, window=window) <= euclid * (1 + 1e-12))


def test_a_time_shifted_copy_is_closer_by_dtw_than_by_euclidean() -> None:
    t = np.arange(48, dtype=np.float64)
    bump = 80.0 + 40.0 * np.exp(-0.5 * ((t - 20.0) / 3.0) ** 2)  # e.g. a heart-rate episode
    shifted = 80.0 + 40.0 * np.exp(-0.5 * ((t - 23.0) / 3.0) ** 2)  # the same, 3 h later
    A, B = bump[None, :, None], shifted[None, :, None]
    euclid = series_distances(A, B)[0, 0]
    assert dtw_distances(A, B, window=0)[0, 0] == pytest.approx(euclid, rel=1e-12)
    within = dtw_distances(A, B, window=3)[0, 0]
    assert within < 0.1 * euclid
    assert dtw_distances(A, B, window=1)[0, 0] > within  # a too-narrow band cannot follow it


def test_dtw_is_symmetric() -> None:
    rng = np.random.default_rng(7)
    A, B = random_series(rng, 9, 16, 3, 0.5), random_series(rng, 11, 16, 3, 0.2)
    for window in (None, 0, 2):
        np.testing.assert_array_equal(
            dtw_distances(A, B, window=window), dtw_distances(B, A, window=window).T
        )


def test_a_block_of_rows_equals_those_rows_of_the_whole_matrix() -> None:
    rng = np.random.default_rng(8)
    A, B = random_series(rng, 40, 12, 3), random_series(rng, 25, 12, 3)
    whole = dtw_distances(A, B, window=2)
    for s in (0, 7, 30):
        np.testing.assert_array_equal(dtw_distances(A[s : s + 9], B, window=2), whole[s : s + 9])


@pytest.mark.parametrize("bad", [-1, 1.5, True, "wide"])
def test_bad_window_is_a_one_line_error(bad) -> None:
    X = np.zeros((2, 3, 1))
    with pytest.raises(InputDataError) as err:
        dtw_distances(X, X, window=bad)
    assert str(err.value) == f"DTW window: expected a non-negative integer or None, got {bad!r}"
    F = np.zeros((2, 1))
    with pytest.raises(ConfigError) as err:
        evaluate_class(F, F, X, X, series_distance="dtw", dtw_window=bad)
    assert str(err.value) == (
        f"DTW window (evaluate/dtw_window) must be a non-negative integer or null, got {bad!r}"
    )


def test_mismatched_shapes_name_both() -> None:
    with pytest.raises(InputDataError) as err:
        dtw_distances(np.zeros((2, 3, 4)), np.zeros((2, 3, 5)))
    assert str(err.value) == (
        "series shapes must be (n, L, D) with equal L and D, got (2, 3, 4) and (2, 3, 5)"
    )


def test_privacy_evaluation_ranks_by_dtw_in_blocks_with_linkage_unchanged() -> None:
    """``series_distance="dtw"`` changes the disagreement only: the curves are those of the
    whole DTW matrix (whatever the block size), the linkage attack's reconstruction error
    stays Euclidean RMS, and ``standardise`` scales the dimensions before DTW."""
    X, Xr = make_class(300, 8, seed=9)
    spec = feature_spec(FEATURES, DIMS)
    F, Fr = compute_features(X, spec), compute_features(Xr, spec)
    kw = dict(errors=(0.0, 0.1), block_rows=256)
    plain, _, link_e = evaluate_class(
        F, Fr, X, Xr, attackers={"seed": (F, Fr, np.random.default_rng(1))}, **kw
    )
    dtw, _, link_d = evaluate_class(
        F,
        Fr,
        X,
        Xr,
        series_distance="dtw",
        dtw_window=2,
        attackers={"seed": (F, Fr, np.random.default_rng(1))},
        **kw,
    )
    assert link_d == link_e
    ref = disagreement_from_distances(feature_distances(F, Fr), dtw_distances(X, Xr, window=2))
    np.testing.assert_allclose(dtw["auc"], ref.auc, rtol=1e-12)
    np.testing.assert_array_equal(dtw["first_threshold"], ref.first_threshold)
    assert not np.allclose(dtw["auc"], plain["auc"])
    wide, _, _ = evaluate_class(
        F, Fr, X, Xr, series_distance="dtw", dtw_window=2, **{**kw, "block_rows": 512}
    )
    np.testing.assert_array_equal(wide["auc"], dtw["auc"])
    # standardise: the same DTW on series divided by each dimension's class-wide sd
    std, _, _ = evaluate_class(F, Fr, X, Xr, series_distance="dtw", dtw_window=2, standardise=True)
    sd = class_std(X, axis=(0, 1))
    ref_std = disagreement_from_distances(
        feature_distances(F, Fr, class_std(F, axis=0)), dtw_distances(X / sd, Xr / sd, window=2)
    )
    np.testing.assert_allclose(std["auc"], ref_std.auc, rtol=1e-9)
    # the report's whole-class curves agree with the blocked evaluation
    cls = ClassArray(group="all", length=8, keys=np.arange(300, dtype=np.int64), X=X)
    rel = ClassArray(group="all", length=8, keys=cls.keys, X=Xr)
    curves, _, _ = class_curves(cls, rel, spec, series_distance="dtw", dtw_window=2)
    np.testing.assert_allclose(curves.auc, dtw["auc"], rtol=1e-12)


def test_dtw_in_the_config(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    schema = ROOT / "config" / "schema.yaml"
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    filled = validate_config(dict(config), schema)["evaluate"]
    assert filled["series_distance"] == "euclidean" and filled["dtw_window"] == DTW_WINDOW
    config["evaluate"] = {"series_distance": "dtw", "dtw_window": None}
    assert validate_config(config, schema)["evaluate"]["dtw_window"] is None
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["evaluate"]["dtw_window"] = -2
    with pytest.raises(ConfigError) as err:
        validate_config(config, schema)
    assert str(err.value) == (
        "config parameter 'evaluate/dtw_window': -2 is less than the minimum of 0"
    )
