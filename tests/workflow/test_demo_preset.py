"""config/presets/demo.yaml runs the whole workflow on a 100-subject copy (issue 28 point 5),
and the run's last line names the report only when the run built it or depends on it."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
from workflow_helpers import ROOT, planned_jobs, snakemake

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

PRESET = ROOT / "config" / "presets" / "demo.yaml"
#: PhysioNet's open demo: 100 subjects (the generated copy of that size).
SOURCE = 'source={"kind": "synthetic", "synthetic": {"subjects": 100}}'


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("demo")
    shutil.copytree(ROOT / "config", workdir / "config")  # variables, hierarchies
    proc = snakemake(workdir, "--cores", "2", "--configfile", str(PRESET), "--config", SOURCE)
    return workdir, proc


def test_demo_preset_completes_rule_all_on_100_subjects(demo_run):
    workdir, proc = demo_run
    cohort = json.loads((workdir / "results/private/cohort/cohort.json").read_text())
    assert cohort["rules"][0]["subjects"] == 100
    report = workdir / "results" / "report"
    text = (report / "index.html").read_text()
    assert "synthetic data, not MIMIC-III" in text
    sweep = pd.read_csv(report / "sweep_summary.csv")
    # the preset's four methods: mdav-spread, mdav, adhoc, genetic
    assert set(sweep["dk"]) == {5} and set(sweep["fk"]) == {2} and len(sweep) == 4
    again = snakemake(workdir, "-n", "--configfile", str(PRESET), "--config", SOURCE)
    assert planned_jobs(again.stdout) == {}, again.stdout[-2000:]  # rule all is complete
    for stage in ("codes/lda.csv", "tabular/release.json", "sequences/transfers/check.json"):
        assert (workdir / "results" / stage).is_file(), stage
    utility = pd.read_csv(next(workdir.glob("results/ihm48/dk5/fk2-range/adhoc-*/utility/*.csv")))
    assert utility["roc_auc"].notna().any()
    done = [ln for ln in proc.stdout.splitlines() if ln.startswith("mimic-deid: done")]
    assert done == [
        f"mimic-deid: done. Report: {(report / 'index.html').resolve()} "
        "(for the Snakemake HTML report: snakemake --report report.html)"
    ]


def test_done_line_names_no_report_after_a_partial_target(demo_run):
    """A run of one stage's file (forced) does not rebuild the report: no report path."""
    workdir, _ = demo_run
    proc = snakemake(
        workdir, "--cores", "1", "results/codes/audit.json", "--forcerun", "codes_audit",
        "--configfile", str(PRESET), "--config", SOURCE,
    )  # fmt: skip
    done = [ln for ln in proc.stdout.splitlines() if ln.startswith("mimic-deid: done")]
    assert done == [
        "mimic-deid: done. The report was not among this run's targets and was not rebuilt; "
        "`snakemake --cores all` builds it."
    ], proc.stdout[-3000:]
