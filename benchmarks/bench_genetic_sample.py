"""The genetic `deidentify` job's search on a sample of a run's release, side by side.

Issue 30 point 3 judges the full-size genetic `stays` job (about 20 min of two cores); a change
to the search is measured on a sample of that release instead, as the job computes it: every
``--class-step``-th duration class of the run's release and every ``--series-step``-th series
of each, with the run's Mondrian targets, through the job's own library call
(:func:`mimic_deid.deid.apply_method`, the config's default genetic point, the run's seed, one
thread). A run prints and records CPU seconds (this process: reading the release and the
search, each), the wall time, the mean unfeasibility, distortion and generations per series,
and a SHA-256 of the perturbed series.

``--vs SRC`` compares two versions of the library: ``SRC`` is another checkout's ``src``
directory. The script then runs itself ``--pairs`` times as A (this checkout) and B (``SRC``)
in alternation (A B A B ..., after one warm-up pair that also fills Numba's cache), each run
a fresh process, and records per pair the ratio A / B of the search's CPU seconds and their
median: the figure to compare on a shared machine.

    python benchmarks/bench_genetic_sample.py --run-dir DIR
    python benchmarks/bench_genetic_sample.py --run-dir DIR --vs ../base/src --pairs 3

``DIR`` holds a run with the inputs of the `stays` `deidentify` job (series, meta, duration
classes and targets of the first dk, fk and heuristic of its config), e.g. the work directory of
``benchmarks/full_scale.py``. Writes ``benchmarks/results/genetic_sample.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from common import RESULTS, genetic_label, git_commit, machine_info, path, workflow_config

RELEASE = "stays"


def job_paths(config: dict) -> dict[str, str]:
    """The `stays` `deidentify` job's inputs of the first sweep point, relative to the run."""
    point = {
        "release": RELEASE,
        "dk": config["deid"]["dk"][0],
        "fk": config["deid"]["fk"][0],
        "heuristic": config["deid"]["heuristic"][0],
    }
    return {
        "series": path("series", release=RELEASE),
        "meta": path("meta", release=RELEASE),
        "classes": path("duration", release=RELEASE, dk=point["dk"]),
        "targets": path("targets", **point),
    }


def measure(run_dir: Path, class_step: int, series_step: int) -> dict:
    """One measurement in this process: read the release, sample it, run the search."""
    from mimic_deid.core.seeding import master_seed
    from mimic_deid.deid import apply_method, read_release_classes
    from mimic_deid.deid.classes import ClassArray
    from mimic_deid.deid.features import protected_features

    config = workflow_config(run_dir)
    files = {name: run_dir / rel for name, rel in job_paths(config).items()}
    missing = [str(f) for f in files.values() if not f.is_file()]
    if missing:
        raise SystemExit(f"{run_dir} has no {', '.join(missing)}; run its stays targets first")
    cpu0, wall0 = time.process_time(), time.monotonic()
    classes, dims, _ = read_release_classes(files["series"], files["classes"], files["meta"], None)
    targets = pd.read_parquet(files["targets"])
    sample = [
        ClassArray(c.group, c.length, c.keys[::series_step], c.X[::series_step], c.part)
        for c in classes[::class_step]
    ]
    read_cpu = time.process_time() - cpu0
    label = genetic_label(config)
    cpu1, wall1 = time.process_time(), time.monotonic()
    perturbed, per_series, _ = apply_method(
        sample,
        dims,
        targets,
        protected_features(config["deid"]["features"], dims, config["release"]["variables"]),
        label=label,
        seed=master_seed(config["seed"], config["source"]["kind"], run_dir / path("master_seed"))[
            0
        ],
        threads=1,
        fk=int(config["deid"]["fk"][0]),
    )
    search_cpu, search_wall = time.process_time() - cpu1, time.monotonic() - wall1
    digest = hashlib.sha256(pd.util.hash_pandas_object(perturbed, index=False).values).hexdigest()
    means = per_series.select_dtypes("number").mean()
    return {
        "label": label,
        "classes": len(sample),
        "series": int(sum(len(c.keys) for c in sample)),
        "series_hours": int(sum(len(c.keys) * c.length for c in sample)),
        "read_cpu_seconds": round(read_cpu, 2),
        "search_cpu_seconds": round(search_cpu, 2),
        "search_wall_seconds": round(search_wall, 2),
        "process_wall_seconds": round(time.monotonic() - wall0, 2),
        "mean_per_series": {k: round(float(v), 4) for k, v in means.items() if k != "icustay_id"},
        "perturbed_sha256": digest,
    }


def run_child(src: Path, args: argparse.Namespace) -> dict:
    """:func:`measure` in a fresh process importing the library from ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, __file__, "--run-dir", str(args.run_dir), "--child"]
    cmd += ["--class-step", str(args.class_step), "--series-step", str(args.series_step)]
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)  # stderr shown
    if proc.returncode != 0:
        raise SystemExit(
            f"the measurement with the library of {src} failed (exit {proc.returncode})"
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--class-step", type=int, default=10)
    parser.add_argument("--series-step", type=int, default=8)
    parser.add_argument("--vs", type=Path, help="the other version's src directory (B)")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "genetic_sample.json")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.run_dir = args.run_dir.resolve()

    if args.child:
        print(json.dumps(measure(args.run_dir, args.class_step, args.series_step)))
        return
    here = Path(__file__).resolve().parents[1] / "src"
    record: dict = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "commit": git_commit(),
        "machine": machine_info(),
        "run_dir": str(args.run_dir),
        "class_step": args.class_step,
        "series_step": args.series_step,
    }
    if args.vs is None:
        record["run"] = run_child(here, args)
        print(json.dumps(record["run"], indent=1))
    else:
        vs = args.vs.resolve()
        record["vs_src"] = str(vs)
        record["vs_commit"] = git_commit(vs.parent)
        run_child(here, args), run_child(vs, args)  # warm-up pair: Numba's caches, page cache
        pairs = []
        for i in range(args.pairs):
            a, b = run_child(here, args), run_child(vs, args)
            ratio = a["search_cpu_seconds"] / b["search_cpu_seconds"]
            pairs.append({"a": a, "b": b, "ratio": round(ratio, 4)})
            print(
                f"pair {i + 1}: A {a['search_cpu_seconds']} s, B {b['search_cpu_seconds']} s"
                f" CPU of the search, A / B {ratio:.3f}; load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
        record["pairs"] = pairs
        record["median_ratio"] = round(statistics.median(p["ratio"] for p in pairs), 4)
        record["same_output"] = all(
            p["a"]["perturbed_sha256"] == p["b"]["perturbed_sha256"] for p in pairs
        )
        print(f"median A / B: {record['median_ratio']:.3f}; same output: {record['same_output']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
