"""Mondrian partition and class-mean targets."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mimic_deid.core.errors import ConfigError
from mimic_deid.deid.mondrian import class_targets, mondrian_partition, series_distance_matrix

NAN = np.nan

HAND_F = np.array(
    [
        [1, 0],
        [2, 9],
        [3, 1],
        [4, 8],
        [5, NAN],
        [6, 2],
        [7, NAN],
        [8, 10],
    ],
    dtype=float,
)


def allowed_split_exists(F: np.ndarray, members: np.ndarray, k: int, features) -> bool:
    """Brute force: does any of ``features`` have an allowed lower-median split?"""
    for j in features:
        v = F[members, j]
        vals = np.sort(v[~np.isnan(v)])
        if vals.size == 0:
            continue
        med = vals[(vals.size - 1) // 2]
        n_left = int(np.sum(v <= med))
        if n_left >= k and members.size - n_left >= k:
            return True
    return False


def test_hand_example_range() -> None:
    # Root: both normalised ranges are 1 -> feature 0 (lower index); lower median 4 ->
    # {0,1,2,3} | {4,5,6,7}.  Left: f1 range 9/10 > f0 3/7, lower median of {0,1,8,9} is 1 ->
    # {0,2} | {1,3}.  Right: f1 (8/10) first, lower median 2 -> {5} | {4,6,7} not allowed;
    # f0 lower median 6 -> {4,5} | {6,7}.
    labels = mondrian_partition(HAND_F, 2, "range")
    assert labels.dtype == np.int64
    assert labels.tolist() == [0, 1, 0, 1, 2, 2, 3, 3]
    T = class_targets(HAND_F, labels)
    expected = np.array(
        [
            [2, 0.5],
            [3, 8.5],
            [2, 0.5],
            [3, 8.5],
            [5.5, NAN],  # null preserved
            [5.5, 2],  # class mean over the non-null member only
            [7.5, NAN],
            [7.5, 10],
        ]
    )
    np.testing.assert_allclose(T, expected)


def test_hand_example_k3() -> None:
    assert mondrian_partition(HAND_F, 3).tolist() == [0, 0, 0, 0, 1, 1, 1, 1]


def test_nulls_go_right() -> None:
    F = np.array([[1.0], [2.0], [NAN], [NAN], [3.0], [NAN]])
    # lower median of {1,2,3} is 2: left {0,1}, right {2,3,4,5}
    assert mondrian_partition(F, 2).tolist() == [0, 0, 1, 1, 1, 1]


def test_n_less_than_k_is_one_class() -> None:
    assert mondrian_partition(HAND_F[:3], 5).tolist() == [0, 0, 0]
    assert mondrian_partition(np.empty((0, 2)), 2).shape == (0,)


def test_zero_range_feature_never_chosen_by_range() -> None:
    # feature 0 is constant where present; splitting it would only separate nulls
    F = np.array([[1.0], [1.0], [NAN], [NAN]])
    assert mondrian_partition(F, 2, "range").tolist() == [0, 0, 0, 0]


def test_bad_arguments() -> None:
    with pytest.raises(ConfigError) as info:
        mondrian_partition(HAND_F, 0)
    assert str(info.value) == "feature k (fk) must be an integer >= 1, got 0"
    with pytest.raises(ConfigError) as info:
        mondrian_partition(HAND_F, 2, "widest")
    assert str(info.value) == (
        "Mondrian heuristic must be one of ('range', 'diversity'), got 'widest'"
    )
    with pytest.raises(ValueError) as info:
        mondrian_partition(HAND_F, 2, "diversity")
    assert str(info.value) == "the 'diversity' heuristic needs the series X (n, length, dims)"
    with pytest.raises(ValueError) as info:
        mondrian_partition(HAND_F, 2, "diversity", X=np.zeros((3, 2, 1)))
    assert str(info.value) == "X must have shape (8, length, dims) to match F, got (3, 2, 1)"


def test_diversity_prefers_spread_halves() -> None:
    F = np.column_stack([np.arange(1.0, 9.0), [1, 5, 2, 6, 3, 7, 4, 8]])
    # feature 0 splits {0,1,2,3}|{4,5,6,7}; feature 1 splits {0,2,4,6}|{1,3,5,7}
    halves_f0 = [0, 0, 0, 0, 1, 1, 1, 1]
    halves_f1 = [0, 1, 0, 1, 0, 1, 0, 1]
    # series similar within the feature-0 halves -> feature-1 halves are more diverse
    X = np.array([0, 0, 0, 0, 10, 10, 10, 10], dtype=float)[:, None, None]
    assert mondrian_partition(F, 4, "range").tolist() == halves_f0  # tie -> lower index
    assert mondrian_partition(F, 4, "diversity", X=X).tolist() == halves_f1
    X2 = np.array([0, 10, 0, 10, 0, 10, 0, 10], dtype=float)[:, None, None]
    assert mondrian_partition(F, 4, "diversity", X=X2).tolist() == halves_f0


def test_series_distance_matrix_brute_force() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(7, 5, 3)) * 50 + 1000
    X[rng.random(X.shape) < 0.4] = NAN
    X[6] = NAN  # all-null series
    D = series_distance_matrix(X)
    for i in range(7):
        for j in range(7):
            both = ~np.isnan(X[i]) & ~np.isnan(X[j])
            if not both.any():
                assert np.isnan(D[i, j])
            else:
                ref = np.sqrt(np.sum((X[i][both] - X[j][both]) ** 2))
                assert D[i, j] == pytest.approx(ref, rel=1e-7, abs=1e-6)


feature_arrays = st.integers(1, 60).flatmap(
    lambda n: st.tuples(
        hnp.arrays(
            np.float64,
            (n, 3),
            elements=st.one_of(
                st.floats(-5, 5, allow_nan=False), st.just(NAN), st.sampled_from([0.0, 1.0])
            ),
        ),
        st.integers(1, 6),
    )
)


def check_partition(F: np.ndarray, k: int, labels: np.ndarray, features) -> None:
    n = F.shape[0]
    assert labels.shape == (n,)
    c = labels.max() + 1
    assert set(labels.tolist()) == set(range(c))
    # labels numbered by smallest member
    firsts = [np.flatnonzero(labels == c_)[0] for c_ in range(c)]
    assert firsts == sorted(firsts)
    sizes = np.bincount(labels)
    if n >= k:
        assert sizes.min() >= k
    else:
        assert c == 1
    for c_ in range(c):
        members = np.flatnonzero(labels == c_)
        assert not allowed_split_exists(F, members, k, features)
    T = class_targets(F, labels)
    for c_ in range(c):
        members = labels == c_
        for j in range(F.shape[1]):
            v = F[members, j]
            nn = ~np.isnan(v)
            t = T[members, j]
            assert np.all(np.isnan(t[~nn]))  # nulls preserved
            if nn.any():
                np.testing.assert_allclose(t[nn], v[nn].mean())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=feature_arrays)
def test_range_properties(data) -> None:
    F, k = data
    labels = mondrian_partition(F, k, "range")
    with np.errstate(invalid="ignore"):
        grange = np.nanmax(np.where(np.isnan(F), -np.inf, F), axis=0) - np.nanmin(
            np.where(np.isnan(F), np.inf, F), axis=0
        )
    eligible = [j for j in range(F.shape[1]) if np.isfinite(grange[j]) and grange[j] > 0]
    check_partition(F, k, labels, eligible)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=feature_arrays, seed=st.integers(0, 2**16))
def test_diversity_properties(data, seed) -> None:
    F, k = data
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(F.shape[0], 4, 2))
    X[rng.random(X.shape) < 0.3] = NAN
    labels = mondrian_partition(F, k, "diversity", X=X)
    check_partition(F, k, labels, range(F.shape[1]))
    assert np.array_equal(labels, mondrian_partition(F, k, "diversity", X=X))


def test_class_targets_all_null_class() -> None:
    F = np.array([[NAN, 1.0], [NAN, 3.0], [2.0, NAN]])
    T = class_targets(F, np.array([5, 5, 9]))
    np.testing.assert_allclose(T, [[NAN, 2.0], [NAN, 2.0], [2.0, NAN]])


def test_range_on_a_large_class_keeps_k_and_is_deterministic() -> None:
    # its speed is measured in benchmarks/bench_deid.py, not here: a test does not depend on
    # how busy the machine is
    rng = np.random.default_rng(0)
    F = rng.normal(size=(5000, 22))
    F[rng.random(F.shape) < 0.1] = NAN
    labels = mondrian_partition(F, 5, "range")
    assert np.bincount(labels).min() >= 5
    assert np.array_equal(labels, mondrian_partition(F, 5, "range"))


def test_ell_diverse_split_keeps_both_outcomes_in_every_class() -> None:
    # The hand example's k=2 classes are {0,2}, {1,3}, {4,5}, {6,7}. Deaths at 0 and 1 only:
    # the root split on f0 would leave the right half {4..7} without a death, so it is not
    # allowed; f1's lower median 2 gives {0,2,5} | {1,3,4,6,7}, both with a death and a
    # survivor; neither half can split again without losing one.
    died = np.array([1, 1, 0, 0, 0, 0, 0, 0])
    labels = mondrian_partition(HAND_F, 2, "range", outcomes=died[:, None], ell=2)
    assert labels.tolist() == [0, 1, 0, 1, 1, 0, 1, 1]
    # without the requirement (ell 1, or no outcomes) the partition is the plain one
    plain = [0, 1, 0, 1, 2, 2, 3, 3]
    assert mondrian_partition(HAND_F, 2, "range", outcomes=died[:, None], ell=1).tolist() == plain
    assert mondrian_partition(HAND_F, 2, "range").tolist() == plain


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=feature_arrays,
    seed=st.integers(0, 2**16),
    heuristic=st.sampled_from(["range", "diversity"]),
)
def test_every_class_of_an_ell_diverse_partition_holds_both_values_of_each_label(
    data, seed, heuristic
) -> None:
    F, k = data
    rng = np.random.default_rng(seed)
    n = F.shape[0]
    outcomes = np.column_stack([np.arange(n) % 2, rng.permutation(np.arange(n) % 2)])
    X = rng.normal(size=(n, 3, 2))
    labels = mondrian_partition(F, k, heuristic, X=X, outcomes=outcomes, ell=2)
    for c in np.unique(labels):
        members = outcomes[labels == c]
        if n >= 2:  # the whole set holds both values of each label from 2 series on
            assert all(len(np.unique(members[:, j])) == 2 for j in range(2)), c
    if n >= k:
        assert np.bincount(labels).min() >= k
