"""Linkage attack: baseline, k-anonymous collapse, error monotonicity, determinism.

The attack as the privacy rule runs it: one attacker in the blocked evaluation of a class
(:func:`mimic_deid.evaluate.privacy.evaluate_class`), its ``release`` side.
"""

from __future__ import annotations

import numpy as np
import pytest

from mimic_deid.evaluate.linkage import aggregate_linkage
from mimic_deid.evaluate.privacy import evaluate_class


def linkage_attack(F, F_rel, X, X_rel, errors=(0.0, 0.05, 0.1, 0.2), rng=0):
    """The attack of an attacker who knows ``F`` (up to ``errors``) on the release."""
    attackers = {"a": (F, F_rel, np.random.default_rng(rng))}
    _, _, linkage = evaluate_class(F, F_rel, X, X_rel, attackers=attackers, errors=errors)
    return linkage["a"]["release"]


def random_class(rng, n=200, m=8, L=12, D=3):
    F = rng.normal(0, 1, size=(n, m)) * np.array([1, 10, 100, 0.1, 1, 5, 50, 2])[:m]
    X = rng.normal(0, 5, size=(n, L, D)) + 70.0
    X[rng.random(X.shape) < 0.3] = np.nan
    return F, X


def rates(result, k):
    return [row[f"top{k}"] for row in result["by_error"]]


def test_baseline_exact_knowledge_finds_everyone():
    rng = np.random.default_rng(0)
    F, X = random_class(rng)
    F[rng.random(F.shape) < 0.2] = np.nan
    res = linkage_attack(F, F, X, X, errors=(0.0,), rng=1)
    row = res["by_error"][0]
    assert row["top1"] == 1.0 and row["top5"] == 1.0
    assert row["reconstruction_error"] == 0.0  # linked to itself
    assert row["n_targets"] == 200 and row["unreachable"] == 0


def test_k_anonymous_collapse_caps_top1():
    rng = np.random.default_rng(1)
    F, X = random_class(rng, n=240)
    k = 6
    labels = rng.permutation(np.repeat(np.arange(240 // k), k))
    F_rel = np.empty_like(F)
    for c in np.unique(labels):
        F_rel[labels == c] = F[labels == c].mean(axis=0)
    X_rel = X + rng.normal(0, 2, size=X.shape)
    res = linkage_attack(F, F_rel, X, X_rel, errors=(0.0, 0.1), rng=2)
    for row in res["by_error"]:
        assert row["top1"] <= 1 / k + 1e-12
        assert row["top5"] <= 5 / k + 1e-12
        assert row["reconstruction_error"] > 0


def test_rates_decrease_with_error():
    rng = np.random.default_rng(2)
    F, X = random_class(rng, n=300)
    errors = (0.0, 0.05, 0.1, 0.2, 0.5)
    res = linkage_attack(F, F, X, X, errors=errors, rng=3)
    for k in (1, 5):
        r = rates(res, k)
        assert all(a >= b for a, b in zip(r, r[1:], strict=False)), r
        assert r[0] > r[-1]
    assert rates(res, 1)[0] == 1.0
    recon = [row["reconstruction_error"] for row in res["by_error"]]
    assert recon[0] == 0.0 and recon[-1] > 0.0


def test_deterministic_with_seed_and_generator():
    rng = np.random.default_rng(4)
    F, X = random_class(rng, n=80)
    Fr = F + rng.normal(0, 0.1, size=F.shape)
    a = linkage_attack(F, Fr, X, X, rng=11)
    b = linkage_attack(F, Fr, X, X, rng=np.random.default_rng(11))
    assert a == b
    assert [row["error"] for row in a["by_error"]] == [0.0, 0.05, 0.1, 0.2]


def test_ties_are_shared_and_unreachable_targets_fail():
    F = np.array([[0.0, 0.0], [0.0, 0.0], [5.0, 5.0], [np.nan, np.nan]])
    X = np.arange(4 * 2 * 1, dtype=float).reshape(4, 2, 1)
    res = linkage_attack(F, F, X, X, errors=(0.0,), rng=0)
    row = res["by_error"][0]
    # targets 0 and 1 tie (1/2 each at top-1, certain at top-5), target 2 unique, 3 unreachable
    assert row["top1_hits"] == pytest.approx(2.0)
    assert row["top5_hits"] == pytest.approx(3.0)
    assert row["unreachable"] == 1
    # reconstruction of 0 and 1: mean of 0 and the distance between series 0 and 1 (per value)
    assert row["reconstruction_n"] == 3
    assert row["reconstruction_sum"] == pytest.approx(2 * 0.5 * 2.0)


def test_aggregate_weights_by_class_size():
    rng = np.random.default_rng(5)
    F1, X1 = random_class(rng, n=50)
    F2, X2 = random_class(rng, n=150)
    r1 = linkage_attack(F1, F1, X1, X1, errors=(0.2,), rng=0)
    r2 = linkage_attack(F2, F2, X2, X2, errors=(0.2,), rng=0)
    agg = aggregate_linkage([r1, r2])
    a, b = r1["by_error"][0], r2["by_error"][0]
    assert agg["n"] == 200 and agg["classes"] == 2
    expected = (50 * a["top1"] + 150 * b["top1"]) / 200
    assert agg["by_error"][0]["top1"] == pytest.approx(expected)
