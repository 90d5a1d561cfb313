"""The extraction driver: raw artefacts, counts, determinism, atomicity, parameters."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from mimic_fixtures import EXPECTED, random_events, write_mimic_dir
from source_reference import drop_exact_duplicates, sort_events

from mimic_deid.core.atomic import read_json
from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.core.threads import limit_threads
from mimic_deid.pipeline.variables import load_variables
from mimic_deid.sources import csv_source, extract, spool, tables
from mimic_deid.sources.csv_source import CsvSource
from mimic_deid.sources.extract import extract_raw

ROOT = Path(__file__).resolve().parents[2]
ITEMIDS = {i for v in load_variables(ROOT / "config" / "variables.yaml") for i in v.all_itemids}
TS = pa.timestamp("s")

# docs/architecture.md, "Source (private)"
RAW_SCHEMAS = {
    "icustays.parquet": pa.schema(
        [("subject_id", pa.int64()), ("hadm_id", pa.int64()), ("icustay_id", pa.int64()),
         ("first_careunit", pa.string()), ("last_careunit", pa.string()),
         ("first_wardid", pa.int64()), ("last_wardid", pa.int64()), ("intime", TS),
         ("outtime", TS)]
    ),
    "admissions.parquet": pa.schema(
        [("subject_id", pa.int64()), ("hadm_id", pa.int64()), ("admittime", TS),
         ("dischtime", TS), ("deathtime", TS), ("hospital_expire_flag", pa.int64()),
         ("admission_type", pa.string()), ("insurance", pa.string()), ("ethnicity", pa.string())]
    ),
    "patients.parquet": pa.schema(
        [("subject_id", pa.int64()), ("gender", pa.string()), ("dob", TS), ("dod", TS)]
    ),
    "events": pa.schema(
        [("table", pa.string()), ("subject_id", pa.int64()), ("hadm_id", pa.int64()),
         ("icustay_id", pa.int64()), ("itemid", pa.int64()), ("charttime", TS),
         ("value", pa.string()), ("valuenum", pa.float64()), ("valueuom", pa.string())]
    ),
}  # fmt: skip


def same_schema(got: pa.Schema, expected: pa.Schema) -> bool:
    """Equal names and types; a timestamp may come back as [ms] (Parquet has no [s] unit)."""
    if got.names != expected.names:
        return False
    for g, e in zip(got.types, expected.types, strict=True):
        if pa.types.is_timestamp(e):
            if not (pa.types.is_timestamp(g) and g.tz is None and g.unit in ("s", "ms")):
                return False
        elif g != e:
            return False
    return True


def raw_files(folder: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every file of a raw directory."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_raw_artefacts_match_the_contract(tmp_path: Path) -> None:
    out = tmp_path / "raw"
    counts = extract_raw(CsvSource(write_mimic_dir(tmp_path / "m")), out, ITEMIDS, 4, 1000)
    names = sorted(p.name for p in out.iterdir())
    assert names == ["admissions.parquet", "events", "extract.json", "icustays.parquet",
                     "patients.parquet"]  # fmt: skip
    for name in ("icustays.parquet", "admissions.parquet", "patients.parquet"):
        assert same_schema(pq.read_schema(out / name), RAW_SCHEMAS[name]), name
    parts = sorted((out / "events").iterdir())
    assert [p.name for p in parts] == [f"part-{b:03d}.parquet" for b in range(4)]
    total = 0
    for b, part in enumerate(parts):
        tab = pq.read_table(part)
        assert same_schema(tab.schema, RAW_SCHEMAS["events"])
        df = tab.to_pandas()
        assert (df["hadm_id"] % 4 == b).all()
        assert set(df["itemid"]) <= ITEMIDS
        keys = list(tables.EVENT_SORT_KEYS)
        resorted = df.sort_values(keys, na_position="last", kind="stable").reset_index(drop=True)
        assert df.reset_index(drop=True).equals(resorted)
        total += len(df)
    assert total == EXPECTED["chartevents"]["kept"] + EXPECTED["labevents"]["kept"]
    assert read_json(out / "extract.json") == counts
    for table in ("chartevents", "labevents"):
        got = {k: counts["tables"][table][k] for k in EXPECTED[table]}
        assert got == EXPECTED[table], table
    for table in ("icustays", "admissions", "patients"):
        assert counts["tables"][table]["rows"] == EXPECTED[table]


def test_error_rows_and_rows_without_hadm_are_dropped(tmp_path: Path) -> None:
    out = tmp_path / "raw"
    extract_raw(CsvSource(write_mimic_dir(tmp_path / "m")), out, ITEMIDS, 2, 1000)
    ev = pq.read_table(out / "events").to_pandas()
    assert not ((ev["itemid"] == 220045) & (ev["value"] == "999")).any()  # ERROR = 1
    assert not ((ev["itemid"] == 220277) & (ev["subject_id"] == 30)).sum() > 1
    assert ev["hadm_id"].notna().all()
    lab = ev[ev["table"] == "labevents"]
    assert lab["icustay_id"].isna().all() and len(lab) == EXPECTED["labevents"]["kept"]
    assert ev.loc[ev["itemid"] == 646, "icustay_id"].isna().all()  # kept without ICUSTAY_ID


def test_output_is_byte_identical_whatever_the_chunking_and_file_format(tmp_path: Path) -> None:
    chart = random_events(6000, seed=11)
    lab = random_events(2000, seed=12, table="LABEVENTS")
    rows = {"CHARTEVENTS": chart, "LABEVENTS": lab}
    a = write_mimic_dir(tmp_path / "a", rows=rows)
    b = write_mimic_dir(tmp_path / "b", rows=rows, compress=False, header_case="lower",
                        quote_text=False)  # fmt: skip
    extract_raw(CsvSource(a), tmp_path / "ra", ITEMIDS, 3, 100_000)
    extract_raw(CsvSource(b), tmp_path / "rb", ITEMIDS, 3, 1000)
    fa, fb = raw_files(tmp_path / "ra"), raw_files(tmp_path / "rb")
    assert fa.keys() == fb.keys()
    for name in fa:
        assert fa[name] == fb[name], name


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_output_is_byte_identical_whatever_the_inflater_and_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    """ISA-L's inflate, in the reading thread (1 thread) or a thread of its own, gives the
    bytes of Arrow's zlib inflate, and the extraction's output does not depend on the job's
    threads (issue 47)."""
    rows = {
        "CHARTEVENTS": random_events(6000, seed=21),
        "LABEVENTS": random_events(2000, seed=22, table="LABEVENTS"),
    }
    folder = write_mimic_dir(tmp_path / "m", rows=rows)
    stream, by_isal = csv_source.open_table_stream(folder / "CHARTEVENTS.csv.gz")
    stream.close()
    assert by_isal
    with limit_threads(1):
        monkeypatch.setattr(
            csv_source, "open_table_stream", lambda path: (csv_source.open_input(path), False)
        )
        extract_raw(CsvSource(folder), tmp_path / "zlib", ITEMIDS, 3, 1000)
        monkeypatch.undo()
    with limit_threads(threads):
        extract_raw(CsvSource(folder), tmp_path / "isal", ITEMIDS, 3, 1000)
    want, got = raw_files(tmp_path / "zlib"), raw_files(tmp_path / "isal")
    assert want.keys() == got.keys()
    assert [name for name in want if want[name] != got[name]] == []


def test_failure_leaves_previous_output_untouched(tmp_path: Path) -> None:
    folder = write_mimic_dir(tmp_path / "m")
    out = tmp_path / "raw"
    out.mkdir()
    (out / "previous.txt").write_text("old")
    data = (folder / "LABEVENTS.csv.gz").read_bytes()
    (folder / "LABEVENTS.csv.gz").write_bytes(data[: len(data) // 2])  # truncated gzip
    with pytest.raises(InputDataError) as info:
        extract_raw(CsvSource(folder), out, ITEMIDS, 2, 1000)
    assert str(info.value) == (
        f"{folder / 'LABEVENTS.csv.gz'}: cannot decompress the gzip file, it is truncated or "
        "corrupt (Truncated compressed stream); re-download or re-compress it"
    )
    assert [p.name for p in out.iterdir()] == ["previous.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m", "raw"]  # no temp dir left


def test_progress_is_logged_with_rates(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("mimic_deid")
    logger.addHandler(caplog.handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        summary = extract_raw(
            CsvSource(write_mimic_dir(tmp_path / "m")), tmp_path / "raw", ITEMIDS, 2, 1000
        )
    finally:
        logger.removeHandler(caplog.handler)
        logger.setLevel(old)
    text = caplog.text
    assert re.search(r"chartevents: 28 rows in \d\d:\d\d, [\d.]+ rows/s$", text, re.M), text
    spooled = sum(
        t["kept"] + t["dropped_duplicate"] for t in summary["tables"].values() if "kept" in t
    )
    assert re.search(
        rf"sorting parts: {spooled}/{spooled} rows \(100%\) in \d\d:\d\d, [\d.]+ rows/s", text
    ), text


@pytest.mark.parametrize(
    ("itemids", "buckets", "chunk", "message"),
    [
        (set(), 2, 1000, "itemids (the item ids of the series variables): expected a non-empty "
                         "set of integers, got []"),
        (ITEMIDS, 0, 1000, "config parameter 'source/event_buckets': expected an integer in "
                           "[1, 1024], got 0"),
        (ITEMIDS, 2, 0, "config parameter 'source/chunk_rows': expected a positive integer, "
                        "got 0"),
        ({"211"}, 2, 1000, "itemids (the item ids of the series variables): expected a "
                           "non-empty set of integers, got ['211']"),
    ],
)  # fmt: skip
def test_bad_parameters(tmp_path: Path, itemids, buckets: int, chunk: int, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        extract_raw(CsvSource(tmp_path), tmp_path / "raw", itemids, buckets, chunk)
    assert str(info.value) == message
    assert not (tmp_path / "raw").exists()


def test_single_bucket_holds_every_row_sorted(tmp_path: Path) -> None:
    folder = write_mimic_dir(tmp_path / "m")
    extract_raw(CsvSource(folder), tmp_path / "r1", ITEMIDS, 1, 1000)
    extract_raw(CsvSource(folder), tmp_path / "r4", ITEMIDS, 4, 1000)
    one = pq.read_table(tmp_path / "r1" / "events" / "part-000.parquet")
    four = pa.concat_tables(
        pq.read_table(p) for p in sorted((tmp_path / "r4" / "events").iterdir())
    )
    keys = [(k, "ascending") for k in tables.EVENT_SORT_KEYS]
    assert one.num_rows == four.num_rows
    assert one.equals(four.sort_by(keys).combine_chunks())


def test_large_buckets_are_sorted_in_hadm_ranges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = {"CHARTEVENTS": random_events(5000, seed=21)}
    folder = write_mimic_dir(tmp_path / "m", rows=rows)
    extract_raw(CsvSource(folder), tmp_path / "whole", ITEMIDS, 1, 1000)
    monkeypatch.setattr(extract, "SORT_ROWS", 300)  # force the range-by-range path
    extract_raw(CsvSource(folder), tmp_path / "ranges", ITEMIDS, 1, 1000)
    whole = pq.read_table(tmp_path / "whole" / "events" / "part-000.parquet")
    ranges = pq.ParquetFile(tmp_path / "ranges" / "events" / "part-000.parquet")
    assert ranges.metadata.num_row_groups > 1
    assert ranges.read().equals(whole)


def test_spool_bounds_cut_every_buckets_times_per_file_admissions() -> None:
    hadm = np.array([7, 3, 5, 1, 9, 3, 11])  # distinct: 1 3 5 7 9 11
    assert spool.spool_bounds(hadm, 2, 1).tolist() == [5, 9]
    assert spool.spool_bounds(hadm, 1, 4).tolist() == [9]
    assert spool.spool_bounds(hadm, 8, 256).tolist() == []


def test_parts_are_the_same_whatever_the_spool_ranges_and_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = {"CHARTEVENTS": random_events(5000, seed=22)}
    folder = write_mimic_dir(tmp_path / "m", rows=rows)
    extract_raw(CsvSource(folder), tmp_path / "one", ITEMIDS, 2, 700)  # 4 admissions: 1 range
    monkeypatch.setattr(extract, "SPOOL_ADMISSIONS", 1)  # 2 ranges of 1 admission per bucket
    threads = pa.cpu_count()
    try:
        pa.set_cpu_count(1)
        extract_raw(CsvSource(folder), tmp_path / "ranges-1", ITEMIDS, 2, 700)
        pa.set_cpu_count(3)
        extract_raw(CsvSource(folder), tmp_path / "ranges-3", ITEMIDS, 2, 700)
    finally:
        pa.set_cpu_count(threads)
    for b in range(2):
        name = f"events/part-{b:03d}.parquet"
        ranged = pq.ParquetFile(tmp_path / "ranges-1" / name)
        assert ranged.metadata.num_row_groups == 2  # one per spool range
        assert ranged.read().equals(pq.read_table(tmp_path / "one" / name))
        assert (tmp_path / "ranges-1" / name).read_bytes() == (
            tmp_path / "ranges-3" / name
        ).read_bytes()
    assert read_json(tmp_path / "ranges-1" / "extract.json") == read_json(
        tmp_path / "one" / "extract.json"
    )


def test_hadm_ranges_cover_every_row_within_the_limit() -> None:
    hadm = np.array([5, 1, 1, 2, 9, 9, 9, 9, 3, 2, 5])
    ranges = spool.hadm_ranges(hadm, 3)
    assert ranges == [(1, 1), (2, 3), (5, 5), (9, 9)]  # 9 alone exceeds the limit
    assert spool.hadm_ranges(np.array([], dtype=np.int64), 3) == []


def test_exact_duplicate_event_rows_are_dropped_and_counted(tmp_path: Path) -> None:
    from mimic_fixtures import default_rows

    once = default_rows()
    twice = {t: once[t] * 2 for t in ("CHARTEVENTS", "LABEVENTS")}
    a = extract_raw(CsvSource(write_mimic_dir(tmp_path / "a")), tmp_path / "ra", ITEMIDS, 2, 1000)
    folder = write_mimic_dir(tmp_path / "b", rows=twice)
    b = extract_raw(CsvSource(folder), tmp_path / "rb", ITEMIDS, 2, 1000)
    ea, eb = raw_files(tmp_path / "ra" / "events"), raw_files(tmp_path / "rb" / "events")
    assert ea == eb  # the events written are the same
    for table in ("chartevents", "labevents"):
        assert b["tables"][table]["kept"] == a["tables"][table]["kept"]
        rows_once = a["tables"][table]["kept"] + a["tables"][table]["dropped_duplicate"]
        assert b["tables"][table]["dropped_duplicate"] == 2 * rows_once - a["tables"][table]["kept"]
    assert read_json(tmp_path / "rb" / "extract.json")["tables"] == b["tables"]


def test_drop_exact_duplicates_treats_nulls_as_equal_and_keeps_near_duplicates() -> None:
    tab = pa.table(
        {
            "table": ["chartevents"] * 4 + ["labevents"],
            "value": [None, None, "1", "1", "1"],
            "valuenum": [None, None, 1.0, 1.5, 1.5],
        }
    )
    out, dropped = drop_exact_duplicates(tab)
    assert out.column("valuenum").to_pylist() == [None, 1.0, 1.5, 1.5]
    assert dropped == {"chartevents": 1}


def test_sorting_and_dropping_duplicates_in_one_take_gives_the_same_table() -> None:
    """The bucket writer's one-copy path equals sorting then dropping duplicates."""
    rng = np.random.default_rng(5)
    n = 4000
    base = pa.table(
        {
            "table": pa.array(rng.choice(["chartevents", "labevents"], n)),
            "subject_id": pa.array(rng.integers(1, 4, n), pa.int64()),
            "hadm_id": pa.array(rng.integers(100, 140, n), pa.int64()),
            "icustay_id": pa.array(
                [None if i % 7 == 0 else int(v) for i, v in enumerate(rng.integers(1, 3, n))],
                pa.int64(),
            ),
            "itemid": pa.array(rng.integers(1, 4, n), pa.int64()),
            "charttime": pa.array(rng.integers(0, 30, n) * 60_000, pa.timestamp("ms")),
            "value": pa.array([None if v == "" else v for v in rng.choice(["", "1", "2/3"], n)]),
            "valuenum": pa.array([None if v < 0 else float(v) for v in rng.integers(-1, 3, n)]),
            "valueuom": pa.array(rng.choice(["mmHg", "bpm"], n)),
        }
    ).select(tables.EVENT_SCHEMA.names)
    # chunked, as read back from the spool, with 600 rows given twice
    tab = pa.concat_tables([base.slice(0, 1500), base.slice(1500), base.slice(0, 600)])
    want, want_dropped = drop_exact_duplicates(sort_events(tab))
    got, got_dropped = spool.sort_unique_events(tab)
    assert want_dropped and sum(want_dropped.values()) >= 600
    assert got_dropped == want_dropped
    assert got.equals(want)
    assert all(col.num_chunks == 1 for col in got.columns)


