"""A fourth comparator is its own package and one entry in the stage list
(docs/architecture.md "Adding a fourth stage"): in a temporary copy of the library, a toy
stage ``notes`` is added as a package (its stage object and its report items) and one entry
in ``stages.py``; its report section is built without editing any other file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

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
print(sorted(p.name for p in out.rglob("*") if p.is_file()))
"""


def test_a_toy_stage_is_one_package_and_one_entry_in_the_stage_list(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "mimic_deid", src / "mimic_deid",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    package = src / "mimic_deid" / "notes"
    package.mkdir()
    (package / "__init__.py").write_text('"""A toy comparator stage."""\n')
    (package / "stage.py").write_text(STAGE)
    (package / "report.py").write_text(REPORT)
    stages = src / "mimic_deid" / "stages.py"
    text = stages.read_text()
    entry = "    SEQUENCES,\n)"
    assert text.count(entry) == 1
    # the one entry: the stage list names the package's stage object
    stages.write_text(
        text.replace(
            entry, "    SEQUENCES,\n    __import__('mimic_deid.notes.stage').notes.stage.STAGE,\n)"
        )
    )
    before = {p.relative_to(src): p.read_bytes() for p in (src / "mimic_deid").rglob("*.py")}
    out = tmp_path / "report"
    proc = subprocess.run(
        [sys.executable, "-c", BUILD, str(out)],
        capture_output=True, text=True, env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == str(
        ["index.html", "notes_bars.png", "notes_counts.csv", "notes_counts.md"]
    )
    page = (out / "index.html").read_text()
    assert "Notes (toy)" in page and "radiology" in page and "notes_bars.png" in page
    # only the new package and the one entry differ from the library
    changed = {
        str(rel)
        for rel, data in before.items()
        if not (ROOT / "src" / rel).is_file() or (ROOT / "src" / rel).read_bytes() != data
    }
    assert changed == {
        "mimic_deid/stages.py",
        "mimic_deid/notes/__init__.py",
        "mimic_deid/notes/stage.py",
        "mimic_deid/notes/report.py",
    }
    diff = [
        line
        for line in stages.read_text().splitlines()
        if line not in (ROOT / "src" / "mimic_deid" / "stages.py").read_text().splitlines()
    ]
    assert diff == ["    __import__('mimic_deid.notes.stage').notes.stage.STAGE,"]


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
    # 1. the package: its stage object and its report items
    (src / "notes").mkdir()
    (src / "notes" / "__init__.py").write_text('"""A toy comparator stage."""\n')
    (src / "notes" / "stage.py").write_text(STAGE)
    (src / "notes" / "report.py").write_text(REPORT)
    # 2. one rule file
    (root / "workflow" / "rules" / "notes.smk").write_text(RULES)
    # 3. one schema section and the name in the `stages` enum
    schema = root / "config" / "schema.yaml"
    text = schema.read_text()
    enum = "enum: [series, tabular, codes, sequences]"
    assert text.count(enum) == 1 and text.count("\n  source:\n") == 1
    text = text.replace(enum, "enum: [series, tabular, codes, sequences, notes]")
    text = text.replace(
        "\n  source:\n",
        "\n  notes: {type: object, additionalProperties: false, default: {}, properties: {}}"
        "\n  source:\n",
    )
    schema.write_text(text)
    # 4. one entry in the stage list
    stages = src / "stages.py"
    text = stages.read_text()
    assert text.count("    SEQUENCES,\n)") == 1
    stages.write_text(
        text.replace(
            "    SEQUENCES,\n)",
            "    SEQUENCES,\n    __import__('mimic_deid.notes.stage').notes.stage.STAGE,\n)",
        )
    )
    # 5. its artefacts' paths (the one home of every path)
    paths = root / "workflow" / "paths.py"
    text = paths.read_text()
    assert text.count("\n}\n") == 1
    paths.write_text(
        text.replace("\n}\n", '\n    "notes_counts": "results/notes/counts.csv",\n}\n')
    )


@pytest.mark.workflow
def test_the_documented_recipe_adds_a_stage_to_the_workflow(tmp_path):
    """The documented recipe (package, rule file, schema section, stage-list entry, paths
    line) is all a stage needs for Snakemake to plan it: a dry run with only the toy stage
    selected schedules its rule and nothing else; no other file of the copy changes."""
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
        "workflow/paths.py",
        "workflow/rules/notes.smk",
    ]
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
