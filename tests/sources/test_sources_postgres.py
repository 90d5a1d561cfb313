"""PostgreSQL source: equality with the CSV source, session settings, errors.

Tests marked ``postgres`` load data into a uniquely named schema of the ``test`` database
(``MIMIC_DEID_TEST_PG_DSN`` overrides the DSN) and drop it afterwards; they are skipped, with
the reason, only when the server cannot be reached.
"""

from __future__ import annotations

import logging
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pg_loader as loader
import psycopg2
import pyarrow as pa
import pytest
from families import unavailable
from mimic_fixtures import EXPECTED, random_events, write_mimic_dir

from mimic_deid.core.errors import ConfigError, InputDataError, SourceConnectionError
from mimic_deid.pipeline.variables import load_variables
from mimic_deid.sources import tables
from mimic_deid.sources.csv_source import CsvSource
from mimic_deid.sources.extract import extract_raw
from mimic_deid.sources.postgres_source import PostgresSource, describe_target
from mimic_deid.synthetic import generate

ROOT = Path(__file__).resolve().parents[2]
ITEMIDS = {i for v in load_variables(ROOT / "config" / "variables.yaml") for i in v.all_itemids}
DSN = os.environ.get("MIMIC_DEID_TEST_PG_DSN", "host=127.0.0.1 port=5432 dbname=test user=postgres")
# Session settings a user might have (PGOPTIONS): they must not change timestamps or floats.
HOSTILE = "-c TimeZone=Pacific/Chatham -c DateStyle=SQL,DMY -c extra_float_digits=-3"


def _server_error() -> str | None:
    try:
        psycopg2.connect(DSN, connect_timeout=3).close()
    except psycopg2.Error as exc:
        return " ".join(str(exc).split())
    return None


@pytest.fixture(scope="module")
def pg_dsn() -> str:
    reason = _server_error()
    if reason:
        unavailable("postgres", f"PostgreSQL test server not reachable ({DSN}): {reason}")
    return DSN


@pytest.fixture
def schema(pg_dsn: str) -> Iterator[str]:
    """A fresh schema name; the schema is dropped afterwards."""
    name = f"mimiciii_test_{uuid.uuid4().hex[:12]}"
    yield name
    loader.drop_schema(pg_dsn, name)


def raw_files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "extract.json"
    }


def assert_same_raw(a: Path, b: Path) -> None:
    """Every parquet byte-identical; extract.json equal except the source's read counts."""
    fa, fb = raw_files(a), raw_files(b)
    assert fa.keys() == fb.keys() and len(fa) > 3
    for name in fa:
        assert fa[name] == fb[name], f"{name} differs between the sources"


def _counts_without_scan(counts: dict) -> dict:
    out = {}
    for table, c in counts["tables"].items():
        out[table] = {
            k: v
            for k, v in c.items()
            if k not in ("rows_read", "dropped_other_itemid", "itemid_filter")
        }
    return out


# --------------------------------------------------------------------------- equality


