"""Disagreement curves against a straightforward loop implementation of Algorithm 2."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from privacy_reference import disagreement, summarise_curves

from mimic_deid.evaluate.disagreement import (
    TIE_TOL,
    disagreement_from_distances,
)


# --- reference ---------------------------------------------------------------------------
def ref_distance(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.reshape(-1), b.reshape(-1)
    total, used = 0.0, 0
    for u, v in zip(a.tolist(), b.tolist(), strict=True):
        if not (math.isnan(u) or math.isnan(v)):
            total += (u - v) ** 2
            used += 1
    return math.sqrt(total) if used else float("nan")


def ref_disagreement(F_o, F_r, X_o, X_r, standardise=False):
    """Algorithm 2 with the conventions of mimic_deid.evaluate.disagreement, one pair and one series at a time."""
    n = F_o.shape[0]
    if standardise:
        fs = np.nanstd(F_o, axis=0)
        fs = np.where(np.isfinite(fs) & (fs > 0), fs, 1.0)
        xs = np.nanstd(X_o, axis=(0, 1))
        xs = np.where(np.isfinite(xs) & (xs > 0), xs, 1.0)
        F_o, F_r, X_o, X_r = F_o / fs, F_r / fs, X_o / xs, X_r / xs
    DF = [[ref_distance(F_o[x], F_r[y]) for y in range(n)] for x in range(n)]
    DS = [[ref_distance(X_o[x], X_r[y]) for y in range(n)] for x in range(n)]
    out = {k: [] for k in ("auc", "first_threshold", "first_disagreement", "t_max")}
    curves = np.full((n, n), np.nan)
    thresholds = np.full((n, n), np.nan)
    for x in range(n):
        ys = sorted((DF[x][y], y) for y in range(n) if not math.isnan(DF[x][y]))
        if not ys:
            for k in out:
                out[k].append(float("nan"))
            continue
        # create_increments: a new increment when the gap to the previous distance > TIE_TOL
        increments = []
        for i, (d, y) in enumerate(ys):
            if i == 0 or d - ys[i - 1][0] > TIE_TOL:
                increments.append((d, [y]))
            else:
                increments[-1][1].append(y)
        dists = [d for d, _ in ys]
        t_max = max(dists) + sum(dists) / len(dists)
        summation, normalisation, included, auc = 0.0, 0, 0, 0.0
        values = []
        for i, (t_i, neighbours) in enumerate(increments):
            for y in neighbours:
                if not math.isnan(DS[x][y]):
                    summation += DS[x][y]
                    normalisation += 1
            value = summation / normalisation if normalisation else float("nan")
            t_next = increments[i + 1][0] if i + 1 < len(increments) else t_max
            if not math.isnan(value):
                auc += value * (t_next - t_i)
            values.append(value)
            for c in range(included + 1, included + len(neighbours) + 1):
                curves[x, c - 1] = value
                thresholds[x, c - 1] = t_i
            included += len(neighbours)
        out["auc"].append(auc)
        out["first_threshold"].append(increments[0][0])
        out["first_disagreement"].append(values[0])
        out["t_max"].append(t_max)
    return {k: np.array(v) for k, v in out.items()} | {"curves": curves, "thresholds": thresholds}


# --- fixtures ----------------------------------------------------------------------------
def random_class(rng, n=24, L=6, D=3, m=5, released=True):
    X = rng.normal(0, 3, size=(n, L, D)) + np.array([80.0, 120.0, 30.0])[:D]
    X[rng.random(X.shape) < 0.35] = np.nan
    X[1, :, 0] = np.nan  # all-null dimension
    X[2] = np.nan  # all-null series: d_S undefined everywhere
    F = rng.normal(0, 2, size=(n, m)).round(1)  # rounding creates accidental ties
    F[rng.random(F.shape) < 0.25] = np.nan
    F[3] = F[4]  # duplicate feature rows
    F[5] = F[4]
    F[6] = np.nan  # a series with every feature null
    if not released:
        return F, X
    Xr = X + rng.normal(0, 1, size=X.shape)
    Fr = F.copy()
    Fr[7:12] = np.nanmean(F[7:12], axis=0)  # a collapsed (k-anonymous) class: exact ties
    Fr[12] = Fr[13]
    return F, Fr, X, Xr


def assert_matches(res, ref):
    for key in ("auc", "first_threshold", "first_disagreement", "t_max", "curves", "thresholds"):
        np.testing.assert_allclose(getattr(res, key), ref[key], rtol=1e-9, atol=1e-9, err_msg=key)


QS = (0.1, 0.25, 0.5, 0.75, 0.9)


# --- tests -------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("standardise", [False, True])
def test_matches_loop_reference_release(seed, standardise):
    rng = np.random.default_rng(seed)
    F, Fr, X, Xr = random_class(rng)
    res = disagreement(F, Fr, X, Xr, standardise=standardise)
    assert_matches(res, ref_disagreement(F, Fr, X, Xr, standardise))
    assert np.isnan(res.auc[6]) and res.n_reachable[6] == 0
    assert np.isnan(res.curves[6]).all()


@pytest.mark.parametrize("seed", [3, 4])
def test_matches_loop_reference_baseline(seed):
    rng = np.random.default_rng(seed)
    F, X = random_class(rng, n=30, released=False)
    res = disagreement(F, F, X, X)
    ref = ref_disagreement(F, F, X, X)
    assert_matches(res, ref)
    # x's own series is at feature distance 0: first threshold 0 and, unless tied with other
    # series or without defined series distance, first disagreement 0.
    ok = ~np.isnan(res.auc)
    np.testing.assert_array_equal(res.first_threshold[ok], 0.0)
    assert res.first_disagreement[0] == 0.0
    # duplicated feature rows 3, 4, 5 form one first increment of three series
    assert np.all(res.thresholds[3, :3] == 0.0)


def test_many_ties_and_row_blocks(monkeypatch):
    import mimic_deid.evaluate.disagreement as mod

    rng = np.random.default_rng(7)
    F, Fr, X, Xr = random_class(rng, n=40)
    F = np.round(F)  # heavy ties
    Fr = np.round(Fr)
    ref = ref_disagreement(F, Fr, X, Xr)
    monkeypatch.setattr(mod, "_BLOCK_ELEMENTS", 100)  # 2-3 rows per block
    assert_matches(disagreement(F, Fr, X, Xr), ref)


def test_near_ties_within_tolerance_form_one_increment():
    DF = np.array([[0.0, 5e-10, 1.0], [1.0, 0.0, 2.0], [3.0, 1.0, 0.0]])
    DS = np.array([[1.0, 3.0, 5.0], [2.0, 0.0, 4.0], [6.0, np.nan, 0.0]])
    res = disagreement_from_distances(DF, DS)
    # row 0: increments {0, 1} at t=0 (value 2), {2} at t=1 (value 3); t_max = 1 + 1.0000000005/3
    np.testing.assert_allclose(res.curves[0], [2.0, 2.0, 3.0])
    t_max = 1.0 + (0.0 + 5e-10 + 1.0) / 3
    np.testing.assert_allclose(res.auc[0], 2.0 * 1.0 + 3.0 * (t_max - 1.0))
    # row 2: y=1 has undefined d_S: included (count 2) but not averaged
    np.testing.assert_allclose(res.curves[2], [0.0, 0.0, 3.0])
    assert res.n_reachable.tolist() == [3, 3, 3]


def test_undefined_first_value_adds_nothing():
    DF = np.array([[0.0, 1.0], [np.nan, 0.0]])
    DS = np.array([[np.nan, 4.0], [1.0, np.nan]])
    res = disagreement_from_distances(DF, DS)
    assert np.isnan(res.first_disagreement[0])
    np.testing.assert_allclose(res.auc[0], 4.0 * 0.5)  # t_max = 1 + 0.5
    # row 1: only itself enters, with undefined value -> auc 0, curve NaN, count 2 never reached
    assert res.auc[1] == 0.0 and res.n_reachable[1] == 1
    assert np.isnan(res.curves[1]).all() and res.thresholds[1, 0] == 0.0


def test_summary_curves():
    rng = np.random.default_rng(9)
    F, Fr, X, Xr = random_class(rng, n=20)
    res = disagreement(F, Fr, X, Xr)
    df = summarise_curves(res)
    stats = ["min", "mean", "max", "q10", "q25", "q50", "q75", "q90"]
    assert list(df.columns) == ["inclusion", "stat", "value", "normalised"]
    assert len(df) == 20 * len(stats)
    assert df["stat"].iloc[: len(stats)].tolist() == stats
    np.testing.assert_allclose(df["inclusion"].unique(), np.arange(1, 21) / 20)
    wide = df.pivot(index="inclusion", columns="stat", values="value")
    # normalised: each curve divided by its last defined value
    final = np.array(
        [res.curves[i, res.n_reachable[i] - 1] if res.n_reachable[i] else np.nan for i in range(20)]
    )
    norm = res.curves / final[:, None]
    norm[final == 0] = np.nan
    wn = df.pivot(index="inclusion", columns="stat", values="normalised")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns at high inclusion
        for name, table, arr in (("value", wide, res.curves), ("normalised", wn, norm)):
            expected = {
                "min": np.nanmin(arr, axis=0),
                "mean": np.nanmean(arr, axis=0),
                "max": np.nanmax(arr, axis=0),
            } | {f"q{round(q * 100):02d}": np.nanquantile(arr, q, axis=0) for q in QS}
            for stat, exp in expected.items():
                np.testing.assert_allclose(table[stat], exp, rtol=1e-12, err_msg=name + stat)
    assert isinstance(df, pd.DataFrame)


def test_single_series_and_shape_errors():
    F = np.array([[1.0, 2.0]])
    X = np.ones((1, 3, 2))
    res = disagreement(F, F, X, X)
    assert res.auc.tolist() == [0.0] and res.first_disagreement.tolist() == [0.0]
    assert res.inclusion.tolist() == [1.0]
    with pytest.raises(ValueError) as info:
        disagreement(F, F, X, np.ones((1, 4, 2)))
    assert str(info.value) == (
        "X_orig and X_rel must both be (n, L, D), got (1, 3, 2) and (1, 4, 2)"
    )
