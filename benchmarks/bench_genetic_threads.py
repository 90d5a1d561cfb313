"""The genetic optimiser's use of a job's threads on a release dominated by one duration class.

Issue 13 point 7: on a release where one class holds ~85 % of the series, the `deidentify` job
(the library call `mimic_deid.deid.apply_method`, as `workflow/scripts/deidentify.py` makes it)
must keep both cores busy, CPU/wall >= 1.7 on 2 cores. This script builds such a release from
generated classes (AR(1) physiology of `benchmarks/common.py`): one 48-h class with `--share`
of `--series` series, and the rest spread evenly over six classes of 18-240 h; Mondrian targets
(fk 10, range) and the config's default genetic point; then it runs `apply_method` with each
`--threads` value and prints, per run, wall and CPU seconds (this process plus its worker
processes, `resource.getrusage`), CPU/wall, the 1-minute load average before and after, and a
SHA-256 of the perturbed series (equal for every thread count: same seed and chunking).

    python benchmarks/bench_genetic_threads.py --series 1000 --threads 1 2

Writes `benchmarks/results/genetic_threads.json`. For a side-by-side wall-time ratio on a
noisy machine, time two invocations that differ only in `--threads` in alternation with
`--no-write` (each run then prints its own figures).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import time

import numpy as np
import pandas as pd
import yaml
from common import RESULTS, ROOT, machine_info, series_dims, synth_class

from mimic_deid.deid import ClassArray, apply_method, mondrian_targets
from mimic_deid.deid.methods import method_labels
from mimic_deid.threads import pin_threads

SMALL_LENGTHS = (18, 30, 72, 96, 150, 240)  # hours of the other classes
BIG_LENGTH = 48


def build_release(n_series: int, share: float, seed: int) -> tuple[list[ClassArray], list[str]]:
    """One ``BIG_LENGTH``-h class with ``share`` of the series, the rest over SMALL_LENGTHS."""
    dims = series_dims()
    n_big = round(n_series * share)
    rest = n_series - n_big
    sizes = [(BIG_LENGTH, n_big)] + [
        (L, rest // len(SMALL_LENGTHS) + (i < rest % len(SMALL_LENGTHS)))
        for i, L in enumerate(SMALL_LENGTHS)
    ]
    classes, key = [], 0
    for L, n in sizes:
        if n == 0:
            continue
        X = synth_class(np.random.default_rng([seed, L]), n, L, dims)
        classes.append(ClassArray("all", L, np.arange(key, key + n, dtype=np.int64), X))
        key += n
    return classes, dims


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its reaped children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def digest(frame: pd.DataFrame) -> str:
    """SHA-256 of a frame's columns: names, then the bytes of numeric columns or the text of
    the others."""
    h = hashlib.sha256()
    for name in frame.columns:
        h.update(name.encode())
        values = frame[name].to_numpy()
        if values.dtype.kind in "biuf":
            h.update(np.ascontiguousarray(values).tobytes())
        else:
            h.update("\0".join(map(str, values)).encode())
    return h.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=1000, help="series in the release")
    parser.add_argument("--share", type=float, default=0.85, help="share of the 48-h class")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seed", type=int, default=2020)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    features = config["deid"]["features"]
    label = method_labels({"genetic": config["deid"]["methods"]["genetic"]})[0]
    pin_threads(1)  # this process's own BLAS; the workers are pinned by map_tasks
    classes, dims = build_release(args.series, args.share, args.seed)
    targets, _ = mondrian_targets(classes, dims, features, fk=10, heuristic="range")
    sizes = [len(c.keys) for c in classes]
    print(
        f"release: {sum(sizes)} series in {len(classes)} classes; largest {sizes[0]} x "
        f"{BIG_LENGTH} h ({sizes[0] / sum(sizes):.0%}); method {label}"
    )
    runs = []
    for threads in args.threads:
        load0 = os.getloadavg()[0]
        w0, c0 = time.perf_counter(), cpu_seconds()
        perturbed, per_series, _ = apply_method(
            classes, dims, targets, features, label, seed=args.seed, threads=threads
        )
        wall, cpu = time.perf_counter() - w0, cpu_seconds() - c0
        run = {
            "threads": threads,
            "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2),
            "cpu_per_wall": round(cpu / wall, 3),
            "load_1min_before": round(load0, 2),
            "load_1min_after": round(os.getloadavg()[0], 2),
            "unfeasibility_mean": round(float(per_series["unfeasibility"].mean()), 4),
            "sha256": digest(perturbed),
        }
        runs.append(run)
        print(
            f"threads {threads}: wall {wall:.1f} s, CPU {cpu:.1f} s, CPU/wall {cpu / wall:.2f} "
            f"(load {run['load_1min_before']} -> {run['load_1min_after']}); "
            f"unfeasibility {run['unfeasibility_mean']}; sha256 {run['sha256'][:16]}"
        )
    identical = len({r["sha256"] for r in runs}) == 1
    print(f"same output for every thread count: {identical}")
    if not args.no_write:
        record = {
            "machine": machine_info(),
            "series": sum(sizes),
            "class_sizes": {str(c.length): len(c.keys) for c in classes},
            "method": label,
            "runs": runs,
            "identical_output": identical,
        }
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "genetic_threads.json").write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