@pytest.mark.postgres
def test_fixture_extraction_identical_through_csv_and_postgres(
    tmp_path: Path, pg_dsn: str, schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = {"CHARTEVENTS": random_events(3000, seed=5) + write_rows("CHARTEVENTS")}
    folder = write_mimic_dir(tmp_path / "m", rows=rows)
    loaded = loader.load_csv_dir(pg_dsn, folder, schema)
    assert loaded["chartevents"] == 3000 + EXPECTED["chartevents"]["rows_read"]
    a = extract_raw(CsvSource(folder), tmp_path / "csv", ITEMIDS, 4, 500)
    monkeypatch.setenv("PGOPTIONS", HOSTILE)
    b = extract_raw(PostgresSource(pg_dsn, schema), tmp_path / "pg", ITEMIDS, 4, 500)
    assert_same_raw(tmp_path / "csv", tmp_path / "pg")
    assert _counts_without_scan(a) == _counts_without_scan(b)
    assert b["tables"]["chartevents"]["rows_read"] is None  # filtered by the database


def write_rows(table: str) -> list[dict]:
    from mimic_fixtures import default_rows

    return default_rows()[table]


@pytest.mark.postgres
def test_synthetic_extraction_identical_through_csv_and_postgres(
    tmp_path: Path, pg_dsn: str, schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "syn"
    generate(folder, 40, 2020)
    loader.load_csv_dir(pg_dsn, folder, schema)
    a = extract_raw(CsvSource(folder), tmp_path / "csv", ITEMIDS, 3, 5000)
    monkeypatch.setenv("PGOPTIONS", HOSTILE)
    b = extract_raw(PostgresSource(pg_dsn, schema), tmp_path / "pg", ITEMIDS, 3, 5000)
    assert a["tables"]["chartevents"]["kept"] > 1000
    assert_same_raw(tmp_path / "csv", tmp_path / "pg")
    assert _counts_without_scan(a) == _counts_without_scan(b)


@pytest.mark.postgres
def test_small_tables_typed_like_the_csv_source(
    tmp_path: Path, pg_dsn: str, schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_mimic_dir(tmp_path / "m")
    loader.load_csv_dir(pg_dsn, folder, schema, tables=["icustays", "patients"])
    monkeypatch.setenv("PGOPTIONS", HOSTILE)
    src = PostgresSource(pg_dsn, schema)
    for name in ("icustays", "patients"):
        got = src.read_table(name).sort_values(tables.get_spec(name).sort_by[0])
        ref = CsvSource(folder).read_table(name).sort_values(tables.get_spec(name).sort_by[0])
        assert got.dtypes.equals(ref.dtypes)
        assert got.reset_index(drop=True).equals(ref.reset_index(drop=True))


@pytest.mark.postgres
def test_identifiers_are_quoted_and_partitions_pruned(
    tmp_path: Path, pg_dsn: str, schema: str
) -> None:
    odd = schema + ' x"; DROP TABLE y; -- %s'  # only works if composed with sql.Identifier
    folder = write_mimic_dir(tmp_path / "m")
    try:
        loader.load_csv_dir(pg_dsn, folder, odd, tables=["chartevents"])
        src = PostgresSource(pg_dsn, odd)
        got = pa.Table.from_batches(list(src.iter_events("chartevents", [211, 220045], 1000)))
        assert sorted(set(got.column("itemid").to_pylist())) == [211, 220045]
        conn = psycopg2.connect(pg_dsn)
        with conn, conn.cursor() as cur:
            cur.execute(
                psycopg2.sql.SQL(
                    "EXPLAIN SELECT * FROM {} WHERE itemid = ANY({}::integer[])"
                ).format(psycopg2.sql.Identifier(odd, "chartevents"), psycopg2.sql.Literal([211]))
            )
            plan = "\n".join(r[0] for r in cur.fetchall())
        conn.close()
        assert plan.count("chartevents_") == 1  # one partition scanned of 14
    finally:
        loader.drop_schema(pg_dsn, odd)


@pytest.mark.postgres
def test_stopping_early_does_not_hang(tmp_path: Path, pg_dsn: str, schema: str) -> None:
    folder = write_mimic_dir(tmp_path / "m", rows={"CHARTEVENTS": random_events(40000, seed=9)})
    loader.load_csv_dir(pg_dsn, folder, schema, tables=["chartevents"])
    it = PostgresSource(pg_dsn, schema).iter_events("chartevents", ITEMIDS, 1000)
    first = next(it)
    assert first.num_rows > 0
    it.close()  # closes the pipe, stops the COPY thread and the connection


# --------------------------------------------------------------------------- errors


def _target(dsn: str) -> str:
    """The server as error messages name it (never the password)."""
    t = describe_target(dsn)
    return f"host={t['host']} port={t['port']} dbname={t['dbname']} user={t['user']}"


@pytest.mark.postgres
def test_missing_table_names_schema_and_table(pg_dsn: str, schema: str) -> None:
    loader.create_tables(pg_dsn, schema, tables=["patients"])
    src = PostgresSource(pg_dsn, schema)
    target = _target(pg_dsn)
    with pytest.raises(InputDataError) as info:
        src.read_table("icustays")
    assert str(info.value) == (
        f"PostgreSQL table {schema}.icustays ({target}): the table does not exist (expected a "
        "MIMIC-III build made with MIT-LCP/mimic-code)"
    )
    with pytest.raises(InputDataError) as info:
        list(src.iter_events("chartevents", [211], 1000))
    assert str(info.value) == (
        f"PostgreSQL table {schema}.chartevents ({target}): the table does not exist (expected "
        "a MIMIC-III build made with MIT-LCP/mimic-code)"
    )
    with pytest.raises(InputDataError) as info:
        PostgresSource(pg_dsn, schema + "_absent").read_table("patients")
    assert str(info.value) == (
        f"PostgreSQL table {schema}_absent.patients ({target}): schema '{schema}_absent' does "
        "not exist (check config parameter 'source/postgres/schema')"
    )


@pytest.mark.postgres
def test_missing_column_is_named(pg_dsn: str, schema: str) -> None:
    loader.create_tables(pg_dsn, schema, tables=["labevents"])
    conn = psycopg2.connect(pg_dsn)
    with conn, conn.cursor() as cur:
        cur.execute(
            psycopg2.sql.SQL("ALTER TABLE {} DROP COLUMN valuenum").format(
                psycopg2.sql.Identifier(schema, "labevents")
            )
        )
    conn.close()
    with pytest.raises(InputDataError) as info:
        list(PostgresSource(pg_dsn, schema).iter_events("labevents", [50931], 1000))
    assert str(info.value) == (
        f"PostgreSQL table {schema}.labevents ({_target(pg_dsn)}): missing column 'valuenum'; "
        "the table has: charttime, flag, hadm_id, itemid, row_id, subject_id, value, valueuom"
    )


@pytest.mark.parametrize(
    "dsn",
    [
        "host=127.0.0.1 port=1 dbname=nosuchdb user=someone password=secret connect_timeout=3",
        "postgresql://someone:secret@127.0.0.1:1/nosuchdb?connect_timeout=3",
    ],
)
def test_unreachable_server_message_has_target_but_no_password(
    dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    src = PostgresSource(dsn)
    assert "secret" not in repr(src)
    with pytest.raises(SourceConnectionError) as err:
        src.read_table("patients")
    msg = str(err.value)
    # after the target comes libpq's own one-line reason (its wording varies with the version)
    assert re.fullmatch(
        r"cannot connect to PostgreSQL at host=127\.0\.0\.1 port=1 dbname=nosuchdb "
        r"user=someone: connection to server at \"127\.0\.0\.1\", port 1 failed: [^\n]+",
        msg,
    ), msg
    assert "secret" not in msg and "secret" not in caplog.text
    assert err.value.__cause__ is None and "secret" not in repr(err.value.__context__)


def test_malformed_dsn_is_not_echoed() -> None:
    with pytest.raises(ConfigError) as err:
        PostgresSource("host=127.0.0.1 password=secret garbage")
    assert str(err.value) == (
        "config parameter 'source/postgres/dsn': cannot be parsed (expected 'key=value ...' "
        "or a postgresql:// URI); it is not shown because it may contain a password"
    )


@pytest.mark.postgres
def test_fingerprint_changes_when_and_only_when_the_data_change(
    tmp_path: Path, pg_dsn: str, schema: str
) -> None:
    loader.load_csv_dir(pg_dsn, write_mimic_dir(tmp_path / "m"), schema)
    source = PostgresSource(pg_dsn, schema)
    before = source.fingerprint()
    assert before.startswith("sha256:") and len(before) == len("sha256:") + 64
    assert source.fingerprint() == before
    with psycopg2.connect(pg_dsn) as conn, conn.cursor() as cur:
        cur.execute(f'DELETE FROM "{schema}".patients WHERE ctid IN '
                    f'(SELECT ctid FROM "{schema}".patients LIMIT 1)')  # fmt: skip
    conn.close()
    after = source.fingerprint()
    assert after != before
    assert source.fingerprint() == after


@pytest.mark.postgres
def test_fingerprint_of_an_empty_schema_is_refused(pg_dsn: str, schema: str) -> None:
    with pytest.raises(InputDataError) as exc:
        PostgresSource(pg_dsn, schema).fingerprint()
    assert str(exc.value) == (
        f"PostgreSQL schema '{schema}' ({_target(pg_dsn)}) holds no tables (check config "
        "parameter 'source/postgres/schema')"
    )
