"""The default workflow through the SLURM profile against the same run on the local machine.

Runs real `snakemake` twice on the default configuration (the synthetic copy, 3,000 subjects
unless ``--subjects``): once locally (``--cores N``) and once through ``profiles/slurm`` on a
reachable SLURM cluster (e.g. the one-node localhost cluster of ``.ci/slurm-localhost.sh``),
each in its own work directory, one after the other. Records the wall time of each run, the
SLURM jobs submitted, and whether every file under ``results/`` and ``resources/`` is
byte-identical between the two (the files that differ are listed).

    sudo bash .ci/slurm-localhost.sh      # once, for a localhost cluster
    python benchmarks/bench_slurm.py --subjects 3000 --cores 2

The SLURM run uses the real profile with the status-polling settings of the SLURM test
(``tests/workflow/test_slurm.py``: first check after 2 s, then every 2 s instead of 40 s and 10 s),
which only shorten the waiting on a localhost cluster. Writes
``benchmarks/results/slurm_default.json``; the work directories (default
``benchmarks/work/slurm``) are git-ignored.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml
from common import digests, git_commit, machine_info

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "profiles" / "slurm" / "config.yaml"


def prepare(workdir: Path, subjects: int) -> None:
    """A fresh work directory with the project's config and the number of subjects."""
    if workdir.exists():
        shutil.rmtree(workdir)
    shutil.copytree(ROOT / "config", workdir / "config")
    (workdir / "size.yaml").write_text(
        yaml.safe_dump({"source": {"synthetic": {"subjects": subjects, "seed": 1}}})
    )


def run(workdir: Path, *args: str) -> tuple[float, str]:
    """``snakemake`` on the workflow in ``workdir`` from the project root (as a user runs it):
    wall seconds and the combined output; stops the benchmark on a failure."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir)]
    cmd += [
        *args,
        "--configfile",
        str(workdir / "config" / "config.yaml"),
        str(workdir / "size.yaml"),
    ]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.monotonic() - start
    (workdir / "snakemake.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(
            f"snakemake failed in {workdir} (exit {proc.returncode}); see its snakemake.log"
        )
    return wall, proc.stdout + proc.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", type=int, default=3000)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=ROOT / "benchmarks" / "work" / "slurm")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "slurm_default.json"
    )
    args = parser.parse_args()
    if shutil.which("sbatch") is None:
        raise SystemExit("no SLURM client (sbatch) here: run `sudo bash .ci/slurm-localhost.sh`")

    local, cluster = args.workdir / "local", args.workdir / "slurm"
    prepare(local, args.subjects)
    prepare(cluster, args.subjects)
    profile = yaml.safe_load(PROFILE.read_text())
    profile.update(
        {
            "slurm-init-seconds-before-status-checks": 2,
            "seconds-between-status-checks": 2,
            "slurm-logdir": str(cluster / "slurm_logs"),
        }
    )
    (cluster / "profile").mkdir()
    (cluster / "profile" / "config.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))

    local_wall, _ = run(local, "--cores", str(args.cores))
    print(f"local: {local_wall / 60:.1f} min")
    slurm_wall, log = run(cluster, "--profile", str(cluster / "profile"))
    submitted = sorted(set(re.findall(r"submitted with SLURM jobid (\d+)", log)))
    print(f"SLURM: {slurm_wall / 60:.1f} min, {len(submitted)} jobs")

    a, b = digests(local), digests(cluster)
    differ = sorted(p for p in a.keys() | b.keys() if a.get(p) != b.get(p))
    record = {
        **machine_info(),
        "commit": git_commit(),
        "subjects": args.subjects,
        "cores": args.cores,
        "local_wall_seconds": round(local_wall, 1),
        "slurm_wall_seconds": round(slurm_wall, 1),
        "slurm_jobs": len(submitted),
        "files_compared": len(a.keys() | b.keys()),
        "files_differing": differ,
        "byte_identical": not differ,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps({k: v for k, v in record.items() if k != "files_differing"}, indent=2))
    if differ:
        print(f"{len(differ)} files differ, e.g. {differ[:5]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
