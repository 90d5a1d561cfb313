"""Load a MIMIC-III CSV(.gz) directory into a mimic-code-style PostgreSQL schema.

For tests and for users without a mimic-code build: creates PATIENTS, ADMISSIONS, ICUSTAYS,
CHARTEVENTS and LABEVENTS with the mimic-code v1.4 column definitions (lower-case names;
CHARTEVENTS ``PARTITION BY RANGE (itemid)``) and loads each file with ``COPY ... FROM STDIN``
(the column list taken from the file header, case ignored). Only the five tables the
extraction reads are created by default (PROCEDURES_ICD, read by the tabular stage, on request);
the full mimic-code build has 26.
"""

from __future__ import annotations

import contextlib
import gzip
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import psycopg2
from psycopg2 import sql
from source_reference import header_of

from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.core.logs import get_logger
from mimic_deid.sources.csv_files import find_table_file, is_gzip
from mimic_deid.sources.postgres_source import connect

log = get_logger(__name__)

# mimic-code postgres_create_tables.sql (v1.4), constraints left out.
COLUMNS: dict[str, list[tuple[str, str]]] = {
    "patients": [
        ("row_id", "INT NOT NULL"), ("subject_id", "INT NOT NULL"),
        ("gender", "VARCHAR(5) NOT NULL"), ("dob", "TIMESTAMP(0) NOT NULL"),
        ("dod", "TIMESTAMP(0)"), ("dod_hosp", "TIMESTAMP(0)"), ("dod_ssn", "TIMESTAMP(0)"),
        ("expire_flag", "INT NOT NULL"),
    ],
    "admissions": [
        ("row_id", "INT NOT NULL"), ("subject_id", "INT NOT NULL"), ("hadm_id", "INT NOT NULL"),
        ("admittime", "TIMESTAMP(0) NOT NULL"), ("dischtime", "TIMESTAMP(0) NOT NULL"),
        ("deathtime", "TIMESTAMP(0)"), ("admission_type", "VARCHAR(50)"),
        ("admission_location", "VARCHAR(50)"), ("discharge_location", "VARCHAR(50)"),
        ("insurance", "VARCHAR(255)"), ("language", "VARCHAR(10)"), ("religion", "VARCHAR(50)"),
        ("marital_status", "VARCHAR(50)"), ("ethnicity", "VARCHAR(200)"),
        ("edregtime", "TIMESTAMP(0)"), ("edouttime", "TIMESTAMP(0)"),
        ("diagnosis", "VARCHAR(255)"), ("hospital_expire_flag", "SMALLINT"),
        ("has_chartevents_data", "SMALLINT"),
    ],
    "icustays": [
        ("row_id", "INT NOT NULL"), ("subject_id", "INT NOT NULL"), ("hadm_id", "INT NOT NULL"),
        ("icustay_id", "INT NOT NULL"), ("dbsource", "VARCHAR(20) NOT NULL"),
        ("first_careunit", "VARCHAR(20) NOT NULL"), ("last_careunit", "VARCHAR(20) NOT NULL"),
        ("first_wardid", "SMALLINT NOT NULL"), ("last_wardid", "SMALLINT NOT NULL"),
        ("intime", "TIMESTAMP(0) NOT NULL"), ("outtime", "TIMESTAMP(0)"),
        ("los", "DOUBLE PRECISION"),
    ],
    "chartevents": [
        ("row_id", "INT NOT NULL"), ("subject_id", "INT NOT NULL"), ("hadm_id", "INT"),
        ("icustay_id", "INT"), ("itemid", "INT"), ("charttime", "TIMESTAMP(0)"),
        ("storetime", "TIMESTAMP(0)"), ("cgid", "INT"), ("value", "VARCHAR(255)"),
        ("valuenum", "DOUBLE PRECISION"), ("valueuom", "VARCHAR(50)"), ("warning", "INT"),
        ("error", "INT"), ("resultstatus", "VARCHAR(50)"), ("stopped", "VARCHAR(50)"),
    ],
    "labevents": [
        ("row_id", "INT NOT NULL"), ("subject_id", "INT NOT NULL"), ("hadm_id", "INT"),
        ("itemid", "INT NOT NULL"), ("charttime", "TIMESTAMP(0)"), ("value", "VARCHAR(200)"),
        ("valuenum", "DOUBLE PRECISION"), ("valueuom", "VARCHAR(20)"), ("flag", "VARCHAR(20)"),
    ],
    "transfers": [
        ("row_id", "INT NOT NULL"), ("subject_id", "INT NOT NULL"), ("hadm_id", "INT NOT NULL"),
        ("icustay_id", "INT"), ("dbsource", "VARCHAR(20)"), ("eventtype", "VARCHAR(20)"),
        ("prev_careunit", "VARCHAR(20)"), ("curr_careunit", "VARCHAR(20)"),
        ("prev_wardid", "SMALLINT"), ("curr_wardid", "SMALLINT"), ("intime", "TIMESTAMP(0)"),
        ("outtime", "TIMESTAMP(0)"), ("los", "DOUBLE PRECISION"),
    ],
    "cptevents": [
        ("row_id", "INT NOT NULL"), ("subject_id", "INT NOT NULL"), ("hadm_id", "INT NOT NULL"),
        ("costcenter", "VARCHAR(10) NOT NULL"), ("chartdate", "TIMESTAMP(0)"),
        ("cpt_cd", "VARCHAR(10) NOT NULL"), ("cpt_number", "INT"), ("cpt_suffix", "VARCHAR(5)"),
        ("ticket_id_seq", "INT"), ("sectionheader", "VARCHAR(50)"),
        ("subsectionheader", "VARCHAR(255)"), ("description", "VARCHAR(200)"),
    ],
    "diagnoses_icd": [
        ("row_id", "INT NOT NULL"), ("subject_id", "INT NOT NULL"), ("hadm_id", "INT NOT NULL"),
        ("seq_num", "INT"), ("icd9_code", "VARCHAR(10)"),
    ],
    "d_icd_diagnoses": [
        ("row_id", "INT NOT NULL"), ("icd9_code", "VARCHAR(10) NOT NULL"),
        ("short_title", "VARCHAR(50) NOT NULL"), ("long_title", "VARCHAR(255) NOT NULL"),
    ],
    "procedures_icd": [
        ("row_id", "INT NOT NULL"), ("subject_id", "INT NOT NULL"), ("hadm_id", "INT NOT NULL"),
        ("seq_num", "INT NOT NULL"), ("icd9_code", "VARCHAR(10) NOT NULL"),
    ],
}  # fmt: skip

