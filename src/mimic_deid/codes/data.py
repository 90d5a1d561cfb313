"""Diagnosis records: codes with the patient's age, grouped per admission or per subject.

The population P is every admission (or subject) with at least one diagnosis; the sample S is
the part of P in the released cohort (seed 002 §III.2). A record is the multiset of its codes
(repeated data, §III) or of its (ICD, age) pairs (trajectories, §IV.2.2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mimic_deid.codes.hierarchy import AGE_90_PLUS, icd9_category
from mimic_deid.codes.index import Multisets, multisets
from mimic_deid.core.errors import ConfigError, InputDataError, require_columns
from mimic_deid.core.logs import get_logger

__all__ = [
    "LEVELS",
    "UNITS",
    "Records",
    "admission_ages",
    "code_records",
    "diagnoses_with_ages",
    "pair_records",
    "sample_rows",
]

log = get_logger(__name__)

LEVELS = ("category", "full")
UNITS = ("subject", "admission")
SECONDS_PER_YEAR = 365.2425 * 86400


def admission_ages(admissions: pd.DataFrame, patients: pd.DataFrame) -> pd.DataFrame:
    """Age in whole years at each admission, ages of 90 or more as the one 90+ leaf.

    Parameters
    ----------
    admissions : DataFrame
        ``hadm_id``, ``subject_id``, ``admittime`` (datetime64).
    patients : DataFrame
        ``subject_id``, ``dob`` (datetime64). MIMIC-III shifts the DOB of patients older than
        89 so that their computed age is about 300; they all map to :data:`AGE_90_PLUS`.

    Returns
    -------
    DataFrame
        ``hadm_id``, ``subject_id`` (int64), ``age`` (int64 years, 0..90).
    """
    require_columns(admissions, ["hadm_id", "subject_id", "admittime"], "table admissions")
    require_columns(patients, ["subject_id", "dob"], "table patients")
    df = admissions[["hadm_id", "subject_id", "admittime"]].merge(
        patients[["subject_id", "dob"]], on="subject_id", how="left"
    )
    if df["dob"].isna().any():
        raise InputDataError(
            f"table admissions: {int(df['dob'].isna().sum())} admissions have no DOB in table "
            "patients (expected every SUBJECT_ID of ADMISSIONS in PATIENTS)"
        )
    seconds = (
        df["admittime"].to_numpy("datetime64[s]") - df["dob"].to_numpy("datetime64[s]")
    ).astype(np.int64)
    years = np.floor(seconds / SECONDS_PER_YEAR)
    if (years < 0).any():
        raise InputDataError(
            f"table admissions: {int((years < 0).sum())} admissions have ADMITTIME before the "
            "patient's DOB (expected a non-negative age)"
        )
    age = np.minimum(years, AGE_90_PLUS).astype(np.int64)
    return pd.DataFrame(
        {"hadm_id": df["hadm_id"].astype(np.int64), "subject_id": df["subject_id"], "age": age}
    )


def diagnoses_with_ages(
    diagnoses: pd.DataFrame, admissions: pd.DataFrame, patients: pd.DataFrame
) -> tuple[pd.DataFrame, dict]:
    """DIAGNOSES_ICD rows with the age at admission.

    Rows without a code are dropped and counted.

    Returns
    -------
    DataFrame
        ``subject_id``, ``hadm_id``, ``seq_num`` (int64), ``icd9_code`` (str), ``age`` (int64),
        sorted by hadm_id, seq_num, code.
    dict
        ``rows``, ``dropped_no_code``, ``dropped_no_admission``, ``admissions``, ``subjects``.
    """
    require_columns(
        diagnoses, ["subject_id", "hadm_id", "seq_num", "icd9_code"], "table diagnoses_icd"
    )
    ages = admission_ages(admissions, patients)
    code = diagnoses["icd9_code"].astype("string").str.strip()
    keep = code.notna() & (code != "")
    df = diagnoses.loc[keep, ["hadm_id", "seq_num"]].assign(icd9_code=code[keep].astype(str))
    df = df.merge(ages, on="hadm_id", how="inner")
    counts = {
        "rows": int(len(diagnoses)),
        "dropped_no_code": int((~keep).sum()),
        "dropped_no_admission": int(keep.sum() - len(df)),
    }
    df["seq_num"] = df["seq_num"].fillna(0).astype(np.int64)
    df = df.sort_values(["hadm_id", "seq_num", "icd9_code"], kind="stable").reset_index(drop=True)
    counts.update(admissions=int(df["hadm_id"].nunique()), subjects=int(df["subject_id"].nunique()))
    cols = ["subject_id", "hadm_id", "seq_num", "icd9_code", "age"]
    return df[cols], counts


def _check_choice(value: str, choices: tuple[str, ...], param: str) -> str:
    if value not in choices:
        raise ConfigError(
            f"config parameter '{param}': expected one of {list(choices)}, got {value!r}"
        )
    return value


def codes_at_level(codes: pd.Series, level: str) -> pd.Series:
    """Codes as written (``full``) or their 3-character category (``category``; E codes 4).

    Codes that are not ICD-9-CM keep their spelling (the hierarchy maps them to its root).
    """
    _check_choice(level, LEVELS, "codes/level")
    codes = codes.astype(str).str.strip().str.upper()
    if level == "full":
        return codes
    uniq = pd.unique(codes)
    cat = {c: icd9_category(c) or c for c in uniq}
    return codes.map(cat)


@dataclass(frozen=True)
class Records:
    """Multiset records of a population and which of them form the sample.

    Attributes
    ----------
    unit : str
        ``subject`` or ``admission``.
    ids : ndarray of int64, shape (n_records,)
        SUBJECT_ID or HADM_ID of each record (private).
    items : ndarray, shape (n_items,)
        What an item id stands for: a code string, or a (code, age) record array.
    sets : Multisets
        The records.
    """

    unit: str
    ids: np.ndarray
    items: np.ndarray
    sets: Multisets

    def sample(self, unit_ids: np.ndarray) -> np.ndarray:
        """Indices of the records whose id is in ``unit_ids`` (sorted)."""
        return np.flatnonzero(np.isin(self.ids, np.asarray(unit_ids, dtype=np.int64)))


def _unit_column(unit: str) -> str:
    return {"subject": "subject_id", "admission": "hadm_id"}[
        _check_choice(unit, UNITS, "codes/unit")
    ]


def code_records(diag: pd.DataFrame, unit: str, level: str) -> Records:
    """Repeated-data records: each unit's multiset of codes (seed §III.2)."""
    col = _unit_column(unit)
    ids, rec = np.unique(diag[col].to_numpy(np.int64), return_inverse=True)
    items, item = np.unique(
        codes_at_level(diag["icd9_code"], level).to_numpy(str), return_inverse=True
    )
    return Records(unit, ids, items, multisets(rec, item, ids.size))


