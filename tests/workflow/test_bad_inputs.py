"""Corrupted MIMIC-III inputs and bad settings through the real workflow (issue battery).

Every case runs real ``snakemake`` on a tiny synthetic copy given as a CSV source and asserts
the user-facing line, the exit status, and that no partial output is left under ``results/``.
Repairable data (exact duplicate events, stays with impossible times) is corrected, counted
and the run goes on.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from workflow_helpers import ROOT, SNAKEMAKE, mimic_messages, prepare, snakemake

from mimic_deid.synthetic import generate

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

RAW = "results/private/raw"
#: Written at start-up for a CSV source without a configured seed (seeding.master_seed).
MASTER_SEED = "results/private/master_seed.txt"
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
    """Files under results/ (partial outputs of a failed run would show here), but the secret
    master seed the run drew at start-up."""
    top = workdir / "results"
    files = (
        sorted(str(p.relative_to(workdir)) for p in top.rglob("*") if p.is_file())
        if top.exists()
        else []
    )
    return [f for f in files if f != MASTER_SEED]


def last_error(proc) -> str:
    lines = mimic_messages(proc.stderr)
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
    # the generator makes stays of no duration (OUTTIME == INTIME) itself
    generated = int((stays["OUTTIME"] == stays["INTIME"]).sum())
    assert generated >= 1
    ok = stays.index[stays["OUTTIME"] > stays["INTIME"]]
    stays.loc[ok[0], "OUTTIME"] = "1900-01-01 00:00:00"  # before INTIME
    stays.loc[ok[1], "OUTTIME"] = ""  # no OUTTIME
    stays.loc[ok[2], "OUTTIME"] = stays.loc[ok[2], "INTIME"]  # no duration
    planted = {int(stays.loc[i, "ICUSTAY_ID"]) for i in ok[:3]}
    source = copy_with(clean_copy, tmp_path / "m", ICUSTAYS=stays)
    proc = run(tmp_path / "w", source, COHORT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = json.loads((tmp_path / "w" / "results/private/cohort/cohort.json").read_text())
    rules = (
        {c["rule"]: c["stays"] for c in counts["rules"]}
        if isinstance(counts, dict)
        else {c["rule"]: c["stays"] for c in counts}
    )
    n = 3 + generated
    assert rules["start"] - rules["valid_times"] == n
    assert (
        f"{n} stays dropped by rule valid_times: no INTIME or OUTTIME, or OUTTIME not after INTIME"
    ) in proc.stderr
    kept = set(pd.read_parquet(tmp_path / "w" / COHORT)["icustay_id"])
    assert not planted & kept


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
    # wait for the event, however long a busy machine takes to reach it (no deadline: the
    # run ends by itself, and pytest's per-test timeout bounds a hang)
    # (the extraction's scratch folder, from its first step: with ISA-L's inflate the spooling
    # alone was over before a 20 ms poll saw it on an idle machine)
    while proc.poll() is None:
        if private.exists() and any(private.glob(".raw.partial-*")):
            break  # the extraction is under way in its scratch folder
        time.sleep(0.005)
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


# --------------------------------------------------------------------------- issue 26 point 7
# Nothing private in logs: bad rows carry sentinel values; every log file and stderr must name
# the file, row and column without them.

CODES = "results/private/codes/extract.json"
TRANSFERS_EVENTS = "results/private/sequences/transfers/events.parquet"
CPT_EVENTS = "results/private/sequences/cptevents/events.parquet"
TABULAR_RAW = "results/private/tabular/raw/procedures.parquet"
OLA = "results/tabular/ola_grid.csv"  # encodes the demographics table (hierarchies)
SERIES = "results/private/series/stays/series.parquet"


def _plant(frame: pd.DataFrame, row: int, **cells: str) -> pd.DataFrame:
    frame = frame.copy()
    for column, value in cells.items():
        frame.loc[row, column] = value
    return frame


def _numeric_chart_rows(chart: pd.DataFrame, itemid: str) -> pd.Index:
    return chart.index[(chart["ITEMID"] == itemid) & (chart["VALUENUM"] != "")]


def _sentinel_case(name: str, clean: Path):
    """(tables to replace, targets, sentinels) of one planted case."""
    chart, lab = read(clean, "CHARTEVENTS"), read(clean, "LABEVENTS")
    if name == "every-extraction":  # one bad row in each table a stage's extraction reads
        return (
            {
                "CHARTEVENTS": _plant(chart, 100, CHARTTIME="2101-99-99 SENTINELA"),
                "TRANSFERS": _plant(read(clean, "TRANSFERS"), 5, CURR_CAREUNIT="SENTINELB"),
                "CPTEVENTS": _plant(read(clean, "CPTEVENTS"), 5, CPT_CD="SENTINELC"),
                "PROCEDURES_ICD": _plant(read(clean, "PROCEDURES_ICD"), 5, SEQ_NUM="SENTINELE"),
            },
            [RAW, TRANSFERS_EVENTS, CPT_EVENTS, TABULAR_RAW],
            ["SENTINELA", "SENTINELB", "SENTINELC", "SENTINELE", "2101-99-99"],
        )
    if name == "lab-number":
        return ({"LABEVENTS": _plant(lab, 50, VALUENUM="31415926.5x")}, [RAW], ["31415926"])
    if name == "stay-times":  # the small tables are read first
        return (
            {"ICUSTAYS": _plant(read(clean, "ICUSTAYS"), 3, INTIME="SENTINELH 12:00:00")},
            [RAW],
            ["SENTINELH"],
        )
    # values that parse as CSV but not as the variable's value: cleaned, counted, logged; and
    # the diagnoses, read by the codes stage once the raw extraction is done
    rows = _numeric_chart_rows(chart, "220045")[::40]  # heart rate, in and out of the cohort
    chart = chart.copy()
    chart.loc[rows, "VALUE"] = "SENTINELI"
    chart.loc[rows, "VALUENUM"] = ""
    chart.loc[rows[:1], "VALUEUOM"] = "SENTINELJ"
    return (
        {
            "CHARTEVENTS": chart,
            "DIAGNOSES_ICD": _plant(read(clean, "DIAGNOSES_ICD"), 5, SEQ_NUM="4242SENTINELD"),
            # every row: which admissions enter the demographics table is the stage's choice
            "ADMISSIONS": read(clean, "ADMISSIONS").assign(MARITAL_STATUS="SENTINELG"),
        },
        [SERIES, CODES, OLA],
        ["SENTINELI", "SENTINELJ", "SENTINELD", "SENTINELG"],
    )


@pytest.mark.parametrize("case", ["every-extraction", "lab-number", "stay-times", "cleaned-values"])
def test_no_planted_value_reaches_a_log_and_logs_are_owner_only(clean_copy, tmp_path, case):
    tables, targets, sentinels = _sentinel_case(case, clean_copy)
    source = copy_with(clean_copy, tmp_path / "m", **tables)
    workdir = tmp_path / "w"
    # a seed given, so stderr holds only the errors (the drawn-seed line has its own test);
    # check_rows 0: the start-up check reads headers only, so that the jobs' readers meet the
    # planted rows, as they meet any row past the start-up sample (that sample's messages:
    # test_bad_tables_stop_the_dry_run_before_any_job)
    csv = {"path": str(source), "check_rows": 0}
    config = prepare(workdir, {"seed": 5, "source": {"kind": "csv", "csv": csv}})
    proc = snakemake(workdir, "--cores", "2", "--keep-going", *targets, config=config, check=False)
    logs = workdir / "logs"
    files = [p for p in logs.rglob("*") if p.is_file()]
    assert any(p.suffix == ".log" for p in files), proc.stderr[-3000:]
    for text, where in [(p.read_text(errors="replace"), str(p)) for p in files] + [
        (proc.stderr + proc.stdout, "stderr/stdout")
    ]:
        for sentinel in sentinels:
            assert sentinel not in text, f"{sentinel} in {where}"
    assert "Traceback" not in proc.stderr
    # owner-only: the directory (so everything below it), and every log file itself
    assert logs.stat().st_mode & 0o777 == 0o700
    for p in files:
        if p.suffix == ".log":
            assert p.stat().st_mode & 0o777 == 0o600, p
    errors = mimic_messages(proc.stderr)
    if case == "every-extraction":
        assert proc.returncode == 1
        chart_file = source / "CHARTEVENTS.csv.gz"
        proc_file = source / "PROCEDURES_ICD.csv.gz"
        assert sorted(set(errors)) == sorted(
            [
                f"mimic-deid error in rule 'extract': {chart_file}: column 'CHARTTIME', data row "
                "101: the value is not a timestamp 'YYYY-MM-DD HH:MM:SS' (values are never shown "
                "in messages)",
                "mimic-deid error in rule 'sequences_extract': CPTEVENTS: column 'cpt_cd' holds 1 "
                "unknown state(s) (first data rows: 6); expected CPT codes of five characters "
                "(four digits and a digit or capital letter)",
                "mimic-deid error in rule 'sequences_extract': TRANSFERS: column 'curr_careunit' "
                "holds 1 unknown state(s) (first data rows: 6); expected one of ['CCU', 'CSRU', "
                "'MICU', 'NICU', 'NWARD', 'SICU', 'TSICU', 'WARD'] (WARD = a general-ward row)",
                f"mimic-deid error in rule 'tabular_extract': {proc_file}: column 'SEQ_NUM', data "
                "row 6: the value is not an integer (values are never shown in messages)",
            ]
        )
    elif case == "lab-number":
        assert errors == [
            f"mimic-deid error in rule 'extract': {source / 'LABEVENTS.csv.gz'}: column "
            "'VALUENUM', data row 51: the value is not a number (values are never shown in "
            "messages)"
        ]
    elif case == "stay-times":
        assert errors == [
            f"mimic-deid error in rule 'extract': {source / 'ICUSTAYS.csv.gz'}: column 'INTIME', "
            "data row 4: the value is not a timestamp 'YYYY-MM-DD HH:MM:SS' (values are never "
            "shown in messages)"
        ]
    else:
        demographics = [e for e in errors if "'tabular_ola'" in e]
        assert sorted(set(errors) - set(demographics)) == [
            f"mimic-deid error in rule 'codes_extract': {source / 'DIAGNOSES_ICD.csv.gz'}: "
            "column 'SEQ_NUM', data row 6: the value is not an integer (values are never shown "
            "in messages)"
        ]
        assert demographics == [
            "mimic-deid error in rule 'tabular_ola': demographics table, row 1: column "
            "'marital_status': a value is not covered by step 1 of hierarchy 'marital_status' "
            "(values are never shown in messages); the step covers '?', 'DIVORCED', "
            "'LIFE PARTNER', 'MARRIED', 'SEPARATED', 'SINGLE', 'UNKNOWN (DEFAULT)', 'WIDOWED'"
        ]
        assert (workdir / SERIES).exists(), proc.stderr[-3000:]
        cleaning = json.loads((workdir / "results/private/series/stays/cleaning.json").read_text())
        assert cleaning["heart_rate"]["unparseable"] >= 1  # the planted text was read, counted


# --------------------------------------------------------------------------- issue 28 point 8


def test_a_key_given_twice_in_a_config_file_stops_before_any_job(tmp_path):
    text = prepare(tmp_path).read_text()
    lines = text.splitlines()
    assert "deid:" in lines  # the tiny config has a deid block of its own
    doubled = tmp_path / "doubled.yaml"
    doubled.write_text("deid:\n  dk: [20]\n  fk: [3]\n" + text)  # a whole second deid: block
    second = 3 + lines.index("deid:") + 1
    proc = snakemake(tmp_path, "--cores", "1", config=doubled, check=False)
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        f"mimic-deid: invalid configuration: config file {doubled}: key 'deid' (lines 1 and "
        f"{second}) is given twice; give each key once (YAML readers keep the last one and "
        "silently drop the first)"
    )
    assert not (tmp_path / "results").exists() and not (tmp_path / "resources").exists()


def test_bad_tables_stop_the_dry_run_before_any_job(clean_copy, tmp_path):
    """Issue 44.6: a table given twice and a value not of its column's type among a table's
    first rows stop ``snakemake -n`` at start-up, one line per table naming the files, the
    column and what was expected, never the value; no job runs, nothing is written."""
    source = copy_with(clean_copy, tmp_path / "m")
    shutil.copy(source / "ADMISSIONS.csv.gz", source / "ADMISSIONS.csv")
    stays = read(clean_copy, "ICUSTAYS")
    stays.loc[3, "INTIME"] = "10/23/64 SENTINELK"  # a spreadsheet's date, without its century
    write(source, "ICUSTAYS", stays)
    expected = [
        f"mimic-deid: source: {source / 'ICUSTAYS.csv.gz'}: column 'INTIME', data row 4: the "
        "value is not a timestamp 'YYYY-MM-DD HH:MM:SS' (values are never shown in messages)",
        f"mimic-deid: source: {source}: table ADMISSIONS is given twice, as ADMISSIONS.csv.gz "
        "and ADMISSIONS.csv; keep one of the two files (they may differ, and only one would be "
        "read)",
    ]
    workdir = tmp_path / "w"
    config = prepare(workdir, {"source": {"kind": "csv", "csv": {"path": str(source)}}})
    for args in (["-n"], ["--cores", "1"]):
        proc = snakemake(workdir, *args, config=config, check=False)
        assert proc.returncode == 1, proc.stderr[-3000:]
        assert mimic_messages(proc.stderr) == expected
        assert "Traceback" not in proc.stderr and "SENTINELK" not in proc.stderr + proc.stdout
        assert "Job stats" not in proc.stdout + proc.stderr  # no job was planned
        # nothing written: no results, no logs, not even the drawn master seed
        assert not (workdir / "results").exists() and not (workdir / "logs").exists()
    # the advice followed: one copy kept, the date repaired
    (source / "ADMISSIONS.csv").unlink()
    write(source, "ICUSTAYS", read(clean_copy, "ICUSTAYS"))
    proc = snakemake(workdir, "-n", config=config, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "extract" in proc.stdout


def _latin1(path: Path, row: int, column: str, text: bytes) -> None:
    """Put ``text`` (latin-1 bytes) into ``column`` of data row ``row`` + 1 of a CSV.gz."""
    lines = gzip.decompress(path.read_bytes()).split(b"\n")
    header = [h.strip(b'"') for h in lines[0].split(b",")]
    cells = next(csv.reader([lines[row + 1].decode()]))
    cells[header.index(column.encode())] = "\0"
    lines[row + 1] = ",".join(f'"{c}"' for c in cells).encode().replace(b"\0", text)
    path.write_bytes(gzip.compress(b"\n".join(lines)))


def test_a_stray_byte_only_stops_the_run_in_a_column_the_project_reads(clean_copy, tmp_path):
    source = copy_with(clean_copy, tmp_path / "m")
    _latin1(source / "ICUSTAYS.csv.gz", 2, "DBSOURCE", b"carevu\xe9")  # never used
    _latin1(source / "D_ICD_DIAGNOSES.csv.gz", 2, "LONG_TITLE", b"Syndrom\xe9")  # never used
    _latin1(source / "ADMISSIONS.csv.gz", 2, "DIAGNOSIS", b"FI\xc8VRE")  # never used
    proc = run(tmp_path / "a", source, RAW)
    assert proc.returncode == 0, proc.stderr[-3000:]
    config = prepare(tmp_path / "a", {"source": {"kind": "csv", "csv": {"path": str(source)}}})
    codes = snakemake(tmp_path / "a", "--cores", "1", CODES, config=config, check=False)
    assert codes.returncode == 0, codes.stderr[-3000:]
    _latin1(source / "ICUSTAYS.csv.gz", 3, "FIRST_CAREUNIT", b"MIC\xdc")  # read: the cohort's
    proc = run(tmp_path / "b", source, RAW)
    assert_failed_cleanly(proc, tmp_path / "b")
    # among the first rows: refused by the start-up check, before any job
    assert last_error(proc) == (
        f"mimic-deid: source: {source / 'ICUSTAYS.csv.gz'}: column 'FIRST_CAREUNIT', data row "
        "4: the value is not UTF-8 text (values are never shown in messages)"
    )


def test_a_line_break_inside_a_quoted_value_is_read(clean_copy, tmp_path):
    """VALUE cells holding a quoted line break, some where the reader's blocks end (small
    chunk_rows): the run reads every row, as many as without the line breaks."""
    once = run(tmp_path / "a", clean_copy, RAW)
    assert once.returncode == 0, once.stderr[-3000:]
    chart = read(clean_copy, "CHARTEVENTS")
    chart.loc[chart.index[::5], "VALUE"] = chart.loc[chart.index[::5], "VALUE"] + "\nsee note"
    source = copy_with(clean_copy, tmp_path / "m", CHARTEVENTS=chart)
    workdir = tmp_path / "b"
    config = prepare(
        workdir,
        {"source": {"kind": "csv", "csv": {"path": str(source)}, "chunk_rows": 1000}},
    )
    proc = snakemake(workdir, "--cores", "1", RAW, config=config, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts_a = json.loads((tmp_path / "a" / RAW / "extract.json").read_text())["tables"]
    counts_b = json.loads((workdir / RAW / "extract.json").read_text())["tables"]
    assert counts_b["chartevents"]["rows_read"] == counts_a["chartevents"]["rows_read"]
    # every row read and kept (an exact duplicate pair may now differ by the added note)
    a, b = counts_a["chartevents"], counts_b["chartevents"]
    assert b["rows_matching_itemids"] == a["rows_matching_itemids"]
    assert b["kept"] + b["dropped_duplicate"] == a["kept"] + a["dropped_duplicate"]
    assert "a quoted value holds a line break where a read block ends" in proc.stderr
