"""Benchmark of feature de-identification: Mondrian, ad-hoc and genetic optimisers (DESIGN §5).

Measurements, on synthetic duration classes shaped like the MIMIC-III ``stays`` release (16
series dimensions in config/variables.yaml order, 22 features from config/config.yaml, hourly
AR(1) physiology with realistic per-dimension missingness: vital signs ~5-10 % null, glucose
~80 %, temperature ~70 %, height ~98 %, weight ~94 %):

1. the largest class of a full-scale release: n = 1,500 series of L = 36 h; Mondrian
   (fk = 10, range) targets, then series/second of Mondrian, ad-hoc (50 iterations) and the
   genetic optimiser with the configuration defaults (NA, population 24, tournament 5,
   parents 2, mutation sd 3 / prob 0.2, init sd 1, patience 100, max 600 generations);
2. speed-up of ``optimise_genetic`` (vectorised over series and population) over a
   straightforward per-series implementation of the same algorithm (``reference_genetic``
   below: a loop over series, and within a series a loop over the children for selection and
   crossover, population-vectorised evaluation and mutation), same class, same run, on the
   first ``--ref-series`` series; the quality of both on those series is reported too;
3. time to de-identify a MIMIC-size ``stays`` release (42,000 series, log-normal lengths with
   median 48 h and sigma 1, greedy dk = 50 duration classes as in bench_disagreement.py) with
   the genetic optimiser: every ``--stride``-th class (in length order) is really optimised,
   and the total CPU time is extrapolated by series-hours; on 2 cores the classes are split
   between two processes (the library is single-threaded).

Usage: ``python benchmarks/bench_deid.py [--quick]``; writes ``benchmarks/results/deid.json``.
CPU times (``time.process_time``) are reported next to wall times because the benchmark
machine is shared.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

from mimic_deid.atomic import write_json
from mimic_deid.deid.adhoc import optimise_adhoc
from mimic_deid.deid.features import FeatureSpec, compute_features, feature_spec
from mimic_deid.deid.genetic import GeneticParams, optimise_genetic
from mimic_deid.deid.optimise import unfeasibility
from mimic_deid.variables import load_variables, series_variables

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "deid.json"

FEATURES = {
    "heart_rate": ["mean", "var", "min", "max"],
    "systolic_blood_pressure": ["mean", "var", "min", "max"],
    "diastolic_blood_pressure": ["mean", "var", "min", "max"],
    "oxygen_saturation": ["mean", "var", "min", "max"],
    "glucose": ["mean", "var", "min", "max"],
    "height": ["mean"],
    "weight": ["mean"],
}
# level, between-patient sd, within-patient innovation sd, AR(1) coefficient, fraction observed
PHYSIOLOGY = {
    "heart_rate": (85, 15, 4, 0.8, 0.93),
    "systolic_blood_pressure": (120, 18, 6, 0.8, 0.90),
    "diastolic_blood_pressure": (62, 10, 4, 0.8, 0.90),
    "oxygen_saturation": (97, 2, 1.2, 0.7, 0.92),
    "glucose": (135, 35, 15, 0.6, 0.20),
    "respiratory_rate": (19, 4, 2, 0.7, 0.90),
    "temperature": (37, 0.6, 0.2, 0.8, 0.30),
    "fraction_inspired_oxygen": (0.5, 0.15, 0.05, 0.9, 0.15),
    "ph": (7.38, 0.06, 0.02, 0.8, 0.10),
    "gcs_total": (12, 3, 1, 0.9, 0.30),
}
STATIC = {"height": (170, 10, 0.02), "weight": (80, 18, 0.06)}  # level, sd, fraction observed
DEFAULT_GENETIC = GeneticParams(
    fitness="NA",
    population=24,
    tournament=5,
    parents=2,
    mutation_sd=3.0,
    mutation_prob=0.2,
    init_sd=1.0,
    patience=100,
    max_iterations=600,
    normalise_features=False,
)


def dims_and_spec() -> tuple[list[str], FeatureSpec]:
    variables = series_variables(load_variables(ROOT / "config" / "variables.yaml"))
    dims = [v.name for v in variables]
    return dims, feature_spec(FEATURES, dims)


def synth_class(rng: np.random.Generator, n: int, L: int, dims: list[str]) -> np.ndarray:
    """(n, L, D) hourly series: patient level + AR(1) deviations, per-dimension missingness."""
    X = np.full((n, L, len(dims)), np.nan)
    for name, (level, between, within, phi, observed) in PHYSIOLOGY.items():
        d = dims.index(name)
        base = level + between * rng.standard_normal(n)
        dev = within * rng.standard_normal(n) / np.sqrt(1 - phi**2)
        for t in range(L):
            dev = phi * dev + within * rng.standard_normal(n)
            X[:, t, d] = np.where(rng.random(n) < observed, np.round(base + dev, 1), np.nan)
    for name, (level, sd, observed) in STATIC.items():
        d = dims.index(name)
        base = level + sd * rng.standard_normal(n)
        X[:, :, d] = np.where(rng.random((n, L)) < observed, np.round(base, 1)[:, None], np.nan)
    return X


def targets_for(F: np.ndarray, k: int, rng: np.random.Generator) -> tuple[np.ndarray, str]:
    """Mondrian (range) class-mean targets, or sorted groups of k if Mondrian is missing."""
    try:
        from mimic_deid.deid.mondrian import class_targets, mondrian_partition
    except ImportError:  # pragma: no cover - Mondrian written concurrently
        order = np.argsort(np.nan_to_num(F[:, 0], nan=np.inf), kind="stable")
        labels = np.empty(F.shape[0], dtype=np.int64)
        labels[order] = np.arange(F.shape[0]) // k
        T = np.full_like(F, np.nan)
        for c in np.unique(labels):
            rows = labels == c
            T[rows] = np.where(np.isnan(F[rows]), np.nan, np.nanmean(F[rows], axis=0))
        return T, "sorted groups (mondrian not importable)"
    return class_targets(F, mondrian_partition(F, k, "range")), "mondrian range"


def model_classes(rng: np.random.Generator, n_series: int, dk: int) -> list[tuple[int, int]]:
    """[(class_length, n)] for log-normal lengths (hours), greedy dk-classes (longest first)."""
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
        classes[-1] = (L0, n0 + pool)
    return sorted(classes)


def timed(fn, *args, **kwargs):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return time.perf_counter() - w0, time.process_time() - c0, out


# --------------------------------------------------------------------------------------------
# straightforward per-series reference of the genetic algorithm (not part of the library)


def _ref_features(base: np.ndarray, segments, stats, P: np.ndarray) -> np.ndarray:
    """Features (q, m) of perturbations P (q, c); ``segments[j]`` = gene slice of feature j."""
    out = np.empty((P.shape[0], len(stats)))
    for j, (seg, stat) in enumerate(zip(segments, stats, strict=True)):
        v = base[seg] + P[:, seg]
        out[:, j] = getattr(np, stat)(v, axis=1)
    return out


def reference_genetic(
    X: np.ndarray, targets: np.ndarray, spec: FeatureSpec, params: GeneticParams, rng
) -> tuple[np.ndarray, np.ndarray]:
    """One series at a time; returns (X_out, iterations). NA/annealed/DF/CI as the library."""
    from mimic_deid.deid.genetic import fitness_key

    X_out = X.copy()
    iters = np.zeros(X.shape[0], dtype=np.int64)
    P, T, K = params.population, params.tournament, params.parents
    for i in range(X.shape[0]):
        # genes: non-null records of the targeted feature dims, dimension by dimension
        genes, seg_of_dim = [], {}
        for d in spec.feature_dims.tolist():
            cols = np.flatnonzero(spec.dims == d)
            if np.isnan(targets[i, cols]).all():
                continue
            t_idx = np.flatnonzero(~np.isnan(X[i, :, d]))
            seg_of_dim[d] = slice(len(genes), len(genes) + len(t_idx))
            genes += [(t, d) for t in t_idx.tolist()]
        c = len(genes)
        if c == 0:
            continue
        base = np.array([X[i, t, d] for t, d in genes])
        feats = [j for j in range(spec.n_features) if spec.dims[j] in seg_of_dim]
        feats = [j for j in feats if not np.isnan(targets[i, j])]
        segments = [seg_of_dim[spec.dims[j]] for j in feats]
        stats = [spec.stats[j] for j in feats]
        tgt = targets[i, feats]

        def evaluate(pop, segments=segments, stats=stats, tgt=tgt, base=base):
            f = _ref_features(base, segments, stats, pop)
            return np.abs(pop).sum(axis=1), np.abs(f - tgt).sum(axis=1)

        pop = params.init_sd * rng.standard_normal((P, c))
        obj, inf = evaluate(pop)
        since, m = 0, 0
        while True:
            m += 1
            keys = fitness_key(obj, inf, m, params.fitness)
            best = int(np.argmax(keys))
            children = np.empty((P - 1, c))
            for q in range(P - 1):
                contenders = rng.choice(P, T, replace=False)
                top = np.sort(np.argsort(-keys[contenders], kind="stable")[:K])
                mates = contenders[top]
                child = pop[mates[0]].copy()
                if K > 1 and c > 1:
                    n_cuts = min(K - 1, c - 1)
                    cuts = np.sort(rng.choice(np.arange(1, c), n_cuts, replace=False))
                    for s, cut in enumerate(cuts, start=1):
                        child[cut:] = pop[mates[s], cut:]
                children[q] = child
            mutate = rng.random(children.shape) < params.mutation_prob
            children[mutate] += params.mutation_sd * rng.standard_normal(int(mutate.sum()))
            c_obj, c_inf = evaluate(children)
            c_keys = fitness_key(c_obj, c_inf, m, params.fitness)
            since = 0 if c_keys.max() > keys[best] else since + 1
            pop = np.vstack([pop[best][None], children])
            obj = np.concatenate([[obj[best]], c_obj])
            inf = np.concatenate([[inf[best]], c_inf])
            if since >= params.patience or m >= params.max_iterations:
                break
        p = pop[int(np.argmax(fitness_key(obj, inf, m, params.fitness)))]
        for g, (t, d) in enumerate(genes):
            X_out[i, t, d] = X[i, t, d] + p[g]
        iters[i] = m
    return X_out, iters


# --------------------------------------------------------------------------------------------


def quality(X: np.ndarray, X_out: np.ndarray, T: np.ndarray, spec: FeatureSpec) -> dict:
    F = compute_features(X_out, spec)
    L = X.shape[1]
    return {
        "unfeasibility_mean": round(float(unfeasibility(F, T).mean()), 3),
        "distortion_mean": round(float((np.nansum(np.abs(X_out - X), axis=(1, 2)) / L).mean()), 3),
    }


def bench_large(rng, dims, spec, n: int, L: int, fk: int, ref_series: int) -> dict:
    X = synth_class(rng, n, L, dims)
    F = compute_features(X, spec)
    t_mon, c_mon, (T, how) = timed(targets_for, F, fk, rng)
    t_ad, c_ad, res_ad = timed(optimise_adhoc, X, T, spec, 50, 0.01, np.random.default_rng(1))
    t_ga, c_ga, res_ga = timed(
        optimise_genetic, X, T, spec, DEFAULT_GENETIC, np.random.default_rng(2)
    )
    sub = slice(0, ref_series)
    t_ref, c_ref, (X_ref, it_ref) = timed(
        reference_genetic, X[sub], T[sub], spec, DEFAULT_GENETIC, np.random.default_rng(3)
    )
    # the vectorised optimiser on the same subset alone (small-class speed)
    t_vs, c_vs, res_vs = timed(
        optimise_genetic, X[sub], T[sub], spec, DEFAULT_GENETIC, np.random.default_rng(3)
    )
    rate_ga = n / c_ga
    rate_ref = ref_series / c_ref
    return {
        "n": n,
        "length": L,
        "dims": len(dims),
        "features": spec.n_features,
        "null_fraction": round(float(np.isnan(X).mean()), 3),
        "targets": how,
        "fk": fk,
        "unfeasibility_before_mean": round(float(unfeasibility(F, T).mean()), 3),
        "mondrian": {
            "wall_s": round(t_mon, 3),
            "cpu_s": round(c_mon, 3),
            "series_per_s": round(n / c_mon, 1),
        },
        "adhoc": {
            "wall_s": round(t_ad, 3),
            "cpu_s": round(c_ad, 3),
            "series_per_s": round(n / c_ad, 1),
            **quality(X, res_ad.X, T, spec),
        },
        "genetic": {
            "wall_s": round(t_ga, 2),
            "cpu_s": round(c_ga, 2),
            "series_per_s": round(rate_ga, 2),
            "series_hours_per_s": round(rate_ga * L, 1),
            "iterations_mean": round(float(res_ga.iterations.mean()), 1),
            **quality(X, res_ga.X, T, spec),
        },
        "reference": {
            "series": ref_series,
            "cpu_s": round(c_ref, 2),
            "series_per_s": round(rate_ref, 3),
            "iterations_mean": round(float(it_ref.mean()), 1),
            **quality(X[sub], X_ref, T[sub], spec),
            "vectorised_same_series": {
                "cpu_s": round(c_vs, 2),
                "series_per_s": round(ref_series / c_vs, 2),
                "iterations_mean": round(float(res_vs.iterations.mean()), 1),
                **quality(X[sub], res_vs.X, T[sub], spec),
            },
        },
        "speedup_large_class": round(rate_ga / rate_ref, 1),
        "speedup_same_series": round(c_ref / c_vs, 1),
    }


def bench_release(rng, dims, spec, n_series: int, dk: int, fk: int, stride: int) -> dict:
    classes = model_classes(rng, n_series, dk)
    hours_total = sum(L * n for L, n in classes)
    sampled = classes[stride // 2 :: stride]
    cpu = 0.0
    hours = 0
    rows = []
    for L, n in sampled:
        X = synth_class(rng, n, L, dims)
        T, _ = targets_for(compute_features(X, spec), fk, rng)
        _, c, res = timed(optimise_genetic, X, T, spec, DEFAULT_GENETIC, np.random.default_rng(L))
        cpu += c
        hours += L * n
        rows.append(
            {
                "length": L,
                "n": n,
                "cpu_s": round(c, 2),
                "iterations_mean": round(float(res.iterations.mean()), 1),
            }
        )
    cpu_total = cpu * hours_total / hours
    return {
        "series": n_series,
        "dk": dk,
        "classes": len(classes),
        "series_hours": hours_total,
        "mean_length_h": round(hours_total / n_series, 1),
        "sampled_classes": rows,
        "sampled_series_hours": hours,
        "estimated_cpu_s": round(cpu_total, 0),
        "estimated_wall_2_cores_min": round(cpu_total / 2 / 60, 1),
        "target_min": 60,
        "meets_target": bool(cpu_total / 2 / 60 < 60),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--ref-series", type=int, default=20)
    parser.add_argument("--stride", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(2020)
    dims, spec = dims_and_spec()
    n, L, ref, stride, n_release = 1500, 36, args.ref_series, args.stride, 42_000
    if args.quick:
        n, ref, stride, n_release = 200, 4, 60, 6_000
    large = bench_large(rng, dims, spec, n, L, 10, ref)
    print("large class:", large)
    release = bench_release(rng, dims, spec, n_release, 50, 10, stride)
    print("release:", {k: v for k, v in release.items() if k != "sampled_classes"})
    record = {
        "benchmark": "deid",
        "quick": args.quick,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "numpy": np.__version__,
        },
        "genetic_params": DEFAULT_GENETIC.__dict__,
        "large_class": large,
        "release": release,
    }
    if not args.quick:
        write_json(record, OUT)
        print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
