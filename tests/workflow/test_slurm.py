"""End-to-end on a real SLURM cluster: the tiny workflow through ``profiles/slurm``.

Needs a reachable SLURM controller with an idle node and job accounting (``sacct``), e.g. the
single-node localhost cluster of ``.ci/slurm-localhost.sh`` (run as root); skipped otherwise,
with the reason (a failure where ``MIMIC_DEID_REQUIRE`` names ``slurm``, as in CI).
The run uses the real profile's settings and per-rule resources; the test
only adds what a throw-away localhost cluster needs (fast status polling, a log directory in
the temporary directory, kept SLURM logs, and two linear chains of rules run as SLURM job
groups, :data:`GROUPS`) through a test profile that loads the real one.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import snakemake as snakemake_pkg
import yaml
from families import unavailable
from workflow_helpers import ROOT, prepare, snakemake

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

PROFILE = ROOT / "profiles" / "slurm" / "config.yaml"
SETUP = "run `sudo bash .ci/slurm-localhost.sh` for a single-node SLURM on localhost"
AVAILABLE = {"idle", "mixed", "allocated", "completing"}
#: Linear chains of rules that each run as one SLURM job (Snakemake job groups, ``--groups``):
#: the upstream pipeline once, mondrian -> deidentify -> release once per release. Every SLURM
#: job costs its start-up (two workflow parses) and, worse, the plugin's status polling backs
#: off by 10 s after every round without a finished job, so each layer of the DAG took ~36 s
#: for a few seconds of work; the chains cut the run's 12 layers of SLURM jobs to 7 (23 jobs to
#: 16; measured 404 -> 341 s for the test, one run each). Only linear chains are
#: grouped, so a group job's limits are exactly its rules' (runtime summed, memory the largest)
#: and the per-rule resources are still checked for every rule; the other rules (privacy and
#: privacy_baseline with their own set-resources, the default-resource rules) stay one job each.
#: The real profile submits one job per rule (docs/running.md, "Cluster").
GROUPS = {
    "upstream": ("synthesize", "extract", "cohort", "series"),
    "deid": ("mondrian", "deidentify", "release"),
}


def _run(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def _profile_memory(profile: dict) -> int:
    """Largest mem_mb the profile asks for (default or any rule)."""
    mems = [int(profile.get("default-resources", {}).get("mem_mb", 0))]
    mems += [int(r.get("mem_mb", 0)) for r in profile.get("set-resources", {}).values()]
    return max(mems)


@pytest.fixture(scope="module")
def slurm_cluster() -> dict:
    """Skip unless SLURM can take and account jobs; return the usable node's facts."""
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        unavailable(
            "slurm", "snakemake-executor-plugin-slurm is not installed (pip install -e '.[slurm]')"
        )
    for tool in ("sinfo", "sbatch", "sacct"):
        if shutil.which(tool) is None:
            unavailable("slurm", f"`{tool}` not found: no SLURM client on this machine; {SETUP}")
    info = _run("sinfo", "-h", "-N", "-o", "%N|%T|%c|%m|%P")
    if info.returncode != 0:
        unavailable("slurm", f"`sinfo` fails ({info.stderr.strip()}); {SETUP}")
    nodes = [line.split("|") for line in info.stdout.split() if line.count("|") == 4]
    usable = [n for n in nodes if n[1] in AVAILABLE]  # "idle*" (not responding) is not
    if not usable:
        states = ", ".join(f"{n[0]}={n[1]}" for n in nodes) or "no nodes"
        unavailable("slurm", f"no SLURM node is idle or available (sinfo: {states}); {SETUP}")
    acct = _run("sacct", "-X", "-n", "-o", "JobIDRaw", "--starttime", "now-1hours")
    if acct.returncode != 0:
        unavailable(
            "slurm",
            f"`sacct` fails ({acct.stderr.strip()}): the SLURM executor plugin polls job "
            f"states with sacct, which needs accounting (slurmdbd); {SETUP}",
        )
    name, _, cpus, mem, _ = usable[0]
    need = _profile_memory(yaml.safe_load(PROFILE.read_text()))
    if int(mem.rstrip("+")) < need:
        unavailable(
            "slurm",
            f"SLURM node {name} has {mem} MB but profiles/slurm asks up to {need} MB for a rule",
        )
    return {"node": name, "cpus": int(cpus.rstrip("+")), "mem_mb": int(mem.rstrip("+"))}


