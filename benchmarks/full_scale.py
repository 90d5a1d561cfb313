"""Full-scale run: the whole workflow on a MIMIC-III-size synthetic database.

Runs real `snakemake` (``rule all``: every stage, every default release method) in a work
directory whose config is the shipped default with only the source size changed, then
tabulates the per-job records Snakemake's `benchmark:` directives wrote (wall time, CPU time,
peak RSS and PSS) and the costliest jobs, with the 1-minute load average of the machine
sampled during the run (a shared machine inflates the wall time, not the CPU times).

    python benchmarks/full_scale.py --subjects 46520 --cores 2
    python benchmarks/full_scale.py --point genetic     # the earlier one-point record
    python benchmarks/full_scale.py --target results/ihm48/.../privacy/linkage.json

``--target`` (repeatable) runs only what those files need instead of ``rule all`` (paths
relative to the work directory), e.g. one rule's growth at several sizes.

``--point genetic`` replaces the method list by the default genetic point alone (the record of
2026-11-22).

Writes benchmarks/results/full_scale.json and prints a Markdown table for
benchmarks/README.md. The work directory (default benchmarks/work/full) is git-ignored.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import yaml
from common import git_commit

from mimic_deid.core.logs import FINISH_USAGE

ROOT = Path(__file__).resolve().parents[1]

# One sweep point: the config defaults with the genetic optimiser only,
# the slowest component of the seed.
POINT = {
    "deid": {
        "dk": [50],
        "fk": [10],
        "heuristic": ["range"],
        "methods": {
            "genetic": yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["deid"][
                "methods"
            ]["genetic"]
        },
    }
}


def stage_table(workdir: Path) -> pd.DataFrame:
    """One row per job from logs/benchmarks/**/*.tsv: rule, wildcards path, s, CPU s, and the
    job's peak memory in MB two ways: ``max_rss`` sums the resident sets of the job's process
    tree, so pages a forked worker shares with its parent count twice; ``max_pss`` (the
    proportional set size) counts every page once, the memory the job takes from the machine
    (what a cgroup, e.g. a SLURM allocation, charges).

    Snakemake samples those every 0.5 s for the first 15 s of a job and then every 30 s, so
    they miss up to 30 s of a job's CPU and any peak between samples. Where the job's log
    (the record's path under ``logs/`` instead of ``logs/benchmarks/``) ends with the stage's
    finishing line (:data:`mimic_deid.core.logs.FINISH_USAGE`), ``cpu_seconds`` is instead the
    operating system's exact figure for the job's process and its finished workers, and
    ``process_rss_mb`` the exact peak RSS of its largest single process (else None)."""
    rows = []
    for tsv in sorted((workdir / "logs" / "benchmarks").rglob("*.tsv")):
        record = pd.read_csv(tsv, sep="\t").iloc[-1]
        rel = tsv.relative_to(workdir / "logs" / "benchmarks")
        usage = _finish_usage(workdir / "logs" / rel.with_suffix(".log"))
        sampled_cpu = _number(record.get("cpu_time", "-"))
        rows.append(
            {
                "job": str(rel.with_suffix("")),
                "seconds": float(record["s"]),
                "cpu_seconds": usage[0] if usage else sampled_cpu,
                "sampled_cpu_seconds": sampled_cpu,
                "max_rss_mb": _number(record["max_rss"]),
                "max_pss_mb": _number(record.get("max_pss", "-")),
                "process_rss_mb": usage[1] if usage else None,
                "mtime": tsv.stat().st_mtime,
            }
        )
    return pd.DataFrame(rows)


def _finish_usage(log: Path) -> tuple[float, float] | None:
    """(CPU s, peak RSS MB) from the last finishing line of a job's log, or None."""
    if not log.exists():
        return None
    for line in reversed(log.read_text(errors="replace").splitlines()):
        if m := FINISH_USAGE.search(line):
            return float(m["cpu"]), float(m["rss"])
    return None


class LoadSampler:
    """The machine's 1-minute load average (``/proc/loadavg``) every ``every_s`` seconds, in a
    thread, while the ``with`` block runs; :meth:`summary` gives its minimum, median and
    maximum (None where the file does not exist)."""

    def __init__(self, every_s: float = 30.0) -> None:
        self.every_s = every_s
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        path = Path("/proc/loadavg")
        while path.exists():
            self.samples.append(float(path.read_text().split()[0]))
            if self._stop.wait(self.every_s):
                return

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict | None:
        if not self.samples:
            return None
        s = sorted(self.samples)
        return {"min": s[0], "median": s[len(s) // 2], "max": s[-1], "samples": len(s)}


def _max(values: pd.Series) -> float | None:
    """The largest non-null value, or None."""
    values = values.dropna()
    return float(values.max()) if len(values) else None


def _number(value) -> float | None:
    """A benchmark record's field as a float; Snakemake writes ``-`` when it has none."""
    return None if value == "-" or pd.isna(value) else float(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", type=int, default=46520)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument(
        "--point",
        choices=("default", "genetic"),
        default="default",
        help="default: the shipped config (rule all); genetic: the default genetic point only",
    )
    parser.add_argument(
        "--target",
        action="append",
        default=[],
        help="a file to build instead of rule all (repeatable; relative to the work directory)",
    )
    parser.add_argument("--workdir", type=Path, default=ROOT / "benchmarks" / "work" / "full")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "full_scale.json"
    )
    args = parser.parse_args()

    args.workdir.mkdir(parents=True, exist_ok=True)
    (args.workdir / "config").mkdir(exist_ok=True)
    # The shipped config files beside the run's own config.yaml (the config refers to them
    # by relative path: schema, variables, hierarchies).
    for source in sorted((ROOT / "config").glob("*.yaml")):
        if source.name != "config.yaml":
            (args.workdir / "config" / source.name).write_text(source.read_text())
    # A whole config file rather than a --configfile override: overrides merge into the
    # defaults, and the point must replace the default optimiser list, not extend it.
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["source"]["synthetic"] = {"subjects": args.subjects, "seed": 1}
    if args.point == "genetic":
        config["deid"].update(POINT["deid"])
    (args.workdir / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        *args.target,
        "-s",
        str(ROOT / "Snakefile"),
        "-d",
        str(args.workdir),
    ]
    cmd += ["--cores", str(args.cores), "--rerun-incomplete"]
    started_at = time.time()
    start = time.monotonic()
    with open(args.workdir / "snakemake.log", "w") as log, LoadSampler() as load:
        proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        print(f"snakemake failed (exit {proc.returncode}); see {args.workdir / 'snakemake.log'}")
        return proc.returncode

    jobs = stage_table(args.workdir)
    # Only the jobs of this invocation: a reused work directory keeps older records.
    jobs = jobs[jobs["mtime"] >= started_at].drop(columns="mtime")
    counts = json.loads((args.workdir / "results/private/cohort/cohort.json").read_text())
    record = {
        "subjects": args.subjects,
        "cores": args.cores,
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "point": args.point,
        "targets": args.target or ["all"],
        "commit": git_commit(),
        "date": time.strftime("%Y-%m-%d"),
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(float(jobs["cpu_seconds"].sum()), 1),
        "cohort": counts["rules"],
        "jobs": jobs.to_dict(orient="records"),
        "peak_rss_mb": float(jobs["max_rss_mb"].max()),
        "peak_pss_mb": float(jobs["max_pss_mb"].max()),
        "peak_process_rss_mb": _max(jobs["process_rss_mb"]),
        "load_1min": load.summary(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(
        f"end to end: {wall / 60:.1f} min on {args.cores} cores; peak RSS "
        f"{record['peak_rss_mb']:.0f} MB, PSS {record['peak_pss_mb']:.0f} MB (sampled), "
        f"largest process {record['peak_process_rss_mb'] or 0:.0f} MB (exact); 1-min load "
        f"{record['load_1min']}"
    )
    print(f"{len(jobs)} jobs, CPU {record['cpu_seconds'] / 60:.1f} min in all")
    print(
        "| job | wall time (s) | CPU (s) | peak RSS (MB) | peak PSS (MB) | largest process (MB) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for row in jobs.sort_values("seconds", ascending=False).itertuples():
        print(
            f"| {row.job} | {row.seconds:.1f} | {row.cpu_seconds or 0:.1f} | "
            f"{row.max_rss_mb or 0:.0f} | {row.max_pss_mb or 0:.0f} | "
            f"{row.process_rss_mb or 0:.0f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
