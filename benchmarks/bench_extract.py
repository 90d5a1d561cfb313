"""Benchmark: extraction of CHARTEVENTS.csv.gz by the CSV source versus plain decompression.

Builds a synthetic MIMIC-III v1.4 ``CHARTEVENTS.csv.gz`` (default 20 M rows) with a dedicated
vectorised writer (v1.4 columns and quoting, CareVue/MetaVision rows, ERROR flags, a realistic
item-id mix where about 17 % of the rows carry a configured variable, as in the real table),
plus a half-size copy, then times in the same run:

- ``gzip -dc FILE > /dev/null`` (the floor: decompression alone),
- ``extract_raw`` on each directory, each in a child process whose peak RSS is measured.

Writes ``benchmarks/results/extract.json`` and prints a Markdown table for
``benchmarks/README.md``. Data go to ``benchmarks/work/extract/`` (git-ignored); existing data
files are reused unless ``--regenerate``.

Usage::

    python benchmarks/bench_extract.py [--rows 20000000] [--chunk-rows 1000000] [--buckets 8]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from mimic_deid.core.seeding import derive_rng

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "benchmarks" / "work" / "extract"
RESULTS = ROOT / "benchmarks" / "results" / "extract.json"

CHART_COLUMNS = [
    "ROW_ID", "SUBJECT_ID", "HADM_ID", "ICUSTAY_ID", "ITEMID", "CHARTTIME", "STORETIME",
    "CGID", "VALUE", "VALUENUM", "VALUEUOM", "WARNING", "ERROR", "RESULTSTATUS", "STOPPED",
]  # fmt: skip

# Configured item ids with their approximate real CHARTEVENTS counts (millions), value
# generator kind and unit. Counts follow the MIMIC-III v1.4 item frequencies roughly.
CONFIGURED = [
    (211, 5.18, "num", 85, 15, "BPM"), (220045, 2.76, "num", 85, 15, "bpm"),
    (618, 3.39, "num", 18, 5, "BPM"), (220210, 2.74, "num", 18, 5, "insp/min"),
    (646, 3.42, "num", 97, 2, "%"), (220277, 2.67, "num", 97, 2, "%"),
    (51, 2.10, "num", 120, 20, "mmHg"), (8368, 2.09, "num", 60, 12, "mmHg"),
    (52, 2.07, "num", 80, 14, "mmHg"), (455, 1.58, "num", 120, 20, "mmHg"),
    (8441, 1.58, "num", 60, 12, "mmHg"), (456, 1.55, "num", 80, 14, "mmHg"),
    (220179, 1.29, "num", 120, 20, "mmHg"), (220180, 1.29, "num", 60, 12, "mmHg"),
    (220181, 1.29, "num", 80, 14, "mmHg"), (220050, 1.10, "num", 120, 20, "mmHg"),
    (220051, 1.10, "num", 60, 12, "mmHg"), (220052, 1.10, "num", 80, 14, "mmHg"),
    (678, 0.77, "num", 98.6, 1.2, "Deg. F"), (677, 0.77, "num", 37, 0.7, "Deg. C"),
    (223761, 0.42, "num", 98.6, 1.2, "?F"), (184, 0.95, "gcs_eye", 0, 0, ""),
    (454, 0.95, "gcs_motor", 0, 0, ""), (723, 0.95, "gcs_verbal", 0, 0, ""),
    (198, 0.95, "num", 12, 3, "points"), (220739, 0.60, "gcs_eye", 0, 0, ""),
    (223901, 0.60, "gcs_motor", 0, 0, ""), (223900, 0.60, "gcs_verbal", 0, 0, ""),
    (807, 0.30, "num", 140, 40, "mg/dL"), (811, 0.30, "num", 140, 40, "mg/dL"),
    (1529, 0.30, "num", 140, 40, "mg/dL"), (225664, 0.40, "num", 140, 40, "mg/dL"),
    (220621, 0.30, "num", 140, 40, "mg/dL"), (190, 0.50, "num", 0.5, 0.1, "torr"),
    (223835, 0.60, "num", 50, 10, "%"), (3420, 0.30, "num", 50, 10, "%"),
    (115, 0.90, "caprefill", 0, 0, ""), (223951, 0.25, "caprefill", 0, 0, ""),
    (224308, 0.20, "caprefill", 0, 0, ""), (780, 0.25, "num", 7.4, 0.08, ""),
    (223830, 0.25, "num", 7.4, 0.08, ""), (762, 0.15, "num", 80, 20, "kg"),
    (226512, 0.10, "num", 80, 20, "kg"), (920, 0.05, "num", 67, 4, "inch"),
    (226730, 0.05, "num", 170, 10, "cm"),
]  # fmt: skip
TEXT = {
    "gcs_eye": ["Spontaneously", "To Speech", "To Pain", "No Response"],
    "gcs_motor": ["Obeys Commands", "Localizes Pain", "Flex-withdraws", "No response"],
    "gcs_verbal": ["Oriented", "Confused", "Inappropriate Words", "No Response-ETT"],
    "caprefill": ["Normal <3 secs", "Abnormal >3 secs", "Brisk", "Delayed"],
    "other": [
        "Sinus Rhythm", "Full Code", "Standard", "None", "Yes", "No", "Clear", "Diminished",
        "Within Normal Limits", "1st AV Block", "Atrial Fib", "Pink", "Warm", "Dry", "Intact",
    ],
}  # fmt: skip
CONFIGURED_SHARE_TARGET = 0.17  # fraction of rows with a configured item id (real: ~15-20 %)
N_OTHER_ITEMS = 600
EVENT_FILES = ("CHARTEVENTS.csv.gz", "LABEVENTS.csv.gz")
SYNTHETIC_CHART_ROWS_PER_SUBJECT = 885  # measured: 1,000 subjects -> 884k CHARTEVENTS rows
ROWS_PER_SUBJECT = 7000  # real MIMIC-III: ~7,100 CHARTEVENTS rows per subject


KINDS = ["num", "gcs_eye", "gcs_motor", "gcs_verbal", "caprefill", "other"]


def _item_table(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Per item id: id, sampling probability, kind code, mean, sd, unit (all arrays)."""
    configured = {c[0] for c in CONFIGURED}
    pool = np.concatenate([np.arange(1, 8500), np.arange(220000, 228500)])
    pool = pool[~np.isin(pool, list(configured))]
    other_ids = rng.choice(pool, size=N_OTHER_ITEMS, replace=False)
    other_w = 1.0 / np.arange(1, N_OTHER_ITEMS + 1) ** 0.8  # Zipf-like tail
    conf_w = np.array([c[1] for c in CONFIGURED])
    other_numeric = rng.random(N_OTHER_ITEMS) < 0.5
    return {
        "id": np.concatenate([[c[0] for c in CONFIGURED], other_ids]).astype(np.int64),
        "p": np.concatenate(
            [
                conf_w / conf_w.sum() * CONFIGURED_SHARE_TARGET,
                other_w / other_w.sum() * (1 - CONFIGURED_SHARE_TARGET),
            ]
        ),
        "kind": np.concatenate(
            [[KINDS.index(c[2]) for c in CONFIGURED], np.where(other_numeric, 0, 5)]
        ),
        "mean": np.concatenate([[c[3] for c in CONFIGURED], rng.gamma(2.0, 20.0, N_OTHER_ITEMS)]),
        "sd": np.concatenate([[c[4] for c in CONFIGURED], rng.gamma(2.0, 3.0, N_OTHER_ITEMS)]),
        "unit": np.array([c[5] or None for c in CONFIGURED] + [None] * N_OTHER_ITEMS, object),
    }


