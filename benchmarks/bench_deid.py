"""Benchmark of feature de-identification: Mondrian, ad-hoc and genetic optimisers (seed §4.1, §4.2, §5.5).

Measured on the real ``stays`` release of a finished workflow run (``--run-dir``, default
``benchmarks/work/full``, the full-scale run of ``benchmarks/full_scale.py``): the classes are
loaded with the library's own functions (``benchmarks/common.py``), the features, fk, heuristic
and optimiser parameters come from the run's configuration. Without a finished run the script
falls back to generated classes and says so in its output and record.

1. The largest class of the release: series/second of Mondrian (targets, as the ``mondrian``
   rule), the ad-hoc optimiser and the genetic optimiser (config defaults, the class's
   workflow generator), with quality figures.
2. Speed-up of ``optimise_genetic`` (vectorised over series and population) over a
   straightforward per-series implementation of the same algorithm (``reference_genetic``
   below), same run: the reference runs on a random subset of ``--ref-series`` series of the
   largest class (a per-series loop over the whole class would take minutes); the speed-up
   compares per-series CPU throughput (whole class vs subset), and the vectorised optimiser
   is also timed on the same subset alone.
3. The whole release: the actual wall time of the run's genetic ``deidentify`` job, read from
   its Snakemake benchmark record
   (``logs/benchmarks/stays/dk50/fk10-range/<genetic label>/deidentify.tsv``, column ``s``;
   the job runs the classes in 2 worker processes), against the target of 1 hour on 2 cores.

Usage: ``python benchmarks/bench_deid.py [--run-dir DIR] [--quick]``; writes
``benchmarks/results/deid.json`` (not with ``--quick``). CPU times (``time.process_time``) are
reported next to wall times.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from common import (
    RESULTS,
    Release,
    genetic_label,
    genetic_params,
    load_release,
    machine_info,
    path,
    point_dir,
    point_wildcards,
    print_release,
    run_dir_parser,
    snakemake_record,
    timed,
)

from mimic_deid.core.atomic import write_json
from mimic_deid.core.seeding import derive_rng
from mimic_deid.deid.adhoc import optimise_adhoc
from mimic_deid.deid.classes import ClassArray
from mimic_deid.deid.features import FeatureSpec, compute_features
from mimic_deid.deid.genetic import GeneticParams, fitness_key, optimise_genetic
from mimic_deid.deid.mondrian import class_targets, mondrian_partition
from mimic_deid.deid.optimise import unfeasibility

OUT = RESULTS / "deid.json"
TARGET_S = 3600.0  # whole-release genetic optimisation on 2 cores


# --------------------------------------------------------------------------------------------
# straightforward per-series reference of the genetic algorithm (not part of the library)


def _ref_features(
    base: np.ndarray, segments: list[slice], stats: list[str], P: np.ndarray
) -> np.ndarray:
    """Features (q, m) of perturbations P (q, c); ``segments[j]`` = gene slice of feature j."""
    out = np.empty((P.shape[0], len(stats)))
    for j, (seg, stat) in enumerate(zip(segments, stats, strict=True)):
        v = base[seg] + P[:, seg]
        out[:, j] = getattr(np, stat)(v, axis=1)
    return out


def reference_genetic(
    X: np.ndarray,
    targets: np.ndarray,
    spec: FeatureSpec,
    params: GeneticParams,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """One series at a time; returns (X_out, iterations). NA/annealed/DF/CI as the library.

    A loop over series, and within a series a loop over the children for tournament
    selection and crossover; evaluation and mutation are vectorised over the population.
    """
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
# measurements


def quality(X: np.ndarray, X_out: np.ndarray, T: np.ndarray, spec: FeatureSpec) -> dict:
    """Mean unfeasibility and mean distortion per record of a perturbation ``X -> X_out``."""
    F = compute_features(X_out, spec)
    L = X.shape[1]
    return {
        "unfeasibility_mean": round(float(unfeasibility(F, T).mean()), 3),
        "distortion_mean": round(float((np.nansum(np.abs(X_out - X), axis=(1, 2)) / L).mean()), 3),
    }


def mondrian_targets(F: np.ndarray, X: np.ndarray, fk: int, heuristic: str) -> np.ndarray:
    """Class-mean targets of the Mondrian partition, as the ``mondrian`` rule computes them."""
    labels = mondrian_partition(F, fk, heuristic, X=X if heuristic == "diversity" else None)
    return class_targets(F, labels)


def run_targets_match(release: Release, cls: ClassArray, T: np.ndarray) -> bool | None:
    """Whether ``T`` equals the run's ``targets.parquet`` rows of the class (None: no run)."""
    if release.run_dir is None:
        return None
    import pandas as pd

    from mimic_deid.deid.targets import class_target_matrix

    deid = release.config["deid"]
    file = release.run_dir / path(
        "targets",
        release="stays",
        dk=deid["dk"][0],
        fk=deid["fk"][0],
        heuristic=deid["heuristic"][0],
    )
    if not file.is_file():
        return None
    T_run = class_target_matrix(pd.read_parquet(file), cls, release.spec)
    return bool(np.allclose(T, T_run, equal_nan=True))


