"""Benchmark of the release method ``mdav`` (MDAV microaggregation of whole series).

Measured on a finished run (``--run-dir``; the workflow's own artefacts: ``series.parquet``,
``duration.parquet``, ``targets.parquet`` with the demographic cells, ``meta.parquet``): the
release's classes are loaded as the ``deidentify`` rule loads them
(:func:`mimic_deid.deid.read_release_classes`) and released by
:func:`mimic_deid.deid.apply_method` with label ``mdav`` at the run's first dk and fk, one
worker process (and ``--threads``). Prints units, series, cluster sizes, SSE/SST and wall
seconds.

Usage: ``python benchmarks/bench_mdav.py --run-dir DIR [--release stays] [--threads 1]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import yaml
from common import ROOT, machine_info, path, timed

from mimic_deid.config import validate_config
from mimic_deid.deid import apply_method, read_release_classes
from mimic_deid.deid.duration import LABELLED


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--release", default="stays", choices=("stays", "ihm48"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--config", type=Path, help="the run's config (default its config/)")
    args = parser.parse_args()
    raw = yaml.safe_load((args.config or args.run_dir / "config" / "config.yaml").read_text())
    config = validate_config(raw, str(ROOT / "config" / "schema.yaml"), variables=False)
    deid = config["deid"]
    wild = dict(release=args.release, dk=deid["dk"][0], fk=deid["fk"][0], heuristic="range")
    ell = deid["outcome_l"] if LABELLED[args.release] else None
    classes, dims, outcomes = read_release_classes(
        str(args.run_dir / path("series", release=args.release)),
        str(args.run_dir / path("duration", **wild)),
        str(args.run_dir / path("meta", release=args.release)),
        ell,
    )
    targets = pd.read_parquet(args.run_dir / path("targets", **wild))
    timing = timed(
        apply_method,
        classes,
        dims,
        targets,
        dict(deid["features"]),
        label="mdav",
        seed=0,
        threads=args.threads,
        fk=wild["fk"],
        outcomes=outcomes,
        ell=int(ell or 1),
    )
    _, per_series, summary = timing.value
    units = per_series.groupby(["group", "class_length", "cell"]).size()
    print(machine_info())
    print(
        f"{args.release} dk{wild['dk']} fk{wild['fk']}: {len(per_series)} series in "
        f"{len(units)} units (largest {units.max()}), {summary['mdav']}; "
        f"wall {timing.wall_s:.2f} s, CPU {timing.cpu_s:.2f} s, threads {args.threads}"
    )


if __name__ == "__main__":
    main()