def _key_error(tmp_path: Path, rows: dict) -> str:
    folder = write_mimic_dir(tmp_path / "m", rows=rows)
    with pytest.raises(InputDataError) as info:
        extract_raw(CsvSource(folder), tmp_path / "raw", ITEMIDS, 2, 1000)
    assert not (tmp_path / "raw").exists()
    return str(info.value).replace(repr(CsvSource(folder)), "SRC")


def test_a_stay_without_icustay_id_is_named(tmp_path: Path) -> None:
    from mimic_fixtures import default_rows

    stays = default_rows()["ICUSTAYS"]
    stays[2] = {**stays[2], "ICUSTAY_ID": None}
    assert _key_error(tmp_path, {"ICUSTAYS": stays}) == (
        "SRC: table icustays: column icustay_id must not be empty (a MIMIC-III key); "
        "1 row(s) have no value (first data rows: 3)"
    )


def test_a_repeated_icustay_id_is_named(tmp_path: Path) -> None:
    from mimic_fixtures import default_rows

    stays = default_rows()["ICUSTAYS"]
    assert _key_error(tmp_path, {"ICUSTAYS": stays + stays[:2]}) == (
        "SRC: table icustays: column icustay_id must be unique (a MIMIC-III key); "
        "2 value(s) occur more than once (first data rows repeating an earlier row's value: "
        f"{len(stays) + 1}, {len(stays) + 2})"
    )