def bench_large(release: Release, cls: ClassArray, ref_series: int, seed: int) -> dict[str, Any]:
    """Mondrian, ad-hoc, genetic and the per-series reference on the largest class."""
    spec, config = release.spec, release.config
    deid = config["deid"]
    fk, heuristic = int(deid["fk"][0]), str(deid["heuristic"][0])
    adhoc = deid["methods"].get("adhoc", {"iterations": [50], "noise_sd": [0.01]})
    iterations, noise_sd = int(adhoc["iterations"][0]), float(adhoc["noise_sd"][0])
    label, params = genetic_label(config), genetic_params(config)
    wf_seed = int(config.get("seed", 2020))

    X = cls.X
    n, L = X.shape[:2]
    F = compute_features(X, spec)
    t_mon = timed(mondrian_targets, F, X, fk, heuristic, repeat=3)
    T = t_mon.value
    print(f"  Mondrian: {t_mon.cpu_s:.3f} s CPU", flush=True)
    t_ad = timed(
        optimise_adhoc, X, T, spec, iterations, noise_sd, derive_rng(wf_seed, "bench-adhoc", L)
    )
    print(f"  ad-hoc: {t_ad.cpu_s:.2f} s CPU", flush=True)
    # the generator the workflow's deidentify step uses for this class
    t_ga = timed(optimise_genetic, X, T, spec, params, derive_rng(wf_seed, label, cls.group, L))
    res_ga = t_ga.value
    print(f"  genetic: {t_ga.cpu_s:.1f} s CPU ({t_ga.wall_s:.1f} s wall)", flush=True)

    k = min(ref_series, n)
    rows = np.sort(derive_rng(seed).choice(n, k, replace=False))
    t_ref = timed(reference_genetic, X[rows], T[rows], spec, params, derive_rng(seed))
    X_ref, it_ref = t_ref.value
    print(f"  reference on {k} series: {t_ref.cpu_s:.1f} s CPU", flush=True)
    t_vs = timed(optimise_genetic, X[rows], T[rows], spec, params, derive_rng(seed))
    rate_ga, rate_ref = n / t_ga.cpu_s, k / t_ref.cpu_s
    return {
        "group": cls.group,
        "n": n,
        "length_h": L,
        "dims": X.shape[2],
        "features": spec.n_features,
        "null_fraction": round(float(np.isnan(X).mean()), 3),
        "fk": fk,
        "heuristic": heuristic,
        "targets_equal_run_targets": run_targets_match(release, cls, T),
        "unfeasibility_before_mean": round(float(unfeasibility(F, T).mean()), 3),
        "mondrian": {
            "wall_s": round(t_mon.wall_s, 4),
            "cpu_s": round(t_mon.cpu_s, 4),
            "series_per_s": round(n / max(t_mon.cpu_s, 1e-9), 0),
        },
        "adhoc": {
            "iterations": iterations,
            "noise_sd": noise_sd,
            "wall_s": round(t_ad.wall_s, 3),
            "cpu_s": round(t_ad.cpu_s, 3),
            "series_per_s": round(n / t_ad.cpu_s, 1),
            **quality(X, t_ad.value.X, T, spec),
        },
        "genetic": {
            "label": label,
            "wall_s": round(t_ga.wall_s, 2),
            "cpu_s": round(t_ga.cpu_s, 2),
            "series_per_s": round(rate_ga, 2),
            "series_hours_per_s": round(rate_ga * L, 1),
            "iterations_mean": round(float(res_ga.iterations.mean()), 1),
            **quality(X, res_ga.X, T, spec),
        },
        "reference": {
            "series": k,
            "subset": f"random {k} of the {n} series (seed {seed})" if k < n else "whole class",
            "wall_s": round(t_ref.wall_s, 2),
            "cpu_s": round(t_ref.cpu_s, 2),
            "series_per_s": round(rate_ref, 3),
            "iterations_mean": round(float(it_ref.mean()), 1),
            **quality(X[rows], X_ref, T[rows], spec),
            "vectorised_same_series": {
                "cpu_s": round(t_vs.cpu_s, 2),
                "series_per_s": round(k / t_vs.cpu_s, 2),
                "iterations_mean": round(float(t_vs.value.iterations.mean()), 1),
                **quality(X[rows], t_vs.value.X, T[rows], spec),
            },
        },
        "speedup_per_series_cpu": round(rate_ga / rate_ref, 1),
        "speedup_same_series_cpu": round(t_ref.cpu_s / t_vs.cpu_s, 1),
    }


