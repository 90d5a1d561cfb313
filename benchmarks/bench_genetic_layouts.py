"""Genetic optimiser on the seed's tuning series: layout x initial population x stopping rule.

Seed §6.2 Table 6.2 (All classes: unfeasibility 2.13, distortion 9.86, 1,728 iterations on
average) is reproduced when each (series, feature dimension) is its own problem. This script
runs the project's tuning table (``mimic_deid.deid.tuning_table``: 20 series from each of the
classes nearest 5/25/50/75/100 h, Mondrian k = 5 on the whole class) for the ad-hoc optimiser
and for every combination of

- layout: ``series_dimension`` (one problem per series and dimension) or ``joint``;
- init: ``gaussian`` (the seed's) or ``mean_shift``;
- stopping rule: ``project`` (patience 100, at most 600 generations) or ``seed`` (patience 300,
  at most 10,000),

with the other parameters at the seed's choice (NA fitness, population 24, tournament 5,
2 parents, mutation sd 3 / probability 0.2, init sd 1), and records per variant the
All-classes unfeasibility, distortion, mean iterations, wall and CPU seconds.

Usage: ``python benchmarks/bench_genetic_layouts.py --run-dir DIR`` where ``DIR`` holds a run
with ``results/private/series/stays/series.parquet`` and the ``stays`` duration classes of the
first ``dk`` (``snakemake --cores 2 results/private/stays/dk50/duration.parquet``); writes
``benchmarks/results/genetic_layouts.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd
import yaml
from common import RESULTS, ROOT, machine_info

from mimic_deid.deid import class_arrays, tuning_table
from mimic_deid.deid.methods import method_label

SEED_PARAMS = {
    "fitness": "NA",
    "population": 24,
    "tournament": 5,
    "parents": 2,
    "mutation_sd": 3.0,
    "mutation_prob": 0.2,
    "init_sd": 1.0,
    "normalise_features": False,
}
STOPPING = {"project": (100, 600), "seed": (300, 10_000)}
#: The features of the shipped configuration (tuning drops height and weight, as the seed).
FEATURES = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["deid"]["features"]


def variants(quick: bool) -> list[tuple[str, str]]:
    """``(name, method label)`` of every variant measured."""
    out = [("ad-hoc", method_label("adhoc", {"iterations": 50, "noise_sd": 0.01}))]
    for stop, (patience, cap) in STOPPING.items():
        if quick and stop == "seed":
            continue
        for layout in ("series_dimension", "joint"):
            for init in ("gaussian", "mean_shift"):
                params = dict(SEED_PARAMS, patience=patience, max_iterations=cap)
                params.update(layout=layout, init=init)
                out.append((f"{layout} / {init} / {stop}", method_label("genetic", params)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--dk", type=int, default=50)
    parser.add_argument("--seed", type=int, default=2020)
    parser.add_argument("--normalise", action="store_true", help="also with normalise_features")
    parser.add_argument("--quick", action="store_true", help="project stopping rule only")
    args = parser.parse_args()
    series = pd.read_parquet(args.run_dir / "results/private/series/stays/series.parquet")
    classes = pd.read_parquet(args.run_dir / f"results/private/stays/dk{args.dk}/duration.parquet")
    arrays, dims = class_arrays(series, classes)
    rows = []
    todo = variants(args.quick)
    if args.normalise:
        todo += [
            (f"{name} / normalised", label.replace("-norm0-", "-norm1-"))
            for name, label in todo
            if label.startswith("genetic") and "-pat100-" in label
        ]
    for name, label in todo:
        wall, cpu = time.perf_counter(), time.process_time()
        table = tuning_table(arrays, dims, FEATURES, label, args.seed)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        overall = table.iloc[-1]
        row = {
            "variant": name,
            "method": label,
            "series": int(overall["series"]),
            "unfeasibility": round(float(overall["unfeasibility"]), 3),
            "distortion": round(float(overall["distortion"]), 3),
            "iterations": round(float(overall["iterations"]), 1),
            "wall_s": round(wall, 1),
            "cpu_s": round(cpu, 1),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    record = {
        "machine": machine_info(),
        "run_dir": str(args.run_dir),
        "features": FEATURES,
        "seed_table_6_2_all_classes": {"unfeasibility": 2.13, "distortion": 9.86},
        "rows": rows,
    }
    out = RESULTS / "genetic_layouts.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(pd.DataFrame(rows).drop(columns="method").to_markdown(index=False))
    print(f"written {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
