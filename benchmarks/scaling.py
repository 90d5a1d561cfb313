"""Benchmark: the workflow at 1, 2, 4, ... cores, with its critical path (issue 47).

Runs the default workflow (the shipped config, or ``--configfile`` over it) once per core
count, each from an empty work directory (the shipped config files copied into it; the
synthetic copy generated inside each run, as a user's first run does), and records per count:

- ``wall``: the ``snakemake`` invocation from start to end (start-up and parsing included);
- ``cpu``: user + system seconds of the invocation's whole process tree (``os.wait4``), and
  ``cpu / wall``;
- the **critical path**: the longest chain of jobs through the DAG, each weighted by its own
  wall time, from Snakemake's per-job records (``.snakemake/metadata``: every output file's
  rule, inputs, job start and modification time; a job is the outputs of one ``job_hash``,
  and job B follows job A when one of B's inputs is one of A's outputs); ``span``: the first job's start to the
  last job's end. The ratio ``cpu / critical path`` bounds the speed-up any number of cores
  can give this DAG (issue 47's goal: at least 6).

With the same config and seed every run must give the same result bytes: the script compares
the SHA-256 of every file under ``results/`` and ``resources/`` of each run with the first
run's, records the files that differ and exits 1 naming them (nothing is excluded: the
reports hold no timings, but they name the checkout's commit, so the runs must be of one
commit).

    python benchmarks/scaling.py                       # 1, 2, ... up to os.cpu_count()
    python benchmarks/scaling.py --cores 1 2 --configfile tests_tiny.yaml --name tiny

Writes ``benchmarks/results/scaling[-NAME].json`` and prints a Markdown table for
benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import RESULTS, ROOT, digests, git_commit, machine_info, run_process

#: The CPU figure of a job's last log line (``core.logs.run_stage``).
FINISHED = re.compile(r"finished in [0-9.]+ s \(CPU ([0-9.]+) s")


def default_cores() -> list[int]:
    """1, 2, 4, ... and the machine's core count."""
    top = os.cpu_count() or 1
    counts, n = [], 1
    while n < top:
        counts.append(n)
        n *= 2
    return [*counts, top]


def job_records(workdir: Path) -> list[dict[str, Any]]:
    """The run's jobs from Snakemake's metadata: rule, outputs, inputs, start, end (s).

    Snakemake keeps one record per output file: ``starttime`` is when the job marked that
    output incomplete (the job's start), ``endtime`` the output's modification time, and
    ``job_hash`` is the same for every output of a job. A job starts at its outputs' first
    ``starttime`` and ends at their last ``endtime`` (not before it starts: an output copied
    with its source's time keeps an older one).
    """
    jobs: dict[tuple, dict[str, Any]] = {}
    folder = workdir / ".snakemake" / "metadata"
    for meta in sorted(folder.iterdir()):
        record = json.loads(meta.read_text())
        if record.get("starttime") is None or record.get("endtime") is None:
            continue
        output = base64.urlsafe_b64decode(meta.name + "=" * (-len(meta.name) % 4)).decode()
        start, end = float(record["starttime"]), float(record["endtime"])
        job = jobs.setdefault(
            (record["rule"], record["job_hash"]),
            {
                "rule": record["rule"],
                "outputs": [],
                "inputs": list(record.get("input") or []),
                "logs": list(record.get("log") or []),
                "start": start,
                "end": end,
            },
        )
        job["outputs"].append(output)
        job["start"], job["end"] = min(job["start"], start), max(job["end"], end)
    for job in jobs.values():
        job["end"] = max(job["end"], job["start"])
    return sorted(jobs.values(), key=lambda j: (j["start"], j["rule"]))


def job_cpu(workdir: Path, job: dict[str, Any]) -> float | None:
    """A job's CPU seconds, its workers included, from the last line its script writes to its
    log (``core.logs.run_stage``: ``rule X finished in W s (CPU C s, ...)``); None without it."""
    for log in job.get("logs", []):
        path = workdir / log
        if path.is_file():
            found = FINISHED.findall(path.read_text(errors="replace"))
            if found:
                return float(found[-1])
    return None