def whole_release(release: Release, largest: tuple[str, int]) -> dict[str, Any]:
    """The run's actual genetic ``deidentify`` job: Snakemake benchmark record and summary
    (with the run's own figures for the ``largest`` (group, length) class, for comparison)."""
    label = genetic_label(release.config)
    point = point_dir(release.config, label)
    record = snakemake_record(release.run_dir, f"stays/{point}/deidentify.tsv")
    out: dict[str, Any] = {
        "label": label,
        "source": "Snakemake benchmark record of the run's deidentify job (2 worker processes)",
        "record": record,
        "target_s": TARGET_S,
    }
    if record is None:
        out["note"] = "no finished run / no deidentify.tsv: whole-release time not available"
        return out
    out["wall_s"] = record["s"]
    out["wall_min"] = round(record["s"] / 60, 1)
    out["meets_target"] = bool(record["s"] < TARGET_S)
    summary = release.run_dir / path(
        "method_summary", release="stays", **point_wildcards(release.config, label)
    )
    if summary.is_file():
        opt = json.loads(summary.read_text())
        out["optimiser_summary"] = {
            "series": opt["series"],
            "classes": len(opt["classes"]),
            "iterations_mean": round(opt["iterations_mean"], 1),
            "unfeasibility_mean": round(opt["unfeasibility_mean"], 3),
            "distortion_mean": round(opt["distortion_mean"], 3),
        }
        out["series_per_s_wall"] = round(opt["series"] / record["s"], 1)
        out["largest_class_in_run"] = next(
            (
                {k: (round(v, 3) if isinstance(v, float) else v) for k, v in c.items()}
                for c in opt["classes"]
                if (c["group"], c["class_length"]) == largest
            ),
            None,
        )
    return out


def main() -> None:
    parser = run_dir_parser(__doc__)
    parser.add_argument("--ref-series", type=int, default=100, help="reference subset size")
    parser.add_argument("--seed", type=int, default=2020)
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 60 series of the class, no record"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    machine = machine_info()
    release = load_release(args.run_dir.resolve(), seed=args.seed)
    size = print_release(release)
    cls = release.get(release.largest_index())
    ref = args.ref_series
    if args.quick:
        cls = type(cls)(cls.group, cls.length, cls.keys[:60], cls.X[:60])
        ref = min(ref, 4)
    large = bench_large(release, cls, ref, args.seed)
    print("largest class:", json.dumps(large), flush=True)
    whole = whole_release(release, (cls.group, cls.length))
    print("whole release:", json.dumps(whole), flush=True)
    record = {
        "benchmark": "deid",
        "quick": args.quick,
        "machine": machine,
        "release": size,
        "genetic_params": genetic_params(release.config).__dict__,
        "largest_class": large,
        "whole_release": whole,
    }
    if not args.quick:
        write_json(record, args.out)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
