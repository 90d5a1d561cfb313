"""The README's quick-start install (no test extra) gives a working ``snakemake --report``.

Its own file, so that it runs beside the tests of ``test_workflow.py`` (pytest-xdist hands
out whole files); the run reported on is the session's tiny run (``conftest.tiny_run``).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from workflow_helpers import ROOT, copy_run

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def test_html_report_works_after_the_readme_install(request, tmp_path):
    """`pip install -e .` (the README's quick start, no test extra) gives a working
    `snakemake --report`: Snakemake's report dependencies are runtime dependencies."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # --no-compile: pip byte-compiles every installed module by default (about 40 of this
    # step's 100 s here); Python compiles what it imports anyway, so the environment is the same
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile"]
    pip += ["-e", str(ROOT), "-c", str(ROOT / "constraints.txt")]
    proc = subprocess.run(pip, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list"], capture_output=True, text=True
    ).stdout
    assert "pytest " not in listed  # really the environment without the test extra
    # the run is taken after the install, so that the install goes on while another worker
    # builds it; a copy, so that nothing the other workers read is touched
    workdir, config = copy_run(request.getfixturevalue("tiny_run")[0], tmp_path / "run")
    out = tmp_path / "report.html"
    cmd = [str(venv / "bin" / "snakemake"), "-s", str(ROOT / "Snakefile"), "-d", str(workdir)]
    cmd += ["--report", str(out), "--configfile", str(config)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "linkage_strong.png" in out.read_text(errors="replace")
