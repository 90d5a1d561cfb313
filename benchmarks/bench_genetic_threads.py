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

On a shared machine CPU/wall also measures the other jobs. `--schedule 2` adds a figure that
does not: every (class, chunk) task of the same release is run alone in this process and timed
(CPU seconds), then the dispatch of `mimic_deid.core.threads.map_tasks` (largest cost first, the
next task to the first free worker) is replayed on that many idle workers; total task CPU
over the resulting makespan is the CPU/wall the job reaches on an idle machine (its serial
part, planning and assembling in the parent, is timed too and added to the makespan). The same
tasks grouped per class (the former scheduling: one class = one task) give the figure before
the change.

    python benchmarks/bench_genetic_threads.py --series 1000 --threads 1 2

Writes `benchmarks/results/genetic_threads.json` (`--out`). For a side-by-side wall-time ratio on a
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

from mimic_deid.core.seeding import derive_rng
from mimic_deid.core.threads import pin_threads
from mimic_deid.deid import REGISTRY, ClassArray, apply_method, feature_spec, mondrian_targets
from mimic_deid.deid.methods import method_labels, parse_method_label
from mimic_deid.deid.targets import class_target_matrix

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
        X = synth_class(derive_rng(seed, L), n, L, dims)
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


def makespan(cpu: list[float], costs: list[float], workers: int) -> float:
    """Finish time of ``map_tasks``' dispatch on idle workers: largest cost first, each task
    to the first free worker."""
    free = [0.0] * workers
    for i in sorted(range(len(cpu)), key=lambda i: -costs[i]):
        w = free.index(min(free))
        free[w] += cpu[i]
    return max(free)


def schedule(classes, dims, targets, features, label, seed, workers) -> dict:
    """Idle-machine CPU/wall of the chunked and of the per-class scheduling (module docstring)."""
    c0 = time.process_time()
    spec = feature_spec(features, dims)
    name, params = parse_method_label(label)
    plans = [
        REGISTRY[name].plan(
            cls.X,
            class_target_matrix(targets, cls, spec),
            spec,
            params,
            derive_rng(seed, label, cls.group, cls.length),
        )
        for cls in classes
    ]
    tasks, costs, owner = [], [], []
    for k, plan in enumerate(plans):
        tasks += plan.tasks()
        costs += plan.chunk_costs()
        owner += [k] * plan.n_chunks
    serial = time.process_time() - c0
    cpu, results = [], []
    for task in tasks:
        t0 = time.process_time()
        results.append(task())
        cpu.append(time.process_time() - t0)
    c1, start = time.process_time(), 0
    for plan in plans:
        plan.assemble(results[start : start + plan.n_chunks])
        start += plan.n_chunks
    serial += time.process_time() - c1
    class_cpu = [
        sum(c for c, o in zip(cpu, owner, strict=True) if o == k) for k in range(len(plans))
    ]
    class_cost = [c.X.shape[0] * c.X.shape[1] for c in classes]
    total = sum(cpu) + serial
    chunked = makespan(cpu, costs, workers) + serial
    per_class = makespan(class_cpu, class_cost, workers) + serial
    return {
        "workers": workers,
        "tasks": len(tasks),
        "task_cpu_s": round(sum(cpu), 2),
        "largest_task_cpu_s": round(max(cpu), 2),
        "serial_cpu_s": round(serial, 2),
        "chunked_makespan_s": round(chunked, 2),
        "chunked_cpu_per_wall": round(total / chunked, 3),
        "per_class_makespan_s": round(per_class, 2),
        "per_class_cpu_per_wall": round(total / per_class, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=1000, help="series in the release")
    parser.add_argument("--share", type=float, default=0.85, help="share of the 48-h class")
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--seed", type=int, default=2020)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--out", default="genetic_threads.json", help="file in benchmarks/results")
    parser.add_argument(
        "--schedule", type=int, default=0, help="idle-machine estimate for this many workers"
    )
    args = parser.parse_args()

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    features = config["deid"]["features"]
    label = method_labels({"genetic": config["deid"]["methods"]["genetic"]})[0]
    machine = machine_info()  # load average at the start
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
    sched = None
    if args.schedule:
        sched = schedule(classes, dims, targets, features, label, args.seed, args.schedule)
        print(
            f"idle-machine schedule on {sched['workers']} workers: {sched['tasks']} tasks, "
            f"{sched['task_cpu_s']} s task CPU (largest {sched['largest_task_cpu_s']} s) + "
            f"{sched['serial_cpu_s']} s serial; CPU/wall {sched['chunked_cpu_per_wall']} "
            f"(chunks) vs {sched['per_class_cpu_per_wall']} (one task per class)"
        )
    identical = len({r["sha256"] for r in runs}) == 1 if runs else None
    if runs:
        print(f"same output for every thread count: {identical}")
    if not args.no_write:
        record = {
            "machine": machine,
            "series": sum(sizes),
            "class_sizes": {str(c.length): len(c.keys) for c in classes},
            "method": label,
            "runs": runs,
            "identical_output": identical,
            "schedule": sched,
        }
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / args.out).write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
