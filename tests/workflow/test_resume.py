"""An interrupted workflow run resumes to the outputs of an uninterrupted one, byte for byte.

Its own file, so that it runs beside the tests of ``test_workflow.py`` (pytest-xdist hands
out whole files); the reference run is the session's tiny run (``conftest.tiny_run``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from workflow_helpers import ROOT, SNAKEMAKE, output_digests, prepare, snakemake

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def test_interrupted_run_resumes_to_identical_outputs(request, tmp_path):
    """Kill a run in the middle of a rule; --rerun-incomplete finishes it byte-identically.

    The run selects the series stage only (`stages: [series]`), so it also shows that the
    report builds without the deselected comparators and says so; every artefact it shares
    with the reference run of all stages is byte-identical (the report pages differ by the
    comparators' sections). The reference is taken after the resumed run, so that this run
    goes on while another worker builds it."""
    config = prepare(tmp_path, {"stages": ["series"]})
    cmd = [*SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path), "--cores", "1"]
    cmd += ["--configfile", str(config)]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    marker = tmp_path / "results" / "private" / "raw"
    # wait for the events, however long a busy machine takes to reach them (no deadline: the
    # run ends by itself, and pytest's per-test timeout bounds a hang)
    while not marker.exists() and proc.poll() is None:
        time.sleep(0.2)
    incomplete = tmp_path / ".snakemake" / "incomplete"
    while proc.poll() is None:
        if incomplete.exists() and any(incomplete.iterdir()):
            break  # a job after the extraction is running: its outputs are marked incomplete
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    snakemake(tmp_path, "--unlock", config=config)
    snakemake(tmp_path, "--cores", "2", "--rerun-incomplete", config=config)
    reference, _ = request.getfixturevalue("tiny_run")
    got, want = output_digests(tmp_path), output_digests(reference)
    comparators = tuple(
        f"results/{top}{stage}" for top in ("", "private/") for stage in ("tabular", "codes",
                                                                          "sequences")
    )  # fmt: skip
    reports = ("results/report/", "results/private/report/")
    assert set(got) <= set(want), set(got) - set(want)
    assert not [f for f in got if f.startswith(comparators)]
    assert {f for f in set(want) - set(got) if not f.startswith(comparators + reports)} == set()
    different = [k for k in got if got[k] != want[k] and not k.startswith(reports)]
    assert not different, different
    tables = tmp_path / "results" / "report" / "tables"
    assert "tabular stage not run" in (tables / "tabular_uniqueness.csv").read_text()
    assert "no sequences sweep in this run" in (tables / "sequences_summary.csv").read_text()
