"""The tabular stage's tables through both sources: CSV and PostgreSQL give identical frames
and identical demographics artefacts (the pattern of tests/sources/test_sources_postgres.py)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pg_loader as loader
import psycopg2
import pytest
from synthetic_tabular_reference import tabular_sources

from mimic_deid.core.atomic import write_parquet
from mimic_deid.core.seeding import derive_rng
from mimic_deid.sources.csv_source import CsvSource
from mimic_deid.sources.postgres_source import PostgresSource
from mimic_deid.synthetic import generate
from mimic_deid.tabular import demographics, read_source_tables

DSN = os.environ.get("MIMIC_DEID_TEST_PG_DSN", "host=127.0.0.1 port=5432 dbname=test user=postgres")
TABLES = ["patients", "admissions", "procedures_icd"]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("syn") / "n60"
    generate(folder, 60, 11)
    return folder


def test_csv_source_reads_the_tabular_tables(synthetic):
    frames = read_source_tables(CsvSource(synthetic))
    procs = frames["procedures"]
    assert list(procs.columns) == ["subject_id", "hadm_id", "seq_num", "icd9_code"]
    assert procs["icd9_code"].str.fullmatch(r"\d{3,4}").all()
    assert procs.equals(procs.sort_values(["hadm_id", "seq_num", "icd9_code"]))
    adm = frames["admissions"]
    assert {"insurance", "language", "religion", "marital_status"} <= set(adm.columns)
    assert set(procs["hadm_id"]) <= set(adm["hadm_id"])


def test_in_memory_tables_equal_the_generated_files(synthetic):
    """tabular_sources replays the generator's streams: same values as the written CSV."""
    files = read_source_tables(CsvSource(synthetic))
    memory = tabular_sources(60, 11)
    keys = {
        "patients": ["subject_id"],
        "admissions": ["hadm_id"],
        "procedures": ["hadm_id", "seq_num"],
    }
    for name, frame in memory.items():
        got = frame.sort_values(keys[name]).reset_index(drop=True)
        ref = files[name][list(frame.columns)].sort_values(keys[name]).reset_index(drop=True)
        ref = ref.astype(object).where(ref.notna(), None)
        assert got.astype(object).equals(ref), name


@pytest.fixture
def pg_schema() -> Iterator[str]:
    try:
        psycopg2.connect(DSN, connect_timeout=3).close()
    except psycopg2.Error as exc:
        pytest.skip(f"PostgreSQL test server not reachable ({DSN}): {' '.join(str(exc).split())}")
    name = f"mimiciii_tab_{uuid.uuid4().hex[:12]}"
    yield name
    loader.drop_schema(DSN, name)


@pytest.mark.postgres
def test_csv_and_postgres_give_identical_tabular_artefacts(synthetic, pg_schema, tmp_path):
    loader.load_csv_dir(DSN, synthetic, pg_schema, tables=TABLES)
    csv = read_source_tables(CsvSource(synthetic))
    pg = read_source_tables(PostgresSource(DSN, pg_schema))
    for name in csv:
        assert csv[name].dtypes.equals(pg[name].dtypes), name
        assert csv[name].equals(pg[name]), name
    digests = []
    for label, frames in (("csv", csv), ("pg", pg)):
        table = demographics(
            frames["patients"], frames["admissions"], frames["procedures"], 3, derive_rng(1, "y")
        )
        out = tmp_path / f"{label}.parquet"
        write_parquet(table, out)
        digests.append(out.read_bytes())
    assert digests[0] == digests[1]
    assert len(pd.read_parquet(tmp_path / "csv.parquet")) > 0
    assert np.array_equal(csv["procedures"]["seq_num"], pg["procedures"]["seq_num"])
