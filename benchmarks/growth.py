"""Growth of every job's cost with the cohort: exponents from runs at several sizes.

Reads the per-job records (Snakemake's ``benchmark:`` directives, ``logs/benchmarks/**.tsv``)
of finished runs of the same config at different sizes (``benchmarks/full_scale.py
--subjects N --workdir DIR``) and fits, per job, ``cost ~ subjects ** b`` by least squares on
the logs: ``b`` = 1 is linear growth. CPU time is the cost (wall time is also fitted); each
job's start-up (interpreter, imports: about 1-3 s of CPU) is a constant part of it, so small
jobs show exponents below their algorithm's.

    python benchmarks/growth.py --run 3000:RUN_A --run 12000:RUN_B --run 46520:RUN_C

Writes benchmarks/results/growth.json and prints a Markdown table for benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
from common import git_commit
from full_scale import ROOT, stage_table

#: Jobs whose CPU at the largest size is below this are listed but not judged: their cost is
#: mostly start-up, so their exponent says nothing about the algorithm.
MIN_CPU_SECONDS = 5.0
#: Issue 30's goal: no job grows faster than this.
GOAL = 1.2


def job_key(job: str) -> str:
    """A job's record path with the size taken out (``synthesize/n3000-s1`` -> ``n*-s1``)."""
    return re.sub(r"\bn\d+-s", "n*-s", job)


def exponent(sizes: np.ndarray, costs: np.ndarray) -> float:
    """Least-squares slope of log(cost) on log(size); NaN if a cost is missing or zero."""
    if len(sizes) < 2 or np.any(~np.isfinite(costs)) or np.any(costs <= 0):
        return float("nan")
    return float(np.polyfit(np.log(sizes), np.log(costs), 1)[0])


def growth_table(runs: dict[int, Path]) -> pd.DataFrame:
    """One row per job present in every run: its CPU and wall time per size and exponents.

    Parameters
    ----------
    runs : mapping of int to Path
        Subjects -> the run directory made with that many.

    Returns
    -------
    DataFrame
        ``job``; ``cpu_<n>`` and ``wall_<n>`` (s) per size; ``cpu_exponent``,
        ``wall_exponent`` (all sizes) and ``cpu_exponent_top`` (the two largest sizes);
        ``judged`` (CPU at the largest size >= :data:`MIN_CPU_SECONDS`).
    """
    sizes = sorted(runs)
    frames = []
    for n in sizes:
        jobs = stage_table(runs[n])
        jobs["job"] = jobs["job"].map(job_key)
        frames.append(
            jobs.set_index("job")[["cpu_seconds", "seconds"]].rename(
                columns={"cpu_seconds": f"cpu_{n}", "seconds": f"wall_{n}"}
            )
        )
    table = pd.concat(frames, axis=1, join="inner").reset_index()
    cpu = table[[f"cpu_{n}" for n in sizes]].to_numpy(dtype=np.float64)
    wall = table[[f"wall_{n}" for n in sizes]].to_numpy(dtype=np.float64)
    n = np.asarray(sizes, dtype=np.float64)
    table["cpu_exponent"] = [exponent(n, row) for row in cpu]
    table["wall_exponent"] = [exponent(n, row) for row in wall]
    table["cpu_exponent_top"] = [exponent(n[-2:], row[-2:]) for row in cpu]
    table["judged"] = cpu[:, -1] >= MIN_CPU_SECONDS
    return table.sort_values("cpu_exponent", ascending=False, na_position="last")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--run",
        action="append",
        required=True,
        metavar="SUBJECTS:DIR",
        help="a finished run and its size (three or more sizes)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "growth.json")
    args = parser.parse_args()
    runs = {}
    for spec in args.run:
        subjects, _, directory = spec.partition(":")
        if not subjects.isdigit() or not Path(directory).is_dir():
            parser.error(f"--run {spec!r}: expected SUBJECTS:DIR with DIR a finished run")
        runs[int(subjects)] = Path(directory)
    table = growth_table(runs)
    judged = table[table["judged"]]
    over = judged[judged["cpu_exponent"] > GOAL]
    record = {
        "date": time.strftime("%Y-%m-%d"),
        "commit": git_commit(),
        "sizes": sorted(runs),
        "goal": GOAL,
        "min_cpu_seconds": MIN_CPU_SECONDS,
        "jobs": json.loads(table.to_json(orient="records")),
        "over_goal": over["job"].tolist(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    sizes = sorted(runs)
    print(f"{len(table)} jobs in every run; {len(judged)} judged; {len(over)} above {GOAL}")
    head = " | ".join(f"CPU {n:,} (s)" for n in sizes)
    print(f"| job | {head} | exponent (CPU) | largest two | wall exponent |")
    print("|---|" + "---:|" * (len(sizes) + 3))
    for row in table.to_dict("records"):
        cells = " | ".join(f"{row[f'cpu_{n}']:.1f}" for n in sizes)
        mark = "" if row["judged"] else " (start-up)"
        print(
            f"| {row['job']}{mark} | {cells} | {row['cpu_exponent']:.2f} "
            f"| {row['cpu_exponent_top']:.2f} | {row['wall_exponent']:.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