def _chunk(
    rng: np.random.Generator, start_row: int, n: int, items: dict, subjects: tuple[int, int]
) -> pa.Table:
    """``n`` CHARTEVENTS rows (v1.4 columns) for subjects in ``[lo, hi)``, by subject and time."""
    pick = rng.choice(len(items["id"]), size=n, p=items["p"])
    subj = np.sort(rng.integers(subjects[0], subjects[1], size=n))
    stay = rng.integers(0, 3, size=n)
    base = np.int64(4_260_000_000)  # ~2105 in seconds since 1970
    charttime = base + subj * 86400 * 40 + stay * 86400 * 12 + rng.integers(0, 86400 * 10, n)
    charttime = charttime // 60 * 60
    order = np.lexsort((charttime, subj))
    pick, subj, stay, charttime = pick[order], subj[order], stay[order], charttime[order]
    itemid = items["id"][pick]
    kind = items["kind"][pick]
    mv = itemid >= 220000

    sd = items["sd"][pick]
    valuenum = rng.normal(items["mean"][pick], sd)
    valuenum = np.where(sd < 5, np.round(valuenum, 1), np.round(valuenum))
    is_text = kind > 0
    text_pool = pa.array([t for k in KINDS[1:] for t in TEXT[k][:4]] + TEXT["other"][4:])
    text_idx = (kind - 1) * 4 + rng.integers(0, 4, size=n)
    text_idx = np.where(kind == 5, 16 + rng.integers(0, len(TEXT["other"]) - 4, size=n), text_idx)
    text_idx = np.where(is_text, text_idx, 0)
    num_arr = pa.array(valuenum, mask=is_text)
    value = pc.if_else(
        pa.array(is_text), text_pool.take(pa.array(text_idx)), pc.cast(num_arr, pa.string())
    )
    units = pa.array(items["unit"], type=pa.string())
    error = np.where(mv, (rng.random(n) < 0.002).astype(np.int64), 0)
    warning = np.where(mv, (rng.random(n) < 0.01).astype(np.int64), 0)
    cv = ~mv
    hadm = 100000 + subj * 3 + stay
    return pa.table(
        {
            "ROW_ID": np.arange(start_row + 1, start_row + n + 1, dtype=np.int64),
            "SUBJECT_ID": subj + 1,
            "HADM_ID": pa.array(hadm, mask=rng.random(n) < 0.001),
            "ICUSTAY_ID": pa.array(hadm + 100000, mask=rng.random(n) < 0.005),
            "ITEMID": itemid,
            "CHARTTIME": pa.array(charttime, type=pa.timestamp("s")),
            "STORETIME": pa.array(charttime + rng.integers(0, 120, n) * 60, pa.timestamp("s")),
            "CGID": rng.integers(14000, 21000, size=n),
            "VALUE": value,
            "VALUENUM": num_arr,
            "VALUEUOM": units.take(pa.array(pick)),
            "WARNING": pa.array(warning, mask=cv),
            "ERROR": pa.array(error, mask=cv),
            "RESULTSTATUS": pc.if_else(pa.array(cv), "Manual", pa.scalar(None, pa.string())),
            "STOPPED": pc.if_else(pa.array(cv), "NotStopd", pa.scalar(None, pa.string())),
        }
    )


