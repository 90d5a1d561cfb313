"""The stage registry (mimic_deid.stages), config ``stages``, the start-up table check and the
real-source master seed (issue 28 points 3 and 6).

Dry runs are real ``snakemake -n`` in a temporary directory; the PostgreSQL test uses its own
schema on the real server and drops it afterwards.
"""

from __future__ import annotations

import gzip
import importlib
import importlib.util
import os
import re
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import pg_loader as loader
import pytest
import yaml
from pg_loader import session
from psycopg2 import sql
from test_sources_postgres import _server_error
from workflow_helpers import ROOT, mimic_messages, planned_jobs, prepare, snakemake

sys.path.insert(0, str(ROOT / "workflow"))
from paths import PATHS

from mimic_deid.config import load_schema, validate_config
from mimic_deid.core.errors import ConfigError, InputDataError, SourceConnectionError
from mimic_deid.core.seeding import PUBLIC_SEED, master_seed
from mimic_deid.core.stage import no_check
from mimic_deid.pipeline.variables import load_variables, series_variables
from mimic_deid.report.items import ReportItem
from mimic_deid.sources.postgres_source import PostgresSource, describe_target
from mimic_deid.sources.tables import ALL_TABLES, TABULAR_TABLES
from mimic_deid.stages import (
    EXTRACTION_TABLES,
    REPORT_MODULES,
    STAGE_PACKAGES,
    STAGES,
    check_source_tables,
    check_stage_configs,
    get_stage,
    required_tables,
    selected_stages,
)

SCHEMA = ROOT / "config" / "schema.yaml"
DSN = os.environ.get("MIMIC_DEID_TEST_PG_DSN", "host=127.0.0.1 port=5432 dbname=test user=postgres")
#: Every table some stage may read (file stems).
KNOWN_TABLES = {t.upper() for t in ALL_TABLES} | {s.file_stem for s in TABULAR_TABLES.values()}


def config(**overrides) -> dict:
    """The shipped config with ``overrides`` (top-level sections replaced), validated."""
    base = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    base.update(overrides)
    return validate_config(base, SCHEMA)


#: A value of each Arrow type the table specs read, as a CSV cell.
CELLS = {"int64": "7", "double": "1.5", "timestamp[s]": "2101-01-01 00:00:00", "string": "x"}


def table_columns(table: str) -> list:
    """Every column some stage reads from ``table`` (file stem), in spec order."""
    specs = [s for s in [*ALL_TABLES.values(), *TABULAR_TABLES.values()] if s.file_stem == table]
    columns = {}
    for spec in specs:
        for col in spec.columns:
            columns.setdefault(col.name, col)
    return list(columns.values())


def write_table(
    path: Path, table: str, rows: int = 2, drop: str = "", cells: dict | None = None
) -> None:
    """A small MIMIC-III CSV(.gz) file: ``ROW_ID`` and every column a stage reads from
    ``table`` (upper case; but ``drop``), ``rows`` data rows of valid values; ``cells``:
    {(data row, column): raw cell text} replaced."""
    columns = [c for c in table_columns(table) if c.name != drop]
    lines = [",".join(["ROW_ID", *(c.name.upper() for c in columns)])]
    for row in range(1, rows + 1):
        values = [(cells or {}).get((row, c.name.upper()), CELLS[str(c.type)]) for c in columns]
        lines.append(",".join([str(row), *values]))
    text = "\n".join(lines) + "\n"
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)


