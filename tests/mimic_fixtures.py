"""A tiny hand-written MIMIC-III v1.4 dataset and a CSV writer in the official format.

Other test modules may import it::

    from mimic_fixtures import write_mimic_dir, EXPECTED
    folder = write_mimic_dir(tmp_path / "mimic")            # CSV.gz, upper-case quoted headers
    folder = write_mimic_dir(tmp_path / "demo", compress=False, header_case="lower")

The format follows the official v1.4 release: every column of the table, text columns double
quoted (``""`` escapes a quote), numbers and timestamps (``YYYY-MM-DD HH:MM:SS``) unquoted, null
as an empty field. Rows are plain dicts keyed by upper-case column names and can be replaced per
table (``rows={"CHARTEVENTS": [...]}``).

The data cover: CareVue and MetaVision CHARTEVENTS rows (ERROR empty vs 0/1), an ERROR = 1 row,
rows without HADM_ID (chart and lab), a chart row without ICUSTAY_ID, unconfigured item ids,
text values with commas, quotes and the literal ``NA``, a ``°F`` unit, identical duplicate rows,
a shifted DOB over 89 years, a death, a stay without OUTTIME, several stays per admission and
two admissions for one subject. ``EXPECTED`` gives the extraction counts for the default
variables (config/variables.yaml).
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterable
from pathlib import Path

# (name, kind) with kind in int / float / ts / text, in the v1.4 column order.
V14_COLUMNS: dict[str, list[tuple[str, str]]] = {
    "PATIENTS": [
        ("ROW_ID", "int"), ("SUBJECT_ID", "int"), ("GENDER", "text"), ("DOB", "ts"),
        ("DOD", "ts"), ("DOD_HOSP", "ts"), ("DOD_SSN", "ts"), ("EXPIRE_FLAG", "int"),
    ],
    "ADMISSIONS": [
        ("ROW_ID", "int"), ("SUBJECT_ID", "int"), ("HADM_ID", "int"), ("ADMITTIME", "ts"),
        ("DISCHTIME", "ts"), ("DEATHTIME", "ts"), ("ADMISSION_TYPE", "text"),
        ("ADMISSION_LOCATION", "text"), ("DISCHARGE_LOCATION", "text"), ("INSURANCE", "text"),
        ("LANGUAGE", "text"), ("RELIGION", "text"), ("MARITAL_STATUS", "text"),
        ("ETHNICITY", "text"), ("EDREGTIME", "ts"), ("EDOUTTIME", "ts"), ("DIAGNOSIS", "text"),
        ("HOSPITAL_EXPIRE_FLAG", "int"), ("HAS_CHARTEVENTS_DATA", "int"),
    ],
    "ICUSTAYS": [
        ("ROW_ID", "int"), ("SUBJECT_ID", "int"), ("HADM_ID", "int"), ("ICUSTAY_ID", "int"),
        ("DBSOURCE", "text"), ("FIRST_CAREUNIT", "text"), ("LAST_CAREUNIT", "text"),
        ("FIRST_WARDID", "int"), ("LAST_WARDID", "int"), ("INTIME", "ts"), ("OUTTIME", "ts"),
        ("LOS", "float"),
    ],
    "CHARTEVENTS": [
        ("ROW_ID", "int"), ("SUBJECT_ID", "int"), ("HADM_ID", "int"), ("ICUSTAY_ID", "int"),
        ("ITEMID", "int"), ("CHARTTIME", "ts"), ("STORETIME", "ts"), ("CGID", "int"),
        ("VALUE", "text"), ("VALUENUM", "float"), ("VALUEUOM", "text"), ("WARNING", "int"),
        ("ERROR", "int"), ("RESULTSTATUS", "text"), ("STOPPED", "text"),
    ],
    "LABEVENTS": [
        ("ROW_ID", "int"), ("SUBJECT_ID", "int"), ("HADM_ID", "int"), ("ITEMID", "int"),
        ("CHARTTIME", "ts"), ("VALUE", "text"), ("VALUENUM", "float"), ("VALUEUOM", "text"),
        ("FLAG", "text"),
    ],
}  # fmt: skip


def _patients() -> list[dict]:
    return [
        {"SUBJECT_ID": 10, "GENDER": "F", "DOB": "2080-01-01 00:00:00", "EXPIRE_FLAG": 0},
        {
            "SUBJECT_ID": 20,
            "GENDER": "M",
            "DOB": "1800-07-05 00:00:00",
            "DOD": "2101-03-02 00:00:00",
            "DOD_HOSP": "2101-03-02 00:00:00",
            "EXPIRE_FLAG": 1,
        },  # fmt: skip
        {"SUBJECT_ID": 30, "GENDER": "F", "DOB": "2090-05-05 00:00:00", "EXPIRE_FLAG": 0},
    ]


def _admissions() -> list[dict]:
    common = {
        "ADMISSION_TYPE": "EMERGENCY", "ADMISSION_LOCATION": "EMERGENCY ROOM ADMIT",
        "DISCHARGE_LOCATION": "HOME", "INSURANCE": "Medicare", "ETHNICITY": "WHITE",
        "HAS_CHARTEVENTS_DATA": 1, "HOSPITAL_EXPIRE_FLAG": 0,
    }  # fmt: skip
    return [
        {**common, "SUBJECT_ID": 10, "HADM_ID": 100001, "ADMITTIME": "2150-01-01 08:00:00",
         "DISCHTIME": "2150-01-10 12:00:00", "DIAGNOSIS": "SEPSIS, PNEUMONIA"},
        {**common, "SUBJECT_ID": 10, "HADM_ID": 100010, "ADMITTIME": "2151-06-01 08:00:00",
         "DISCHTIME": "2151-06-05 12:00:00", "DIAGNOSIS": 'CHEST PAIN "R/O MI"'},
        {**common, "SUBJECT_ID": 20, "HADM_ID": 100002, "ADMITTIME": "2101-02-20 10:00:00",
         "DISCHTIME": "2101-03-02 04:00:00", "DEATHTIME": "2101-03-02 04:00:00",
         "DISCHARGE_LOCATION": "DEAD/EXPIRED", "HOSPITAL_EXPIRE_FLAG": 1, "LANGUAGE": "ENGL"},
        {**common, "SUBJECT_ID": 30, "HADM_ID": 100003, "ADMITTIME": "2160-03-03 01:00:00",
         "DISCHTIME": "2160-03-09 09:30:00", "RELIGION": "CATHOLIC"},
    ]  # fmt: skip


def _icustays() -> list[dict]:
    return [
        {"SUBJECT_ID": 10, "HADM_ID": 100001, "ICUSTAY_ID": 200001, "DBSOURCE": "carevue",
         "FIRST_CAREUNIT": "MICU", "LAST_CAREUNIT": "MICU", "FIRST_WARDID": 52,
         "LAST_WARDID": 52, "INTIME": "2150-01-01 10:00:00", "OUTTIME": "2150-01-04 10:00:00",
         "LOS": 3.0},
        {"SUBJECT_ID": 10, "HADM_ID": 100001, "ICUSTAY_ID": 200004, "DBSOURCE": "carevue",
         "FIRST_CAREUNIT": "MICU", "LAST_CAREUNIT": "SICU", "FIRST_WARDID": 52,
         "LAST_WARDID": 33, "INTIME": "2150-01-06 09:00:00", "OUTTIME": "2150-01-08 21:00:00",
         "LOS": 2.5},
        {"SUBJECT_ID": 10, "HADM_ID": 100010, "ICUSTAY_ID": 200010, "DBSOURCE": "metavision",
         "FIRST_CAREUNIT": "CCU", "LAST_CAREUNIT": "CCU", "FIRST_WARDID": 7, "LAST_WARDID": 7,
         "INTIME": "2151-06-01 09:00:00"},
        {"SUBJECT_ID": 20, "HADM_ID": 100002, "ICUSTAY_ID": 200002, "DBSOURCE": "metavision",
         "FIRST_CAREUNIT": "MICU", "LAST_CAREUNIT": "MICU", "FIRST_WARDID": 50,
         "LAST_WARDID": 50, "INTIME": "2101-02-20 12:00:00", "OUTTIME": "2101-03-02 04:00:00",
         "LOS": 9.666666666666666},
        {"SUBJECT_ID": 30, "HADM_ID": 100003, "ICUSTAY_ID": 200003, "DBSOURCE": "metavision",
         "FIRST_CAREUNIT": "TSICU", "LAST_CAREUNIT": "TSICU", "FIRST_WARDID": 14,
         "LAST_WARDID": 14, "INTIME": "2160-03-03 02:00:00", "OUTTIME": "2160-03-05 14:15:00",
         "LOS": 2.5104},
    ]  # fmt: skip


def _cv(subject: int, hadm: int | None, icu: int | None, itemid: int, t: str, value, num, uom):
    return {
        "SUBJECT_ID": subject, "HADM_ID": hadm, "ICUSTAY_ID": icu, "ITEMID": itemid,
        "CHARTTIME": t, "STORETIME": t, "CGID": 14000, "VALUE": value, "VALUENUM": num,
        "VALUEUOM": uom, "RESULTSTATUS": "Manual", "STOPPED": "NotStopd",
    }  # fmt: skip


def _mv(subject: int, hadm: int | None, icu: int | None, itemid: int, t: str, value, num, uom,
        error: int = 0):  # fmt: skip
    return {
        "SUBJECT_ID": subject, "HADM_ID": hadm, "ICUSTAY_ID": icu, "ITEMID": itemid,
        "CHARTTIME": t, "STORETIME": t, "CGID": 20000, "VALUE": value, "VALUENUM": num,
        "VALUEUOM": uom, "WARNING": 0, "ERROR": error,
    }  # fmt: skip


def _chartevents() -> list[dict]:
    return [
        # subject 10, CareVue stay 200001 (rows deliberately out of time order)
        _cv(10, 100001, 200001, 211, "2150-01-01 12:00:00", "86", 86.0, "BPM"),
        _cv(10, 100001, 200001, 211, "2150-01-01 11:00:00", "90", 90.0, "BPM"),
        _cv(10, 100001, 200001, 455, "2150-01-01 11:00:00", "120/80", None, "mmHg"),
        _cv(10, 100001, 200001, 678, "2150-01-01 11:00:00", "98.6", 98.6, "°F"),
        _cv(10, 100001, 200001, 184, "2150-01-01 11:00:00", "To Speech", 3.0, None),
        _cv(10, 100001, 200001, 723, "2150-01-01 11:00:00", 'Oriented, "x3"', None, None),
        _cv(10, 100001, 200001, 3348, "2150-01-01 13:00:00", "Normal <3 secs", None, None),
        _cv(10, 100001, 200001, 920, "2150-01-01 13:00:00", "66", 66.0, "Inch"),
        _cv(10, 100001, 200001, 742, "2150-01-01 13:00:00", "1", 1.0, None),  # other item
        _cv(10, 100001, None, 646, "2150-01-02 00:00:00", "0.97", 0.97, "%"),  # no ICUSTAY_ID
        _cv(10, None, None, 211, "2150-01-02 00:00:00", "70", 70.0, "BPM"),  # no HADM_ID
        _cv(10, 100001, 200004, 211, "2150-01-06 10:00:00", "NA", None, None),  # literal NA
        _cv(10, 100001, 200004, 211, "2150-01-06 10:00:00", "NA", None, None),  # duplicate
        _cv(10, 100001, 200004, 763, "2150-01-06 10:00:00", "", None, "kg"),  # empty VALUE
        # subject 10, MetaVision stay 200010
        _mv(10, 100010, 200010, 220045, "2151-06-01 10:00:00", "77", 77.0, "bpm"),
        _mv(10, 100010, 200010, 223761, "2151-06-01 10:00:00", "99.1", 99.1, "?F"),
        _mv(10, 100010, 200010, 226531, "2151-06-01 10:00:00", "176", 176.0, "lb"),
        # subject 20, MetaVision stay 200002
        _mv(20, 100002, 200002, 220045, "2101-02-20 13:00:00", "110", 110.0, "bpm"),
        _mv(20, 100002, 200002, 220045, "2101-02-20 13:05:00", "999", 999.0, "bpm", error=1),
        _mv(20, 100002, 200002, 220179, "2101-02-20 13:00:00", "95", 95.0, "mmHg"),
        _mv(20, 100002, 200002, 220739, "2101-02-20 13:00:00", "To Pain", 2.0, None),
        _mv(20, 100002, 200002, 223835, "2101-02-20 14:00:00", "40", 40.0, "None"),
        _mv(20, 100002, 200002, 224027, "2101-02-20 14:00:00", "Warm", None, None),  # other
        # subject 30
        _mv(30, 100003, 200003, 220210, "2160-03-03 03:00:00", "18", 18.0, "insp/min"),
        _mv(30, 100003, 200003, 220277, "2160-03-03 03:00:00", "97", 97.0, "%"),
        _mv(30, 100003, 200003, 220277, "2160-03-03 03:00:00", "97", 97.0, "%", error=1),
        _mv(30, 100003, 200003, 220621, "2160-03-03 04:00:00", "123", 123.0, "mg/dL"),
        # a float needing all 17 significant digits (catches rounding on the way)
        _mv(30, 100003, 200003, 223762, "2160-03-03 04:00:00", "37.8", 37.77777777777778, "?C"),
    ]


def _labevents() -> list[dict]:
    def lab(subject, hadm, itemid, t, value, num, uom, flag=None):
        return {
            "SUBJECT_ID": subject, "HADM_ID": hadm, "ITEMID": itemid, "CHARTTIME": t,
            "VALUE": value, "VALUENUM": num, "VALUEUOM": uom, "FLAG": flag,
        }  # fmt: skip

    return [
        lab(10, 100001, 50931, "2150-01-01 09:00:00", "105", 105.0, "mg/dL"),
        lab(10, 100001, 50820, "2150-01-01 09:00:00", "7.38", 7.38, "units"),
        lab(10, 100001, 50912, "2150-01-01 09:00:00", "1.1", 1.1, "mg/dL"),  # other item
        lab(10, None, 50931, "2149-12-20 09:00:00", "99", 99.0, "mg/dL"),  # outpatient
        lab(20, 100002, 50817, "2101-02-20 13:30:00", "96", 96.0, "%"),
        lab(20, 100002, 50809, "2101-02-21 06:00:00", ">500", None, "mg/dL", "abnormal"),
        lab(30, 100003, 50816, "2160-03-03 05:00:00", "50", 50.0, "%"),
    ]


def default_rows() -> dict[str, list[dict]]:
    """The hand-written tables, keyed by upper-case table name (ROW_ID filled in on write)."""
    return {
        "PATIENTS": _patients(),
        "ADMISSIONS": _admissions(),
        "ICUSTAYS": _icustays(),
        "CHARTEVENTS": _chartevents(),
        "LABEVENTS": _labevents(),
    }


#: Extraction counts of the default rows with config/variables.yaml.
EXPECTED = {
    "icustays": 5,
    "admissions": 4,
    "patients": 3,
    "chartevents": {
        "rows_read": 28, "dropped_other_itemid": 2, "dropped_error": 2,
        "dropped_no_hadm_id": 1, "dropped_duplicate": 1, "kept": 22,
    },
    "labevents": {
        "rows_read": 7, "dropped_other_itemid": 1, "dropped_error": 0,
        "dropped_no_hadm_id": 1, "dropped_duplicate": 0, "kept": 5,
    },
}  # fmt: skip


def format_value(value, kind: str, quote_text: bool = True) -> str:
    """One CSV field in the official style (text quoted, numbers/timestamps bare, null empty)."""
    if value is None:
        return ""
    if kind == "text":
        text = str(value)
        needs = quote_text or any(c in text for c in ',"\n\r') or text == ""
        return '"' + text.replace('"', '""') + '"' if needs else text
    if isinstance(value, str):  # timestamps, or a deliberately bad number in a test
        return value
    if kind == "float":
        return repr(float(value)).removesuffix(".0") if float(value).is_integer() else repr(value)
    return str(value)


def write_table(
    path: str | os.PathLike,
    table: str,
    rows: Iterable[dict],
    *,
    header_case: str = "upper",
    quote_text: bool = True,
    columns: list[tuple[str, str]] | None = None,
) -> Path:
    """Write ``rows`` of ``table`` as CSV (gzip when ``path`` ends with ``.gz``)."""
    path = Path(path)
    cols = columns if columns is not None else V14_COLUMNS[table]
    names = [n.lower() if header_case == "lower" else n for n, _ in cols]
    head = ",".join(f'"{n}"' if quote_text else n for n in names)
    lines = [head]
    for i, row in enumerate(rows, start=1):
        row = {"ROW_ID": i, **row}
        lines.append(",".join(format_value(row.get(n), k, quote_text) for n, k in cols))
    data = ("\n".join(lines) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)
    return path


def write_mimic_dir(
    folder: str | os.PathLike,
    *,
    compress: bool = True,
    header_case: str = "upper",
    quote_text: bool = True,
    rows: dict[str, list[dict]] | None = None,
    tables: Iterable[str] | None = None,
) -> Path:
    """Write the hand-written dataset (or ``rows`` overrides) as a MIMIC-III v1.4 directory.

    ``compress`` writes ``NAME.csv.gz`` (else ``NAME.csv``); ``header_case`` is ``upper``
    (full database) or ``lower`` (public demo); ``tables`` limits the files written.
    """
    folder = Path(folder)
    data = default_rows()
    data.update(rows or {})
    for table in tables or data:
        name = f"{table}.csv.gz" if compress else f"{table}.csv"
        write_table(
            folder / name, table, data[table], header_case=header_case, quote_text=quote_text
        )
    return folder


def random_events(n: int, seed: int = 0, table: str = "CHARTEVENTS") -> list[dict]:
    """``n`` pseudo-random event rows over the default stays (for chunking/streaming tests).

    Mixes configured and other item ids, MetaVision ERROR = 1 rows, missing HADM_ID and
    ICUSTAY_ID, text and numeric values; deterministic for a given ``seed``.
    """
    import random

    rng = random.Random(seed)
    stays = [(10, 100001, 200001), (10, 100010, 200010), (20, 100002, 200002),
             (30, 100003, 200003)]  # fmt: skip
    chart_ids = [211, 220045, 618, 220210, 646, 220277, 455, 220179, 184, 220739, 742, 224027]
    lab_ids = [50931, 50820, 50817, 50912, 51221]
    texts = ["To Speech", "Normal <3 secs", 'a "quoted", text', "NA", "120/80"]
    rows = []
    for _ in range(n):
        subject, hadm, icu = rng.choice(stays)
        itemid = rng.choice(lab_ids if table == "LABEVENTS" else chart_ids)
        t = f"21{rng.randint(0, 60):02d}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} " \
            f"{rng.randint(0, 23):02d}:{rng.choice([0, 15, 30, 45]):02d}:00"  # fmt: skip
        num = round(rng.uniform(0, 200), rng.choice([0, 1, 2])) if rng.random() < 0.7 else None
        value = str(num).removesuffix(".0") if num is not None else rng.choice(texts)
        row = {
            "SUBJECT_ID": subject, "HADM_ID": None if rng.random() < 0.02 else hadm,
            "ITEMID": itemid, "CHARTTIME": t, "VALUE": value, "VALUENUM": num,
            "VALUEUOM": rng.choice(["bpm", "%", "mmHg", None]),
        }  # fmt: skip
        if table == "CHARTEVENTS":
            mv = itemid >= 220000
            row.update(
                ICUSTAY_ID=None if rng.random() < 0.05 else icu, STORETIME=t, CGID=15000,
                WARNING=0 if mv else None,
                ERROR=(1 if rng.random() < 0.05 else 0) if mv else None,
                STOPPED=None if mv else "NotStopd",
            )  # fmt: skip
        rows.append(row)
    return rows