def critical_path(
    jobs: list[dict[str, Any]], weight: str = "wall"
) -> tuple[float, list[dict[str, Any]]]:
    """The longest chain of jobs along the DAG's edges, and the chain: each job weighs its
    wall (``weight="wall"``) or its CPU seconds (``"cpu"``, 0 where unknown: what the chain
    costs on an idle machine with one core per job, whatever the load when it ran).

    A job's predecessors are the jobs that wrote one of its inputs (or a folder holding one).
    """
    producer: dict[str, int] = {}
    for i, job in enumerate(jobs):
        for out in job["outputs"]:
            producer[os.path.normpath(out)] = i

    def parents(job: dict[str, Any]) -> set[int]:
        found = set()
        for item in job["inputs"]:
            p = os.path.normpath(item)
            while p not in producer and os.sep in p:
                p = os.path.dirname(p)  # a file inside a directory output
            if p in producer:
                found.add(producer[p])
        return found

    order = sorted(range(len(jobs)), key=lambda i: jobs[i]["end"])  # parents end first
    best: dict[int, float] = {}
    via: dict[int, int | None] = {}
    for i in order:
        if weight == "cpu":
            wall = jobs[i].get("cpu") or 0.0
        else:
            wall = jobs[i]["end"] - jobs[i]["start"]
        ps = [p for p in parents(jobs[i]) if p in best and p != i]
        top = max(ps, key=lambda p: best[p], default=None)
        best[i] = wall + (best[top] if top is not None else 0.0)
        via[i] = top
    if not best:
        return 0.0, []
    end = max(best, key=lambda i: best[i])
    chain = []
    node: int | None = end
    while node is not None:
        chain.append(jobs[node])
        node = via[node]
    return best[end], chain[::-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", type=int, nargs="+", default=None, help="default: 1, 2, 4, ...")
    ap.add_argument("--configfile", type=Path, default=None, help="merged over the shipped one")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "mimic-deid-scaling")
    ap.add_argument("--name", default="", help="suffix of the record's file name")
    args = ap.parse_args()
    cores = args.cores or default_cores()

    runs, reference = [], None
    for n in cores:
        work = args.work / f"cores{n}"
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(ROOT / "config", work / "config")
        cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(work),
               "--cores", str(n), "--quiet", "all"]  # fmt: skip
        if args.configfile is not None:
            shutil.copy(args.configfile, work / "extra.yaml")
            cmd += ["--configfile", str(work / "extra.yaml")]
        print(f"--cores {n} ...", flush=True)
        measured = run_process(cmd, env=dict(os.environ, PYTHONHASHSEED="0"))
        jobs = job_records(work)
        for job in jobs:
            job["cpu"] = job_cpu(work, job)
        path_s, chain = critical_path(jobs)
        cpu_path_s, cpu_chain = critical_path(jobs, "cpu")
        span = max(j["end"] for j in jobs) - min(j["start"] for j in jobs)
        job_s = sum(j["end"] - j["start"] for j in jobs)
        run = {
            "cores": n,
            "wall": measured["wall"],
            "cpu": measured["cpu"],
            "cpu_per_wall": measured["cpu"] / measured["wall"],
            "jobs": len(jobs),
            "job_wall_sum": job_s,
            "span": span,
            "critical_path": path_s,
            "cpu_per_critical_path": measured["cpu"] / path_s if path_s else None,
            "jobs_cpu": sum(j["cpu"] or 0.0 for j in jobs),
            "critical_path_cpu": cpu_path_s,
            "chain_cpu": [{"rule": j["rule"], "cpu": j["cpu"]} for j in cpu_chain],
            "chain": [
                {"rule": j["rule"], "output": j["outputs"][0], "wall": j["end"] - j["start"]}
                for j in chain
            ],
        }
        got = digests(work)
        if reference is None:
            reference = got
        run["differ_from_first"] = sorted(
            k for k in set(got) | set(reference) if got.get(k) != reference.get(k)
        )
        run["result_files"] = len(got)
        runs.append(run)
        print(f"--cores {n}: wall {run['wall']:.1f} s, CPU {run['cpu']:.1f} s "
              f"({run['cpu_per_wall']:.2f} per wall s), critical path {path_s:.1f} s "
              f"(CPU / path {run['cpu_per_critical_path']:.1f}), in job CPU {cpu_path_s:.1f} s "
              f"of {run['jobs_cpu']:.1f} s, span {span:.1f} s, "
              f"{len(jobs)} jobs, {len(got)} result files", flush=True)  # fmt: skip

    base = runs[0]
    record = {
        "commit": git_commit(),
        "date": time.strftime("%Y-%m-%d"),
        "machine": machine_info(),
        "configfile": str(args.configfile) if args.configfile else None,
        "runs": runs,
        "identical_results": not any(r["differ_from_first"] for r in runs),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"scaling{'-' + args.name if args.name else ''}.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    print("\n| --cores | wall | speed-up | CPU | CPU / wall | critical path (wall) | CPU / path "
          "| jobs' CPU | critical path (job CPU) | jobs' CPU / path |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in runs:
        print(f"| {r['cores']} | {r['wall']:.1f} s | {base['wall'] / r['wall']:.2f}x | "
              f"{r['cpu']:.1f} s | {r['cpu_per_wall']:.2f} | {r['critical_path']:.1f} s | "
              f"{r['cpu_per_critical_path']:.1f} | {r['jobs_cpu']:.1f} s | "
              f"{r['critical_path_cpu']:.1f} s | "
              f"{r['jobs_cpu'] / max(r['critical_path_cpu'], 1e-9):.1f} |")  # fmt: skip
    last = runs[-1]
    print("\ncritical path at --cores", last["cores"], ":",
          " -> ".join(f"{c['rule']} {c['wall']:.1f} s" for c in last["chain"]))  # fmt: skip
    print(f"wrote {out}")
    differ = {r["cores"]: r["differ_from_first"] for r in runs if r["differ_from_first"]}
    if differ:
        print(f"result files that differ from --cores {cores[0]}'s: {differ}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