def _test_profile(tmp_path: Path) -> Path:
    """The real profile plus localhost-only executor settings, in ``tmp_path/profile``."""
    profile = yaml.safe_load(PROFILE.read_text())
    profile.update(
        {
            # Poll every few seconds instead of waiting 40 s before the first status check.
            "slurm-init-seconds-before-status-checks": 2,
            # ... and between rounds (default 10 s): the ~40 jobs of the workflow run two at a
            # time, so the default interval alone adds minutes of waiting.
            "seconds-between-status-checks": 2,
            "slurm-logdir": str(tmp_path / "slurm_logs"),
            "slurm-keep-successful-logs": True,
            "groups": {rule: group for group, rules in GROUPS.items() for rule in rules},
        }
    )
    directory = tmp_path / "profile"
    directory.mkdir()
    (directory / "config.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    return directory


def _rules_of(comment: str) -> tuple[str, ...]:
    """The rules of a SLURM job from its comment: the plugin tags a rule's job with
    ``rule_<rule>[_wildcards_<values>]``, a group's with ``rule_<group>_<its rules, sorted>``."""
    for group, rules in GROUPS.items():
        if comment == f"rule_{group}_{'_'.join(sorted(rules))}":
            return rules
    match = re.fullmatch(r"rule_(.+?)(?:_wildcards_.*)?", comment)
    assert match, comment
    assert match.group(1) not in {r for rules in GROUPS.values() for r in rules}, comment
    return (match.group(1),)


def _minutes(limit: str) -> int:
    """sacct Timelimit ([D-]HH:MM:SS) in minutes."""
    days, _, clock = limit.rpartition("-")
    hours, minutes, _ = (int(x) for x in clock.split(":"))
    return int(days or 0) * 1440 + hours * 60 + minutes


def _one_method_series_only(workdir: Path, overlay: Path) -> None:
    """The tiny workflow's series stage with the ad-hoc optimiser only: about 30 jobs instead
    of 70 (every rule of the series pipeline still runs; the comparator stages run locally in
    their own tests, and each SLURM job costs seconds of scheduling on this cluster). The
    other methods are removed from the config itself, because an overlay merges into the
    defaults."""
    tiny = yaml.safe_load(overlay.read_text())
    for name in ("genetic", "mdav", "mdav-spread"):
        del tiny["deid"]["methods"][name]
    tiny["stages"] = ["series"]
    overlay.write_text(yaml.safe_dump(tiny))
    base_path = workdir / "config" / "config.yaml"
    base = yaml.safe_load(base_path.read_text())
    for name in ("mdav-spread", "mdav"):
        del base["deid"]["methods"][name]
    base_path.write_text(yaml.safe_dump(base, sort_keys=False))


def test_workflow_runs_through_the_slurm_profile(slurm_cluster, tmp_path):
    workdir = tmp_path / "run"
    config = prepare(workdir)
    _one_method_series_only(workdir, config)
    profile = _test_profile(tmp_path)
    # cwd=ROOT as a user would run it (the workflow profile profiles/default applies too).
    proc = snakemake(workdir, "--profile", str(profile), config=config, cwd=ROOT, timeout=900)
    log = proc.stdout + proc.stderr

    report = workdir / "results" / "report"
    assert (report / "index.html").stat().st_size > 1000
    assert (report / "sweep_summary.csv").is_file()
    assert len(list(workdir.glob("results/*/dk*/fk*/*/check.json"))) == 2

    # The jobs really went through SLURM: every submitted job is in the accounting database
    # under the run's name, completed, tagged with its rule.
    run_id = re.search(r"SLURM run ID: (\S+)", log).group(1)
    submitted = set(re.findall(r"submitted with SLURM jobid (\d+)", log))
    assert len(submitted) >= 15, log[-3000:]
    acct = _run(
        "sacct", "-X", "--parsable2", "--noheader", "--clusters", "all", "--starttime",
        "now-1days", "--name", run_id, "--format", "JobIDRaw,State,Comment,Timelimit,ReqMem,NodeList",
    )  # fmt: skip
    assert acct.returncode == 0, acct.stderr
    jobs = [line.split("|") for line in acct.stdout.splitlines() if line]
    assert {j[0] for j in jobs} == submitted
    assert all(j[1] == "COMPLETED" for j in jobs), jobs
    assert all(j[5] == slurm_cluster["node"] for j in jobs), jobs
    rules = [rule for j in jobs for rule in _rules_of(j[2])]
    assert {"synthesize", "extract", "series", "mondrian", "deidentify", "report"} <= set(rules)
    assert rules.count("release") == 2 and rules.count("privacy") == 2  # one per release

    # ... with the real profile's per-rule resources: wall time from set-resources (or the
    # default), memory from set-resources where the profile raises it; a group job (a linear
    # chain) asks for the sum of its rules' wall times and the largest of their memories.
    real = yaml.safe_load(PROFILE.read_text())
    default, per_rule = real["default-resources"], real.get("set-resources", {})
    for _, _, comment, limit, req_mem, _ in jobs:
        members = _rules_of(comment)
        wanted = [per_rule.get(rule, {}) for rule in members]
        runtime = sum(int(w.get("runtime", default["runtime"])) for w in wanted)
        assert _minutes(limit) == runtime, (members, limit)
        if any("mem_mb" in w for w in wanted):
            mem = max(int(w["mem_mb"]) for w in wanted if "mem_mb" in w)
            assert req_mem == f"{mem}M", (members, req_mem)

    # Every SLURM job left its log in the test's log directory (kept for successful jobs), and
    # ran the submitting environment's snakemake (the venv, where mimic_deid is importable).
    logs = list((tmp_path / "slurm_logs").rglob("*.log"))
    assert len(logs) == len(submitted)
    main = Path(snakemake_pkg.__file__).parent / "__main__.py"
    for path in logs:
        assert f"Command: {main} " in path.read_text(), path
