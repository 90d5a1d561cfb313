"""Benchmark of the disagreement evaluation (DESIGN §6; seed §4.3, Algorithm 2).

Three measurements, all on synthetic duration classes shaped like the MIMIC-III ``stays``
release (16 series dimensions, ~40 % null values, 22 features from config/config.yaml):

1. speed-up of the vectorised ``disagreement`` over the straightforward loop implementation of
   Algorithm 2 (the reference in ``tests/test_disagreement.py``), same inputs, same run, on a
   moderate class (n = 300, L = 24 h), with the results checked equal to 1e-9;
2. time and peak memory of the largest class of a full-scale release (a stress class of
   n = 2,000 series, L = 24 h; the modelled release below has smaller classes);
3. the whole MIMIC-size release: 42,000 series with heavy-tailed lengths (log-normal, median
   48 h, sigma 1), grouped into duration classes with dk = 50 (greedy model of Algorithm 3:
   lengths pooled from the longest down until a class holds >= 50 series, trimmed to the
   shortest pooled length; a remainder below 50 at the bottom joins the last class), every
   class evaluated for the baseline and for a release, with summary curves.

Usage: ``python benchmarks/bench_disagreement.py [--quick]``; writes
``benchmarks/results/disagreement.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

from mimic_deid.atomic import write_json
from mimic_deid.deid.features import compute_features, feature_spec
from mimic_deid.evaluate.disagreement import disagreement, summarise_curves
from mimic_deid.evaluate.linkage import linkage_attack
from mimic_deid.variables import load_variables, series_variables

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_disagreement import ref_disagreement  # noqa: E402  (the loop reference)

FEATURES = {
    "heart_rate": ["mean", "var", "min", "max"],
    "systolic_blood_pressure": ["mean", "var", "min", "max"],
    "diastolic_blood_pressure": ["mean", "var", "min", "max"],
    "oxygen_saturation": ["mean", "var", "min", "max"],
    "glucose": ["mean", "var", "min", "max"],
    "height": ["mean"],
    "weight": ["mean"],
}
# Typical level and between/within-patient spread per dimension (rough ICU values).
LEVELS = {
    "heart_rate": (85, 15, 8),
    "systolic_blood_pressure": (120, 18, 10),
    "diastolic_blood_pressure": (60, 10, 6),
    "oxygen_saturation": (97, 2, 1.5),
    "glucose": (140, 35, 20),
    "height": (170, 10, 0),
    "weight": (80, 18, 0.5),
    "temperature": (37, 0.6, 0.3),
    "respiratory_rate": (19, 4, 3),
    "fraction_inspired_oxygen": (0.5, 0.15, 0.05),
    "ph": (7.38, 0.06, 0.03),
}


def dims_and_spec():
    variables = series_variables(load_variables(ROOT / "config" / "variables.yaml"))
    dims = [v.name for v in variables]
    return dims, feature_spec(FEATURES, dims)


def synth_class(rng: np.random.Generator, n: int, L: int, dims: list[str]) -> np.ndarray:
    """(n, L, D) series: patient level + AR(1) noise, observed windows, ~40 % nulls."""
    D = len(dims)
    lvl = np.array([LEVELS.get(d, (3.0, 1.0, 0.5))[0] for d in dims])
    between = np.array([LEVELS.get(d, (3.0, 1.0, 0.5))[1] for d in dims])
    within = np.array([LEVELS.get(d, (3.0, 1.0, 0.5))[2] for d in dims])
    base = lvl + between * rng.standard_normal((n, 1, D))
    eps = rng.standard_normal((n, L, D)) * within
    for t in range(1, L):
        eps[:, t] += 0.8 * eps[:, t - 1]
    X = np.round(base + 0.6 * eps, 1)
    # null structure: dimension never observed (15 %), else observed on a window
    never = rng.random((n, 1, D)) < 0.15
    a = (rng.random((n, 1, D)) * 0.3 * L).astype(int)
    b = L - (rng.random((n, 1, D)) * 0.3 * L).astype(int)
    t = np.arange(L)[None, :, None]
    X[never | (t < a) | (t >= b)] = np.nan
    return X


def synth_release(rng: np.random.Generator, F: np.ndarray, X: np.ndarray, spec, k: int = 10):
    """Release stand-in: features collapsed to class means of k (sorted on the first feature,
    nulls kept), series shifted by Gaussian noise on the feature dimensions."""
    order = np.argsort(np.nan_to_num(F[:, 0], nan=np.inf), kind="stable")
    labels = np.empty(F.shape[0], dtype=np.int64)
    labels[order] = np.arange(F.shape[0]) // k
    F_rel = F.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for c in np.unique(labels):
            rows = labels == c
            F_rel[rows] = np.where(np.isnan(F[rows]), np.nan, np.nanmean(F[rows], axis=0))
    X_rel = X.copy()
    fd = spec.feature_dims
    X_rel[:, :, fd] += rng.normal(0, 3, size=X_rel[:, :, fd].shape)
    return F_rel, X_rel


def model_classes(rng: np.random.Generator, n_series: int, dk: int) -> list[tuple[int, int]]:
    """[(class_length, n)] for heavy-tailed lengths (hours), greedy dk-classes."""
    lengths = np.maximum(1, np.round(rng.lognormal(np.log(48.0), 1.0, n_series))).astype(int)
    counts = np.bincount(lengths)
    classes, pool = [], 0
    for L in range(counts.shape[0] - 1, 0, -1):
        pool += int(counts[L])
        if pool >= dk:
            classes.append((L, pool))
            pool = 0
    if pool:
        L0, n0 = classes[-1]
        classes[-1] = (L0, n0 + pool)  # remainder joins the shortest class
    return sorted(classes)


def timed(fn, *args, repeat: int = 1, **kwargs):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - t0)
    return best, out


def bench_loop(rng, dims, spec, n: int, L: int) -> dict:
    X = synth_class(rng, n, L, dims)
    F = compute_features(X, spec)
    F_rel, X_rel = synth_release(rng, F, X, spec)
    t_vec, res = timed(disagreement, F, F_rel, X, X_rel, repeat=3)
    t_loop, ref = timed(ref_disagreement, F, F_rel, X, X_rel)
    worst = 0.0
    for key in ("auc", "first_threshold", "first_disagreement", "curves"):
        a, b = getattr(res, key), ref[key]
        both = ~np.isnan(a) & ~np.isnan(b)
        assert np.array_equal(np.isnan(a), np.isnan(b)), key
        worst = max(worst, float(np.max(np.abs(a[both] - b[both]) / (1 + np.abs(b[both])))))
    return {
        "n": n,
        "length": L,
        "dims": len(dims),
        "features": spec.n_features,
        "null_fraction": round(float(np.isnan(X).mean()), 3),
        "loop_s": round(t_loop, 3),
        "vectorised_s": round(t_vec, 4),
        "speedup": round(t_loop / t_vec, 1),
        "max_rel_difference": worst,
    }


def bench_big(rng, dims, spec, n: int, L: int) -> dict:
    X = synth_class(rng, n, L, dims)
    F = compute_features(X, spec)
    F_rel, X_rel = synth_release(rng, F, X, spec)
    t_base, res_b = timed(disagreement, F, F, X, X, repeat=2)  # best of 2: no warm-up
    t_rel, res_r = timed(disagreement, F, F_rel, X, X_rel, repeat=2)
    t_sum, _ = timed(summarise_curves, res_r)
    t_link, _ = timed(linkage_attack, F, F_rel, X, X_rel, rng=0)
    tracemalloc.start()
    disagreement(F, F_rel, X, X_rel)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        "n": n,
        "length": L,
        "dims": len(dims),
        "features": spec.n_features,
        "null_fraction": round(float(np.isnan(X).mean()), 3),
        "baseline_s": round(t_base, 3),
        "release_s": round(t_rel, 3),
        "summary_s": round(t_sum, 3),
        "linkage_4_errors_s": round(t_link, 3),
        "peak_mem_mb": round(peak / 2**20, 1),
        "baseline_first_disagreement_zero": round(
            float(np.nanmean(res_b.first_disagreement == 0)), 3
        ),
    }


def bench_release(rng, dims, spec, n_series: int, dk: int) -> dict:
    classes = model_classes(rng, n_series, dk)
    t_base = t_rel = t_sum = 0.0
    for L, n in classes:
        X = synth_class(rng, n, L, dims)
        F = compute_features(X, spec)
        F_rel, X_rel = synth_release(rng, F, X, spec)
        dt, _ = timed(disagreement, F, F, X, X)
        t_base += dt
        dt, res = timed(disagreement, F, F_rel, X, X_rel)
        t_rel += dt
        dt, _ = timed(summarise_curves, res)
        t_sum += dt
    sizes = np.array([n for _, n in classes])
    lengths = np.array([L for L, _ in classes])
    total = t_base + t_rel + t_sum
    return {
        "series": int(sizes.sum()),
        "dk": dk,
        "length_model": "lognormal hours, median 48, sigma 1",
        "classes": len(classes),
        "largest_class": int(sizes.max()),
        "median_class": float(np.median(sizes)),
        "longest_class_length": int(lengths.max()),
        "baseline_s": round(t_base, 2),
        "release_s": round(t_rel, 2),
        "summary_s": round(t_sum, 2),
        "total_s": round(total, 2),
        "target_s": 300,
        "meets_target": bool(total < 300),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "disagreement.json"))
    args = parser.parse_args()
    rng = np.random.default_rng(20240601)
    dims, spec = dims_and_spec()
    loop_n, big_n, series = (60, 300, 3000) if args.quick else (300, 2000, 42000)

    record = {
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "cpus": os.cpu_count(),
            "note": "2 cores shared with other jobs; wall-clock times",
        },
        "data": "synthetic classes (real MIMIC-III not used)",
    }
    record["loop_vs_vectorised"] = bench_loop(rng, dims, spec, loop_n, 24)
    print(json.dumps(record["loop_vs_vectorised"]), flush=True)
    record["largest_class"] = bench_big(rng, dims, spec, big_n, 24)
    print(json.dumps(record["largest_class"]), flush=True)
    record["full_release"] = bench_release(rng, dims, spec, series, 50)
    print(json.dumps(record["full_release"]), flush=True)
    if not args.quick:
        write_json(record, args.out)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
