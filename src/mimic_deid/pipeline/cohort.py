"""Benchmark cohort (YerevaNN/mimic3-benchmarks rules), mortality label, event-to-stay assignment.

Rules, in order (``counts`` reports stays / admissions / subjects after each):

1. ``start``: every ICU stay.
2. ``valid_times``: drop stays without INTIME or OUTTIME, or with OUTTIME before INTIME (their
   series would be cut to a wrong length; not a rule of the benchmark, which assumes valid
   times). The count is logged as a warning.
3. ``no_transfer``: drop stays whose first and last care unit or first and last ward differ.
4. ``one_stay_per_admission``: merge with ADMISSIONS and PATIENTS; keep admissions with exactly
   one remaining ICU stay.
5. ``min_age``: keep stays with age at ICU admission >= ``min_age`` years, where
   age = (INTIME - DOB) in seconds / (365 days) as in the benchmark. Shifted ages of patients
   older than 89 (~300 years) are kept as they are.

In-hospital mortality: DEATHTIME within [ADMITTIME, DISCHTIME]; when DEATHTIME is missing,
DOD (a date at midnight) within [day of ADMITTIME, DISCHTIME], so that a death on the day of
admission counts and a death after discharge does not.

Demographics of a stay (:func:`stay_demographics`, what a series release may publish once
generalised, :mod:`mimic_deid.deid.demographics`): ``age`` in whole years at ICU admission
(the floor of the cohort's age; shifted ages of 300+ kept, the hierarchy puts them in 90+),
PATIENTS.GENDER and the admission's ADMISSION_TYPE, INSURANCE and ETHNICITY; a missing value
is ``"?"``.

Long stay (the second utility task, issue 27): the ICU stay lasts more than
:data:`LONG_STAY_HOURS` (7 days, mimic3-benchmarks' long-stay cut), ``los_hours > 168``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mimic_deid.core.errors import InputDataError, require_columns
from mimic_deid.core.logs import get_logger

log = get_logger(__name__)

SECONDS_PER_YEAR = 365.0 * 24 * 3600  # the benchmark's year (365 days)
#: A stay longer than this (hours) is a long stay: mimic3-benchmarks' "> 7 days" cut.
LONG_STAY_HOURS = 168.0

ICUSTAYS_COLUMNS = (
    "subject_id",
    "hadm_id",
    "icustay_id",
    "first_careunit",
    "last_careunit",
    "first_wardid",
    "last_wardid",
    "intime",
    "outtime",
)
ADMISSIONS_COLUMNS = ("subject_id", "hadm_id", "admittime", "dischtime", "deathtime")
PATIENTS_COLUMNS = ("subject_id", "dob", "dod")
EVENTS_COLUMNS = ("hadm_id", "icustay_id", "charttime")
STAYS_COLUMNS = (
    "subject_id",
    "hadm_id",
    "icustay_id",
    "intime",
    "outtime",
    "los_hours",
    "age_years",
    "mortality",
)

_TIME_COLUMNS = {
    "intime",
    "outtime",
    "admittime",
    "dischtime",
    "deathtime",
    "dob",
    "dod",
    "charttime",
}


def require_table(df: pd.DataFrame, table: str, columns: tuple[str, ...] | list[str]) -> None:
    """Raise :class:`InputDataError` naming ``table`` and the first missing column.

    Timestamp columns (intime, charttime, ...) must also have a datetime64 dtype.
    """
    require_columns(df, columns, f"table '{table}' (lower-case column names)")
    for col in columns:
        if col in _TIME_COLUMNS and not pd.api.types.is_datetime64_any_dtype(df[col]):
            raise InputDataError(
                f"table '{table}': column '{col}' must be a timestamp (datetime64), "
                f"got dtype {df[col].dtype}"
            )


def _count(rule: str, df: pd.DataFrame) -> dict:
    row = {
        "rule": rule,
        "stays": int(df["icustay_id"].nunique()),
        "admissions": int(df["hadm_id"].nunique()),
        "subjects": int(df["subject_id"].nunique()),
    }
    log.info(
        "cohort after %s: %d stays, %d admissions, %d subjects",
        rule,
        row["stays"],
        row["admissions"],
        row["subjects"],
    )
    if row["stays"] == 0:
        raise InputDataError(
            f"cohort is empty after rule '{rule}': no ICU stay is left "
            "(check the icustays/admissions/patients tables)"
        )
    return row


#: The demographics of :func:`stay_demographics`, in the order a release publishes them.
STAY_DEMOGRAPHICS = ("age", "gender", "admission_type", "insurance", "ethnicity")
#: A missing demographic value (the tabular hierarchies' ``?``).
MISSING_DEMOGRAPHIC = "?"


def stay_demographics(
    stays: pd.DataFrame, admissions: pd.DataFrame, patients: pd.DataFrame
) -> pd.DataFrame:
    """The demographics of every cohort stay (module docstring).

    Parameters
    ----------
    stays : DataFrame
        The cohort (:func:`build_cohort`): ``icustay_id``, ``subject_id``, ``hadm_id``,
        ``age_years``.
    admissions, patients : DataFrame
        The raw tables: ``hadm_id``, ``admission_type``, ``insurance``, ``ethnicity``;
        ``subject_id``, ``gender``.

    Returns
    -------
    DataFrame
        ``icustay_id`` (int64) then :data:`STAY_DEMOGRAPHICS`: ``age`` int64 (years),
        the others str with ``"?"`` for a missing value; one row per stay, in the cohort's
        order.
    """
    require_columns(stays, ["icustay_id", "subject_id", "hadm_id", "age_years"], "cohort stays")
    require_columns(
        admissions, ["hadm_id", "admission_type", "insurance", "ethnicity"], "table 'admissions'"
    )
    require_columns(patients, ["subject_id", "gender"], "table 'patients'")
    adm = admissions.drop_duplicates("hadm_id")[["hadm_id", "admission_type", "insurance",
                                                 "ethnicity"]]  # fmt: skip
    pat = patients.drop_duplicates("subject_id")[["subject_id", "gender"]]
    out = stays[["icustay_id", "subject_id", "hadm_id", "age_years"]].merge(
        pat, on="subject_id", how="left"
    )
    out = out.merge(adm, on="hadm_id", how="left")
    frame = pd.DataFrame(
        {
            "icustay_id": out["icustay_id"].to_numpy(dtype=np.int64),
            "age": np.floor(out["age_years"].to_numpy(dtype=np.float64)).astype(np.int64),
        }
    )
    for col in STAY_DEMOGRAPHICS[1:]:
        values = out[col].astype(object)
        frame[col] = values.where(values.notna(), MISSING_DEMOGRAPHIC).astype(str).to_numpy()
    return frame


def _seconds_between(later: pd.Series, earlier: pd.Series) -> pd.Series:
    """``later - earlier`` in seconds (float, NaN for NaT), safe for ~300-year differences."""
    return (later.dt.as_unit("s") - earlier.dt.as_unit("s")).dt.total_seconds()


def long_stay(los_hours: np.ndarray | pd.Series) -> np.ndarray:
    """Long-stay label, int8 (n,): 1 where ``los_hours`` (OUTTIME - INTIME, hours) exceeds
    :data:`LONG_STAY_HOURS`."""
    return (np.asarray(los_hours, dtype=np.float64) > LONG_STAY_HOURS).astype(np.int8)


def in_hospital_mortality(
    admittime: pd.Series, dischtime: pd.Series, deathtime: pd.Series, dod: pd.Series
) -> pd.Series:
    """In-hospital death flag (int8, shape like the inputs).

    DEATHTIME in [ADMITTIME, DISCHTIME] when DEATHTIME is known; otherwise DOD (a date) in
    [floor(ADMITTIME to the day), DISCHTIME].
    """
    by_deathtime = (deathtime >= admittime) & (deathtime <= dischtime)
    dod_day = dod.dt.floor("D")
    by_dod = (dod_day >= admittime.dt.floor("D")) & (dod_day <= dischtime)
    died = by_deathtime.where(deathtime.notna(), by_dod)
    return died.fillna(False).astype(np.int8)


def build_cohort(
    icustays: pd.DataFrame,
    admissions: pd.DataFrame,
    patients: pd.DataFrame,
    min_age: float = 18,
) -> tuple[pd.DataFrame, list[dict]]:
    """Apply the benchmark cohort rules.

    Args:
        icustays, admissions, patients: the raw tables (lower-case columns, datetime64 times).
        min_age: minimum age at ICU admission, years.

    Returns:
        ``(stays, counts)``: ``stays`` has one row per cohort stay, sorted by icustay_id, with
        columns subject_id, hadm_id, icustay_id (int64), intime, outtime (datetime64),
        los_hours (float64, OUTTIME - INTIME), age_years (float64), mortality (int8);
        ``counts`` is a list of ``{rule, stays, admissions, subjects}`` after each rule.

    Raises:
        InputDataError: a required column is missing, or a rule leaves no stay.
    """
    require_table(icustays, "icustays", ICUSTAYS_COLUMNS)
    require_table(admissions, "admissions", ADMISSIONS_COLUMNS)
    require_table(patients, "patients", PATIENTS_COLUMNS)

    stays = icustays.loc[:, list(ICUSTAYS_COLUMNS)]
    counts = [_count("start", stays)]

    # OUTTIME == INTIME is a stay of no duration (real MIMIC-III has some): no hour to resample
    valid = (stays["outtime"] > stays["intime"]).fillna(False).to_numpy(dtype=bool)  # NaT: False
    if not valid.all():
        log.warning(
            "%d stays dropped by rule valid_times: no INTIME or OUTTIME, or OUTTIME not after "
            "INTIME",
            int((~valid).sum()),
        )
    stays = stays[valid]
    counts.append(_count("valid_times", stays))

    same_unit = stays["first_careunit"].eq(stays["last_careunit"]).fillna(False)
    same_ward = stays["first_wardid"].eq(stays["last_wardid"]).fillna(False)
    stays = stays[(same_unit & same_ward).to_numpy(dtype=bool)]
    counts.append(_count("no_transfer", stays))

    n_before = len(stays)
    stays = stays.merge(
        admissions.loc[:, list(ADMISSIONS_COLUMNS)], on=["subject_id", "hadm_id"], how="inner"
    )
    stays = stays.merge(patients.loc[:, list(PATIENTS_COLUMNS)], on="subject_id", how="inner")
    if len(stays) < n_before:
        log.warning("%d stays dropped: no matching admission or patient row", n_before - len(stays))
    n_stays = stays.groupby("hadm_id")["icustay_id"].transform("size")
    stays = stays[(n_stays == 1).to_numpy(dtype=bool)]
    counts.append(_count("one_stay_per_admission", stays))

    age = _seconds_between(stays["intime"], stays["dob"]) / SECONDS_PER_YEAR
    stays = stays.assign(age_years=age.astype(np.float64))
    stays = stays[(stays["age_years"] >= min_age).to_numpy(dtype=bool)]
    counts.append(_count("min_age", stays))

    stays = stays.assign(
        los_hours=(_seconds_between(stays["outtime"], stays["intime"]) / 3600.0).astype(np.float64),
        mortality=in_hospital_mortality(
            stays["admittime"], stays["dischtime"], stays["deathtime"], stays["dod"]
        ),
    )
    out = stays.loc[:, list(STAYS_COLUMNS)].sort_values("icustay_id", kind="stable")
    for col in ("subject_id", "hadm_id", "icustay_id"):
        out[col] = out[col].astype(np.int64)
    return out.reset_index(drop=True), counts


@dataclass(frozen=True)
class StayLookup:
    """The cohort's stays sorted by HADM_ID, for :func:`match_events_to_stays`: built (and the
    one-stay-per-admission rule checked) once, then used for every batch of events.

    Attributes: ``hadm_id``, ``icustay_id`` int64 (s,), ``intime``, ``outtime`` datetime64 (s,),
    in ascending ``hadm_id``.
    """

    hadm_id: np.ndarray
    icustay_id: np.ndarray
    intime: np.ndarray
    outtime: np.ndarray

    @classmethod
    def of(cls, stays: pd.DataFrame) -> StayLookup:
        """The lookup of ``stays`` (the cohort: hadm_id distinct, icustay_id, intime, outtime)."""
        require_table(stays, "stays", ("hadm_id", "icustay_id", "intime", "outtime"))
        if stays["hadm_id"].duplicated().any():
            raise InputDataError(
                "table 'stays': more than one stay per hadm_id; expected the cohort"
            )
        hadm_id = stays["hadm_id"].to_numpy(dtype=np.int64)
        order = np.argsort(hadm_id, kind="stable")
        return cls(
            hadm_id[order],
            stays["icustay_id"].to_numpy(dtype=np.int64)[order],
            stays["intime"].to_numpy()[order],
            stays["outtime"].to_numpy()[order],
        )


def match_events_to_stays(
    hadm_id: np.ndarray,
    icustay_id: np.ndarray,
    has_icustay_id: np.ndarray,
    charttime: np.ndarray,
    stays: StayLookup,
) -> tuple[np.ndarray, np.ndarray]:
    """Which events belong to a cohort stay, and its ICUSTAY_ID, by a sorted lookup of each
    event's admission: an event with an ICUSTAY_ID belongs to that stay, one without
    (LABEVENTS) to the stay of its admission when CHARTTIME is in [INTIME, OUTTIME].

    Parameters
    ----------
    hadm_id : int64 (n,)
        The events' HADM_ID (events without one are not passed, or carry a value of no stay).
    icustay_id : int64 (n,)
        The events' own ICUSTAY_ID where ``has_icustay_id``, anything elsewhere.
    has_icustay_id : bool (n,)
    charttime : datetime64 (n,)
        NaT never lies inside a stay.
    stays : StayLookup
        The cohort (:meth:`StayLookup.of`).

    Returns
    -------
    keep : bool (n,)
    stay_icustay_id : int64 (n,), the ICUSTAY_ID of the event's stay (meaningful where ``keep``).
    """
    hadm_id = np.asarray(hadm_id, dtype=np.int64)
    if not len(stays.hadm_id) or not len(hadm_id):
        return np.zeros(len(hadm_id), dtype=bool), np.zeros(len(hadm_id), dtype=np.int64)
    stay = np.minimum(np.searchsorted(stays.hadm_id, hadm_id), len(stays.hadm_id) - 1)
    found = stays.hadm_id[stay] == hadm_id
    stay_id = stays.icustay_id[stay]
    in_window = (charttime >= stays.intime[stay]) & (charttime <= stays.outtime[stay])
    same_stay = np.asarray(icustay_id, dtype=np.int64) == stay_id
    keep = found & np.where(has_icustay_id, same_stay, in_window)
    return keep, stay_id
