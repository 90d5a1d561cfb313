"""Hourly resampling against hand-computed values, and the two releases end to end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from series_reference import build_release, resample_hourly

from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.pipeline.series import build_releases
from mimic_deid.pipeline.variables import load_variables, series_variables

VARIABLES = load_variables(Path(__file__).resolve().parents[2] / "config" / "variables.yaml")
DIMS = ["heart_rate", "systolic_blood_pressure", "temperature", "glucose"]
T0 = pd.Timestamp("2100-01-01 00:00")
NAN = np.nan


def clean(rows: list[tuple]) -> pd.DataFrame:
    """Clean events from ``(icustay_id, hours after T0 (whole minutes), variable, value)``."""
    return pd.DataFrame(
        {
            "icustay_id": np.array([r[0] for r in rows], dtype=np.int64),
            "charttime": pd.Series(
                [T0 + pd.Timedelta(minutes=round(r[1] * 60)) for r in rows], dtype="datetime64[s]"
            ),
            "variable": pd.Series([r[2] for r in rows], dtype="str"),
            "value": np.array([r[3] for r in rows], dtype=np.float64),
        }
    )


ROWS = [
    # stay 7: first recording 00:00, last 04:30 -> 5 grid hours (00:00 .. 04:00)
    (7, -1.0, "mean_blood_pressure", 70.0),  # not a dimension: does not move the grid
    (7, 0.0, "heart_rate", 60.0),
    (7, 2.5, "heart_rate", 90.0),
    (7, 4.0, "heart_rate", 100.0),
    (7, 1.0, "systolic_blood_pressure", 120.0),  # observed once, on the grid
    (7, 3.0, "temperature", 37.0),  # observed only late; two at the same instant
    (7, 3.0, "temperature", 38.0),
    (7, 4.5, "temperature", 39.0),
    # stay 3: first 10:20, last 15:20 -> 6 grid hours; a 5 h gap in heart rate
    (3, 15 + 1 / 3, "heart_rate", 130.0),
    (3, 10 + 1 / 3, "heart_rate", 80.0),
    (3, 12 + 5 / 6, "glucose", 100.0),  # once, between grid points: kept in its hour bin
]


def test_resample_hourly_matches_hand_computed_values() -> None:
    rng = np.random.default_rng(0)
    shuffled = [ROWS[i] for i in rng.permutation(len(ROWS))]
    out = resample_hourly(clean(shuffled), DIMS)
    assert list(out.columns) == ["icustay_id", "hour", *DIMS]
    assert out["hour"].dtype == np.int32 and out["icustay_id"].dtype == np.int64
    assert all(out[d].dtype == np.float64 for d in DIMS)
    assert out["icustay_id"].tolist() == [3] * 6 + [7] * 5
    assert out["hour"].tolist() == [0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4]

    s3 = out[out["icustay_id"] == 3]
    np.testing.assert_allclose(s3["heart_rate"], [80, 90, 100, 110, 120, 130])
    assert s3[["systolic_blood_pressure", "temperature"]].isna().all().all()
    # glucose measured once at 12:50, in the hour bin [12:20, 13:20) = hour 2
    np.testing.assert_allclose(s3["glucose"], [NAN, NAN, 100, NAN, NAN, NAN])

    s7 = out[out["icustay_id"] == 7]
    # heart rate: 60 in hour 0, 90 in hour 2 (at 2.5 h), 100 in hour 4.
    np.testing.assert_allclose(s7["heart_rate"], [60, 75, 90, 95, 100])
    np.testing.assert_allclose(s7["systolic_blood_pressure"], [NAN, 120, NAN, NAN, NAN])
    # temperature: mean 37.5 in hour 3; 39 at 4.5 h is in hour 4.
    np.testing.assert_allclose(s7["temperature"], [NAN, NAN, NAN, 37.5, 39])
    assert s7["glucose"].isna().all()


def test_resample_hourly_single_recording_and_empty_input() -> None:
    out = resample_hourly(clean([(5, 2.75, "glucose", 140.0)]), DIMS)
    assert out["hour"].tolist() == [0]
    assert out["glucose"].tolist() == [140.0]
    empty = resample_hourly(clean([(5, 0.0, "mean_blood_pressure", 80.0)]), DIMS)
    assert list(empty.columns) == ["icustay_id", "hour", *DIMS] and len(empty) == 0


# ---------------------------------------------------------------------------------------------
# build_release on a two-part raw directory

EVENT_SCHEMA = pa.schema(
    [
        ("table", pa.string()),
        ("subject_id", pa.int64()),
        ("hadm_id", pa.int64()),
        ("icustay_id", pa.int64()),
        ("itemid", pa.int64()),
        ("charttime", pa.timestamp("s")),
        ("value", pa.string()),
        ("valuenum", pa.float64()),
        ("valueuom", pa.string()),
    ]
)


def write_part(path: Path, rows: list[tuple]) -> None:
    """rows: (table, subject, hadm, icustay or None, itemid, hours after T0, value)."""
    cols = {
        "table": [r[0] for r in rows],
        "subject_id": [r[1] for r in rows],
        "hadm_id": [r[2] for r in rows],
        "icustay_id": [r[3] for r in rows],
        "itemid": [r[4] for r in rows],
        "charttime": [(T0 + pd.Timedelta(hours=r[5])).to_pydatetime() for r in rows],
        "value": [str(r[6]) for r in rows],
        "valuenum": [float(r[6]) for r in rows],
        "valueuom": [None] * len(rows),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pydict(cols, schema=EVENT_SCHEMA), path)


@pytest.fixture
def raw_dir(tmp_path: Path) -> Path:
    ce, le = "chartevents", "labevents"
    write_part(
        tmp_path / "events" / "part-000.parquet",
        [
            (ce, 1, 10, 100, 220052, 0.0, 70),  # mean BP: counted, not a dimension
            (ce, 1, 10, 100, 220045, 1.0, 80),
            (le, 1, 10, None, 50931, 2.0, 150),  # lab event, assigned by time
            (ce, 1, 10, 100, 220045, 3.0, 100),
            (ce, 1, 10, 100, 220045, 50.0, 90),  # after the first 48 h
            (ce, 3, 30, 300, 220045, 49.0, 60),  # stay 300: only after 48 h
            (ce, 3, 30, 300, 220045, 50.0, 62),
            (ce, 9, 90, 900, 220045, 1.0, 70),  # not in the cohort
        ],
    )
    write_part(
        tmp_path / "events" / "part-001.parquet",
        [(ce, 2, 21, 200, 211, 0.5, 70), (ce, 2, 21, 200, 211, 0.7, 500)],  # 500: implausible
    )
    return tmp_path


def cohort() -> pd.DataFrame:
    intime = pd.Series([T0] * 3, dtype="datetime64[s]")
    los = [200.0, 24.0, 60.0]  # stay 100 lasts more than a week: a long stay
    return pd.DataFrame(
        {
            "subject_id": np.array([1, 2, 3], dtype=np.int64),
            "hadm_id": np.array([10, 21, 30], dtype=np.int64),
            "icustay_id": np.array([100, 200, 300], dtype=np.int64),
            "intime": intime,
            "outtime": intime + pd.to_timedelta(los, unit="h"),
            "los_hours": los,
            "age_years": 60.0,
            "mortality": np.array([1, 0, 0], dtype=np.int8),
        }
    )


def test_build_release_stays(raw_dir: Path) -> None:
    series, meta, stats = build_release(raw_dir, cohort(), VARIABLES, "stays")
    dims = [v.name for v in series_variables(VARIABLES)]
    assert list(series.columns) == ["icustay_id", "hour", *dims]
    assert "mean_blood_pressure" not in series.columns
    assert meta.to_dict("list") == {
        "icustay_id": [100, 200, 300],
        "subject_id": [1, 2, 3],
        "hadm_id": [10, 21, 30],
        "length": [50, 1, 2],  # 1 h .. 50 h; 0.5 h .. 0.7 h; 49 h .. 50 h
        "mortality": [1, 0, 0],
        "long_stay": [1, 0, 0],
    }
    assert meta["length"].dtype == np.int32 and meta["mortality"].dtype == np.int8
    assert meta["long_stay"].dtype == np.int8
    s100 = series[series["icustay_id"] == 100]
    # 80 at hour 0, 100 at hour 2, 90 at hour 49: hour 3 = 100 - 10/47.
    np.testing.assert_allclose(s100["heart_rate"].iloc[:4], [80, 90, 100, 100 - 10 / 47])
    assert s100["heart_rate"].iloc[49] == 90
    np.testing.assert_allclose(s100["glucose"].iloc[:3], [NAN, 150, NAN])
    assert series.loc[series["icustay_id"] == 200, "heart_rate"].tolist() == [70.0]
    assert stats["heart_rate"]["rows"] == 7 and stats["heart_rate"]["out_of_range"] == 1
    assert stats["mean_blood_pressure"]["kept"] == 1
    assert stats["glucose"]["kept"] == 1


def test_build_release_ihm48(raw_dir: Path) -> None:
    series, meta, stats = build_release(raw_dir, cohort(), VARIABLES, "ihm48", ihm_hours=48)
    # Stay 200 is too short; stay 300 has no recording in its first 48 h.
    assert meta["icustay_id"].tolist() == [100]
    assert meta["length"].tolist() == [3]
    np.testing.assert_allclose(series["heart_rate"], [80, 90, 100])
    assert stats["heart_rate"]["rows"] == 2
    assert stats["ihm_window"] == {
        "rule": "charttime in [INTIME, INTIME + 48 h)",
        "dropped_at_end": 0,
    }


def test_ihm_window_drops_and_counts_an_observation_at_its_end(raw_dir: Path) -> None:
    """Stay 100 has heart rate 90 at exactly INTIME + 49 h: a 49 h window ends before it."""
    series, meta, stats = build_release(raw_dir, cohort(), VARIABLES, "ihm48", ihm_hours=49)
    s100 = series[series["icustay_id"] == 100]
    assert s100["hour"].max() < 49 and 90.0 not in s100["heart_rate"].iloc[-1:].tolist()
    assert stats["ihm_window"]["dropped_at_end"] >= 1


def test_build_release_errors(raw_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        build_release(raw_dir, cohort(), VARIABLES, "weekly")
    assert str(info.value) == "release must be one of ('stays', 'ihm48'), got 'weekly'"
    with pytest.raises(ConfigError) as info:
        build_release(raw_dir, cohort(), VARIABLES, "ihm48", ihm_hours=0)
    assert str(info.value) == (
        "config parameter 'series/ihm_hours': expected a positive number of hours, got 0"
    )
    with pytest.raises(InputDataError) as info:
        build_release(tmp_path / "nowhere", cohort(), VARIABLES, "stays")
    assert str(info.value) == (
        f"{tmp_path / 'nowhere' / 'events'}: no part-*.parquet files (run the extract step first)"
    )
    with pytest.raises(InputDataError) as info:
        build_release(raw_dir, cohort().iloc[1:2], VARIABLES, "ihm48")
    assert str(info.value) == (
        "release 'ihm48': no cohort stay has a recording of a series variable in "
        f"{raw_dir / 'events'}"
    )


def reference_resample(frame: pd.DataFrame, dims: list[str]) -> pd.DataFrame:
    """Slow per-stay reference built on np.interp (tests only)."""
    out = []
    frame = frame[frame["variable"].isin(dims)]
    for stay, rows in frame.groupby("icustay_id"):
        sec = rows["charttime"].to_numpy().astype("datetime64[s]").astype(np.int64)
        first, last = sec.min(), sec.max()
        grid = np.arange((last - first) // 3600 + 1)
        hour_bin = (sec - first) // 3600
        cols = {"icustay_id": stay, "hour": grid.astype(np.int32)}
        for dim in dims:
            mine = (rows["variable"] == dim).to_numpy()
            obs = pd.Series(rows["value"].to_numpy()[mine]).groupby(hour_bin[mine]).mean()
            cols[dim] = (
                np.interp(grid, obs.index, obs.to_numpy(), left=NAN, right=NAN)
                if len(obs)
                else np.full(len(grid), NAN)
            )
        out.append(pd.DataFrame(cols))
    return pd.concat(out, ignore_index=True)


def test_resample_hourly_agrees_with_per_stay_reference() -> None:
    rng = np.random.default_rng(5)
    n = 600
    rows = [
        (
            int(rng.integers(1, 40)),
            float(rng.integers(0, 30 * 60)) / 60,  # whole minutes within 30 h
            str(rng.choice(DIMS + ["mean_blood_pressure"])),
            float(rng.normal(50, 10)),
        )
        for _ in range(n)
    ]
    frame = clean(rows)
    pd.testing.assert_frame_equal(
        resample_hourly(frame, DIMS), reference_resample(frame, DIMS), check_dtype=False
    )


def test_ihm_window_is_exactly_the_first_hours_of_the_stay() -> None:
    """[INTIME, INTIME + 48 h): 47:59:59 is in, 48:00:00 is out (counted), the 49th hour out."""
    from mimic_deid.pipeline.series import _window_ihm

    intime = pd.Timestamp("2100-01-01 10:00:00")
    stays = pd.DataFrame({"icustay_id": [1], "intime": pd.Series([intime], dtype="datetime64[s]")})
    offsets = ["-1s", "0s", "47h", "47h59min59s", "48h", "48h30min", "49h"]
    events = pd.DataFrame(
        {
            "icustay_id": 1,
            "charttime": pd.Series([intime + pd.Timedelta(o) for o in offsets]).astype(
                "datetime64[s]"
            ),
            "valuenum": np.arange(len(offsets), dtype=float),
        }
    )
    kept, at_end = _window_ihm(events, stays, 48)
    assert kept["valuenum"].tolist() == [1.0, 2.0, 3.0]
    assert at_end == 1


@pytest.mark.parametrize("hours", [1, 2, 48, 49])
def test_ihm_series_never_exceed_the_window(raw_dir: Path, hours: int) -> None:
    series, meta, _ = build_release(raw_dir, cohort(), VARIABLES, "ihm48", ihm_hours=hours)
    assert (meta["length"] <= hours).all()
    assert (series["hour"] < hours).all()
    assert len(meta)  # the window is not trivially empty


def test_spooled_release_writes_the_same_file_as_writing_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Streamed row group by row group, in bounded memory, the file is byte-identical."""
    from mimic_deid.core.atomic import PARQUET_COMPRESSION
    from mimic_deid.pipeline import series_spool as series_mod
    from mimic_deid.pipeline.series_spool import ReleaseSeries

    monkeypatch.setattr(series_mod, "ROW_GROUP_ROWS", 1000)
    monkeypatch.setattr(series_mod, "SPOOL_BATCH_ROWS", 128)
    rng = np.random.default_rng(11)
    stays = rng.permutation(np.arange(1, 301, dtype=np.int64) * 7)
    pieces = []
    for ids in np.array_split(stays, 5):  # each piece: its stays, sorted, random lengths
        frames = [
            resample_hourly(
                clean([(int(i), float(h), "heart_rate", float(rng.normal(80, 5))) for h in hours]),
                DIMS,
            )
            for i in np.sort(ids)
            for hours in [rng.integers(0, 24, size=int(rng.integers(1, 6)))]
        ]
        pieces.append(pd.concat(frames, ignore_index=True))
    spooled = ReleaseSeries(tmp_path, "stays", DIMS)
    for piece in pieces[:3]:  # one spool file, pieces across its batches
        spooled.add(piece)
    other = ReleaseSeries(tmp_path, "stays-p1", DIMS)  # e.g. another event part's
    for piece in pieces[3:]:
        other.add(piece)
    with pytest.raises(ValueError) as err:
        spooled.extend(other)
    assert str(err.value) == "ReleaseSeries.extend: close the other release's spool first"
    other.close()
    spooled.extend(other)
    assert len(spooled.files) == 2
    whole = pd.concat(pieces, ignore_index=True).sort_values(["icustay_id", "hour"])
    whole = whole.reset_index(drop=True)
    assert len(whole) > 3 * 1000  # several row groups
    pd.testing.assert_frame_equal(spooled.frame(), whole)
    spooled.write(tmp_path / "streamed.parquet")
    pq.write_table(
        pa.Table.from_pandas(whole, preserve_index=False),
        tmp_path / "whole.parquet",
        compression=PARQUET_COMPRESSION,
        row_group_size=1000,
    )
    assert (tmp_path / "streamed.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()
    assert pq.ParquetFile(tmp_path / "streamed.parquet").metadata.num_row_groups == -(
        -len(whole) // 1000
    )


def test_parts_read_batch_by_batch_give_the_same_releases(
    raw_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A part read in several batches (an admission straddling two) gives the same series."""
    from mimic_deid.pipeline import series as series_mod

    want = {r: build_release(raw_dir, cohort(), VARIABLES, r) for r in ("stays", "ihm48")}
    part = raw_dir / "events" / "part-000.parquet"
    table = pq.read_table(part).sort_by([("hadm_id", "ascending"), ("charttime", "ascending")])
    pq.write_table(table, part, row_group_size=3)
    assert pq.ParquetFile(part).metadata.num_row_groups == 3
    monkeypatch.setattr(series_mod, "PART_BATCH_ROWS", 2)
    for release, (series, meta, stats) in want.items():
        got = build_release(raw_dir, cohort(), VARIABLES, release)
        pd.testing.assert_frame_equal(got[0], series)
        pd.testing.assert_frame_equal(got[1], meta)
        assert got[2] == stats
    unsorted = table.take(pa.array(np.arange(table.num_rows)[::-1]))
    pq.write_table(unsorted, part, row_group_size=3)
    with pytest.raises(InputDataError) as err:
        build_release(raw_dir, cohort(), VARIABLES, "stays")
    assert str(err.value) == (
        f"{part}: events are not sorted by hadm_id; expected a part written by the extract "
        "step (re-run it)"
    )


def test_parts_on_worker_processes_give_byte_identical_releases(
    raw_dir: Path, tmp_path: Path
) -> None:
    """The parts spread over two worker processes give the files of one process."""
    written = {}
    for threads in (1, 2):
        spool = tmp_path / f"spool-{threads}"
        spool.mkdir()
        releases = build_releases(raw_dir, cohort(), VARIABLES, spool, threads=threads)
        for release, (series, meta, stats) in releases.items():
            path = tmp_path / f"{release}-{threads}.parquet"
            series.write(path)
            written[release, threads] = (path.read_bytes(), meta, stats)
    for release in ("stays", "ihm48"):
        one, two = written[release, 1], written[release, 2]
        assert one[0] == two[0]
        pd.testing.assert_frame_equal(one[1], two[1])
        assert one[2] == two[2]
    assert len(pd.read_parquet(tmp_path / "stays-2.parquet")["icustay_id"].unique()) == 3
