"""Benchmark: what a user waits for from CSV.gz to both series releases, versus decompression.

On the project's synthetic MIMIC-III v1.4 copy (``mimic_deid.synthetic.generate``) at two
scales (default 23,000 subjects, about 21 M CHARTEVENTS rows, and an eighth of it), times in
one run, alternating, ``--repeats`` times (best of each):

- ``gzip -dc`` of the CSV.gz files the extraction reads, to /dev/null (the floor);
- the same files inflated by ISA-L (``isal.igzip``) and zlib-ng (``zlib_ng.gzip_ng``), each in
  a child Python process reading 1 MiB blocks;
- the chain as the workflow runs it, one child process per job, each pinned to its rule's
  threads (``mimic_deid.core.threads.pin_threads``) and, for extract and series, with the memory
  pool their scripts choose (``mimic_deid.core.memory.COMPACT_POOL_ENV``): ``extract`` (2
  threads), ``cohort`` (1), ``series`` (1, both releases);
- a child that only starts Python and imports the library (the start-up every job pays);
- with ``--compare-src DIR``, the chain of another checkout (the previous code, e.g. a
  ``git archive`` of the branch point) in the same alternation, and whether every artefact of
  the two chains is byte-identical (sha256), or else holds the same tables (Parquet content);
- ``extract`` again with the CSV.gz streams inflated by ISA-L instead of Arrow's zlib (the
  candidate decompressor; adopted only if it wins).

Peak memory of every job is the larger of its own ``VmHWM`` (``/proc/self/status``) and the
proportional set size of its process tree sampled every 100 ms (the series job's worker
processes), measured in one extra pass of the chain per scale (sampling costs CPU, so the timed
repeats do not sample), written by the child when it ends; ``wait4``'s ``ru_maxrss`` is not used
for Python jobs, since on Linux a child's ``ru_maxrss`` starts from its parent's peak at
``vfork``/``exec``. Its growth from the small to the large scale is printed. This process only
starts children: generating the data and comparing the artefacts are child jobs too. Ratios are
taken within the same run, so a loaded shared machine affects both sides alike. Data are cached
under ``--data`` (default ``$TMPDIR/mimic-deid-bench``), never in the repository; the record goes to
``benchmarks/results/extraction_chain.json`` and a Markdown table is printed for
``benchmarks/README.md``.

ISA-L and zlib-ng are not dependencies of the project: ``pip install isal zlib-ng`` first.

Usage::

    python benchmarks/bench_extraction_chain.py [--subjects 23000] [--scales 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "extraction_chain.json"

#: The rules' threads (workflow/rules/source.smk, cohort.smk, series.smk).
JOB_THREADS = {"extract": 2, "extract_isal": 2, "cohort": 1, "series": 2}
CHAIN = ("extract", "cohort", "series")
INFLATE_BLOCK = 1 << 20


# --------------------------------------------------------------------------- child jobs


def _job_extract(src: Path, work: Path, inflate: str) -> None:
    import pyarrow as pa

    from mimic_deid.pipeline.variables import configured_itemids, load_variables
    from mimic_deid.sources import csv_source, extract_raw, open_source

    if inflate == "isal":
        from isal import igzip

        def open_isal(path: str | os.PathLike) -> pa.NativeFile:
            if csv_source.is_gzip(path):
                return pa.PythonFile(igzip.open(path, "rb"), mode="r")
            return pa.input_stream(str(path))

        csv_source.open_input = open_isal
    extract_raw(
        open_source("csv", csv_path=str(src)),
        work / "raw",
        itemids=configured_itemids(load_variables(ROOT / "config" / "variables.yaml")),
        event_buckets=8,
        chunk_rows=1_000_000,
    )


def _job_cohort(work: Path) -> None:
    import pandas as pd

    from mimic_deid.core.atomic import write_parquet
    from mimic_deid.pipeline.cohort import build_cohort

    raw = work / "raw"
    stays, _ = build_cohort(
        pd.read_parquet(raw / "icustays.parquet"),
        pd.read_parquet(raw / "admissions.parquet"),
        pd.read_parquet(raw / "patients.parquet"),
        min_age=18,
    )
    write_parquet(stays, work / "stays.parquet")


def _job_series(work: Path) -> None:
    import pandas as pd

    from mimic_deid.core.atomic import write_json, write_parquet
    from mimic_deid.pipeline.series import build_releases
    from mimic_deid.pipeline.split import add_splits
    from mimic_deid.pipeline.variables import load_variables

    stays = pd.read_parquet(work / "stays.parquet")
    variables = load_variables(ROOT / "config" / "variables.yaml")
    spool = tempfile.mkdtemp(prefix="spool-", dir=work)
    try:
        releases = build_releases(
            work / "raw", stays, variables, spool, ihm_hours=48, threads=JOB_THREADS["series"]
        )
    except TypeError:  # --compare-src code without threads: one process
        releases = build_releases(work / "raw", stays, variables, spool, ihm_hours=48)
    split = {"train": 0.7, "validation": 0.15, "test": 0.15}
    for name, (series, meta, stats) in releases.items():
        series.write(work / name / "series.parquet")
        write_parquet(add_splits(meta, split, 2020), work / name / "meta.parquet")
        write_json(stats, work / name / "cleaning.json")
    shutil.rmtree(spool)


def _job_inflate(kind: str, files: list[str]) -> None:
    if kind == "isal":
        from isal.igzip import open as gz_open
    else:
        from zlib_ng.gzip_ng import open as gz_open
    for name in files:
        with gz_open(name, "rb") as fh:
            while fh.read(INFLATE_BLOCK):
                pass


#: The environment variable naming the file where a child writes its peak RSS (kB).
PEAK_FILE_ENV = "MIMIC_DEID_BENCH_PEAK_FILE"
#: Set to 1 for the memory pass: the child samples its process tree's memory (which costs
#: CPU, hence not in the timed repeats).
SAMPLE_ENV = "MIMIC_DEID_BENCH_SAMPLE"


def _tree_pss_kb(pid: int) -> int:
    """Proportional set size (kB) of ``pid`` and its descendants (shared pages split between
    the processes sharing them, so a forked worker's copy-on-write pages count once)."""
    total = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            total += next(int(line.split()[1]) for line in rollup if line.startswith("Pss:"))
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            kids = [int(c) for c in children.read().split()]
    except (OSError, StopIteration):  # the process ended meanwhile
        return total
    return total + sum(_tree_pss_kb(kid) for kid in kids)


class _PeakSampler:
    """The largest :func:`_tree_pss_kb` of this process seen every 100 ms (the memory of a job
    with worker processes; a single process's own peak is its ``VmHWM``)."""

    def __init__(self) -> None:
        import threading

        self.peak_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.peak_kb = max(self.peak_kb, _tree_pss_kb(os.getpid()))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak_kb


def _write_own_peak(tree_kb: int = 0) -> None:
    """Write this job's peak memory (kB) where the parent asked: the larger of this process's
    ``VmHWM`` and the sampled peak of its process tree (``tree_kb``)."""
    target = os.environ.get(PEAK_FILE_ENV)
    if not target:
        return
    with open("/proc/self/status") as status:
        hwm = next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
    Path(target).write_text(str(max(hwm, tree_kb)))


def child(argv: list[str]) -> None:
    """Entry point of a child process: ``--child JOB THREADS ARGS...``."""
    job, threads, args = argv[0], int(argv[1]), argv[2:]
    sampler = _PeakSampler() if os.environ.get(SAMPLE_ENV) == "1" else None
    try:
        _child_job(job, threads, args)
    finally:
        _write_own_peak(sampler.stop() if sampler is not None else 0)


def _child_job(job: str, threads: int, args: list[str]) -> None:
    try:
        from mimic_deid.core.threads import pin_threads
    except ImportError:  # --compare-src code without it: the environment pins BLAS
        import pyarrow as pa

        def pin_threads(n: int) -> None:
            pa.set_cpu_count(n)

    pin_threads(threads)
    if job in ("extract", "extract_isal"):
        _job_extract(Path(args[0]), Path(args[1]), "isal" if job == "extract_isal" else "arrow")
    elif job == "cohort":
        _job_cohort(Path(args[0]))
    elif job == "series":
        _job_series(Path(args[0]))
    elif job == "compare":
        work, before = Path(args[0]), Path(args[1])
        verdict = {
            "identical": outputs_sha256(work) == outputs_sha256(before),
            "same_content": same_content(work, before),
        }
        Path(args[2]).write_text(json.dumps(verdict))
    elif job == "startup":
        import mimic_deid.pipeline.series  # noqa: F401  (pandas, pyarrow, numpy: what every job imports)
    else:
        _job_inflate(job, args)


# --------------------------------------------------------------------------- timing


def run(cmd: list[str], stdout: int | None = None, env: dict | None = None) -> tuple[float, float]:
    """Run ``cmd`` to completion; return (wall seconds, peak RSS in MB) of that process: the
    ``VmHWM`` a child job reports (:func:`_write_own_peak`), else ``wait4``'s ``ru_maxrss``."""
    from common import run_process

    env = dict(os.environ if env is None else env)
    fd, peak_file = tempfile.mkstemp(prefix="peak-", suffix=".kb")
    os.close(fd)
    env[PEAK_FILE_ENV] = peak_file
    try:
        rec = run_process(cmd, env=env, stdout=stdout)
        own = Path(peak_file).read_text().strip()
    finally:
        os.unlink(peak_file)
    return rec["wall"], int(own) / 1024 if own else rec["max_rss_mb"]


def run_child(
    job: str, *args: str, src: Path | None = None, sample: bool = False
) -> tuple[float, float]:
    """Run a child job; ``src``: a checkout of other code to run it with (PYTHONPATH);
    ``sample``: the memory pass (see :class:`_PeakSampler`)."""
    from mimic_deid.core.memory import COMPACT_POOL_ENV
    from mimic_deid.core.threads import thread_env

    threads = JOB_THREADS.get(job, 1)
    cmd = [sys.executable, __file__, "--child", job, str(threads), *args]
    env = dict(os.environ, **thread_env(threads))
    env[SAMPLE_ENV] = "1" if sample else "0"
    if src is not None:
        env["PYTHONPATH"] = str(src / "src")
    if job in ("extract", "extract_isal", "series"):  # as the workflow's scripts set it
        env.update(COMPACT_POOL_ENV)
    return run(cmd, env=env)


def dataset(data: Path, subjects: int, seed: int) -> tuple[Path, dict]:
    """The cached synthetic copy of ``subjects`` subjects (generated when missing) and its
    summary."""
    from common import synthetic_copy

    folder = synthetic_copy(data, subjects, seed)
    return folder, json.loads((folder / "SYNTHETIC.json").read_text())


def outputs_sha256(work: Path) -> dict[str, str]:
    """sha256 of every artefact of a chain run (raw parts, cohort, series, meta, cleaning)."""
    import hashlib

    digests = {}
    for p in sorted(work.rglob("*")):
        if p.is_file():
            with p.open("rb") as fh:
                digests[str(p.relative_to(work))] = hashlib.file_digest(fh, "sha256").hexdigest()
    return digests


def same_content(work: Path, other: Path) -> bool:
    """Whether two chain runs hold the same files with the same content: equal bytes, or for
    Parquet files equal tables (schema and rows; the row-group layout may differ)."""
    import pyarrow.parquet as pq

    names = sorted(str(p.relative_to(work)) for p in work.rglob("*") if p.is_file())
    if names != sorted(str(p.relative_to(other)) for p in other.rglob("*") if p.is_file()):
        return False
    for name in names:
        a, b = work / name, other / name
        if a.read_bytes() == b.read_bytes():
            continue
        if a.suffix != ".parquet" or not pq.read_table(a).equals(pq.read_table(b)):
            return False
    return True


def measure_scale(src: Path, repeats: int, scratch: Path, compare: Path | None) -> dict:
    """Best-of-``repeats`` walls and peak RSS of every measurement on one dataset."""
    from mimic_deid.sources.csv_source import table_files

    files = [str(p) for p in table_files(src)]
    walls: dict[str, list[float]] = {}
    rss: dict[str, float] = {}  # the memory pass: peak of each job's process tree
    own: dict[str, float] = {}  # the timed repeats: peak of each job's own process
    identical = same = None

    def record(name: str, wall: float, peak: float) -> None:
        walls.setdefault(name, []).append(wall)
        own[name] = max(own.get(name, 0.0), peak)

    def chain(folder: Path, code: Path | None = None, suffix: str = "", sample: bool = False):
        """One run of the chain into ``folder``, with ``code`` (None: this checkout)."""
        total = 0.0
        for job in CHAIN:
            args = (str(src), str(folder)) if job == "extract" else (str(folder),)
            wall, peak = run_child(job, *args, src=code, sample=sample)
            if sample:
                rss[job + suffix] = peak
            else:
                record(job + suffix, wall, peak)
            total += wall
        return total

    for rep in range(repeats):
        with open(os.devnull, "wb") as null:
            record("gzip", *run(["gzip", "-dc", *files], stdout=null.fileno()))
        record("startup", *run_child("startup"))
        record("isal", *run_child("isal", *files))
        record("zlib_ng", *run_child("zlib_ng", *files))
        work = scratch / f"chain-{rep}"
        walls.setdefault("chain", []).append(chain(work))
        if compare is not None:  # the previous code, the same jobs
            before = scratch / f"before-{rep}"
            walls.setdefault("chain_before", []).append(chain(before, compare, "_before"))
            verdict = scratch / "compare.json"
            run_child("compare", str(work), str(before), str(verdict))
            result = json.loads(verdict.read_text())
            identical = result["identical"] and identical is not False
            same = result["same_content"] and same is not False
            shutil.rmtree(before)
        shutil.rmtree(work)
        work = scratch / f"isal-{rep}"
        record("extract_isal", *run_child("extract_isal", str(src), str(work)))
        shutil.rmtree(work)
        print(f"  repeat {rep + 1}: " + ", ".join(f"{k} {v[-1]:.1f}s" for k, v in walls.items()))
    # the memory pass: each job once more, its process tree sampled
    chain(scratch / "memory", sample=True)
    shutil.rmtree(scratch / "memory")
    if compare is not None:
        chain(scratch / "memory-before", compare, "_before", sample=True)
        shutil.rmtree(scratch / "memory-before")
    best = {k: min(v) for k, v in walls.items()}
    ratios = {"chain_before_vs_gzip": best["chain_before"] / best["gzip"]} if compare else {}
    return {
        "files_gz_bytes": sum(os.path.getsize(f) for f in files),
        "best_s": best,
        "all_s": walls,
        "peak_rss_mb": rss,
        "own_process_peak_rss_mb": own,
        "outputs_identical_to_previous": identical,
        "outputs_same_content_as_previous": same,
        "ratios": {
            "chain_vs_gzip": best["chain"] / best["gzip"],
            "chain_vs_isal": best["chain"] / best["isal"],
            "extract_vs_gzip": best["extract"] / best["gzip"],
            "extract_isal_vs_extract": best["extract_isal"] / best["extract"],
            "isal_vs_gzip": best["isal"] / best["gzip"],
            "startup_share_of_chain": 3 * best["startup"] / best["chain"],
            "zlib_ng_vs_gzip": best["zlib_ng"] / best["gzip"],
            **ratios,
        },
    }


def _md_table(header: list[str], align: str, rows: list[list[str]]) -> list[str]:
    """A markdown table's lines: ``header``, the rule (``align``: ``l`` or ``r`` per column)
    and one line per row of cells."""
    rule = "|".join("---" if a == "l" else "---:" for a in align)
    return [_md_row(header), f"|{rule}|", *map(_md_row, rows)]


def _md_row(cells: list[str]) -> str:
    return f"| {' | '.join(cells)} |"


def markdown(record: dict) -> str:
    scales = record["scales"]
    steps = ("gzip", "isal", "zlib_ng", "extract", "extract_isal", "cohort", "series")
    lines = _md_table(
        ["scale", "CHARTEVENTS rows", "gzip -dc", "isal", "zlib-ng", "extract", "extract (isal)"]
        + ["cohort", "series", "chain", "chain / gzip", "chain / isal", "start-up x3"],
        "l" + "r" * 12,
        [
            [f"{s['subjects']:,} subjects", f"{s['chartevents_rows']:,}"]
            + [f"{s['best_s'][k]:.1f} s" for k in steps]
            + [
                f"{s['best_s']['chain']:.1f} s",
                f"**{s['ratios']['chain_vs_gzip']:.2f}x**",
                f"{s['ratios']['chain_vs_isal']:.2f}x",
                f"{3 * s['best_s']['startup']:.1f} s",
            ]
            for s in scales
        ],
    )
    if "chain_before" in scales[0]["best_s"]:
        lines += [""] + _md_table(
            ["scale", "previous chain", "chain / gzip", "this chain", "chain / gzip"]
            + ["artefacts byte-identical", "same content"],
            "lrrrrll",
            [
                [
                    f"{s['subjects']:,} subjects",
                    f"{s['best_s']['chain_before']:.1f} s",
                    f"{s['ratios']['chain_before_vs_gzip']:.2f}x",
                    f"{s['best_s']['chain']:.1f} s",
                    f"{s['ratios']['chain_vs_gzip']:.2f}x",
                    f"{s['outputs_identical_to_previous']}",
                    f"{s['outputs_same_content_as_previous']}",
                ]
                for s in scales
            ],
        )
    small, large = scales[0], scales[-1]
    jobs = [j for j in small["peak_rss_mb"] if j not in ("gzip", "startup", "isal", "zlib_ng")]
    rss = [(job, small["peak_rss_mb"][job], large["peak_rss_mb"][job]) for job in jobs]
    lines += [""] + _md_table(
        ["job", "peak RSS small", "peak RSS large", "growth"],
        "lrrr",
        [[job, f"{a:,.0f} MB", f"{b:,.0f} MB", f"{b / a:.2f}x"] for job, a, b in rss],
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(argv[1:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subjects", type=int, default=23_000, help="large scale (subjects)")
    parser.add_argument("--scales", type=int, default=8, help="small scale = subjects / this")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--data", type=Path, default=Path(tempfile.gettempdir()) / "mimic-deid-bench"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--compare-src",
        type=Path,
        help="a checkout of the previous code (e.g. `git archive`): its chain runs alongside",
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from common import git_commit, machine_info

    from mimic_deid.core.threads import pin_threads

    pin_threads(1)
    record = {"date": time.strftime("%Y-%m-%d"), "machine": machine_info(), "scales": []}
    record["commit"] = git_commit()
    for subjects in (args.subjects // args.scales, args.subjects):
        src, summary = dataset(args.data, subjects, args.seed)
        print(f"{subjects} subjects: {summary['rows']['CHARTEVENTS']:,} CHARTEVENTS rows")
        scratch = Path(tempfile.mkdtemp(prefix="chain-", dir=args.data))
        try:
            scale = measure_scale(src, args.repeats, scratch, args.compare_src)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        scale.update(subjects=subjects, chartevents_rows=summary["rows"]["CHARTEVENTS"])
        record["scales"].append(scale)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(markdown(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