#: CHARTEVENTS range partitions on itemid (a coarse version of mimic-code's 207): the bounds
#: between consecutive partitions; the first starts at MINVALUE and the last ends at MAXVALUE.
CHARTEVENTS_BOUNDS: tuple[int, ...] = (
    161,
    428,
    615,
    742,
    1000,
    5000,
    220000,
    220500,
    223000,
    224000,
    225000,
    226000,
    227000,
)

TABLE_ORDER = ("patients", "admissions", "icustays", "chartevents", "labevents")


@contextlib.contextmanager
def session(dsn: str = "", readonly: bool = True) -> Iterator[psycopg2.extensions.connection]:
    """A connection from :func:`mimic_deid.sources.postgres_source.connect`, committed on success and always closed."""
    conn = connect(dsn, readonly=readonly)
    try:
        yield conn
        conn.commit()
    finally:
        conn.close()


def _create_statements(schema: str, table: str, bounds: Iterable[int]) -> list[sql.Composed]:
    cols = sql.SQL(", ").join(
        sql.SQL("{} {}").format(sql.Identifier(name), sql.SQL(typ)) for name, typ in COLUMNS[table]
    )
    target = sql.Identifier(schema, table)
    if table != "chartevents":
        return [sql.SQL("CREATE TABLE {} ({})").format(target, cols)]
    stmts = [sql.SQL("CREATE TABLE {} ({}) PARTITION BY RANGE (itemid)").format(target, cols)]
    edges: list[sql.Composable] = [sql.SQL("MINVALUE")]
    edges += [sql.Literal(int(b)) for b in sorted(set(bounds))]
    edges.append(sql.SQL("MAXVALUE"))
    for i in range(len(edges) - 1):
        stmts.append(
            sql.SQL("CREATE TABLE {} PARTITION OF {} FOR VALUES FROM ({}) TO ({})").format(
                sql.Identifier(schema, f"chartevents_{i + 1}"), target, edges[i], edges[i + 1]
            )
        )
    return stmts


