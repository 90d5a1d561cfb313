"""Cohort rules, mortality label and event-to-stay assignment on hand-made tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from series_reference import assign_events_to_stays

from mimic_deid.core.errors import InputDataError
from mimic_deid.pipeline.cohort import STAYS_COLUMNS, build_cohort

YEAR = pd.Timedelta(days=365)


def ts(text: str | None) -> pd.Timestamp:
    return pd.NaT if text is None else pd.Timestamp(text)


def times(values: list) -> pd.Series:
    return pd.Series([ts(v) for v in values], dtype="datetime64[s]")


def make_tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Six subjects exercising every rule (comments give the expected fate)."""
    # icustay_id, subject, hadm, first/last careunit, first/last ward, intime, outtime
    rows = [
        (100, 1, 10, "MICU", "MICU", 1, 1, "2100-01-01 10:00", "2100-01-03 10:00"),  # kept
        (200, 2, 20, "MICU", "SICU", 1, 1, "2100-02-01", "2100-02-02"),  # unit transfer
        (300, 3, 30, "CCU", "CCU", 3, 3, "2100-03-01", "2100-03-02"),  # 2 stays in hadm 30
        (301, 3, 30, "CCU", "CCU", 3, 3, "2100-03-05", "2100-03-06"),
        (310, 3, 31, "CCU", "CCU", 3, 4, "2100-04-01", "2100-04-02"),  # ward transfer
        (311, 3, 31, "CCU", "CCU", 4, 4, "2100-04-03 00:00", "2100-04-04 12:00"),  # kept
        (400, 4, 40, "PICU", "PICU", 5, 5, "2100-05-01", "2100-05-02"),  # age 10
        (500, 5, 50, "MICU", "MICU", 1, 1, "2100-06-01 16:00", "2100-06-02 16:00"),  # age ~300
        (600, 6, 60, "MICU", "MICU", 1, 1, "2100-07-01", "2100-07-02"),  # died after discharge
    ]
    icustays = pd.DataFrame(
        {
            "subject_id": [r[1] for r in rows],
            "hadm_id": [r[2] for r in rows],
            "icustay_id": [r[0] for r in rows],
            "dbsource": "carevue",
            "first_careunit": pd.Series([r[3] for r in rows], dtype="str"),
            "last_careunit": pd.Series([r[4] for r in rows], dtype="str"),
            "first_wardid": [r[5] for r in rows],
            "last_wardid": [r[6] for r in rows],
            "intime": times([r[7] for r in rows]),
            "outtime": times([r[8] for r in rows]),
        }
    )
    admissions = pd.DataFrame(
        {
            "subject_id": [1, 2, 3, 3, 4, 5, 6],
            "hadm_id": [10, 20, 30, 31, 40, 50, 60],
            "admittime": times(
                [
                    "2100-01-01 08:00",
                    "2100-02-01",
                    "2100-03-01",
                    "2100-04-01",
                    "2100-05-01",
                    "2100-06-01 15:00",
                    "2100-07-01",
                ]
            ),
            "dischtime": times(
                [
                    "2100-01-10",
                    "2100-02-03",
                    "2100-03-07",
                    "2100-04-06",
                    "2100-05-03",
                    "2100-06-03",
                    "2100-07-03 12:00",
                ]
            ),
            "deathtime": times(["2100-01-05 12:00", None, None, None, None, None, None]),
            "hospital_expire_flag": [1, 0, 0, 0, 0, 1, 0],
        }
    )
    patients = pd.DataFrame(
        {
            "subject_id": [1, 2, 3, 4, 5, 6],
            "gender": pd.Series(["F", "M", "F", "M", "F", "M"], dtype="str"),
            "dob": times(
                ["2050-01-01", "2050-01-01", "2040-01-01", "2090-05-01", "1800-06-01", "2030-01-01"]
            ),
            # subject 5: DOD is the admission day (admitted 15:00, DOD at midnight): in hospital.
            # subject 6: DOD the day after discharge: not in hospital.
            "dod": times(["2100-01-05", None, None, None, "2100-06-01", "2100-07-04"]),
        }
    )
    return icustays, admissions, patients


def test_cohort_rules_keep_expected_stays_with_labels() -> None:
    stays, _ = build_cohort(*make_tables())
    assert list(stays.columns) == list(STAYS_COLUMNS)
    assert stays["icustay_id"].tolist() == [100, 311, 500, 600]
    assert stays["mortality"].tolist() == [1, 0, 1, 0]
    assert stays["mortality"].dtype == np.int8
    assert stays["icustay_id"].dtype == np.int64
    # 2100-01-03 10:00 - 2100-01-01 10:00 = 48 h; 2100-04-04 12:00 - 2100-04-03 = 36 h.
    assert stays["los_hours"].tolist() == [48.0, 36.0, 24.0, 24.0]
    # Subject 1: 2050-01-01 -> 2100-01-01 10:00 is 50*365 + 12 leap days + 10 h.
    assert stays["age_years"].iloc[0] == pytest.approx((50 * 365 + 12 + 10 / 24) / 365)
    # Subject 5's shifted age (~300 years) is kept as it is.
    assert 299 < stays["age_years"].iloc[2] < 301


