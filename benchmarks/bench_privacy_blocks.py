"""Benchmark of the privacy evaluation of one large duration class, in blocks and whole.

For classes of 1,000, 5,000 and 10,000 series (48 h, the 16 series dimensions of
``config/variables.yaml``, generated physiology of ``benchmarks/common.py``; the release a
stand-in with Gaussian noise on the protected dimensions) the privacy job's work on one class
is timed and its peak memory measured, each measurement in a fresh process (peak resident set
size from ``getrusage``, BLAS pinned to one thread as in a one-thread rule):

- ``blocked``: ``mimic_deid.evaluate.privacy.evaluate_class`` with ``evaluate/block_rows``
  (default ``BLOCK_ROWS``): disagreement plus the seed's and the strong attacker's linkage on both sides,
  the two series-distance matrices computed once, a block of targets at a time;
- ``whole`` (the computation before blocking, for comparison; 1k and 5k only unless
  ``--whole-max`` is raised): ``disagreement`` + ``summarise_curves`` + four
  ``linkage_attack`` calls, each recomputing its series distances on the whole class.

The growth exponent is the least-squares slope of log(time) and log(peak memory above the
interpreter's baseline) against log(n). Usage:
``python benchmarks/bench_privacy_blocks.py [--sizes 1000 5000 10000] [--block-rows 256]``;
writes ``benchmarks/results/privacy_blocks.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from mimic_deid.evaluate.privacy import BLOCK_ROWS

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "tests"))  # the whole-class reference (privacy_reference)

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
LENGTH = 48


def _child(n: int, mode: str, block_rows: int, seed: int) -> dict:
    """One measurement (runs in its own process)."""
    from common import ROOT, series_dims, synth_class, workflow_config
    from privacy_reference import disagreement, linkage_attack, summarise_curves

    from mimic_deid.core.seeding import derive_rng
    from mimic_deid.deid.features import (
        ATTACKER_STATS,
        attacker_features,
        compute_features,
        feature_spec,
        protected_features,
        released_variables,
    )
    from mimic_deid.evaluate.privacy import evaluate_class

    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    config = workflow_config(None)
    dims = series_dims()
    protected = protected_features(config["deid"]["features"], dims, "features")
    spec = feature_spec(protected, dims)
    strong = feature_spec(
        attacker_features(released_variables(protected, dims)), dims, allowed=ATTACKER_STATS
    )
    errors = tuple(config["evaluate"]["linkage_errors"])
    rng = derive_rng(seed, "bench-privacy-blocks", n)
    X = synth_class(rng, n, LENGTH, dims)
    Xr = X.copy()
    feature_dims = [dims.index(v) for v in protected]
    Xr[:, :, feature_dims] += rng.normal(0.0, 3.0, (n, LENGTH, len(feature_dims)))
    F, Fr = compute_features(X, spec), compute_features(Xr, spec)
    Fs, Fsr = compute_features(X, strong), compute_features(Xr, strong)
    t0 = time.perf_counter()
    c0 = time.process_time()
    if mode == "blocked":
        attackers = {
            "seed": (F, Fr, derive_rng(seed, "linkage")),
            "strong": (Fs, Fsr, derive_rng(seed, "strong")),
        }
        evaluate_class(F, Fr, X, Xr, attackers=attackers, errors=errors, block_rows=block_rows)
    else:
        res = disagreement(F, Fr, X, Xr)
        summarise_curves(res)
        del res
        for name, (Fk, Fkr) in {"seed": (F, Fr), "strong": (Fs, Fsr)}.items():
            for F_side, X_side in ((Fk, X), (Fkr, Xr)):
                linkage_attack(Fk, F_side, X, X_side, errors=errors, rng=derive_rng(seed, name))
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    _ = ROOT
    return {
        "n": n,
        "mode": mode,
        "block_rows": block_rows if mode == "blocked" else None,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "peak_rss_mb": round(peak / 1024, 1),
        "baseline_rss_mb": round(base_rss / 1024, 1),
        "features": {"seed": int(F.shape[1]), "strong": int(Fs.shape[1])},
        "errors": list(errors),
    }


def _measure(n: int, mode: str, block_rows: int, seed: int) -> dict:
    env = dict(os.environ, **{v: "1" for v in THREAD_VARS})
    cmd = [sys.executable, __file__, "--child", str(n), mode, str(block_rows), str(seed)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _exponent(rows: list[dict], key: str) -> float | None:
    if len(rows) < 2:
        return None
    x = np.log([r["n"] for r in rows])
    y = np.log([max(r[key], 1e-9) for r in rows])
    return round(float(np.polyfit(x, y, 1)[0]), 2)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        n, mode, block_rows, seed = sys.argv[2:6]
        print(json.dumps(_child(int(n), mode, int(block_rows), int(seed))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--block-rows", type=int, default=BLOCK_ROWS)
    parser.add_argument("--whole-max", type=int, default=5000, help="largest n run whole")
    parser.add_argument("--seed", type=int, default=2020)
    args = parser.parse_args()

    from common import RESULTS, machine_info

    from mimic_deid.core.atomic import write_json

    rows = []
    for n in args.sizes:
        for mode in ("blocked", "whole"):
            if mode == "whole" and n > args.whole_max:
                continue
            row = _measure(n, mode, args.block_rows, args.seed)
            row["above_baseline_mb"] = round(row["peak_rss_mb"] - row["baseline_rss_mb"], 1)
            rows.append(row)
            print(
                f"n={n:>6} {mode:>7}: {row['wall_s']:8.1f} s wall, {row['cpu_s']:8.1f} s CPU, "
                f"peak {row['peak_rss_mb']:8.1f} MB",
                flush=True,
            )
    summary = {}
    for mode in ("blocked", "whole"):
        sel = [r for r in rows if r["mode"] == mode]
        summary[mode] = {
            "time_exponent": _exponent(sel, "wall_s"),
            "memory_exponent": _exponent(sel, "above_baseline_mb"),
        }
        print(
            f"{mode}: growth exponent time {summary[mode]['time_exponent']}, "
            f"memory above baseline {summary[mode]['memory_exponent']}"
        )
    write_json(
        {"machine": machine_info(), "length_h": LENGTH, "rows": rows, "growth": summary},
        RESULTS / "privacy_blocks.json",
    )


if __name__ == "__main__":
    main()
