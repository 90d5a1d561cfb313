"""Log lines: progress with work done, rate and ETA; a tag per job; errors in one line."""

import logging
import re
import subprocess
import sys

import pytest

from mimic_deid.core.logs import Progress, configure, job_tag


@pytest.fixture
def captured(caplog: pytest.LogCaptureFixture):
    logger = logging.getLogger("mimic_deid")
    logger.addHandler(caplog.handler)
    old = logger.level, logger.propagate
    logger.setLevel(logging.INFO)
    logger.propagate = False  # caplog also listens at the root: count each record once
    yield caplog
    logger.removeHandler(caplog.handler)
    logger.level, logger.propagate = old


def test_progress_reports_work_done_rate_and_eta_once_at_the_end(captured) -> None:
    progress = Progress("genetic L=48", 1200, logging.getLogger("mimic_deid.t"), unit="series")
    for _ in range(4):
        progress.update(300)
    progress.close()
    progress.close()
    lines = [r.getMessage() for r in captured.records]
    assert len(lines) == 1, lines
    assert re.fullmatch(
        r"genetic L=48: 1200/1200 series \(100%\) in 00:00, [\d.]+ series/s, ETA 00:00", lines[0]
    ), lines[0]


def test_progress_of_unknown_total_gives_the_rate(captured) -> None:
    progress = Progress("chartevents", None, logging.getLogger("mimic_deid.t"), unit="rows")
    progress.update(5000)
    assert progress.done == 5000
    progress.close()
    message = captured.records[-1].getMessage()
    assert re.fullmatch(r"chartevents: 5000 rows in 00:00, [\d.]+ rows/s", message), message


@pytest.mark.parametrize(
    ("rule", "log_file", "tag"),
    [
        ("deidentify", "logs/stays/dk50/fk10-median/genetic/deidentify.log",
         "stays/dk50/fk10-median/genetic/deidentify"),
        ("extract", "logs/extract.log", "extract"),
        ("report", None, "report"),
    ],
)  # fmt: skip
def test_each_job_has_its_own_tag(rule: str, log_file: str | None, tag: str) -> None:
    assert job_tag(rule, log_file) == tag


def test_log_lines_carry_the_job_tag(tmp_path) -> None:
    log_file = tmp_path / "job.log"
    configure(str(log_file), tag="stays/dk50/genetic/deidentify")
    logging.getLogger("mimic_deid.deid.classes").info("genetic: 10/20 series")
    for handler in logging.getLogger("mimic_deid").handlers:
        handler.flush()
    configure(None)
    line = log_file.read_text(encoding="utf-8").strip()
    assert re.fullmatch(
        r"\S+ \S+ INFO \[stays/dk50/genetic/deidentify\] mimic_deid\.deid\.classes: "
        r"genetic: 10/20 series",
        line,
    ), line


def test_package_version_on_the_command_line() -> None:
    from importlib.metadata import version

    out = subprocess.run(
        [sys.executable, "-m", "mimic_deid", "--version"], capture_output=True, text=True
    )
    assert (out.returncode, out.stdout, out.stderr) == (
        0,
        f"mimic-deid {version('mimic-deid')}\n",
        "",
    )


def test_run_stage_reports_a_library_error_in_one_line(tmp_path, capsys) -> None:
    from mimic_deid.core.errors import InputDataError
    from mimic_deid.core.logs import run_stage

    with pytest.raises(SystemExit) as info, run_stage("extract", str(tmp_path / "x.log")):
        raise InputDataError("table icustays: column icustay_id must be unique")
    assert info.value.code == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "mimic-deid error in rule 'extract': table icustays: column icustay_id must be unique"
    )


def test_run_stage_reports_an_unreadable_input_in_one_line(tmp_path, capsys) -> None:
    import errno

    from mimic_deid.core.logs import run_stage

    with pytest.raises(SystemExit) as info, run_stage("extract", str(tmp_path / "x.log")):
        raise PermissionError(errno.EACCES, "Permission denied", "/data/ICUSTAYS.csv.gz")
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        "mimic-deid error in rule 'extract': Permission denied: /data/ICUSTAYS.csv.gz"
    )
    assert "Traceback" not in err


def _raise_with_a_value() -> None:
    float("SENTINEL-4711")  # a library error quoting a cell value (ValueError)


def test_an_unexpected_error_names_its_place_not_its_message(tmp_path, capsys, monkeypatch):
    from mimic_deid.core.logs import DEBUG_ENV, run_stage

    monkeypatch.delenv(DEBUG_ENV, raising=False)
    log = tmp_path / "x.log"
    with pytest.raises(SystemExit) as info, run_stage("series", str(log)):
        _raise_with_a_value()
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        "mimic-deid internal error in rule 'series': ValueError at test_logs.py:"
        f"{_raise_with_a_value.__code__.co_firstlineno + 1} in _raise_with_a_value; its message "
        "is not shown, as it may quote input data (set MIMIC_DEID_DEBUG=1 to see the traceback, "
        "on a terminal only)"
    )
    assert "SENTINEL" not in err + log.read_text()
    assert "Traceback" not in err
    monkeypatch.setenv(DEBUG_ENV, "1")  # a developer asks for the traceback
    with pytest.raises(ValueError, match="SENTINEL-4711"), run_stage("series"):
        _raise_with_a_value()


def test_a_log_file_is_owner_only(tmp_path) -> None:
    log = tmp_path / "x.log"
    configure(str(log))
    logging.getLogger("mimic_deid.test").info("counts only")
    assert log.stat().st_mode & 0o777 == 0o600


def test_run_stage_ends_with_the_jobs_exact_cpu_and_peak(tmp_path) -> None:
    """The finishing line carries the job's CPU, its waited-for workers' included, and its
    peak RSS (what benchmarks/full_scale.py reads instead of Snakemake's sampled figures)."""
    import multiprocessing
    import re

    from mimic_deid.core.logs import FINISH_USAGE, process_usage, run_stage

    log = tmp_path / "x.log"
    before, _ = process_usage()
    with run_stage("series", str(log)):
        with multiprocessing.get_context("fork").Pool(1) as pool:
            pool.apply(_spin, (0.6,))  # CPU in a worker, counted once it is waited for
        block = bytearray(64 * 2**20)  # 64 MB touched by this process
        block[::4096] = b"x" * len(block[::4096])
        _spin(0.3)
    last = log.read_text().splitlines()[-1]
    assert re.search(
        r"rule series finished in [0-9]+\.[0-9] s \(CPU [0-9]+\.[0-9] s, peak RSS [0-9]+ MB\)$",
        last,
    )
    m = FINISH_USAGE.search(last)
    assert float(m["cpu"]) - before >= 0.85  # the worker's 0.6 s and this process's 0.3 s
    assert float(m["rss"]) >= 64


def _spin(seconds: float) -> None:
    import time

    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