def test_cohort_counts_after_each_rule() -> None:
    _, counts = build_cohort(*make_tables())
    assert counts == [
        {"rule": "start", "stays": 9, "admissions": 7, "subjects": 6},
        {"rule": "valid_times", "stays": 9, "admissions": 7, "subjects": 6},
        {"rule": "no_transfer", "stays": 7, "admissions": 6, "subjects": 5},
        {"rule": "one_stay_per_admission", "stays": 5, "admissions": 5, "subjects": 5},
        {"rule": "min_age", "stays": 4, "admissions": 4, "subjects": 4},
    ]


def test_stays_without_valid_times_are_dropped_and_counted(caplog) -> None:
    icustays, admissions, patients = make_tables()
    icustays["outtime"] = icustays["outtime"].astype("datetime64[s]")
    at = icustays["icustay_id"].to_numpy()
    icustays.loc[at == 100, "outtime"] = pd.Timestamp("2100-01-01 09:00")  # before INTIME
    icustays.loc[at == 311, "outtime"] = pd.NaT  # no OUTTIME
    icustays.loc[at == 600, "outtime"] = icustays.loc[at == 600, "intime"]  # no duration
    stays, counts = build_cohort(icustays, admissions, patients)
    assert counts[1] == {"rule": "valid_times", "stays": 6, "admissions": 5, "subjects": 4}
    assert not {100, 311, 600} & set(stays["icustay_id"])
    assert (
        "3 stays dropped by rule valid_times: no INTIME or OUTTIME, or OUTTIME not after INTIME"
        in (caplog.text)
    )


def test_age_boundary_uses_365_day_years_and_nanosecond_inputs_do_not_overflow() -> None:
    icustays, admissions, patients = make_tables()
    intime_500 = icustays.loc[icustays["icustay_id"] == 500, "intime"].iloc[0]
    intime_100 = icustays.loc[icustays["icustay_id"] == 100, "intime"].iloc[0]
    intime_600 = icustays.loc[icustays["icustay_id"] == 600, "intime"].iloc[0]
    patients.loc[patients["subject_id"] == 1, "dob"] = intime_100 - 18 * YEAR  # exactly 18
    patients.loc[patients["subject_id"] == 6, "dob"] = (
        intime_600 - 18 * YEAR + pd.Timedelta(seconds=1)
    )
    for table in (icustays, admissions, patients):
        for col in table.columns:
            if pd.api.types.is_datetime64_any_dtype(table[col]):
                table[col] = table[col].astype("datetime64[ns]")
    stays, _ = build_cohort(icustays, admissions, patients)
    assert 100 in stays["icustay_id"].tolist()
    assert 600 not in stays["icustay_id"].tolist()  # one second short of 18 * 365 days
    age_500 = stays.loc[stays["icustay_id"] == 500, "age_years"].iloc[0]
    expected = (intime_500 - pd.Timestamp("1800-06-01")).total_seconds() / (365 * 86400)
    assert age_500 == pytest.approx(expected)


def test_mortality_uses_deathtime_before_dod() -> None:
    icustays, admissions, patients = make_tables()
    # Subject 6 dies in hospital by DEATHTIME although DOD (wrongly) says after discharge.
    admissions.loc[admissions["subject_id"] == 6, "deathtime"] = pd.Timestamp("2100-07-02 08:00")
    # Subject 1: DEATHTIME after discharge -> 0 even though DOD would say otherwise.
    admissions.loc[admissions["subject_id"] == 1, "deathtime"] = pd.Timestamp("2100-01-11")
    stays, _ = build_cohort(icustays, admissions, patients)
    assert stays.set_index("icustay_id")["mortality"].to_dict() == {100: 0, 311: 0, 500: 1, 600: 1}


def test_empty_cohort_names_the_rule() -> None:
    icustays, admissions, patients = make_tables()
    patients["dob"] = times(["2095-01-01"] * len(patients))
    with pytest.raises(InputDataError) as info:
        build_cohort(icustays, admissions, patients)
    assert str(info.value) == (
        "cohort is empty after rule 'min_age': no ICU stay is left "
        "(check the icustays/admissions/patients tables)"
    )
    icustays["last_wardid"] = 99
    with pytest.raises(InputDataError) as info:
        build_cohort(icustays, admissions, patients)
    assert str(info.value) == (
        "cohort is empty after rule 'no_transfer': no ICU stay is left "
        "(check the icustays/admissions/patients tables)"
    )