def csv_dir(folder: Path, without: tuple[str, ...] = ()) -> Path:
    """A directory with a small file for every table a stage may read, but ``without``; the
    names vary in case and compression as the reader accepts them."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, table in enumerate(sorted(KNOWN_TABLES - set(without))):
        name = table.lower() if i % 2 else table
        write_table(folder / f"{name}{'.csv' if i % 3 else '.csv.gz'}", table)
    return folder


def csv_config(folder: Path, **csv) -> dict:
    return config(source={"kind": "csv", "csv": {"path": str(folder), **csv}})


# --------------------------------------------------------------------------- the registry


def test_every_registered_stage_has_the_contracts_parts():
    schema = load_schema(SCHEMA)
    cfg = config()
    names = [s.name for s in STAGES]
    # config `stages` selects every registered stage by default, in list order; the schema
    # lists none (the stage list is the one home of the names)
    stages_schema = schema["properties"]["stages"]
    assert stages_schema["items"] == {"type": "string"} and "default" not in stages_schema
    assert cfg["stages"] == names == list(STAGE_PACKAGES)
    assert len(set(names)) == len(names) == 4
    for stage in STAGES:
        assert stage.config_section in schema["properties"], stage.name
        tables = stage.tables(cfg)
        assert tables and set(tables) <= KNOWN_TABLES, stage.name
        targets = list(stage.targets(cfg))
        for others in stage.with_stages.values():
            targets += others
        targets += stage.report_inputs(cfg, "public").values()
        targets += stage.report_inputs(cfg, "private").values()
        assert stage.targets(cfg), stage.name
        # a stage's declared artefacts land below their audience's root in PATHS
        for key, relative in stage.public_paths.items():
            assert PATHS[key] == f"results/{relative}", (stage.name, key)
            assert not relative.startswith(("private/", "/")), (stage.name, key)
        for key, relative in stage.private_paths.items():
            assert PATHS[key] == f"results/private/{relative}", (stage.name, key)
        if stage.seed_namespace:  # a comparator reads and builds only its own artefacts
            own = {**stage.public_paths, **stage.private_paths}
            assert {key for key, _ in targets} <= own.keys(), stage.name
        for key, wildcards in targets:
            assert key in PATHS, (stage.name, key)
            # every wildcard of the path is filled in
            assert set(re.findall(r"{(\w+)}", PATHS[key])) == set(wildcards), (stage.name, key)
        for other in stage.with_stages:
            assert other in names
    # every rule file but common.smk belongs to exactly one stage (the Snakefile's includes)
    owned = [f for stage in STAGES for f in stage.rule_files]
    rules = sorted(p.name for p in (ROOT / "workflow" / "rules").glob("*.smk"))
    assert sorted(owned) == [r for r in rules if r != "common.smk"]
    assert all(stage.rule_files for stage in STAGES)


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.name)
def test_each_stage_is_declared_by_its_own_package(stage):
    """The stage object lives in its package's stage.py; the list only collects it, and the
    report items it names are importable (docs/architecture.md "Stages")."""
    module = importlib.import_module(f"mimic_deid.{stage.name}.stage")
    assert module.STAGE is stage
    items = importlib.import_module(stage.report_module).ITEMS
    assert items and all(isinstance(i, ReportItem) for i in items), stage.name
    inputs = stage.report_inputs(config(), "public")
    # the sweep summary and the frontier are drawn by the public report only
    assert stage.report_inputs(config(), "private").keys() >= inputs.keys() - {"sweep", "frontier"}


def test_the_stage_list_imports_nothing_from_the_report():
    """Nor does it load the report by name, and no stage package imports the list (whose
    imports of the packages by name no static import graph shows): no cycle."""
    text = (ROOT / "src" / "mimic_deid" / "stages.py").read_text()
    imports = re.findall(r"^from (mimic_deid[\w.]*) import", text, re.M)
    assert imports and not [m for m in imports if m.startswith("mimic_deid.report")], imports
    assert "report" not in STAGE_PACKAGES
    assert REPORT_MODULES == tuple(s.report_module for s in STAGES)
    upward = [
        str(path.relative_to(ROOT))
        for package in STAGE_PACKAGES
        for path in sorted((ROOT / "src" / "mimic_deid" / package).rglob("*.py"))
        if re.search(r"^\s*(from|import) mimic_deid\.(stages|config)\b", path.read_text(), re.M)
    ]
    assert upward == []


def _rule_names(rule_file: Path) -> list[str]:
    return re.findall(r"^rule (\w+):", rule_file.read_text(), flags=re.M)


@pytest.mark.parametrize("stage", [s for s in STAGES if s.name != "series"], ids=lambda s: s.name)
def test_every_comparator_stage_has_the_same_shape(stage):
    """The parts of docs/architecture.md "Stages", for every registered comparator: a package
    with the entry modules, one rule file with its rules in order, a claims rule among the
    targets, thin scripts, a report module and a docs page."""
    name = stage.name
    package = ROOT / "src" / "mimic_deid" / name
    module = __import__(f"mimic_deid.{name}.stage", fromlist=["_"])
    assert callable(getattr(module, f"check_{name}_config")), name
    assert any(f.startswith("read_source_table") for f in module.__all__), name
    assert (package / "check.py").is_file(), name
    assert stage.rule_files == (f"{name}.smk",)
    rules = _rule_names(ROOT / "workflow" / "rules" / f"{name}.smk")
    # extraction first, the claims rule after every method, the target last
    assert rules[0] == f"{name}_extract" and rules[-1] == name, rules
    check = rules.index(f"{name}_check")
    assert all(not r.endswith("_publish") for r in rules[:check]), rules
    # the claims rule's verdict is one of the stage's targets (built by `rule all`)
    assert any(key.endswith("_check") for key, _ in stage.targets(config())), name
    scripts = sorted((ROOT / "workflow" / "scripts").glob(f"{name}_*.py"))
    assert {f"{name}_extract.py", f"{name}_check.py"} <= {p.name for p in scripts}
    for script in scripts:
        assert len(script.read_text().splitlines()) <= 45, script.name
    # its report items: the module its STAGE names (report/<name>.py for the shipped ones)
    assert importlib.util.find_spec(stage.report_module) is not None, name
    assert (ROOT / "docs" / f"{name}.md").is_file(), name
    assert stage.seed_namespace == name and stage.check_config is not no_check


def test_random_streams_are_derived_in_the_library_under_each_stage_namespace():
    """No workflow script derives a random stream; a comparator stage's package derives its
    streams only under its own namespace, so no two stages share one."""
    scripts = sorted((ROOT / "workflow" / "scripts").glob("*.py"))
    assert scripts and not [p.name for p in scripts if "derive_rng" in p.read_text()]
    call = re.compile(r'derive_rng\(\s*\w+,\s*(?:"([^"]+)"|(SEED_NAMESPACE))')
    comparators = [s for s in STAGES if s.seed_namespace]
    assert [s.name for s in comparators] == ["tabular", "codes", "sequences"]
    for stage in comparators:
        package = ROOT / "src" / "mimic_deid" / stage.name
        keys = [
            m.group(1) or stage.seed_namespace
            for path in sorted(package.glob("*.py"))
            for m in call.finditer(path.read_text())
        ]
        assert keys, stage.name
        assert all(key.startswith(stage.seed_namespace) for key in keys), (stage.name, keys)
    from mimic_deid.tabular import SEED_NAMESPACE

    assert SEED_NAMESPACE == get_stage("tabular").seed_namespace


def test_tables_follow_the_config():
    default = required_tables(config())
    assert default["PROCEDURES_ICD"] == ("tabular",)
    assert default["TRANSFERS"] == default["CPTEVENTS"] == ("sequences",)
    assert default["DIAGNOSES_ICD"] == ("codes",)
    assert default["CHARTEVENTS"] == ("series", "codes")
    # no procedures joined: PROCEDURES_ICD is not read
    tab = config(stages=["tabular"], tabular={"procedures": 0})
    assert required_tables(tab) == {"PATIENTS": ("tabular",), "ADMISSIONS": ("tabular",)}
    # the sequences stage reads its configured tables; vitals are made of the stays series
    seq = config(stages=["sequences"], sequences={"tables": ["transfers"]})
    assert list(required_tables(seq)) == ["TRANSFERS"]
    seq = config(stages=["sequences"], sequences={"tables": ["cptevents", "vitals"]})
    assert list(required_tables(seq)) == ["CPTEVENTS", *EXTRACTION_TABLES]
    assert [s.name for s in selected_stages(config(stages=["codes", "series"]))] == [
        "series",
        "codes",
    ]


# --------------------------------------------------------------------------- csv sources


def test_csv_missing_tables_are_listed_in_one_message(tmp_path):
    folder = csv_dir(tmp_path / "mimic", without=("TRANSFERS", "PROCEDURES_ICD"))
    cfg = config(source={"kind": "csv", "csv": {"path": str(folder)}})
    with pytest.raises(InputDataError) as err:
        check_source_tables(cfg)
    assert str(err.value) == (
        f"CSV source {folder}: missing MIMIC-III tables for the selected stages: "
        "PROCEDURES_ICD (stage tabular), TRANSFERS (stage sequences); found: ADMISSIONS, "
        "CHARTEVENTS, CPTEVENTS, DIAGNOSES_ICD, D_ICD_DIAGNOSES, ICUSTAYS, LABEVENTS, PATIENTS. "
        "Add the missing tables, or leave their stages out of config parameter 'stages'"
    )
    # deselected stages and a tabular stage without procedures need neither table
    check_source_tables(
        config(
            source={"kind": "csv", "csv": {"path": str(folder)}},
            stages=["series", "codes", "tabular"],
            tabular={"procedures": 0},
        )
    )


def test_a_folder_without_tables_names_the_subfolder_that_holds_them(tmp_path):
    """A copy unpacked into a folder of its own (PhysioNet's zip files do that): the message
    does not advise leaving stages out, it names the folder, and the advice works."""
    download = tmp_path / "download"
    inner = csv_dir(download / "mimic-iii-clinical-database-demo-1.4")
    needed = "ADMISSIONS, CHARTEVENTS, CPTEVENTS, DIAGNOSES_ICD, D_ICD_DIAGNOSES, ICUSTAYS, "
    needed += "LABEVENTS, PATIENTS, PROCEDURES_ICD, TRANSFERS"
    with pytest.raises(InputDataError) as err:
        check_source_tables(csv_config(download))
    assert str(err.value) == (
        f"CSV source {download}: holds none of the MIMIC-III tables the selected stages need "
        f"({needed}); the tables are in {inner}: give that directory in config parameter "
        "'source/csv/path'"
    )
    check_source_tables(csv_config(inner))  # the advice followed
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputDataError) as err:
        check_source_tables(csv_config(empty))
    assert str(err.value) == (
        f"CSV source {empty}: holds none of the MIMIC-III tables the selected stages need "
        f"({needed}); give the directory that holds the MIMIC-III v1.4 files (e.g. "
        "ICUSTAYS.csv.gz) in config parameter 'source/csv/path'"
    )


def test_a_table_given_twice_is_refused_naming_every_copy(tmp_path):
    folder = tmp_path / "mimic"
    folder.mkdir()
    for table in KNOWN_TABLES:
        write_table(folder / f"{table}.csv.gz", table)
    check_source_tables(csv_config(folder))
    write_table(folder / "ADMISSIONS.csv", "ADMISSIONS")  # beside ADMISSIONS.csv.gz
    write_table(folder / "chartevents.csv.gz", "CHARTEVENTS")  # a lower-case twin
    with pytest.raises(InputDataError) as err:
        check_source_tables(csv_config(folder))
    assert str(err.value) == (
        f"{folder}: table ADMISSIONS is given twice, as ADMISSIONS.csv.gz and ADMISSIONS.csv; "
        "keep one of the two files (they may differ, and only one would be read)\n"
        f"{folder}: table CHARTEVENTS is given twice, as CHARTEVENTS.csv.gz and "
        "chartevents.csv.gz; keep one of the two files (they may differ, and only one would "
        "be read)"
    )
    write_table(folder / "Chartevents.csv", "CHARTEVENTS")
    with pytest.raises(InputDataError) as err:
        check_source_tables(csv_config(folder, check_rows=0))
    assert str(err.value).splitlines()[1] == (
        f"{folder}: table CHARTEVENTS is given 3 times, as CHARTEVENTS.csv.gz, "
        "chartevents.csv.gz and Chartevents.csv; keep one of the 3 files (they may differ, and "
        "only one would be read)"
    )
    # a stage that does not read the table is not stopped by it
    check_source_tables(dict(csv_config(folder), stages=["sequences"]))


def test_a_missing_column_is_refused_for_the_stages_that_read_it(tmp_path):
    folder = csv_dir(tmp_path / "mimic", without=("CHARTEVENTS", "ADMISSIONS"))
    write_table(folder / "CHARTEVENTS.csv.gz", "CHARTEVENTS", drop="charttime")
    write_table(folder / "ADMISSIONS.csv", "ADMISSIONS", drop="language")
    with pytest.raises(InputDataError) as err:
        check_source_tables(csv_config(folder))
    admissions = [c.name.upper() for c in table_columns("ADMISSIONS") if c.name != "language"]
    assert str(err.value) == (
        f"{folder / 'ADMISSIONS.csv'}: missing column 'LANGUAGE' (case ignored) needed from "
        f"table ADMISSIONS; the header has 12 columns: ROW_ID, {', '.join(admissions)}\n"
        f"{folder / 'CHARTEVENTS.csv.gz'}: missing column 'CHARTTIME' (case ignored) needed "
        "from table CHARTEVENTS; the header has 9 columns: ROW_ID, SUBJECT_ID, HADM_ID, "
        "ICUSTAY_ID, ITEMID, VALUE, VALUENUM, VALUEUOM, ERROR"
    )
    # LANGUAGE is read by the tabular stage only
    with pytest.raises(InputDataError) as err:
        check_source_tables(dict(csv_config(folder), stages=["series"]))
    assert "'LANGUAGE'" not in str(err.value) and "'CHARTTIME'" in str(err.value)
    write_table(folder / "CHARTEVENTS.csv.gz", "CHARTEVENTS")
    check_source_tables(dict(csv_config(folder), stages=["series"]))


def test_a_value_not_of_its_column_type_is_refused_at_start_up(tmp_path):
    folder = csv_dir(tmp_path / "mimic", without=("ADMISSIONS", "LABEVENTS"))
    # a copy that passed through a spreadsheet loses the century of its dates
    bad_time = {(2, "ADMITTIME"): "10/23/64 21:09"}
    write_table(folder / "ADMISSIONS.csv.gz", "ADMISSIONS", rows=3, cells=bad_time)
    write_table(folder / "LABEVENTS.csv", "LABEVENTS", rows=3, cells={(3, "VALUENUM"): '"7,5"'})
    with pytest.raises(InputDataError) as err:
        check_source_tables(csv_config(folder))
    assert str(err.value) == (
        f"{folder / 'ADMISSIONS.csv.gz'}: column 'ADMITTIME', data row 2: the value is not a "
        "timestamp 'YYYY-MM-DD HH:MM:SS' (values are never shown in messages)\n"
        f"{folder / 'LABEVENTS.csv'}: column 'VALUENUM', data row 3: the value is not a number "
        "(values are never shown in messages)"
    )
    check_source_tables(csv_config(folder, check_rows=0))  # headers only


def test_the_start_up_check_reads_the_first_rows_only(tmp_path):
    """A bad value far past the sample is left to the extraction: the check reads the first
    block of a large table, not the table."""
    folder = csv_dir(tmp_path / "mimic", without=("CHARTEVENTS",))
    rows = 200_000
    chart = folder / "CHARTEVENTS.csv.gz"
    write_table(chart, "CHARTEVENTS", rows=rows, cells={(rows, "CHARTTIME"): "soon"})
    assert len(gzip.decompress(chart.read_bytes())) > 100 * 64 * 1024
    check_source_tables(csv_config(folder, check_rows=500))
    with pytest.raises(InputDataError) as err:  # a sample as large as the table meets it
        check_source_tables(csv_config(folder, check_rows=rows))
    assert str(err.value) == (
        f"{chart}: column 'CHARTTIME', data row {rows}: the value is not a timestamp "
        "'YYYY-MM-DD HH:MM:SS' (values are never shown in messages)"
    )


@pytest.mark.workflow
def test_dry_run_stops_on_missing_tables_and_on_a_wrong_path(tmp_path):
    folder = csv_dir(tmp_path / "mimic", without=("TRANSFERS", "PROCEDURES_ICD", "ICUSTAYS"))
    cfg = prepare(tmp_path / "run", {"source": {"kind": "csv", "csv": {"path": str(folder)}}})
    proc = snakemake(tmp_path / "run", "-n", config=cfg, check=False)
    assert proc.returncode != 0
    lines = mimic_messages(proc.stderr)
    assert lines == [
        f"mimic-deid: source: CSV source {folder}: missing MIMIC-III tables for the selected "
        "stages: ICUSTAYS (stages series, codes), PROCEDURES_ICD (stage tabular), TRANSFERS "
        "(stage sequences); found: ADMISSIONS, CHARTEVENTS, CPTEVENTS, DIAGNOSES_ICD, "
        "D_ICD_DIAGNOSES, LABEVENTS, PATIENTS. Add the missing tables, or leave their stages "
        "out of config parameter 'stages'"
    ]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "run" / "results").exists()  # nothing written, no seed drawn

    cfg = prepare(tmp_path / "run", {"source": {"kind": "csv", "csv": {"path": "/no/such/dir"}}})
    proc = snakemake(tmp_path / "run", "-n", config=cfg, check=False)
    assert proc.returncode != 0
    assert mimic_messages(proc.stderr) == [
        "mimic-deid: source: CSV source directory /no/such/dir does not exist or is not a "
        "directory (config parameter 'source/csv/path'; expected the MIMIC-III v1.4 files, e.g. "
        "ICUSTAYS.csv.gz)"
    ]


@pytest.mark.workflow
def test_each_selected_stage_checks_its_config_at_start_up(tmp_path):
    """Stage.check_config: the tabular grid without an admissible (beta, epsilon) pair stops
    the dry run with one line; with the stage deselected the same config runs."""
    bad = {"epsilon": {"beta": [0.9], "epsilon": [0.1]}}
    cfg = prepare(tmp_path / "on", {"tabular": bad})
    proc = snakemake(tmp_path / "on", "-n", config=cfg, check=False)
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        "mimic-deid: invalid configuration: config parameter 'tabular/epsilon/beta': no "
        "(beta, epsilon) pair leaves epsilon' >= 0 (epsilon + ln(1 - beta) < 0 everywhere)"
    )
    assert "Traceback" not in proc.stderr
    cfg = prepare(tmp_path / "off", {"tabular": bad, "stages": ["codes"]})
    assert planned_jobs(snakemake(tmp_path / "off", "-n", config=cfg).stdout)
    with pytest.raises(ConfigError) as err:
        check_stage_configs(config(codes={"lda": {"w_icd": 0.3}}))
    assert str(err.value) == (
        "config parameter 'codes/lda/w_icd + codes/lda/w_age': w_icd and w_age must be >= 0 "
        "and sum to 1, got 0.3 + 0.5 = 0.8"
    )
    check_stage_configs(config(codes={"lda": {"w_icd": 0.3}}, stages=["series"]))
    vitals = {"tables": ["transfers", "vitals"], "vitals": {"variable": "pulse"}}
    with pytest.raises(ConfigError) as err:
        check_stage_configs(config(sequences=vitals))
    names = sorted(v.name for v in series_variables(load_variables(ROOT / "config/variables.yaml")))
    assert len(names) == 16 and "heart_rate" in names
    assert str(err.value) == (
        "config parameter 'sequences/vitals/variable': unknown variable 'pulse'; expected one "
        f"of {names}"
    )
    # the variable is read only when the vitals table is selected
    check_stage_configs(config(sequences={"vitals": {"variable": "pulse"}}))


def test_dry_run_of_one_comparator_schedules_no_series_job(tmp_path):
    cfg = prepare(tmp_path, {"stages": ["codes"]})
    jobs = planned_jobs(snakemake(tmp_path, "-n", config=cfg).stdout)
    # the codes audit needs the cohort (extraction, cohort), nothing of the series pipeline
    assert jobs == {
        "synthesize": 1,
        "extract": 1,
        "cohort": 1,
        "codes_extract": 1,
        "codes_audit": 1,
        "codes_gccens": 1,
        "codes_lda": 1,
        "codes_check": 1,
        "all": 1,
    }
    cfg = prepare(tmp_path, {"stages": ["series", "tabular"]})
    jobs = planned_jobs(snakemake(tmp_path, "-n", config=cfg).stdout)
    assert "tabular_joint_risk" in jobs and "report" in jobs
    assert not {r for r in jobs if r.startswith(("codes", "sequences"))}
    cfg = prepare(tmp_path, {"stages": ["tabular"]})
    jobs = planned_jobs(snakemake(tmp_path, "-n", config=cfg).stdout)
    assert "tabular_ola" in jobs
    assert not {"tabular_joint_risk", "report", "series", "deidentify"} & set(jobs)


# --------------------------------------------------------------------------- PostgreSQL


@pytest.mark.postgres
def test_postgres_missing_tables_are_listed_in_one_message():
    reason = _server_error()
    if reason:
        from families import unavailable

        unavailable("postgres", f"PostgreSQL test server not reachable ({DSN}): {reason}")
    schema = f"mimiciii_test_{uuid.uuid4().hex[:12]}"
    cfg = config(source={"kind": "postgres", "postgres": {"dsn": DSN, "schema": schema}})
    target = PostgresSource(DSN, schema).describe()
    with pytest.raises(InputDataError) as err:
        check_source_tables(cfg)
    assert str(err.value) == (
        f"{target}: schema '{schema}' does not exist (check config parameter "
        "'source/postgres/schema')"
    )
    try:
        loader.create_tables(DSN, schema, [*loader.TABLE_ORDER, "procedures_icd"])
        with session(DSN, readonly=False) as conn, conn.cursor() as cur:
            # a view counts, as for the reader
            cur.execute(
                sql.SQL("CREATE VIEW {} AS SELECT 1 AS subject_id").format(
                    sql.Identifier(schema, "diagnoses_icd")
                )
            )
        with pytest.raises(InputDataError) as err:
            check_source_tables(cfg)
        assert str(err.value) == (
            f"{target}: missing MIMIC-III tables for the selected stages: CPTEVENTS (stage "
            "sequences), D_ICD_DIAGNOSES (stage codes), TRANSFERS (stage sequences); found: "
            "ADMISSIONS, CHARTEVENTS, DIAGNOSES_ICD, ICUSTAYS, LABEVENTS, PATIENTS, "
            "PROCEDURES_ICD. Add the missing tables, or leave their stages out of config "
            "parameter 'stages'"
        )
        check_source_tables(dict(cfg, stages=["series", "tabular"]))
    finally:
        loader.drop_schema(DSN, schema)


@pytest.mark.postgres
def test_postgres_missing_columns_and_wrong_types_are_refused_at_start_up():
    """The same check as for CSV, from the catalogue's column types (no row read)."""
    reason = _server_error()
    if reason:
        from families import unavailable

        unavailable("postgres", f"PostgreSQL test server not reachable ({DSN}): {reason}")
    schema = f"mimiciii_test_{uuid.uuid4().hex[:12]}"
    cfg = config(
        source={"kind": "postgres", "postgres": {"dsn": DSN, "schema": schema}},
        stages=["series", "tabular"],
    )
    t = describe_target(DSN)
    target = f"host={t['host']} port={t['port']} dbname={t['dbname']} user={t['user']}"
    try:
        loader.create_tables(DSN, schema, [*loader.TABLE_ORDER, "procedures_icd"])
        check_source_tables(cfg)  # mimic-code's types pass
        with session(DSN, readonly=False) as conn, conn.cursor() as cur:
            for statement in (
                "ALTER TABLE {} ALTER COLUMN admittime TYPE text",
                "ALTER TABLE {} ALTER COLUMN hadm_id TYPE numeric",
            ):
                cur.execute(sql.SQL(statement).format(sql.Identifier(schema, "admissions")))
            cur.execute(
                sql.SQL("ALTER TABLE {} DROP COLUMN valuenum").format(
                    sql.Identifier(schema, "chartevents")
                )
            )
        with pytest.raises(InputDataError) as err:
            check_source_tables(cfg)
        assert str(err.value) == (
            f"PostgreSQL table {schema}.admissions ({target}): column 'hadm_id' has type "
            "numeric; expected an integer type (smallint, integer, bigint)\n"
            f"PostgreSQL table {schema}.chartevents ({target}): missing column 'valuenum'; the "
            "table has: cgid, charttime, error, hadm_id, icustay_id, itemid, resultstatus, "
            "row_id, stopped, storetime, subject_id, value, valueuom, warning"
        )
        with session(DSN, readonly=False) as conn, conn.cursor() as cur:
            cur.execute(
                sql.SQL("ALTER TABLE {} ALTER COLUMN hadm_id TYPE integer").format(
                    sql.Identifier(schema, "admissions")
                )
            )
        with pytest.raises(InputDataError) as err:
            check_source_tables(dict(cfg, stages=["tabular"]))
        assert str(err.value) == (
            f"PostgreSQL table {schema}.admissions ({target}): column 'admittime' has type "
            "text; expected a timestamp type (timestamp without time zone, timestamp with time "
            "zone, date)"
        )
    finally:
        loader.drop_schema(DSN, schema)


def test_unreachable_postgres_keeps_the_connection_message():
    dsn = "host=127.0.0.1 port=1 dbname=nosuchdb user=someone connect_timeout=2"
    cfg = config(source={"kind": "postgres", "postgres": {"dsn": dsn}})
    with pytest.raises(SourceConnectionError) as expected:
        PostgresSource(dsn).check_connection()
    with pytest.raises(SourceConnectionError) as err:
        check_source_tables(cfg)
    assert str(err.value) == str(expected.value)
    assert str(err.value).startswith("cannot connect to PostgreSQL at host=127.0.0.1 port=1 ")


# --------------------------------------------------------------------------- master seed


def test_master_seed_rules(tmp_path):
    seed_file = tmp_path / "results" / "private" / "master_seed.txt"
    assert master_seed(None, "synthetic", seed_file) == (PUBLIC_SEED, None)
    assert master_seed(5, "csv", seed_file) == (5, None)  # explicit: always as given
    assert master_seed(PUBLIC_SEED, "synthetic", seed_file) == (PUBLIC_SEED, None)
    assert master_seed(PUBLIC_SEED, "postgres", seed_file) == (
        PUBLIC_SEED,
        "mimic-deid: seed: warning: the postgres source runs under the public seed 2020 given in "
        "config parameter 'seed': anyone holding the original data can recompute the pseudonyms; "
        "set 'seed: null' to draw a secret seed",
    )
    assert not seed_file.exists()
    seed, note = master_seed(None, "csv", seed_file)
    assert note == (
        "mimic-deid: seed: no seed configured for the csv source: drew a secret seed, kept "
        f"owner-only in {seed_file} and reused by later runs here (never printed; back it up "
        "to reproduce the release)"
    )
    assert seed != PUBLIC_SEED and seed_file.read_text() == f"{seed}\n"
    assert stat.S_IMODE(seed_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(seed_file.parent.stat().st_mode) == 0o700
    seed_file.chmod(0o644)
    again, note = master_seed(None, "postgres", seed_file)
    assert again == seed and str(seed) not in note
    assert note == (
        "mimic-deid: seed: no seed configured for the postgres source: using the secret seed "
        f"kept owner-only in {seed_file} (drawn by an earlier run; never printed)"
    )
    assert stat.S_IMODE(seed_file.stat().st_mode) == 0o600
    # a second directory draws its own seed
    other, _ = master_seed(None, "csv", tmp_path / "b" / "private" / "master_seed.txt")
    assert other != seed
    seed_file.write_text("not a seed\n")
    with pytest.raises(InputDataError) as err:
        master_seed(None, "csv", seed_file)
    assert str(err.value) == (
        f"{seed_file}: expected the secret master seed (one non-negative integer) kept by an "
        "earlier run; restore it from a backup, or delete the file to draw a new seed (every "
        "result is then recomputed)"
    )


@pytest.mark.workflow
def test_real_source_dry_run_draws_a_secret_seed_once_and_never_prints_it(tmp_path):
    folder = csv_dir(tmp_path / "mimic")
    run = tmp_path / "run"
    cfg = prepare(run, {"source": {"kind": "csv", "csv": {"path": str(folder)}}})
    seed_file = run / PATHS["master_seed"]
    notes = []
    for _ in range(2):
        proc = snakemake(run, "-n", config=cfg)
        seed = seed_file.read_text().strip()
        assert seed not in proc.stdout + proc.stderr
        notes.append(mimic_messages(proc.stderr))
    assert notes == [
        [
            "mimic-deid: seed: no seed configured for the csv source: drew a secret seed, kept "
            f"owner-only in {PATHS['master_seed']} and reused by later runs here (never printed; "
            "back it up to reproduce the release)"
        ],
        [
            "mimic-deid: seed: no seed configured for the csv source: using the secret seed "
            f"kept owner-only in {PATHS['master_seed']} (drawn by an earlier run; never printed)"
        ],
    ]
    assert stat.S_IMODE(seed_file.stat().st_mode) == 0o600
    # the synthetic source keeps the public seed: no seed file, no note
    cfg = prepare(tmp_path / "synth", {})
    proc = snakemake(tmp_path / "synth", "-n", config=cfg)
    assert not mimic_messages(proc.stderr)
    assert not (tmp_path / "synth" / PATHS["master_seed"]).exists()


@pytest.mark.workflow
def test_real_source_run_keeps_the_seed_owner_only(tmp_path):
    """A job with the seed as a rule parameter: Snakemake records it under .snakemake/, which a
    real source's run makes owner-only, like results/private."""
    from mimic_deid.synthetic import generate

    generate(tmp_path / "mimic", 40, 3)
    run = tmp_path / "run"
    cfg = prepare(run, {"source": {"kind": "csv", "csv": {"path": str(tmp_path / "mimic")}}})
    proc = snakemake(
        run, "--cores", "1", PATHS["seq_summary"].format(table="transfers"), config=cfg
    )
    seed = (run / PATHS["master_seed"]).read_text().strip()
    assert seed not in proc.stdout + proc.stderr
    assert stat.S_IMODE((run / PATHS["master_seed"]).stat().st_mode) == 0o600
    for folder in (run / ".snakemake", run / "results" / "private"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    # the seed is written nowhere outside these two owner-only directories
    for path in run.rglob("*"):
        if path.is_file() and not path.is_relative_to(run / ".snakemake"):
            if seed in path.read_bytes().decode("utf-8", "replace"):
                assert path.is_relative_to(run / "results" / "private"), path


# --------------------------------------------------------------------------- a real subset run


# The report of a run without the comparators (stages: [series]) is built and checked by
# tests/workflow/test_resume.py::test_interrupted_run_resumes_to_identical_outputs.


def test_the_slurm_profile_sets_resources_of_rules_that_exist():
    """A renamed rule would silently lose its cluster memory and time (it did: `optimise`)."""
    import re

    import yaml

    profile = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
    rules = {
        m.group(1)
        for f in (ROOT / "workflow" / "rules").glob("*.smk")
        for m in re.finditer(r"^rule (\w+):", f.read_text(), re.M)
    }
    assert set(profile["set-resources"]) <= rules, sorted(set(profile["set-resources"]) - rules)


def test_the_workflow_starts_without_the_heavy_libraries():
    """What the rule files import when Snakemake parses them (every run, and every job of a
    cluster run) leaves scipy's statistics, scikit-learn, matplotlib and datasketch to the jobs
    that use them: each costs the start-up a second or so (benchmarks/README.md)."""
    modules = set()
    for smk in [ROOT / "Snakefile", *(ROOT / "workflow" / "rules").glob("*.smk")]:
        modules |= set(re.findall(r"^from (mimic_deid[\w.]*) import", smk.read_text(), re.M))
    assert {"mimic_deid.stages", "mimic_deid.report.content"} <= modules
    heavy = ("scipy.stats", "sklearn", "matplotlib", "datasketch", "scipy.integrate")
    code = "; ".join(
        [
            *(f"import {m}" for m in sorted(modules)),
            "import sys",
            f"print([m for m in {heavy!r} if m in sys.modules])",
        ]
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"
