"""Benchmark: the extraction chain as a user runs it, against decompressing what it reads.

One ``snakemake`` invocation builds both series releases (``stays`` and ``ihm48``
``series.parquet``) from an empty work directory on a CSV source: start-up, parse, DAG,
``extract``, ``cohort``, ``series``. The yardstick is ``gzip -dc`` of the five files the chain
reads (ICUSTAYS, ADMISSIONS, PATIENTS, CHARTEVENTS, LABEVENTS) to /dev/null. The two run in
turn (one warm-up pair, then ``--repeats`` pairs A B A B ...), and the ratio is taken pair by
pair, so a machine whose speed drifts affects both sides of a pair alike. Each run's CPU time
is the operating system's accounting of the finished process tree (``os.wait4``).

Data: the synthetic generator's copy of ``--subjects`` subjects, seed 1, with
``--other-chart-rows`` non-benchmark CHARTEVENTS rows per generated row (4.2, the default:
real MIMIC-III's mix, ~17 % of CHARTEVENTS rows carrying a benchmark item; 0: the generator's
own mix, ~88 %), cached under ``--data`` (default ``$TMPDIR/mimic-deid-bench``), never in the
repository. The config is the shipped default with the CSV source pointed at the copy, written with the
shipped config files into the work directory before each run (not timed).

    python benchmarks/bench_chain_invocation.py --subjects 4600 --other-chart-rows 4.2
    python benchmarks/bench_chain_invocation.py --subjects 23000 --other-chart-rows 0

Writes ``benchmarks/results/chain_invocation[-NAME].json`` and prints a Markdown table for
benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml
from common import RESULTS, ROOT, git_commit, machine_info, run_process, synthetic_copy

sys.path.insert(0, str(ROOT / "workflow"))
from paths import PATHS

FILES = ("ICUSTAYS", "ADMISSIONS", "PATIENTS", "CHARTEVENTS", "LABEVENTS")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subjects", type=int, default=4600)
    ap.add_argument("--other-chart-rows", type=float, default=4.2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "mimic-deid-bench")
    ap.add_argument("--name", default="", help="suffix of the record's file name")
    args = ap.parse_args()

    src = synthetic_copy(args.data, args.subjects, 1, args.other_chart_rows)
    summary = json.loads((src / "SYNTHETIC.json").read_text())
    work = args.data / "chain-work"
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["source"] = {"kind": "csv", "csv": {"path": str(src)}}
    config["seed"] = 1
    config_files = {f.name: f.read_text() for f in (ROOT / "config").glob("*.yaml")}
    config_files["config.yaml"] = yaml.safe_dump(config, sort_keys=False)
    cfg = work / "config" / "config.yaml"
    targets = [PATHS["series"].format(release=r) for r in ("stays", "ihm48")]
    chain = [sys.executable, "-m", "snakemake", *targets, "-s", str(ROOT / "Snakefile"),
             "-d", str(work), "--cores", str(args.cores), "--configfile", str(cfg),
             "--quiet", "all"]  # fmt: skip
    inflate = ["sh", "-c", 'exec gzip -dc "$@" > /dev/null', "gzip",
               *(str(src / f"{t}.csv.gz") for t in FILES)]  # fmt: skip

    def run_chain() -> dict[str, float]:
        shutil.rmtree(work, ignore_errors=True)
        # the config refers to the files beside it by relative path (variables, hierarchies)
        (work / "config").mkdir(parents=True)
        for name, text in config_files.items():
            (work / "config" / name).write_text(text)
        return run_process(chain)

    runs = []
    for i in range(args.repeats + 1):  # the first pair warms the page cache and the imports
        a, b = run_chain(), run_process(inflate)
        print(f"pair {i}{' (warm-up)' if i == 0 else ''}: chain {a['wall']:.1f} s wall "
              f"({a['cpu']:.1f} s CPU), gzip -dc {b['wall']:.1f} s, ratio {a['wall'] / b['wall']:.2f}",
              flush=True)  # fmt: skip
        if i:
            runs.append({"chain": a, "gzip": b, "ratio": a["wall"] / b["wall"]})
    jobs = {}
    for rule in ("extract", "cohort", "series"):
        tsv = work / "logs" / "benchmarks" / f"{rule}.tsv"
        if tsv.exists():
            head, row = tsv.read_text().splitlines()[:2]
            rec = dict(zip(head.split("\t"), row.split("\t"), strict=True))
            jobs[rule] = {"s": float(rec["s"]), "cpu_time": float(rec["cpu_time"])}
    record = {
        "commit": git_commit(),
        "date": time.strftime("%Y-%m-%d"),
        "machine": machine_info(),
        "subjects": args.subjects,
        "other_chart_rows": args.other_chart_rows,
        "rows": summary["rows"],
        "cores": args.cores,
        "runs": runs,
        "ratio_median": statistics.median(r["ratio"] for r in runs),
        "ratio_best": min(r["ratio"] for r in runs),
        "chain_wall_best": min(r["chain"]["wall"] for r in runs),
        "gzip_wall_best": min(r["gzip"]["wall"] for r in runs),
        "last_run_jobs": jobs,
    }
    out = RESULTS / f"chain_invocation{'-' + args.name if args.name else ''}.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    rows = summary["rows"]["CHARTEVENTS"]
    print("\n| data | CHARTEVENTS rows | chain, best | gzip -dc, best | ratio, median (best) |")
    print("|---|---:|---:|---:|---:|")
    print(f"| {args.subjects:,} subjects, other_chart_rows {args.other_chart_rows:g} | {rows:,} | "
          f"{record['chain_wall_best']:.1f} s | {record['gzip_wall_best']:.1f} s | "
          f"**{record['ratio_median']:.2f}x** ({record['ratio_best']:.2f}x) |")  # fmt: skip
    print(f"\nper job (last run): {jobs}\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
