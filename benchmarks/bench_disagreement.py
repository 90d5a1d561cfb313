"""Benchmark of the disagreement evaluation (seed §4.3, Algorithm 2).

Measured on the real ``stays`` release of a finished workflow run (``--run-dir``, default
``benchmarks/work/full``, the full-scale run of ``benchmarks/full_scale.py``): the classes are
loaded with the library's own functions (``benchmarks/common.py``), features from the run's
``deid.features``, and the released series are the run's genetic ``perturbed.parquet``
(config-default genetic point). Without a finished run the script falls back to generated
classes with a stand-in release (Gaussian noise on the feature dimensions) and says so.

1. Speed-up of the vectorised ``disagreement`` over the straightforward loop implementation of
   Algorithm 2 (``ref_disagreement`` in ``tests/evaluate/test_disagreement.py``), same inputs, same run,
   on a moderate real class (the class whose size is closest to ``--loop-n``, default 300),
   original vs released, with the results checked equal.
2. The largest real class: baseline (released = original) and release times, summary curves,
   linkage attack (the config's estimation errors) and peak memory (tracemalloc).
3. The whole release: ``disagreement`` over every class for the baseline (released =
   original), and for the release when the run has one, against the target of 5 minutes on
   2 cores (the evaluation is single-threaded); next to it the run's own ``privacy_baseline``
   and ``privacy`` job wall times from its Snakemake benchmark records.

Usage: ``python benchmarks/bench_disagreement.py [--run-dir DIR] [--quick]``; writes
``benchmarks/results/disagreement.json`` (not with ``--quick``). Times are wall-clock.
"""

from __future__ import annotations

import json
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
from common import (
    RESULTS,
    ROOT,
    Release,
    class_figures,
    genetic_label,
    load_release,
    load_released_classes,
    machine_info,
    point_dir,
    print_release,
    run_dir_parser,
    snakemake_record,
    timed,
)

from mimic_deid.core.atomic import write_json
from mimic_deid.core.seeding import derive_rng
from mimic_deid.deid.classes import ClassArray
from mimic_deid.deid.features import compute_features

sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "evaluate"))
from privacy_reference import disagreement, linkage_attack, summarise_curves
from test_disagreement import ref_disagreement

OUT = RESULTS / "disagreement.json"
TARGET_S = 300.0  # whole-release disagreement on 2 cores

Released = dict[tuple[str, int], ClassArray] | None


def released_X(release: Release, released: Released, cls: ClassArray, seed: int) -> np.ndarray:
    """The released series of ``cls``: the run's perturbed class; the original itself for a
    real run without a release (baseline only); for generated classes a stand-in (the
    original plus Gaussian noise of sd 3 on the feature dimensions)."""
    if released is not None:
        rel = released[(cls.group, cls.length)]
        if not np.array_equal(rel.keys, cls.keys):
            raise ValueError(f"perturbed class {cls.length} h does not match the original keys")
        return rel.X
    if release.real:
        return cls.X
    rng = derive_rng(seed, cls.length)
    X_rel = cls.X.copy()
    fd = release.spec.feature_dims
    X_rel[:, :, fd] += rng.normal(0.0, 3.0, size=X_rel[:, :, fd].shape)
    return X_rel


def bench_loop(release: Release, released: Released, cls: ClassArray, seed: int) -> dict:
    """Loop reference vs vectorised ``disagreement`` on one class, original vs released."""
    standardise = bool(release.config["evaluate"].get("standardise", False))
    X = cls.X
    X_rel = released_X(release, released, cls, seed)
    F, F_rel = compute_features(X, release.spec), compute_features(X_rel, release.spec)
    t_vec = timed(disagreement, F, F_rel, X, X_rel, standardise=standardise, repeat=3)
    t_loop = timed(ref_disagreement, F, F_rel, X, X_rel, standardise=standardise)
    res, ref = t_vec.value, t_loop.value
    worst = 0.0
    for key in ("auc", "first_threshold", "first_disagreement", "curves"):
        a, b = getattr(res, key), ref[key]
        both = ~np.isnan(a) & ~np.isnan(b)
        assert np.array_equal(np.isnan(a), np.isnan(b)), key
        if both.any():
            worst = max(worst, float(np.max(np.abs(a[both] - b[both]) / (1 + np.abs(b[both])))))
    return {
        **class_figures(cls),
        "loop_s": round(t_loop.wall_s, 3),
        "vectorised_s": round(t_vec.wall_s, 4),
        "speedup": round(t_loop.wall_s / t_vec.wall_s, 1),
        "max_rel_difference": worst,
    }


