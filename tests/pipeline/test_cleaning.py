"""One test per cleaning rule of config/variables.yaml, with hand-computed values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from series_reference import clean_events

from mimic_deid.core.errors import InputDataError
from mimic_deid.pipeline.cleaning import CLEAN_COLUMNS, merge_stats
from mimic_deid.pipeline.variables import Conversion, Variable, load_variables

VARIABLES = load_variables(Path(__file__).resolve().parents[2] / "config" / "variables.yaml")
T0 = pd.Timestamp("2100-01-01 00:00")


def events(rows: list[tuple]) -> pd.DataFrame:
    """Events of stay 1 from ``(itemid, value, valuenum, valueuom)``, one minute apart."""
    return pd.DataFrame(
        {
            "table": pd.Series(["chartevents"] * len(rows), dtype="str"),
            "subject_id": np.ones(len(rows), dtype=np.int64),
            "hadm_id": np.full(len(rows), 10, dtype=np.int64),
            "icustay_id": np.ones(len(rows), dtype=np.int64),
            "itemid": np.array([r[0] for r in rows], dtype=np.int64),
            "charttime": pd.Series(
                [T0 + pd.Timedelta(minutes=i) for i in range(len(rows))], dtype="datetime64[s]"
            ),
            "value": pd.Series([r[1] for r in rows], dtype="str"),
            "valuenum": np.array([np.nan if r[2] is None else r[2] for r in rows], dtype=float),
            "valueuom": pd.Series([r[3] for r in rows], dtype="str"),
        }
    )


def values_of(rows: list[tuple], variable: str) -> list[float]:
    clean, _ = clean_events(events(rows), VARIABLES)
    return clean.loc[clean["variable"] == variable, "value"].tolist()


def test_blood_pressure_ratio_split() -> None:
    rows = [
        (220050, "120/80", None, "mmHg"),  # systolic, ratio_first
        (220051, "120/80", 120.0, "mmHg"),  # diastolic: the ratio wins over VALUENUM
        (220051, " 75 ", None, "mmHg"),  # plain number
        (8368, "110 / 70.5", None, "mmHg"),
    ]
    assert values_of(rows, "systolic_blood_pressure") == [120.0]
    assert values_of(rows, "diastolic_blood_pressure") == [80.0, 75.0, 70.5]


def test_temperature_fahrenheit_by_unit_or_above_85() -> None:
    rows = [
        (678, "98.6", 98.6, "?F"),  # by unit (and value)
        (223761, "100.4", 100.4, None),  # above 85, no unit
        (676, "37.2", 37.2, "Deg. C"),  # Celsius untouched
        (223761, "84.2", 84.2, "Deg. F"),  # by unit although below 85: 29 C
    ]
    got = values_of(rows, "temperature")
    assert got == pytest.approx([37.0, 38.0, 37.2, 29.0])
    _, stats = clean_events(events(rows), VARIABLES)
    assert stats["temperature"]["converted"] == [3]


def test_weight_pounds_and_ounces_to_kg() -> None:
    rows = [
        (3581, "200", 200.0, None),  # lb by itemid
        (226531, "150", 150.0, "lbs"),  # lb by itemid and unit
        (3582, "1600", 1600.0, None),  # oz by itemid
        (763, "80", 80.0, "kg"),
        (762, "176.37", 176.37, "LB"),  # lb by unit, case ignored
    ]
    got = values_of(rows, "weight")
    assert got == pytest.approx([90.718474, 68.0388555, 45.359237, 80.0, 176.37 * 0.45359237])
    _, stats = clean_events(events(rows), VARIABLES)
    assert stats["weight"]["converted"] == [1, 3]


def test_height_inches_to_cm() -> None:
    rows = [(920, "70", 70.0, "inch"), (226707, "65", 65.0, "Inch"), (226730, "180", 180, "cm")]
    assert values_of(rows, "height") == pytest.approx([177.8, 165.1, 180.0])


def test_oxygen_saturation_fraction_to_percent() -> None:
    rows = [(646, "0.97", 0.97, None), (220277, "98", 98.0, "%"), (50817, "1", 1.0, None)]
    assert values_of(rows, "oxygen_saturation") == pytest.approx([97.0, 98.0, 100.0])


def test_fio2_percent_to_fraction() -> None:
    rows = [
        (223835, "50", 50.0, None),
        (3420, "0.4", 0.4, None),
        (190, "1", 1.0, None),  # not above 1: kept as a fraction
        (50816, "100", 100.0, "%"),
    ]
    assert values_of(rows, "fraction_inspired_oxygen") == pytest.approx([0.5, 0.4, 1.0, 1.0])


def test_gcs_text_to_ordinal() -> None:
    rows = [
        (223900, "1.0 ET/Trach", None, None),
        (723, "No Response-ETT", None, None),
        (220739, "To Speech", 3.0, None),
        (184, " 4 Spontaneously ", None, None),
        (454, "Obeys Commands", None, None),
        (223901, "5 Localizes Pain", 5.0, None),
        (223901, "4", None, None),  # not in the map: numeric fallback
        (198, "15", 15.0, None),
    ]
    assert values_of(rows, "gcs_verbal_response") == [1.0, 1.0]
    assert values_of(rows, "gcs_eye_opening") == [3.0, 4.0]
    assert values_of(rows, "gcs_motor_response") == [6.0, 5.0, 4.0]
    assert values_of(rows, "gcs_total") == [15.0]


def test_capillary_refill_text() -> None:
    rows = [
        (3348, "Normal <3 secs", None, None),
        (223951, "Abnormal >3 secs", None, None),
        (224308, "Brisk", None, None),
        (115, "Delayed", None, None),
        (8377, "Comment", None, None),  # unparseable
    ]
    assert values_of(rows, "capillary_refill_rate") == [0.0, 1.0, 0.0, 1.0]
    _, stats = clean_events(events(rows), VARIABLES)
    assert stats["capillary_refill_rate"]["unparseable"] == 1


def test_implausible_and_unparseable_dropped_and_counted() -> None:
    rows = [
        (220045, "400", 400.0, "bpm"),  # > 390
        (211, "-5", None, None),  # < 0
        (211, "390", None, None),  # range is inclusive
        (211, "abc", None, None),
        (211, None, None, None),
        (220045, "72", 72.0, "bpm"),
    ]
    assert values_of(rows, "heart_rate") == [390.0, 72.0]
    _, stats = clean_events(events(rows), VARIABLES)
    assert stats["heart_rate"] == {
        "rows": 6,
        "unparseable": 2,
        "converted": [],
        "out_of_range": 2,
        "kept": 2,
    }


def test_conversions_apply_in_order_on_the_value_before_each_rule() -> None:
    var = Variable(
        name="x",
        label="x",
        unit="u",
        itemids={"carevue": (1, 2), "metavision": (), "labevents": ()},
        parse="numeric",
        valid_range=(0.0, 1000.0),
        conversions=(Conversion(multiply=0.1, above=10.0), Conversion(add=100.0, above=5.0)),
    )
    rows = [(1, "50", None, None), (1, "8", None, None), (2, "3", None, None)]
    clean, stats = clean_events(events(rows), [var])
    # 50 -> 5 by rule 1; rule 2 sees 5 (not > 5) -> 5. 8 -> rule 2 only -> 108. 3 -> none.
    assert clean["value"].tolist() == [5.0, 108.0, 3.0]
    assert stats["x"]["converted"] == [1, 1]


def test_output_schema_and_unconfigured_itemids_ignored() -> None:
    rows = [(999999, "1", 1.0, None), (220045, "80", 80.0, None), (646, "97", 97.0, None)]
    clean, stats = clean_events(events(rows), VARIABLES)
    assert list(clean.columns) == list(CLEAN_COLUMNS)
    assert clean["icustay_id"].dtype == np.int64
    assert clean["value"].dtype == np.float64
    assert pd.api.types.is_datetime64_any_dtype(clean["charttime"])
    assert clean["variable"].tolist() == ["heart_rate", "oxygen_saturation"]
    assert set(stats) == {v.name for v in VARIABLES}
    assert stats["glucose"]["rows"] == 0

    empty, _ = clean_events(events(rows).iloc[:0], VARIABLES)
    assert list(empty.columns) == list(CLEAN_COLUMNS) and len(empty) == 0


def test_merge_stats_adds_counts() -> None:
    a = {"w": {"rows": 2, "converted": [1, 0], "kept": 2}}
    b = {"w": {"rows": 3, "converted": [0, 2], "kept": 1}}
    assert merge_stats(a, b) == {"w": {"rows": 5, "converted": [1, 2], "kept": 3}}


def test_missing_column_is_reported() -> None:
    with pytest.raises(InputDataError) as info:
        clean_events(events([(211, "80", 80.0, None)]).drop(columns="valueuom"), VARIABLES)
    assert str(info.value) == (
        "table 'events' (lower-case column names): missing column(s) ['valueuom']; expected at "
        "least ['icustay_id', 'charttime', 'itemid', 'value', 'valuenum', 'valueuom'], got "
        "['table', 'subject_id', 'hadm_id', 'icustay_id', 'itemid', 'charttime', 'value', "
        "'valuenum']"
    )