def test_repeated_patients_rows_are_named(tmp_path: Path) -> None:
    from mimic_fixtures import default_rows

    patients = default_rows()["PATIENTS"]
    assert _key_error(tmp_path, {"PATIENTS": patients + patients}) == (
        "SRC: table patients: column subject_id must be unique (a MIMIC-III key); "
        "3 value(s) occur more than once (first data rows repeating an earlier row's value: "
        f"{len(patients) + 1}, {len(patients) + 2}, {len(patients) + 3})"
    )


def test_an_admission_without_subject_is_named(tmp_path: Path) -> None:
    from mimic_fixtures import default_rows

    adm = default_rows()["ADMISSIONS"]
    adm[0] = {**adm[0], "SUBJECT_ID": None}
    assert _key_error(tmp_path, {"ADMISSIONS": adm}) == (
        "SRC: table admissions: column subject_id must not be empty (a MIMIC-III key); "
        "1 row(s) have no value (first data rows: 1)"
    )


def test_an_event_table_without_rows_is_an_error_unless_declared_empty(tmp_path: Path) -> None:
    assert _key_error(tmp_path, {"CHARTEVENTS": []}) == (
        "SRC: table chartevents: no row with a configured item id (the table is empty or "
        "holds none of them); expected the events of the series variables. If the table is "
        "intentionally absent, list it in source.empty_tables"
    )
    folder = tmp_path / "m"
    counts = extract_raw(CsvSource(folder), tmp_path / "raw", ITEMIDS, 2, 1000, ["chartevents"])
    assert counts["tables"]["chartevents"]["kept"] == 0
    assert counts["tables"]["labevents"]["kept"] == EXPECTED["labevents"]["kept"]


def test_unknown_empty_table_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        extract_raw(CsvSource(tmp_path), tmp_path / "raw", ITEMIDS, 2, 1000, ["noteevents"])
    assert str(info.value) == (
        "config parameter 'source/empty_tables': unknown event table(s) ['noteevents']; "
        "expected some of ['chartevents', 'labevents']"
    )


def test_too_many_spool_files_for_the_open_file_limit_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import resource

    monkeypatch.setattr(resource, "getrlimit", lambda _: (64, 300))
    with pytest.raises(ConfigError) as info:
        spool.BucketSpool(tmp_path / "spool", 8, 1000, bounds=np.arange(10))
    assert str(info.value) == (
        "the extraction spools events to 88 files at once (config parameter "
        "'source/event_buckets' x hadm_id ranges of 128 admissions each), but this process may "
        "open at most 300 files; lower source/event_buckets or raise the limit (ulimit -n)"
    )