def create_tables(
    dsn: str,
    schema: str = "mimiciii",
    tables: Iterable[str] = TABLE_ORDER,
    chartevents_bounds: Iterable[int] = CHARTEVENTS_BOUNDS,
    replace: bool = False,
) -> None:
    """Create ``schema`` (if needed) and the mimic-code tables in it.

    ``replace=True`` drops existing tables of the same names first.
    """
    names = _check_tables(tables)
    with session(dsn, readonly=False) as conn, conn.cursor() as cur:
        cur.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        for table in names:
            if replace:
                cur.execute(
                    sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(sql.Identifier(schema, table))
                )
            for stmt in _create_statements(schema, table, chartevents_bounds):
                cur.execute(stmt)


def _check_tables(tables: Iterable[str]) -> list[str]:
    names = [str(t).lower() for t in tables]
    unknown = sorted(set(names) - set(COLUMNS))
    if unknown:
        raise ConfigError(f"loader: unknown tables {unknown}; expected some of {list(COLUMNS)}")
    return names


def copy_file(dsn: str, path: str | os.PathLike, schema: str, table: str) -> int:
    """``COPY schema.table (<file header>) FROM STDIN WITH CSV HEADER``; returns rows loaded."""
    path = Path(path)
    header = [h.strip().lower() for h in header_of(path)]
    known = {name for name, _ in COLUMNS[table]}
    extra = [h for h in header if h not in known]
    if extra:
        raise InputDataError(
            f"{path}: columns {extra} are not in the mimic-code table {schema}.{table}"
        )
    query = sql.SQL("COPY {} ({}) FROM STDIN WITH (FORMAT csv, HEADER true)").format(
        sql.Identifier(schema, table), sql.SQL(", ").join(map(sql.Identifier, header))
    )
    opener = gzip.open if is_gzip(path) else open
    with session(dsn, readonly=False) as conn, conn.cursor() as cur, opener(path, "rb") as fh:
        cur.copy_expert(query, fh, size=1 << 20)
        return cur.rowcount


def load_csv_dir(
    dsn: str,
    csv_dir: str | os.PathLike,
    schema: str = "mimiciii",
    tables: Iterable[str] = TABLE_ORDER,
    chartevents_bounds: Iterable[int] = CHARTEVENTS_BOUNDS,
    replace: bool = False,
) -> dict[str, int]:
    """Create the tables in ``schema`` and load them from ``csv_dir``; rows loaded per table.

    Files are found as by the CSV source (``NAME.csv.gz`` or ``NAME.csv``, case ignored).
    Analyses the tables afterwards so that the planner has statistics.
    """
    names = _check_tables(tables)
    files = {t: find_table_file(csv_dir, t.upper()) for t in names}
    create_tables(dsn, schema, names, chartevents_bounds, replace=replace)
    loaded = {}
    for table in names:
        loaded[table] = copy_file(dsn, files[table], schema, table)
        log.info(f"loaded {schema}.{table}: {loaded[table]:,} rows")
    with session(dsn, readonly=False) as conn, conn.cursor() as cur:
        for table in names:
            cur.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(schema, table)))
    return loaded


def drop_schema(dsn: str, schema: str) -> None:
    """``DROP SCHEMA schema CASCADE`` (if it exists)."""
    with session(dsn, readonly=False) as conn, conn.cursor() as cur:
        cur.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