def bench_big(release: Release, released: Released, cls: ClassArray, seed: int) -> dict:
    """Baseline, release, summaries, linkage attack and peak memory of one (large) class."""
    config = release.config
    standardise = bool(config["evaluate"].get("standardise", False))
    errors = tuple(config["evaluate"].get("linkage_errors", [0.0, 0.05, 0.1, 0.2]))
    X = cls.X
    X_rel = released_X(release, released, cls, seed)
    t_feat = timed(compute_features, X, release.spec)
    F = t_feat.value
    F_rel = compute_features(X_rel, release.spec)
    t_base = timed(disagreement, F, F, X, X, standardise=standardise, repeat=2)
    t_rel = timed(disagreement, F, F_rel, X, X_rel, standardise=standardise, repeat=2)
    t_sum = timed(summarise_curves, t_rel.value)
    rng = derive_rng(int(config.get("seed", 2020)), "linkage", cls.group, cls.length)
    t_link = timed(linkage_attack, F, F_rel, X, X_rel, errors=errors, rng=rng)
    tracemalloc.start()
    disagreement(F, F_rel, X, X_rel, standardise=standardise)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        **class_figures(cls),
        "features_s": round(t_feat.wall_s, 3),
        "baseline_s": round(t_base.wall_s, 3),
        "release_s": round(t_rel.wall_s, 3),
        "summary_s": round(t_sum.wall_s, 3),
        f"linkage_{len(errors)}_errors_s": round(t_link.wall_s, 3),
        "peak_mem_mb": round(peak / 2**20, 1),
        "baseline_first_disagreement_zero": round(
            float(np.nanmean(t_base.value.first_disagreement == 0)), 3
        ),
    }


def bench_release(release: Release, released: Released, seed: int, limit: int | None) -> dict:
    """``disagreement`` over every class: baseline (released = original) and release."""
    standardise = bool(release.config["evaluate"].get("standardise", False))
    t_feat = t_base = t_rel = t_sum = 0.0
    slowest = (0.0, None)
    classes = 0
    for cls in release.iter_classes():
        if limit is not None and classes >= limit:
            break
        classes += 1
        X = cls.X
        tf = timed(compute_features, X, release.spec)
        F = tf.value
        t_feat += tf.wall_s
        tb = timed(disagreement, F, F, X, X, standardise=standardise)
        t_base += tb.wall_s
        if tb.wall_s > slowest[0]:
            slowest = (tb.wall_s, (len(cls.keys), cls.length))
        if released is not None or not release.real:
            X_rel = released_X(release, released, cls, seed)
            F_rel = compute_features(X_rel, release.spec)
            tr = timed(disagreement, F, F_rel, X, X_rel, standardise=standardise)
            t_rel += tr.wall_s
            t_sum += timed(summarise_curves, tr.value).wall_s
    return {
        "classes_evaluated": classes,
        "features_s": round(t_feat, 2),
        "baseline_s": round(t_base, 2),
        "baseline_plus_features_s": round(t_base + t_feat, 2),
        "release_s": round(t_rel, 2) if t_rel else None,
        "release_summaries_s": round(t_sum, 2) if t_sum else None,
        "slowest_baseline_class": {
            "s": round(slowest[0], 3),
            "n": slowest[1][0] if slowest[1] else None,
            "length_h": slowest[1][1] if slowest[1] else None,
        },
        "target_s": TARGET_S,
        "baseline_meets_target": bool(t_base + t_feat < TARGET_S),
    }


def run_records(release: Release) -> dict[str, Any]:
    """The run's own privacy_baseline and privacy job records (Snakemake ``benchmark:``)."""
    deid = release.config["deid"]
    point = point_dir(release.config, genetic_label(release.config))
    baseline = snakemake_record(release.run_dir, f"stays/dk{deid['dk'][0]}/privacy_baseline.tsv")
    privacy = snakemake_record(release.run_dir, f"stays/{point}/privacy.tsv")
    return {
        "privacy_baseline": baseline,
        "privacy": privacy,
        "note": "privacy = disagreement of the release + linkage attack (baseline and release, "
        "4 errors) per class, with the file reads; single-threaded jobs",
    }


def main() -> None:
    parser = run_dir_parser(__doc__)
    parser.add_argument("--loop-n", type=int, default=300, help="size of the loop-test class")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--quick", action="store_true", help="smoke run: small classes, no record")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    machine = machine_info()
    release = load_release(args.run_dir.resolve())
    size = print_release(release)
    released: Released = None
    released_from = "stand-in: original + N(0, 3) noise on the feature dimensions"
    if release.real:
        label = genetic_label(release.config)
        released = load_released_classes(release.run_dir, release.config, label)
        released_from = (
            f"the run's {label} perturbed.parquet"
            if released is not None
            else "none (the run has no genetic perturbed.parquet): baseline only"
        )
    print(f"released series: {released_from}", flush=True)

    loop_n = 60 if args.quick else args.loop_n
    loop_cls = release.get(release.nearest_size_index(loop_n))
    big_cls = release.get(release.largest_index())
    if args.quick:
        big_cls = ClassArray(big_cls.group, big_cls.length, big_cls.keys[:150], big_cls.X[:150])

    record: dict[str, Any] = {
        "benchmark": "disagreement",
        "quick": args.quick,
        "machine": machine,
        "release": size,
        "released_series": released_from,
    }
    record["loop_vs_vectorised"] = bench_loop(release, released, loop_cls, args.seed)
    print("loop vs vectorised:", json.dumps(record["loop_vs_vectorised"]), flush=True)
    record["largest_class"] = bench_big(release, released, big_cls, args.seed)
    print("largest class:", json.dumps(record["largest_class"]), flush=True)
    record["whole_release"] = bench_release(
        release, released, args.seed, limit=20 if args.quick else None
    )
    print("whole release:", json.dumps(record["whole_release"]), flush=True)
    record["run_records"] = run_records(release)
    print("run records:", json.dumps(record["run_records"]), flush=True)
    if not args.quick:
        write_json(record, args.out)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
