"""Every shell command of the README and of the docs pages runs as written (issues 28, 44).

The commands are read from the ``bash`` and ``console`` blocks of README.md and of every page
under docs/ (:data:`PAGES`) and run in page order, each page in its own temporary directory
laid out like a clone (the repository's Snakefile and workflow, a copy of config/, the
default profile), so a command may use what an earlier one of its page made.

- A command that takes under a minute (dry runs, the small synthetic copy) runs exactly as
  written and must exit 0; a ``console`` block's command must print the lines shown under it.
- A long ``snakemake`` command (a real run) is run as written plus ``--dry-run``: Snakemake
  parses its arguments and builds its jobs as for the real run, which catches an argument
  read wrongly (a target after ``--configfile`` is read as a config file).
- :data:`NOT_RUN` lists the commands that are not run at all, each with its reason. A command
  in none of these classes fails the test, so a new command must be classified.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from workflow_helpers import ROOT

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

#: Commands never run here, with the reason (exact README text of the command line).
NOT_RUN: dict[str, str] = {
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && snakemake --cores all": (
        "installs into a new venv and runs the 3,000-subject workflow (about 7 min); "
        "tests/workflow/test_install.py covers the install, tests/workflow/test_workflow.py the run"
    ),
    'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]" && pytest': (
        "installs and runs the whole test suite"
    ),
    'snakemake --cores all --config \'source={"kind": "csv", "csv": {"path": '
    '"/data/mimiciii/1.4"}}\'': "needs a MIMIC-III copy at that path",
    'snakemake --cores all --config \'source={"kind": "postgres", "postgres": {"dsn": '
    '"host=db.example dbname=mimic user=me", "schema": "mimiciii"}}\'': (
        "needs a MIMIC-III PostgreSQL server"
    ),
    'snakemake --cores all --configfile config/presets/demo.yaml --config \'source={"kind": '
    '"csv", "csv": {"path": "/data/mimic-iii-demo"}}\'': (
        "needs the MIMIC-III demo files at that path; tests/workflow/test_demo_preset.py runs the preset"
    ),
    "python -m mimic_deid synth --subjects 3000 --seed 1 --out /tmp/mimic-synth": (
        "generates 3,000 subjects (over a minute) outside the test's directory; the 100-subject "
        "command of the demo section runs"
    ),
    "snakemake --unlock && snakemake --cores all": "a whole run after an interrupted one",
    'pip install -e ".[slurm]"': "installs into the user's environment",
    "snakemake --profile profiles/slurm --workflow-profile none": (
        "needs a SLURM cluster (tests/workflow/test_slurm.py)"
    ),
    "ruff format src tests workflow/scripts benchmarks && ruff check src tests workflow/scripts "
    "benchmarks": "rewrites the repository's files",
    "snakefmt Snakefile workflow/rules && snakemake --lint": (
        "rewrites the repository's files (tests/workflow/test_workflow.py runs the lint)"
    ),
    'pytest -m "not slow"': "runs the test suite",
    "python benchmarks/doc_figures.py --write": (
        "makes the tiny run and rewrites docs/results.md; tests/workflow/test_doc_figures.py "
        "checks the page against the suite's own tiny run"
    ),
}
#: The pages whose commands run: the README, then every page of docs/.
PAGES = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]
#: Seconds a quick command may take (the machine is shared; a dry run builds every job).
TIMEOUT = 300


def readme_commands(text: str) -> list[tuple[str, list[str]]]:
    """``(command, expected output lines)`` of every shell block of a page, in page order.

    ``bash`` / ``sh`` blocks: every line that is not blank or a comment (``\\`` joins lines);
    ``console`` blocks: every ``$ `` line, with the lines up to the next one as its output.
    A trailing comment (`` # ...``) is not part of the command.
    """
    out: list[tuple[str, list[str]]] = []
    for lang, body in re.findall(r"```(\w*)\n(.*?)```", text, re.S):
        lines = body.replace("\\\n", " ").splitlines()
        if lang in ("bash", "sh", "shell"):
            out += [
                (re.sub(r"\s+#\s.*$", "", ln.strip()), [])
                for ln in lines
                if ln.strip() and not ln.startswith("#")
            ]
        elif lang == "console":
            for ln in lines:
                if ln.startswith("$ "):
                    out.append((ln[2:].strip(), []))
                elif ln.strip() and out:
                    out[-1][1].append(ln.rstrip())
    return out


def _is_quick(command: str) -> bool:
    words = shlex.split(command, comments=True)
    if words[:1] == ["snakemake"]:
        return "-n" in words or "--dry-run" in words or "--help" in words
    # removing a file the README made a line earlier (to show an error) is quick too
    return words[:3] == ["python", "-m", "mimic_deid"] or words[:1] == ["rm"]


def _clone(workdir: Path) -> None:
    """A directory laid out like a clone: the Snakefile beside its workflow and profiles."""
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "Snakefile", workdir / "Snakefile")
    for name in ("workflow", "profiles"):
        (workdir / name).symlink_to(ROOT / name, target_is_directory=True)
    shutil.copytree(ROOT / "config", workdir / "config")


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONHASHSEED="0")
    bindir = str(Path(sys.executable).parent)  # snakemake and python of this environment
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )


def _page_commands(page: str) -> list[tuple[str, list[str]]]:
    return readme_commands((ROOT / page).read_text(encoding="utf-8"))


def test_readme_commands_are_classified():
    commands = [c for page in PAGES for c, _ in _page_commands(page)]
    unknown = [c for c in commands if c not in NOT_RUN and not _is_quick(c)]
    unknown = [c for c in unknown if shlex.split(c, comments=True)[0] != "snakemake"]
    assert not unknown, f"commands of {PAGES} neither run nor listed in NOT_RUN: {unknown}"
    stale = [c for c in NOT_RUN if c not in commands]
    assert not stale, f"NOT_RUN lists commands no page has: {stale}"


def test_the_readme_keeps_the_command_ci_runs():
    """.ci/run runs the README's second quick-start command verbatim."""
    command = 'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]" && pytest'
    assert command in [c for c, _ in _page_commands("README.md")]
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("page", PAGES)
def test_readme_commands_run_as_written(page, tmp_path):
    workdir = tmp_path / "clone"
    _clone(workdir)
    ran = []
    for command, expected in _page_commands(page):
        if command in NOT_RUN:
            continue
        if _is_quick(command):
            run = command
        else:  # a long snakemake command: its arguments and jobs, without running them
            run = shlex.join([*shlex.split(command, comments=True), "--dry-run"])
        proc = _run(run, workdir)
        output = (proc.stdout + proc.stderr).splitlines()
        if expected:  # a console block: the lines it shows, whatever the exit status
            tail = output[-len(expected) :]
            assert tail == expected, f"{command!r} printed:\n" + "\n".join(output[-20:])
        else:
            assert proc.returncode == 0, f"{run!r} exited {proc.returncode}:\n" + "\n".join(
                output[-30:]
            )
            assert "Traceback" not in proc.stderr, run
        ran.append(command)
    must_run = {  # commands the test must not lose (a page's order of commands may move)
        "docs/methods.md": [
            "snakemake tuning_tables --cores all --configfile config/presets/seed.yaml"
        ],
        "docs/real-mimic.md": [
            "python -m mimic_deid synth --subjects 100 --seed 1 --out mimic-demo-synth"
        ],
    }
    for command in must_run.get(page, []):
        assert command in ran, (page, command)