def test_missing_column_names_table_and_column() -> None:
    icustays, admissions, patients = make_tables()
    with pytest.raises(InputDataError) as info:
        build_cohort(icustays, admissions, patients.drop(columns="dod"))
    assert str(info.value) == (
        "table 'patients' (lower-case column names): missing column(s) ['dod']; expected at "
        "least ['subject_id', 'dob', 'dod'], got ['subject_id', 'gender', 'dob']"
    )
    with pytest.raises(InputDataError) as info:
        build_cohort(icustays.drop(columns="last_wardid"), admissions, patients)
    assert str(info.value) == (
        "table 'icustays' (lower-case column names): missing column(s) ['last_wardid']; "
        "expected at least ['subject_id', 'hadm_id', 'icustay_id', 'first_careunit', "
        "'last_careunit', 'first_wardid', 'last_wardid', 'intime', 'outtime'], got "
        "['subject_id', 'hadm_id', 'icustay_id', 'dbsource', 'first_careunit', "
        "'last_careunit', 'first_wardid', 'intime', 'outtime']"
    )


def test_assign_events_by_icustay_id_or_admission_window() -> None:
    stays, _ = build_cohort(*make_tables())
    # stay 100: hadm 10, [2100-01-01 10:00, 2100-01-03 10:00]; stay 311 is hadm 31.
    events = pd.DataFrame(
        {
            "table": pd.Series(["chartevents"] * 3 + ["labevents"] * 4, dtype="str"),
            "subject_id": [1, 3, 1, 1, 1, 1, 2],
            "hadm_id": [10, 31, 10, 10, 10, 10, 20],
            "icustay_id": pd.array([100, 310, 999, None, None, None, None], dtype="Int64"),
            "itemid": [220045] * 3 + [50931] * 4,
            "charttime": times(
                [
                    "2100-01-01 11:00",  # own stay -> kept
                    "2100-04-01 11:00",  # stay 310 is not in the cohort -> dropped
                    "2100-01-01 12:00",  # unknown stay id -> dropped
                    "2100-01-01 09:59",  # lab before INTIME -> dropped
                    "2100-01-01 10:00",  # lab at INTIME -> kept
                    "2100-01-03 10:00",  # lab at OUTTIME -> kept
                    "2100-02-01 12:00",  # admission not in the cohort -> dropped
                ]
            ),
            "value": pd.Series(["80", "81", "82", "150", "151", "152", "153"], dtype="str"),
            "valuenum": [80.0, 81, 82, 150, 151, 152, 153],
            "valueuom": pd.Series(["bpm"] * 3 + ["mg/dL"] * 4, dtype="str"),
        }
    )
    out = assign_events_to_stays(events, stays)
    assert list(out.columns) == list(events.columns)
    assert out["icustay_id"].dtype == np.int64
    assert out["icustay_id"].tolist() == [100, 100, 100]
    assert out["valuenum"].tolist() == [80.0, 151.0, 152.0]


def test_events_without_admission_or_time_belong_to_no_stay() -> None:
    stays, _ = build_cohort(*make_tables())
    # stay 100: hadm 10, [2100-01-01 10:00, 2100-01-03 10:00]
    events = pd.DataFrame(
        {
            "hadm_id": pd.array([None, 10, 10, 10], dtype="Int64"),
            "icustay_id": pd.array([100, None, None, 100], dtype="Int64"),
            "charttime": pd.to_datetime(["2100-01-02 10:00", None, "2100-01-02 10:00", None]),
        }
    )
    out = assign_events_to_stays(events, stays)
    # no hadm_id: dropped even with the stay's own icustay_id; no charttime: a lab row is
    # outside every window, a chart row keeps its own stay
    assert out["hadm_id"].tolist() == [10, 10]
    assert out["icustay_id"].tolist() == [100, 100]
    assert out["charttime"].isna().tolist() == [False, True]


def test_two_stays_of_one_admission_are_named_before_any_event_is_matched() -> None:
    stays, _ = build_cohort(*make_tables())
    twice = pd.concat([stays, stays.iloc[:1]], ignore_index=True)
    events = pd.DataFrame(
        {
            "hadm_id": pd.array([10], dtype="Int64"),
            "icustay_id": pd.array([100], dtype="Int64"),
            "charttime": pd.to_datetime(["2100-01-02 10:00"]),
        }
    )
    with pytest.raises(InputDataError) as info:
        assign_events_to_stays(events, twice)
    assert str(info.value) == "table 'stays': more than one stay per hadm_id; expected the cohort"
