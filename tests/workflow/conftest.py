"""Fixtures shared by the workflow test files."""

from __future__ import annotations

from pathlib import Path

import pytest
from workflow_helpers import CONFIG_NAME, built_once, prepare, snakemake


def _tiny_run(workdir: Path) -> None:
    config = prepare(workdir)
    proc = snakemake(workdir, "--cores", "2", config=config)
    (workdir / "stderr.txt").write_text(proc.stderr)


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> tuple[Path, Path]:
    """The tiny config's whole workflow (``rule all``), run once for the session and shared by
    every worker: its work directory and config. Read it only; a test that runs Snakemake in
    it or changes a file copies it first (:func:`workflow_helpers.copy_run`). Snakemake's
    stderr of the run is in ``stderr.txt``."""
    workdir = built_once(tmp_path_factory, "tiny-run", _tiny_run)
    return workdir, workdir / CONFIG_NAME
