"""A fourth comparator is its own package and one entry in the stage list
(docs/architecture.md "Adding a fourth stage"): in a temporary copy of the library, a toy
stage ``notes`` is added as a package (its stage object and its report items) and one entry
in ``stages.py``; its report section is built without editing any other file."""

from __future__ import annotations

import shutil
import subprocess
import sys

from workflow_helpers import ROOT

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