def write_chartevents(path: Path, rows: int, seed: int, chunk: int = 1_000_000) -> dict:
    """Write ``rows`` synthetic CHARTEVENTS rows as gzip (level 6) CSV with v1.4 quoting.

    Generation of chunk k+1 overlaps the compression of chunk k (zlib releases the GIL).
    """
    rng = derive_rng(seed)
    items = _item_table(rng)
    n_subj = max(1, rows // ROWS_PER_SUBJECT)
    tmp = path.with_suffix(".tmp")
    comp = zlib.compressobj(6, zlib.DEFLATED, 31)
    raw = 0
    with open(tmp, "wb") as fh, ThreadPoolExecutor(max_workers=1) as pool:
        pending = None
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            lo = start * n_subj // rows
            hi = max(lo + 1, (start + n) * n_subj // rows)
            table = _chunk(rng, start, n, items, (lo, hi))
            sink = pa.BufferOutputStream()
            opts = pacsv.WriteOptions(include_header=start == 0, quoting_style="needed")
            pacsv.write_csv(table, sink, opts)
            data = sink.getvalue().to_pybytes()
            raw += len(data)
            if pending is not None:
                fh.write(pending.result())
            pending = pool.submit(comp.compress, data)
        if pending is not None:
            fh.write(pending.result())
        fh.write(comp.flush())
    os.replace(tmp, path)
    return {"subjects": n_subj, "uncompressed_bytes": raw}


def write_small_tables(folder: Path, n_subj: int) -> None:
    """PATIENTS, ADMISSIONS, ICUSTAYS consistent with the ids above; empty LABEVENTS."""
    subj = np.arange(n_subj, dtype=np.int64)
    base = np.int64(4_260_000_000) + subj * 86400 * 40
    ts = pa.timestamp("s")
    k = np.repeat(np.arange(3), n_subj)
    s3 = np.tile(subj, 3)
    b3 = np.tile(base, 3)
    tables = {
        "PATIENTS": pa.table(
            {
                "ROW_ID": subj + 1,
                "SUBJECT_ID": subj + 1,
                "GENDER": pa.array(np.where(subj % 2 == 0, "M", "F").astype(object), pa.string()),
                "DOB": pa.array(base - 60 * 365 * 86400, ts),
                "DOD": pa.nulls(n_subj, ts),
                "DOD_HOSP": pa.nulls(n_subj, ts),
                "DOD_SSN": pa.nulls(n_subj, ts),
                "EXPIRE_FLAG": np.zeros(n_subj, dtype=np.int64),
            }
        ),  # fmt: skip
        "ADMISSIONS": pa.table(
            {
                "ROW_ID": np.arange(3 * n_subj) + 1,
                "SUBJECT_ID": s3 + 1,
                "HADM_ID": 100000 + s3 * 3 + k,
                "ADMITTIME": pa.array(b3 - 86400, ts),
                "DISCHTIME": pa.array(b3 + 86400 * 12, ts),
                "DEATHTIME": pa.nulls(3 * n_subj, ts),
                "HOSPITAL_EXPIRE_FLAG": np.zeros(3 * n_subj, dtype=np.int64),
            }
        ),  # fmt: skip
        "ICUSTAYS": pa.table(
            {
                "ROW_ID": np.arange(3 * n_subj) + 1,
                "SUBJECT_ID": s3 + 1,
                "HADM_ID": 100000 + s3 * 3 + k,
                "ICUSTAY_ID": 200000 + s3 * 3 + k,
                "DBSOURCE": pa.array(["carevue"] * (3 * n_subj)),
                "FIRST_CAREUNIT": pa.array(["MICU"] * (3 * n_subj)),
                "LAST_CAREUNIT": pa.array(["MICU"] * (3 * n_subj)),
                "FIRST_WARDID": np.full(3 * n_subj, 52),
                "LAST_WARDID": np.full(3 * n_subj, 52),
                "INTIME": pa.array(b3, ts),
                "OUTTIME": pa.array(b3 + 86400 * 10, ts),
                "LOS": np.full(3 * n_subj, 10.0),
            }
        ),  # fmt: skip
    }
    for name, table in tables.items():
        with pa.output_stream(str(folder / f"{name}.csv.gz"), compression="gzip") as out:
            pacsv.write_csv(table, out)
    header = '"ROW_ID","SUBJECT_ID","HADM_ID","ITEMID","CHARTTIME","VALUE","VALUENUM","VALUEUOM","FLAG"\n'
    with pa.output_stream(str(folder / "LABEVENTS.csv.gz"), compression="gzip") as out:
        out.write(header.encode())


def build_dataset(folder: Path, rows: int, seed: int, regenerate: bool) -> dict:
    """Create (or reuse) a directory with a dedicated CHARTEVENTS.csv.gz of ``rows`` rows."""
    meta = _cached_meta(folder, {"kind": "dedicated", "rows": rows, "seed": seed}, regenerate)
    if meta:
        return meta
    t0 = time.perf_counter()
    info = write_chartevents(folder / "CHARTEVENTS.csv.gz", rows, seed)
    write_small_tables(folder, info["subjects"])
    meta = {"kind": "dedicated", "rows": rows, "seed": seed, **info}
    meta["generate_s"] = time.perf_counter() - t0
    (folder / "meta.json").write_text(json.dumps(meta))
    return meta


def build_synthetic(folder: Path, rows: int, seed: int, regenerate: bool) -> dict:
    """Create (or reuse) a ``mimic_deid.synthetic`` copy with about ``rows`` CHARTEVENTS rows."""
    from mimic_deid.synthetic import generate

    subjects = max(1, round(rows / SYNTHETIC_CHART_ROWS_PER_SUBJECT))
    key = {"kind": "synthetic", "subjects": subjects, "seed": seed}
    meta = _cached_meta(folder, key, regenerate)
    if meta:
        return meta
    t0 = time.perf_counter()
    summary = generate(folder, subjects, seed)
    generate_s = time.perf_counter() - t0
    raw = 0
    for name in EVENT_FILES:
        with pa.input_stream(str(folder / name), compression="gzip") as stream:
            while chunk := stream.read(1 << 24):
                raw += len(chunk)
    meta = {**key, "rows": summary["rows"]["CHARTEVENTS"], "lab_rows": summary["rows"]["LABEVENTS"],
            "uncompressed_bytes": raw, "generate_s": generate_s}  # fmt: skip
    (folder / "meta.json").write_text(json.dumps(meta))
    return meta


def _cached_meta(folder: Path, key: dict, regenerate: bool) -> dict | None:
    """The stored meta.json when it matches ``key``; else clear ``folder`` and return None."""
    meta_path = folder / "meta.json"
    if not regenerate and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if all(meta.get(k) == v for k, v in key.items()):
            return meta
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return None


# --------------------------------------------------------------------------- measurements


def time_gzip(paths: list[Path]) -> float:
    """Wall seconds of ``gzip -dc FILE... > /dev/null``."""
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as null:
        subprocess.run(["gzip", "-dc", *map(str, paths)], stdout=null, check=True)
    return time.perf_counter() - t0


def child_extract(src: str, out: str, chunk_rows: int, buckets: int) -> None:
    """Child entry point: run the extraction, print timings and own peak RSS as JSON."""
    import logging

    from mimic_deid.core import logs, variables
    from mimic_deid.sources.csv_source import CsvSource
    from mimic_deid.sources.extract import extract_raw

    logs.configure(level=logging.INFO)
    var = variables.load_variables(ROOT / "config" / "variables.yaml")
    itemids = {i for v in var for i in v.all_itemids}
    t0 = time.perf_counter()
    counts = extract_raw(CsvSource(src), out, itemids, buckets, chunk_rows)
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "wall_s": wall,
                "cpu_s": ru.ru_utime + ru.ru_stime,
                "peak_rss_mib": ru.ru_maxrss / 1024,
                "counts": counts,
            }
        )
    )


