"""Corrupted MIMIC-III inputs and bad settings through the real workflow (issue battery).

Every case runs real ``snakemake`` on a tiny synthetic copy given as a CSV source and asserts
the user-facing line, the exit status, and that no partial output is left under ``results/``.
Repairable data (exact duplicate events, stays with impossible times) is corrected, counted
and the run goes on.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from workflow_helpers import ROOT, SNAKEMAKE, prepare, snakemake

from mimic_deid.synthetic import generate

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

RAW = "results/private/raw"
COHORT = "results/private/cohort/stays.parquet"


@pytest.fixture(scope="module")
def clean_copy(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("mimic") / "clean"
    generate(folder, 80, 5)
    return folder


def read(folder: Path, table: str) -> pd.DataFrame:
    return pd.read_csv(folder / f"{table}.csv.gz", dtype=str, keep_default_na=False)


def write(folder: Path, table: str, frame: pd.DataFrame) -> None:
    frame.to_csv(folder / f"{table}.csv.gz", index=False)


def copy_with(clean: Path, dest: Path, **tables: pd.DataFrame) -> Path:
    shutil.copytree(clean, dest)
    for name, frame in tables.items():
        write(dest, name, frame)
    return dest


def run(workdir: Path, source: Path, target: str):
    config = prepare(workdir, {"source": {"kind": "csv", "csv": {"path": str(source)}}})
    return snakemake(workdir, "--cores", "1", target, config=config, check=False)


def leftovers(workdir: Path) -> list[str]:
    """Files under results/ (partial outputs of a failed run would show here)."""
    top = workdir / "results"
    return (
        sorted(str(p.relative_to(workdir)) for p in top.rglob("*") if p.is_file())
        if top.exists()
        else []
    )


def last_error(proc) -> str:
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("mimic-deid")]
    assert lines, proc.stderr[-3000:]
    return lines[-1]


def assert_failed_cleanly(proc, workdir: Path) -> None:
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert leftovers(workdir) == []


def test_chartevents_with_a_header_and_no_rows_stops_the_run(clean_copy, tmp_path):
    source = copy_with(
        clean_copy, tmp_path / "m", CHARTEVENTS=read(clean_copy, "CHARTEVENTS").iloc[0:0]
    )
    proc = run(tmp_path / "w", source, RAW)
    assert_failed_cleanly(proc, tmp_path / "w")
    assert last_error(proc) == (
        f"mimic-deid error in rule 'extract': CsvSource({str(source)!r}): table chartevents: no "
        "row with a configured item id (the table is empty or holds none of them); expected the "
        "events of the series variables. If the table is intentionally absent, list it in "
        "source.empty_tables"
    )


def test_a_null_icustay_id_is_named(clean_copy, tmp_path):
    stays = read(clean_copy, "ICUSTAYS")
    stays.loc[3, "ICUSTAY_ID"] = ""
    source = copy_with(clean_copy, tmp_path / "m", ICUSTAYS=stays)
    proc = run(tmp_path / "w", source, RAW)
    assert_failed_cleanly(proc, tmp_path / "w")
    assert last_error(proc) == (
        f"mimic-deid error in rule 'extract': CsvSource({str(source)!r}): table icustays: column "
        "icustay_id must not be empty (a MIMIC-III key); 1 row(s) have no value (first data "
        "rows: 4)"
    )


def test_repeated_icustays_rows_are_named_as_such(clean_copy, tmp_path):
    stays = read(clean_copy, "ICUSTAYS")
    source = copy_with(clean_copy, tmp_path / "m", ICUSTAYS=pd.concat([stays, stays.iloc[:3]]))
    proc = run(tmp_path / "w", source, RAW)
    assert_failed_cleanly(proc, tmp_path / "w")
    n = len(stays)
    assert last_error(proc) == (
        f"mimic-deid error in rule 'extract': CsvSource({str(source)!r}): table icustays: column "
        f"icustay_id must be unique (a MIMIC-III key); 3 value(s) occur more than once (first "
        f"data rows repeating an earlier row's value: {n + 1}, {n + 2}, {n + 3})"
    )


def test_repeated_patients_rows_are_named(clean_copy, tmp_path):
    patients = read(clean_copy, "PATIENTS")
    source = copy_with(
        clean_copy, tmp_path / "m", PATIENTS=pd.concat([patients.iloc[:1], patients])
    )
    proc = run(tmp_path / "w", source, RAW)
    assert_failed_cleanly(proc, tmp_path / "w")
    assert last_error(proc) == (
        f"mimic-deid error in rule 'extract': CsvSource({str(source)!r}): table patients: column "
        f"subject_id must be unique (a MIMIC-III key); 1 value(s) occur more than once (first "
        f"data rows repeating an earlier row's value: 2)"
    )


def test_events_given_twice_are_dropped_counted_and_change_nothing(clean_copy, tmp_path):
    once = run(tmp_path / "a", clean_copy, RAW)
    assert once.returncode == 0, once.stderr[-3000:]
    chart, lab = read(clean_copy, "CHARTEVENTS"), read(clean_copy, "LABEVENTS")
    source = copy_with(
        clean_copy,
        tmp_path / "m",
        CHARTEVENTS=pd.concat([chart, chart]),
        LABEVENTS=pd.concat([lab, lab]),
    )
    twice = run(tmp_path / "b", source, RAW)
    assert twice.returncode == 0, twice.stderr[-3000:]
    a, b = tmp_path / "a" / RAW, tmp_path / "b" / RAW
    for part in sorted((a / "events").iterdir()):
        assert (b / "events" / part.name).read_bytes() == part.read_bytes(), part.name
    counts_a = json.loads((a / "extract.json").read_text())["tables"]
    counts_b = json.loads((b / "extract.json").read_text())["tables"]
    for table in ("chartevents", "labevents"):
        assert counts_b[table]["kept"] == counts_a[table]["kept"]
        assert (
            counts_b[table]["dropped_duplicate"]
            == counts_a[table]["kept"] + 2 * counts_a[table]["dropped_duplicate"]
        )
    assert "exact duplicate rows dropped (counted)" in twice.stderr


def test_stays_with_impossible_times_are_excluded_by_a_named_rule(clean_copy, tmp_path):
    stays = read(clean_copy, "ICUSTAYS")
    stays.loc[0, "OUTTIME"] = "1900-01-01 00:00:00"  # before INTIME
    stays.loc[1, "OUTTIME"] = ""  # no OUTTIME
    source = copy_with(clean_copy, tmp_path / "m", ICUSTAYS=stays)
    proc = run(tmp_path / "w", source, COHORT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = json.loads((tmp_path / "w" / "results/private/cohort/cohort.json").read_text())
    rules = (
        {c["rule"]: c["stays"] for c in counts["rules"]}
        if isinstance(counts, dict)
        else {c["rule"]: c["stays"] for c in counts}
    )
    assert rules["start"] - rules["valid_times"] == 2
    assert "2 stays dropped by rule valid_times" in proc.stderr


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"deid": {"dk": [10, 20], "fk": [5, 15]}},
            "config parameters 'deid/fk' and 'deid/dk': every fk must be <= every dk (a Mondrian "
            "class lies inside a duration class), got fk [5, 15] and dk [10, 20]",
        ),
        (
            {"source": {"kind": "postgres", "csv": {"path": "/data/mimic"}}},
            "config parameters 'source/kind' and 'source/csv/path': kind is postgres but a CSV "
            "path is set; remove one of them",
        ),
        (
            {
                "source": {
                    "kind": "postgres",
                    "postgres": {"dsn": "host=db user=me password=s3cret"},
                }
            },
            "config parameter 'source/postgres/dsn': contains a password; remove it and give the "
            "password to libpq instead (PGPASSWORD, ~/.pgpass or a service file named by "
            "PGSERVICE), so that it never reaches logs, job scripts or the process list",
        ),
        (
            {"series": {"ihm_hours": 9000}},
            "config parameter 'series/ihm_hours': 9000 is greater than the maximum of 8760",
        ),
    ],
)
def test_conflicting_settings_stop_before_any_job(tmp_path, overrides, message):
    config = prepare(tmp_path, overrides)
    proc = snakemake(tmp_path, "--cores", "1", config=config, check=False)
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == f"mimic-deid: invalid configuration: {message}"
    assert "s3cret" not in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists() and not (tmp_path / "resources").exists()


def test_a_full_disk_names_the_file_and_loses_nothing(clean_copy, tmp_path):
    """results/ on a 128 KiB file system (the raw artefacts need about 400 KiB)."""
    workdir = tmp_path / "w"
    disk = workdir / "results"
    disk.mkdir(parents=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        proc = run(workdir, clean_copy, RAW)
        assert "Traceback" not in proc.stderr
        assert last_error(proc) == (
            f"mimic-deid error in rule 'extract': cannot write {RAW}: No space left on "
            "device; nothing was lost: the partial output was removed and the previous version, "
            "if any, is untouched (free space or fix permissions, then re-run)"
        )
        assert proc.returncode == 1
        assert leftovers(workdir) == []
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_run_killed_during_extraction_leaves_only_declared_outputs(clean_copy, tmp_path):
    workdir = tmp_path / "w"
    config = prepare(
        workdir,
        {"source": {"kind": "csv", "csv": {"path": str(clean_copy)}, "chunk_rows": 1000}},
    )
    cmd = [*SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "-d", str(workdir), "--cores", "1", RAW]
    cmd += ["--configfile", str(config)]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    private = workdir / "results" / "private"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if private.exists() and any(private.glob(".raw.partial-*/.spool/*")):
            break  # extraction is spooling events
        time.sleep(0.02)
    assert proc.poll() is None, "the extraction finished before it could be interrupted"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert list(private.glob(".raw.partial-*"))  # the kill left private temporaries behind
    snakemake(workdir, "--unlock", config=config)
    snakemake(workdir, "--cores", "1", "--rerun-incomplete", RAW, config=config)
    left = leftovers(workdir)
    raw = sorted(str(p.relative_to(workdir)) for p in (workdir / RAW).rglob("*") if p.is_file())
    assert left == raw
    assert not list(private.glob(".*"))
