"""CSV source: reading the official MIMIC-III files, and its error messages."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from mimic_fixtures import EXPECTED, V14_COLUMNS, random_events, write_mimic_dir, write_table

from mimic_deid.core.errors import InputDataError
from mimic_deid.sources import tables
from mimic_deid.sources.csv_source import CsvSource

CONFIGURED_CHART = [211, 220045, 618, 220210, 646, 220277, 455, 220179, 184, 220739]


def _events(source: CsvSource, table: str, itemids, chunk_rows: int = 1000) -> pa.Table:
    batches = list(source.iter_events(table, itemids, chunk_rows))
    return pa.Table.from_batches(batches, schema=tables.SOURCE_EVENT_SCHEMA)


# --------------------------------------------------------------------------- reading


def test_small_tables_are_typed_and_limited_to_needed_columns(tmp_path: Path) -> None:
    src = CsvSource(write_mimic_dir(tmp_path / "m"))
    icu = src.read_table("ICUSTAYS")
    assert list(icu.columns) == tables.ICUSTAYS.column_names
    assert len(icu) == EXPECTED["icustays"]
    assert icu["icustay_id"].dtype == "int64"
    assert icu["intime"].dtype == "datetime64[s]"
    assert "los" not in icu.columns and "dbsource" not in icu.columns  # never used: not decoded
    assert icu["outtime"].isna().sum() == 1  # the stay without OUTTIME
    pats = src.read_table("patients")
    assert list(pats.columns) == ["subject_id", "gender", "dob", "dod"]
    # a shifted DOB (age > 89) survives: seconds resolution, no nanosecond overflow
    assert pats.loc[pats.subject_id == 20, "dob"].iloc[0] == pd.Timestamp("1800-07-05")
    adm = src.read_table("admissions")
    assert adm["hospital_expire_flag"].tolist() == [0, 0, 1, 0]
    assert adm["deathtime"].notna().sum() == 1


@pytest.mark.parametrize(
    ("compress", "header_case", "quote_text"),
    [(True, "upper", True), (False, "lower", False), (False, "upper", True)],
)
def test_gz_plain_and_header_case_read_identically(
    tmp_path: Path, compress: bool, header_case: str, quote_text: bool
) -> None:
    ref = _events(CsvSource(write_mimic_dir(tmp_path / "ref")), "chartevents", CONFIGURED_CHART)
    folder = write_mimic_dir(
        tmp_path / "v", compress=compress, header_case=header_case, quote_text=quote_text
    )
    got = _events(CsvSource(folder), "CHARTEVENTS", CONFIGURED_CHART)
    assert got.equals(ref)
    assert got.schema.equals(tables.SOURCE_EVENT_SCHEMA)


def test_csv_beside_csv_gz_is_refused_naming_both(tmp_path: Path) -> None:
    folder = write_mimic_dir(tmp_path / "m")
    # a stale uncompressed copy with one patient only: which of the two is meant is not known
    write_table(folder / "patients.csv", "PATIENTS", [{"SUBJECT_ID": 99, "GENDER": "M",
                "DOB": "2000-01-01 00:00:00", "EXPIRE_FLAG": 0}])  # fmt: skip
    with pytest.raises(InputDataError) as err:
        CsvSource(folder).read_table("patients")
    assert str(err.value) == (
        f"{folder}: table PATIENTS is given twice, as PATIENTS.csv.gz and patients.csv; keep "
        "one of the two files (they may differ, and only one would be read)"
    )


def test_values_nulls_and_text_are_kept_verbatim(tmp_path: Path) -> None:
    src = CsvSource(write_mimic_dir(tmp_path / "m"))
    ev = _events(src, "chartevents", [723, 211, 678, 763, 646]).to_pandas()
    assert 'Oriented, "x3"' in set(ev["value"])  # comma and quotes inside a quoted value
    assert (ev["value"] == "NA").sum() == 2  # the literal string NA is not null
    assert "°F" in set(ev["valueuom"])  # UTF-8
    assert ev.loc[ev.itemid == 763, "value"].isna().all()  # empty VALUE -> null
    assert ev.loc[ev.itemid == 646, "icustay_id"].isna().all()  # missing ICUSTAY_ID
    assert ev["icustay_id"].dtype == "Int64" or ev["icustay_id"].isna().any()


def test_labevents_have_null_icustay_and_error(tmp_path: Path) -> None:
    src = CsvSource(write_mimic_dir(tmp_path / "m"))
    lab = _events(src, "labevents", [50931, 50820, 50817, 50809, 50816])
    assert lab.num_rows == 6  # every configured lab row, incl. the one without HADM_ID
    assert lab.column("icustay_id").null_count == lab.num_rows
    assert lab.column("error").null_count == lab.num_rows


def test_events_are_filtered_and_streamed_in_bounded_chunks(tmp_path: Path) -> None:
    rows = random_events(20000, seed=1)
    folder = write_mimic_dir(tmp_path / "m", rows={"CHARTEVENTS": rows})
    stats: dict = {}
    batches = list(CsvSource(folder).iter_events("chartevents", [211, 220045], 500, stats=stats))
    assert len(batches) > 5  # streamed, not read whole
    assert stats["rows_read"] == 20000
    wanted = sum(r["ITEMID"] in (211, 220045) for r in rows)
    assert sum(b.num_rows for b in batches) == wanted
    assert stats["dropped_other_itemid"] == 20000 - wanted
    assert all(set(b.column("itemid").to_pylist()) <= {211, 220045} for b in batches)


# --------------------------------------------------------------------------- errors


def test_missing_table_file_names_the_names_and_directory(tmp_path: Path) -> None:
    folder = write_mimic_dir(tmp_path / "m", tables=["PATIENTS", "ADMISSIONS", "ICUSTAYS"])
    with pytest.raises(InputDataError) as err:
        list(CsvSource(folder).iter_events("labevents", [50931], 1000))
    assert str(err.value) == (
        f"{folder}: MIMIC-III table file not found: looked for LABEVENTS.csv.gz or LABEVENTS.csv "
        "in this directory (file name case ignored)"
    )


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(InputDataError) as err:
        CsvSource(tmp_path / "nowhere").read_table("patients")
    assert str(err.value) == (
        f"CSV source directory {tmp_path / 'nowhere'} does not exist or is not a directory "
        "(config parameter 'source/csv/path'; expected the MIMIC-III v1.4 files, e.g. "
        "PATIENTS.csv.gz)"
    )


def test_missing_column_names_column_and_file(tmp_path: Path) -> None:
    cols = [c for c in V14_COLUMNS["CHARTEVENTS"] if c[0] != "VALUENUM"]
    folder = write_mimic_dir(tmp_path / "m")
    path = write_table(folder / "CHARTEVENTS.csv.gz", "CHARTEVENTS", random_events(5), columns=cols)
    with pytest.raises(InputDataError) as err:
        list(CsvSource(folder).iter_events("chartevents", [211], 1000))
    assert str(err.value) == (
        f"{path}: missing column 'VALUENUM' (case ignored) needed from table CHARTEVENTS; the "
        "header has 14 columns: ROW_ID, SUBJECT_ID, HADM_ID, ICUSTAY_ID, ITEMID, CHARTTIME, "
        "STORETIME, CGID, VALUE, VALUEUOM, WARNING, ERROR, RESULTSTATUS, STOPPED"
    )


def _big_gzip(folder: Path) -> Path:
    write_mimic_dir(folder, rows={"CHARTEVENTS": random_events(30000, seed=2)})
    return folder / "CHARTEVENTS.csv.gz"


def test_truncated_gzip(tmp_path: Path) -> None:
    path = _big_gzip(tmp_path / "m")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(InputDataError) as err:
        list(CsvSource(path.parent).iter_events("chartevents", [211], 1000))
    assert str(err.value) == (
        f"{path}: cannot decompress the gzip file, it is truncated or corrupt (Truncated "
        "compressed stream); re-download or re-compress it"
    )


def test_corrupt_gzip(tmp_path: Path) -> None:
    path = _big_gzip(tmp_path / "m")
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 64] = b"\x00" * 64
    path.write_bytes(bytes(data))
    with pytest.raises(InputDataError) as err:
        list(CsvSource(path.parent).iter_events("chartevents", [211], 1000))
    assert str(err.value) == (
        f"{path}: cannot decompress the gzip file, it is truncated or corrupt (zlib inflate "
        "failed: incorrect data check); re-download or re-compress it"
    )


def test_gz_name_but_not_gzip_is_read_as_text_and_empty_file_is_reported(tmp_path: Path) -> None:
    folder = write_mimic_dir(tmp_path / "m", compress=False)
    (folder / "PATIENTS.csv").rename(folder / "PATIENTS.csv.gz")  # plain text named .gz
    assert len(CsvSource(folder).read_table("patients")) == EXPECTED["patients"]
    (folder / "PATIENTS.csv.gz").write_bytes(gzip.compress(b""))
    with pytest.raises(InputDataError) as err:
        CsvSource(folder).read_table("patients")
    assert str(err.value) == f"{folder / 'PATIENTS.csv.gz'}: empty file, expected a CSV header line"


@pytest.mark.parametrize(
    ("sep", "header", "word"),
    [
        (";", "'ROW_ID;SUBJECT_ID;HADM_ID;ICUSTAY_ID;ITEMID;CHARTTIME;STORET...'", "semicolon"),
        ("\t", r"'ROW_ID\tSUBJECT_ID\tHADM_ID\tICUSTAY_ID\tITEMID\tCHARTTIME\tSTORET...'", "tab"),
    ],
)
def test_wrong_delimiter(tmp_path: Path, sep: str, header: str, word: str) -> None:
    folder = write_mimic_dir(tmp_path / "m")
    path = folder / "CHARTEVENTS.csv.gz"
    text = gzip.decompress(path.read_bytes()).decode()
    # re-write with another separator (no field of the fixture contains it)
    import csv
    import io

    rows = list(csv.reader(io.StringIO(text)))
    out = io.StringIO()
    csv.writer(out, delimiter=sep, lineterminator="\n").writerows(rows)
    path.write_bytes(gzip.compress(out.getvalue().encode()))
    with pytest.raises(InputDataError) as err:
        list(CsvSource(folder).iter_events("chartevents", [211], 1000))
    assert str(err.value) == (
        f"{path}: the header parses to a single column {header}: the file looks {word}-separated; "
        "expected comma-separated values as in the official MIMIC-III release"
    )


@pytest.mark.parametrize(
    ("column", "bad", "expected"),
    [
        ("ITEMID", "21l", "an integer"),
        ("CHARTTIME", "2150-13-45 99:00:00", "a timestamp 'YYYY-MM-DD HH:MM:SS'"),
        ("VALUENUM", "eighty", "a number"),
    ],
)
def test_unparseable_value_names_column_and_file(
    tmp_path: Path, column: str, bad: str, expected: str
) -> None:
    rows = random_events(3000, seed=3)
    rows[2500][column] = bad
    folder = write_mimic_dir(tmp_path / "m", rows={"CHARTEVENTS": rows})
    with pytest.raises(InputDataError) as err:
        list(CsvSource(folder).iter_events("chartevents", [211], 1000))
    assert str(err.value) == (
        f"{folder / 'CHARTEVENTS.csv.gz'}: column '{column}', data row 2501: the value is not "
        f"{expected} (values are never shown in messages)"
    )
    assert bad not in str(err.value)


def test_truncated_plain_csv_row_is_reported(tmp_path: Path) -> None:
    folder = write_mimic_dir(tmp_path / "m", compress=False)
    path = folder / "CHARTEVENTS.csv"
    text = path.read_text()
    path.write_text(text[: len(text) - 40])  # cut inside the last row
    with pytest.raises(InputDataError) as err:
        list(CsvSource(folder).iter_events("chartevents", [211], 1000))
    assert str(err.value) == (
        f"{path}: data row {len(text.splitlines()) - 1}: malformed CSV: Expected 15 columns, "
        "got 8 (truncated file or wrong delimiter?)"
    )