def run_extraction(src: Path, chunk_rows: int, buckets: int, profile: bool) -> dict:
    """Run the extraction of ``src`` in a child process; return its measurements."""
    out = src.parent / f"{src.name}-raw"
    cmd = [sys.executable]
    if profile:
        cmd += ["-m", "cProfile", "-s", "cumulative"]
    cmd += [__file__, "--child", str(src), str(out), str(chunk_rows), str(buckets)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"extraction of {src} failed")
    lines = proc.stdout.splitlines()
    record = json.loads(next(line for line in lines if line.startswith("{")))
    record["process_wall_s"] = wall
    if profile:
        (src.parent / f"{src.name}-profile.txt").write_text(proc.stdout)
    shutil.rmtree(out, ignore_errors=True)
    return record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--chunk-rows", type=int, default=1_000_000)
    ap.add_argument("--buckets", type=int, default=8)
    ap.add_argument("--regenerate", action="store_true")
    ap.add_argument(
        "--no-synthetic", action="store_true", help="skip the run on mimic_deid.synthetic data"
    )
    ap.add_argument("--profile", action="store_true", help="also write a cProfile of the full run")
    ap.add_argument("--child", nargs=4, metavar=("SRC", "OUT", "CHUNK", "BUCKETS"))
    args = ap.parse_args(argv)
    if args.child:
        src, out, chunk, buckets = args.child
        child_extract(src, out, int(chunk), int(buckets))
        return 0

    load_start = os.getloadavg()
    plan = [("half", "dedicated", args.rows // 2), ("full", "dedicated", args.rows)]
    if not args.no_synthetic:
        plan.append(("synthetic", "synthetic", args.rows))
    runs = []
    for label, kind, rows in plan:
        folder = WORK / f"{label}-{rows}"
        if kind == "dedicated":
            meta = build_dataset(folder, rows, args.seed, args.regenerate)
            files = [folder / "CHARTEVENTS.csv.gz"]
        else:
            meta = build_synthetic(folder, rows, args.seed, args.regenerate)
            files = [folder / name for name in EVENT_FILES]
        gzip_s = time_gzip(files)
        ext = run_extraction(
            folder, args.chunk_rows, args.buckets, args.profile and label == "full"
        )
        counts = ext["counts"]["tables"]
        runs.append(
            {
                "label": label,
                "data": kind,
                "rows": meta["rows"] + meta.get("lab_rows", 0),
                "files": [f.name for f in files],
                "gz_bytes": sum(f.stat().st_size for f in files),
                "csv_bytes": meta["uncompressed_bytes"],
                "generate_s": meta["generate_s"],
                "gzip_dc_s": gzip_s,
                "extract_s": ext["wall_s"],
                "extract_cpu_s": ext["cpu_s"],
                "ratio": ext["wall_s"] / gzip_s,
                "peak_rss_mib": ext["peak_rss_mib"],
                "rows_kept": counts["chartevents"]["kept"] + counts["labevents"]["kept"],
            }
        )
        print(json.dumps(runs[-1]), flush=True)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    record = {
        "benchmark": "extract_csv",
        "generator": {
            "dedicated": "benchmarks/bench_extract.py vectorised CHARTEVENTS writer "
            f"(~{CONFIGURED_SHARE_TARGET:.0%} of rows carry a configured itemid, as in MIMIC-III)",
            "synthetic": "mimic_deid.synthetic.generate (CHARTEVENTS + LABEVENTS; most rows "
            "carry a configured itemid: worst case for spooling and sorting)",
        },
        "chunk_rows": args.chunk_rows,
        "event_buckets": args.buckets,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "pyarrow": pa.__version__,
            "loadavg_1min_start_end": [load_start[0], os.getloadavg()[0]],
        },
        "max_child_rss_mib": ru.ru_maxrss / 1024,
        "runs": runs,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(record, indent=2) + "\n")
    print(markdown_table(runs))
    return 0


def markdown_table(runs: list[dict]) -> str:
    """The README table of the runs."""
    lines = [
        "| data | rows | csv.gz (raw) | kept | gzip -dc | extraction (CPU) | ratio | peak RSS |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        lines.append(
            f"| {r['label']} ({'generator' if r['data'] == 'synthetic' else r['data']}) | "
            f"{r['rows'] / 1e6:.1f} M | "
            f"{r['gz_bytes'] / 2**20:,.0f} MiB ({r['csv_bytes'] / 2**30:.2f} GiB) | "
            f"{r['rows_kept'] / 1e6:.1f} M | {r['gzip_dc_s']:.1f} s | "
            f"{r['extract_s']:.1f} s ({r['extract_cpu_s']:.0f} s) | {r['ratio']:.2f}x | "
            f"{r['peak_rss_mib']:,.0f} MiB |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
