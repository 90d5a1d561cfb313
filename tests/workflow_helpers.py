"""Run the real Snakemake workflow on a tiny synthetic MIMIC-III in a temporary directory."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
#: The override config that :func:`prepare` writes into a work directory.
CONFIG_NAME = "tiny.yaml"

# Small enough for CI (a couple of minutes on 2 cores), large enough that every rule has
# real work: several duration classes, Mondrian splits, all three splits with deaths.
TINY_CONFIG = {
    "source": {"kind": "synthetic", "synthetic": {"subjects": 400, "seed": 7}, "event_buckets": 2},
    "deid": {
        "dk": [10],
        "fk": [3],
        # mdav first: a --configfile's keys come first in the merged config, and the report
        # draws the first point (a certified one); the shipped config's mdav-spread, merged in
        # whatever this lists, comes last
        "methods": {
            "mdav": {},
            "adhoc": {"iterations": [20], "noise_sd": [0.01]},
            "genetic": {
                "fitness": ["NA"],
                "population": [8],
                "tournament": [3],
                "parents": [2],
                "mutation_sd": [3.0],
                "mutation_prob": [0.2],
                "init_sd": [1.0],
                "patience": [10],
                "max_iterations": [30],
                "normalise_features": [False],
            },
            "mdav-spread": {},
        },
        "tuning_grid": {
            "fitness": ["NA"],
            "population": [8],
            "tournament": [3],
            "parents": [2],
            "mutation_sd": [2.0, 3.0],
            "mutation_prob": [0.2],
            "init_sd": [1.0],
            "patience": [10],
            "max_iterations": [20],
            "normalise_features": [False],
        },
    },
    "evaluate": {"utility": {"C": [0.01, 1.0], "bootstrap": 50}},
    # comparator stages at their smallest useful size (their own tests cover the methods)
    "codes": {
        "gccens": {"k": [5], "caps": [3, 5, "max"]},
        "lda": {"k": [2, 5], "max_trajectories": 150},
    },
    # a small tabular grid: the tiny demographics table has fewer rows than the default k = 100
    "tabular": {
        "procedures": 1,
        "draws": 3,
        "ola": {"k": [2, 5], "max_sup": [0, 10]},
        "inverse": {"max_loss": [0.5], "max_sup": [0, 50]},
        "concealing": {"models": {"A": [0.01], "B": [0.05, 0.05]}},
        "epsilon": {"la_k": 3, "la_samples": 2, "la_penalty": [0.0, 0.1]},
        "release": {"k": 3},
    },
}


def published_files(folder: Path) -> list[str]:
    """The files of a release's public folder, sorted, without the empty
    ``.snakemake_timestamp`` marker Snakemake writes into every directory output."""
    return sorted(p.name for p in folder.iterdir() if p.name != ".snakemake_timestamp")


def mimic_messages(text: str) -> list[str]:
    """The project's own lines of a run's output (``mimic-deid...``) but its warnings
    (``mimic-deid: warning:``, e.g. the weak-k warning the tiny config's fk 3 prints)."""
    return [
        ln
        for ln in text.splitlines()
        if ln.startswith("mimic-deid") and not ln.startswith("mimic-deid: warning:")
    ]


def prepare(workdir: Path, overrides: dict | None = None) -> Path:
    """Copy the config into ``workdir`` and write the tiny override config; return its path."""
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "config", workdir / "config", dirs_exist_ok=True)
    config = merge(TINY_CONFIG, overrides or {})
    path = workdir / CONFIG_NAME
    path.write_text(yaml.safe_dump(config, sort_keys=False))  # the method order is the sweep order
    return path


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder ``name`` that ``build(folder)`` makes once per test session, whatever the
    number of pytest-xdist workers.

    The first worker that needs it builds it under an exclusive lock (``fcntl.flock``) in the
    session's temporary root, which every worker of the session shares; the others wait for
    the lock and take the finished folder. A build that raised leaves no ``.done`` marker, so
    the next worker builds it again (and fails with its own error). The folder is shared:
    tests read it, and a test that changes it works on a copy (:func:`copy_run`).
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # .../pytest-N/popen-gwK -> .../pytest-N, this session's only
    folder, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            build(folder)
            done.touch()
    return folder


def copy_run(run: Path, dest: Path) -> tuple[Path, Path]:
    """Copy a finished run's work directory to ``dest`` (times and modes kept, so Snakemake
    finds nothing to do there); return the copy and its tiny config."""
    shutil.copytree(run, dest, symlinks=True)
    return dest, dest / CONFIG_NAME


def merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for key, value in extra.items():
        out[key] = (
            merge(out[key], value)
            if isinstance(value, dict) and isinstance(out.get(key), dict)
            else value
        )
    return out


def snakemake(workdir: Path, *args: str, config: Path | None = None, check: bool = True, **kw):
    """Run snakemake with the repository's Snakefile in ``workdir``."""
    cmd = [*SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "-d", str(workdir), *args]
    if config is not None:
        cmd += ["--configfile", str(config)]
    env = dict(os.environ, PYTHONHASHSEED="0")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, **kw)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
        )
    return proc


def planned_jobs(output: str) -> dict[str, int]:
    """Parse the 'Job stats' table of a dry run into {rule: count} (empty: nothing to do)."""
    counts: dict[str, int] = {}
    in_table = False
    for line in output.splitlines():
        if line.startswith("Job stats:"):
            in_table = True
            continue
        if in_table:
            match = re.match(r"^(\w+)\s+(\d+)\s*$", line.strip())
            if match and match.group(1) != "total":
                counts[match.group(1)] = int(match.group(2))
            elif line.strip() == "" and counts:
                break
    return counts


def output_digests(workdir: Path) -> dict[str, str]:
    """SHA-256 of every file under results/ and resources/ (relative path -> digest)."""
    digests = {}
    for top in ("results", "resources"):
        for path in sorted((workdir / top).rglob("*")):
            if path.is_file():
                digests[str(path.relative_to(workdir))] = hashlib.sha256(
                    path.read_bytes()
                ).hexdigest()
    return digests
