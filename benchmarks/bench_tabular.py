"""Benchmark of the tabular stage (seed 003 §4.3.3, §6.3, Table 6.9) on full-size demographics.

The synthetic MIMIC-III of 46,520 subjects (seed 1) is drawn in memory with the generator's
own streams (``tests/synthetic_tabular_reference.py``: ``tabular_sources``), and the demographics table with
three procedures is built as the workflow does (9 quasi-identifiers, 5,832 lattice nodes).

1. The k-check: seconds per node of the vectorised check (integer codes, mixed-radix keys,
   ``bincount``) against the seed's dictionary check (a Python loop over records counting
   signatures, written below as the reference), on the same nodes.
2. The whole OLA grid of the workflow (k in 5/25/100 x max_sup in 0/1/5/10/20/50 x three
   metrics, a fresh k-minimal set per run): nodes checked per (k, max_sup) (Table 6.9
   analogue), seconds per checked node and the total, against the targets of 50 ms per node
   and 10 minutes.
3. Inverse OLA (Prec; max_loss 0.2/0.5/0.8 x max_sup 0/10/50) and the DPS grid of §6.2.1.

Usage: ``python benchmarks/bench_tabular.py [--quick]``; writes
``benchmarks/results/tabular.json`` (not with ``--quick``, which uses 5,000 subjects).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from common import ROOT, git_commit

from mimic_deid.core.seeding import derive_rng
from mimic_deid.tabular import (
    DEMOGRAPHIC_QIS,
    Lattice,
    demographics,
    dps_summary,
    encode,
    inverse_grid,
    is_k_anonymous,
    load_hierarchies,
    ola_grid,
    procedure_columns,
    suppression_budget,
)

sys.path.insert(0, str(ROOT / "tests"))  # the in-memory synthetic tables (tests only)
from synthetic_tabular_reference import tabular_sources

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def dictionary_check(enc, node, k: int, budget: int) -> bool:
    """The seed's k-check (§4.3.3): generalise each record, count signatures in a dict."""
    counts: dict[tuple, int] = {}
    maps = [h.maps[int(level)] for h, level in zip(enc.hierarchies, node, strict=True)]
    for row in enc.codes.tolist():
        key = tuple(m[c] for m, c in zip(maps, row, strict=True))
        counts[key] = counts.get(key, 0) + 1
    return sum(v for v in counts.values() if v < k) <= budget


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5,000 subjects, nothing written")
    args = parser.parse_args()
    subjects = 5000 if args.quick else 46_520
    started = time.perf_counter()
    src = tabular_sources(subjects, 1)
    table = demographics(
        src["patients"], src["admissions"], src["procedures"], 3, derive_rng(2020, "tabular", "yob")
    )
    build_s = time.perf_counter() - started
    hierarchies = load_hierarchies(ROOT / "config" / "hierarchies.yaml")
    qis = [*DEMOGRAPHIC_QIS, *procedure_columns(3)]
    enc = encode(table, qis, hierarchies)
    lattice = Lattice(enc.heights)
    print(
        f"{subjects} subjects -> {len(table)} rows, {len(qis)} QIs, {lattice.size} nodes ({build_s:.1f} s)"
    )

    nodes = lattice.nodes[derive_rng(0, "bench-nodes").choice(lattice.size, 20, replace=False)]
    budget = suppression_budget(enc.n_rows, 5)
    t0 = time.perf_counter()
    fast = [is_k_anonymous(enc, n, 5, budget) for n in nodes]
    fast_s = (time.perf_counter() - t0) / len(nodes)
    t0 = time.perf_counter()
    slow = [dictionary_check(enc, n, 5, budget) for n in nodes[:5]]
    slow_s = (time.perf_counter() - t0) / 5
    assert fast[:5] == slow
    print(
        f"k-check: vectorised {1000 * fast_s:.2f} ms/node, dictionary {1000 * slow_s:.1f} ms/node"
    )

    t0 = time.perf_counter()
    grid = ola_grid(
        table, hierarchies, qis, [5, 25, 100], [0, 1, 5, 10, 20, 50], ["prec", "dm_star", "entropy"]
    )
    grid_s = time.perf_counter() - t0
    prec = grid[grid["metric"] == "prec"]
    checked = prec.pivot(index="k", columns="max_sup", values="checked")
    per_check = grid_s / float(grid["checked"].sum())
    print(checked.to_string())
    print(
        f"OLA grid: {len(grid)} runs in {grid_s:.1f} s, {1000 * per_check:.1f} ms per checked node"
    )

    t0 = time.perf_counter()
    inv = inverse_grid(table, hierarchies, {"all": qis}, [0.2, 0.5, 0.8], [0, 10, 50])
    inv_s = time.perf_counter() - t0
    print(inv[["max_loss", "max_sup", "k", "checked"]].to_string(index=False))
    t0 = time.perf_counter()
    _, dps = dps_summary(
        [0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
        [0.1, 0.25, 0.5, 1.0, 1.5, 2.0],
        [5, 10, 25, 50, 100],
        len(table),
        1e-4,
    )
    dps_s = time.perf_counter() - t0
    print(f"Inverse OLA grid {inv_s:.1f} s; DPS grid {dps_s:.1f} s -> {dps}")

    record = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "commit": git_commit(),
        "machine": f"{platform.processor() or platform.machine()}, {platform.python_version()}",
        "subjects": subjects,
        "rows": len(table),
        "lattice_nodes": lattice.size,
        "kcheck_ms_vectorised": 1000 * fast_s,
        "kcheck_ms_dictionary": 1000 * slow_s,
        "ola_grid_runs": len(grid),
        "ola_grid_seconds": grid_s,
        "ola_ms_per_checked_node": 1000 * per_check,
        "ola_checked_prec": {
            int(k): {f"{c:g}": int(v) for c, v in row.items()} for k, row in checked.iterrows()
        },
        "inverse_grid_seconds": inv_s,
        "inverse_k": {f"{r.max_loss:g}/{r.max_sup:g}": int(r.k) for r in inv.itertuples()},
        "dps_seconds": dps_s,
        "dps": dps,
    }
    if not args.quick:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "tabular.json").write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps({k: v for k, v in record.items() if not isinstance(v, dict)}, indent=1))


if __name__ == "__main__":
    main()