def pair_records(diag: pd.DataFrame, unit: str, level: str) -> Records:
    """Trajectory records: each unit's multiset of (code, age) pairs (seed §IV.2.2)."""
    col = _unit_column(unit)
    ids, rec = np.unique(diag[col].to_numpy(np.int64), return_inverse=True)
    names, code = np.unique(
        codes_at_level(diag["icd9_code"], level).to_numpy(str), return_inverse=True
    )
    ages = diag["age"].to_numpy(np.int64)
    if ages.size and (ages.min() < 0 or ages.max() > AGE_90_PLUS):
        raise InputDataError(f"column age: expected ages 0..{AGE_90_PLUS} years (90 = 90+)")
    keys, item = np.unique(code * (AGE_90_PLUS + 1) + ages, return_inverse=True)
    table = np.rec.fromarrays(
        [names[keys // (AGE_90_PLUS + 1)], keys % (AGE_90_PLUS + 1)], names="code,age"
    )
    return Records(unit, ids, table, multisets(rec, item, ids.size))


def sample_rows(records: Records, unit_ids: np.ndarray, what: str) -> np.ndarray:
    """The sample's record indices; raises ``InputDataError`` for an empty sample."""
    idx = records.sample(unit_ids)
    if idx.size == 0:
        raise InputDataError(
            f"{what}: the sample is empty: none of the {len(np.unique(unit_ids))} cohort "
            f"{records.unit}s has a row in table diagnoses_icd"
        )
    return idx
