"""A fourth comparator is one package, one rule file, one schema section and one line in the
stage list (docs/architecture.md "Adding a fourth stage"): in a temporary copy of the
repository a toy stage ``notes`` is added by exactly these steps, with its artefacts' paths
declared in its package; no other file changes, Snakemake plans it, and its report section is
built."""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from workflow_helpers import ROOT, SNAKEMAKE, planned_jobs

STAGE = """
from mimic_deid.core.stage import Stage


def _tables(config):
    return ("NOTEEVENTS",)


def _targets(config):
    return (("notes_counts", {}),)


def _report_inputs(config, audience="public"):
    return {"notes_counts": ("notes_counts", {})}


STAGE = Stage(
    name="notes",
    config_section="notes",
    tables=_tables,
    targets=_targets,
    report_inputs=_report_inputs,
    report_module="mimic_deid.notes.report",
    rule_files=("notes.smk",),
    seed_namespace="notes",
    public_paths={"notes_counts": "notes/counts.csv"},
)
"""

REPORT = """
import pandas as pd

from mimic_deid.report.items import ReportItem, table_item
from mimic_deid.report.plotting import new_figure, save


def _counts(data):
    return data.inputs.get("notes_counts", pd.DataFrame({"note": ["notes stage not run"]}))


def _plot(data, out):
    figure = new_figure(4, 3)
    counts = _counts(data)
    figure.add_subplot().bar(counts["category"], counts["notes"])
    save(figure, out)


ITEMS = (
    ReportItem("notes_counts", "table", "Notes (toy)", "Notes per category.", table_item(_counts)),
    ReportItem("notes_bars", "figure", "Notes (toy)", "Notes per category, drawn.", _plot),
)
"""

BUILD = """
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, sys.argv[2])
from paths import PATHS

from mimic_deid.report.content import build_report
from mimic_deid.report.items import ReportData
from mimic_deid.stages import REPORT_MODULES, STAGES

out = Path(sys.argv[1])
assert [s.name for s in STAGES][-1] == "notes", [s.name for s in STAGES]
data = ReportData.__new__(ReportData)
data.point = {"dk": 10, "fk": 3, "heuristic": "range", "method": "mdav"}
data.audience, data.cards, data.sweep, data.frontier = "public", [], None, pd.DataFrame()
data.inputs = {"notes_counts": pd.DataFrame({"category": ["nursing", "radiology"], "notes": [7, 5]})}
build_report(data, out / "figures", out / "tables", out / "index.html",
             modules=[m for m in REPORT_MODULES if m.startswith("mimic_deid.notes")])
print(PATHS["notes_counts"])
print(sorted(p.name for p in out.rglob("*") if p.is_file()))
"""


RULES = """# Toy stage: the notes per category (tests/test_toy_stage.py).


rule notes_counts:
    output:
        counts=PATHS["notes_counts"],
    log:
        "logs/notes/counts.log",
    run:
        Path(output.counts).parent.mkdir(parents=True, exist_ok=True)
        Path(output.counts).write_text("category,notes\\nnursing,7\\n")
"""


def _add_toy_stage_to_the_workflow(root) -> None:
    """The recipe of docs/architecture.md "Adding a fourth stage", step by step, in a copy."""
    src = root / "src" / "mimic_deid"
    # 1. the package: its stage object (with its artefacts' paths) and its report items
    (src / "notes").mkdir()
    (src / "notes" / "__init__.py").write_text('"""A toy comparator stage."""\n')
    (src / "notes" / "stage.py").write_text(STAGE)
    (src / "notes" / "report.py").write_text(REPORT)
    # 2. one rule file
    (root / "workflow" / "rules" / "notes.smk").write_text(RULES)
    # 3. one schema section
    schema = root / "config" / "schema.yaml"
    text = schema.read_text()
    assert text.count("\n  source:\n") == 1
    schema.write_text(text.replace("\n  source:\n", f"\n{SECTION}\n  source:\n"))
    # 4. one line in the stage list
    stages = src / "stages.py"
    text = stages.read_text()
    assert text.count('    "sequences",\n)') == 1
    stages.write_text(text.replace('    "sequences",\n)', f'    "sequences",\n{ENTRY}\n)'))


#: The toy stage's schema section and its line in the stage list.
SECTION = "  notes: {type: object, additionalProperties: false, default: {}, properties: {}}"
ENTRY = '    "notes",'


def _added_lines(old: bytes, new: bytes) -> list[str]:
    """The lines of ``new`` that are not in ``old``, after checking that none was removed."""
    diff = list(difflib.ndiff(old.decode().splitlines(), new.decode().splitlines()))
    assert not [line for line in diff if line.startswith("- ")], diff
    return [line[2:] for line in diff if line.startswith("+ ")]


@pytest.mark.workflow
def test_the_documented_recipe_adds_a_stage_to_the_workflow_and_the_report(tmp_path):
    """The documented recipe (package with its paths, rule file, schema section, one line in
    the stage list) is all a stage needs: no other file of the copy changes, a dry run with
    only the toy stage selected schedules its rule and nothing else, its artefact's path is
    composed below results/, and its report section is built."""
    root = tmp_path / "repo"
    for part in ("src", "workflow", "config"):
        shutil.copytree(ROOT / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "Snakefile", root / "Snakefile")
    before = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    _add_toy_stage_to_the_workflow(root)
    after = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    changed = sorted(str(p) for p, data in after.items() if before.get(p) != data)
    assert changed == [
        "config/schema.yaml",
        "src/mimic_deid/notes/__init__.py",
        "src/mimic_deid/notes/report.py",
        "src/mimic_deid/notes/stage.py",
        "src/mimic_deid/stages.py",
        "workflow/rules/notes.smk",
    ]
    stages, schema = Path("src/mimic_deid/stages.py"), Path("config/schema.yaml")
    assert _added_lines(before[stages], after[stages]) == [ENTRY]
    assert _added_lines(before[schema], after[schema]) == [SECTION]
    work = tmp_path / "work"
    shutil.copytree(root / "config", work / "config")
    env = dict(os.environ, PYTHONPATH=str(root / "src"), PYTHONHASHSEED="0")
    proc = subprocess.run(
        [*SNAKEMAKE, "-s", str(root / "Snakefile"), "-d", str(work), "-n",
         "--config", "stages=[notes]"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert planned_jobs(proc.stdout) == {"all": 1, "notes_counts": 1}
    out = tmp_path / "report"
    proc = subprocess.run(
        [sys.executable, "-c", BUILD, str(out), str(root / "workflow")],
        capture_output=True, text=True, env={"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == [
        "results/notes/counts.csv",
        str(["index.html", "notes_bars.png", "notes_counts.csv", "notes_counts.md"]),
    ]
    page = (out / "index.html").read_text()
    assert "Notes (toy)" in page and "radiology" in page and "notes_bars.png" in page
