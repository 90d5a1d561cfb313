"""Benchmark: the sequences stage (seed 004) on full-size synthetic TRANSFERS and CPTEVENTS.

Draws the synthetic generator's TRANSFERS (~255,000 rows) and CPTEVENTS (~570,000 rows) for
46,520 subjects directly from its population and sequence-table modules (the chart, lab and
output events, which the stage does not read, are skipped), types them as the sources'
``read_table`` does, then times per table and mechanism the whole release of the workflow's
``sequences_release`` rule: splitting, MinHash LSH clustering, STE/CTE fit, anonymisation,
three-phase generation and the seed's measures (``fit_release``), with the default settings
(|H| = 100, w = 1, 15 % clusters). Target: fit + generation < 10 min on 2 cores.

Writes ``benchmarks/results/sequences.json`` and prints a Markdown table for
``benchmarks/README.md``.

Usage::

    python benchmarks/bench_sequences.py [--subjects 46520] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
from common import git_commit

from mimic_deid.core.errors import ReleaseCheckError
from mimic_deid.core.seeding import derive_rng
from mimic_deid.sequences import Settings, cpt_events, fit_release, transfer_events
from mimic_deid.synthetic.generator import BLOCK_SUBJECTS
from mimic_deid.synthetic.population import IdState, make_population
from mimic_deid.synthetic.sequences import sequence_tables

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "sequences.json"


def tables(subjects: int, seed: int) -> dict[str, pd.DataFrame]:
    """TRANSFERS and CPTEVENTS of the generator's population, typed like ``read_table``."""
    ids = IdState.for_subjects(subjects)
    parts: dict[str, list] = {"TRANSFERS": [], "CPTEVENTS": []}
    for b in range(-(-subjects // BLOCK_SUBJECTS)):
        first = b * BLOCK_SUBJECTS
        pop = make_population(
            derive_rng(seed, b), first, min(BLOCK_SUBJECTS, subjects - first), ids
        )
        for name, cols in sequence_tables(pop, seed, b).items():
            parts[name].append(pd.DataFrame({k.lower(): v.to_pandas() for k, v in cols.items()}))
    tr = pd.concat(parts["TRANSFERS"], ignore_index=True)
    tr = tr.astype({"curr_careunit": "string", "eventtype": "string", "curr_wardid": "Int64"})
    cpt = pd.concat(parts["CPTEVENTS"], ignore_index=True).astype({"cpt_cd": "string"})
    return {"transfers": tr, "cptevents": cpt}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subjects", type=int, default=46_520)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    t0 = time.perf_counter()
    data = tables(args.subjects, args.seed)
    build_s = time.perf_counter() - t0
    rows = []
    for table, reader in (("transfers", transfer_events), ("cptevents", cpt_events)):
        t0 = time.perf_counter()
        log = reader(data[table])
        read_s = time.perf_counter() - t0
        for mech, eps in (("seed_ratio", 0.35), ("laplace", 1.0)):
            t0 = time.perf_counter()
            try:
                gen, s = fit_release(log, Settings(mechanism=mech, epsilon=eps), seed=2020)
            except ReleaseCheckError as exc:
                rows.append({"table": table.upper(), "rows": len(data[table]), "mechanism": mech,
                             "epsilon": eps, "release_s": round(time.perf_counter() - t0, 1),
                             "refused": str(exc)})  # fmt: skip
                print(rows[-1], flush=True)
                continue
            rows.append(
                {
                    "table": table.upper(), "rows": len(data[table]), "records": len(log.obj),
                    "objects": log.n_objects, "sections": s["source_sections"],
                    "clusters": s["n_clusters"], "mechanism": mech, "epsilon": eps,
                    "records_s": round(read_s, 2), "release_s": round(time.perf_counter() - t0, 1),
                    "generated_records": s["generated_records"], "similarity": round(s["similarity"], 3),
                    "suppression_rate": round(s["suppression_rate"], 3),
                }
            )  # fmt: skip
            print(rows[-1], flush=True)
    commit = git_commit()
    out = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "commit": commit,
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "subjects": args.subjects,
        "tables_s": round(build_s, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "runs": rows,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(
        "\n| table (rows) | mechanism | sections / clusters | release s | similarity | suppressed |"
    )
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        if "refused" in r:
            print(
                f"| {r['table']} ({r['rows']:,}) | {r['mechanism']} eps={r['epsilon']} | refused: {r['refused']} |"
            )
            continue
        print(
            f"| {r['table']} ({r['rows']:,}) | {r['mechanism']} eps={r['epsilon']} | "
            f"{r['sections']:,} / {r['clusters']:,} | {r['release_s']} | {r['similarity']} | "
            f"{100 * r['suppression_rate']:.1f} % |"
        )


if __name__ == "__main__":
    main()
