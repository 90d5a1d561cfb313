"""Subjects, admissions and ICU stays of one block of synthetic patients.

Times are float64 seconds since 1970-01-01 (exact for whole seconds; NaN = missing) and lie
in the MIMIC-III shifted years ~2100-2200. CareVue subjects are drawn in the older part of
that range, MetaVision subjects in the newer part.

Calibrated constants (see the package docstring for the targets) are module constants so
that one place says how each published figure is reached.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MINUTE = 60.0
HOUR = 3600.0
DAY = 86400.0
YEAR = 365.2425 * DAY
EPOCH_2100 = 4102444800.0  # 2100-01-01 00:00:00

# Age groups.
ADULT, CHILD, NEONATE = 0, 1, 2

# --- calibration ------------------------------------------------------------------------
P_NEONATE = 0.185  # NICU newborns (age 0): drive the age >= 18 rule (15.8 % of stays)
P_CHILD = 0.012  # children 1-17 years
OVER89_PER_SUBJECT = 300 / 46520  # shifted ages ~300 years: about 300 in the full database
P_METAVISION = 0.42  # adults; newborns are CareVue only (as in MIMIC-III)
P_READMIT = 0.245  # adults with more than one admission; extra admissions ~ Geometric(0.6)
P_NO_ICU = 0.02  # admissions without an ICU stay (HAS_CHARTEVENTS_DATA = 0)
STAYS_PER_ADMISSION = (0.944, 0.051, 0.005)  # 1, 2, 3 ICU stays: rule (b) drops ~10.1 %
P_TRANSFER = 0.093  # care unit or ward changes during the stay: rule (a) drops ~9.3 %
P_TRANSFER_UNIT = 0.55  # of the transfers: care unit changes (else only the ward)
LOS_MEDIAN_DAYS = 2.0  # log-normal ICU length of stay; median 2 days ...
LOS_SIGMA = 0.875  # ... log-sd of its own; with the severity term 1.06 in all (tail past 30 days)
LOS_MAX_DAYS = 175.0  # longest stay in MIMIC-III is ~173 days
# Sicker patients stay longer (log-days per unit of severity). 0.6 makes a stay's length
# readable from its first 48 h (severity alone ranks stays > 7 days among those >= 2 days
# with ROC-AUC ~0.70); at 0.15 the long-stay task of the utility evaluation was at chance.
LOS_SEVERITY = 0.6
DEATH_INTERCEPT = -3.34  # adult in-hospital death: logit = a + b * severity + c * (age-65)/15
DEATH_SEVERITY = 1.7
DEATH_AGE = 0.3
P_DEATH_NEONATE = 0.012
P_DEATH_CHILD = 0.03
P_DEATH_IN_ICU = 0.72  # of in-hospital deaths, share dying in the ICU
P_DEATH_NO_DEATHTIME = 0.08  # in-hospital deaths recorded by DOD only (DEATHTIME empty)
P_DEATH_AFTER = 0.28  # adults surviving their last admission who die later (DOD only)
P_VENTILATED_BASE = -0.35  # logit of mechanical ventilation (FiO2, blood gases, ET/Trach)

# --- vocabularies -----------------------------------------------------------------------
CAREUNITS = ("MICU", "SICU", "CCU", "CSRU", "TSICU", "NICU")
ADULT_UNIT_P = (0.37, 0.15, 0.15, 0.19, 0.14)
WARDS = ((50, 52, 23), (33, 57), (7, 45), (12, 15), (14, 32), (56, 3))
ADMISSION_TYPE = ("EMERGENCY", "ELECTIVE", "URGENT", "NEWBORN")
ADMISSION_LOCATION = (
    "EMERGENCY ROOM ADMIT",
    "PHYS REFERRAL/NORMAL DELI",
    "CLINIC REFERRAL/PREMATURE",
    "TRANSFER FROM HOSP/EXTRAM",
)
DISCHARGE_LOCATION = (
    "HOME",
    "HOME HEALTH CARE",
    "SNF",
    "REHAB/DISTINCT PART HOSP",
    "LONG TERM CARE HOSPITAL",
    "DEAD/EXPIRED",
)
INSURANCE = ("Medicare", "Private", "Medicaid", "Government", "Self Pay")
# LANGUAGE and RELIGION have MIMIC-III v1.4's cardinalities (75 and 20 values, plus empty):
# the dominant values first, then a Zipf-like tail (`_tail`), so that a quasi-identifier
# table built on them has the real number of rare values (seed 003 §3.1).
LANGUAGE = (
    None, "ENGL", "SPAN", "RUSS", "PTUN", "CANT", "PORT", "CAPE", "MAND", "HAIT", "ITAL",
    "VIET", "GREE", "ARAB", "PERS", "CAMB", "POLI", "AMER", "KORE", "HIND", "THAI", "ALBA",
    "FREN", "JAPA", "ETHI", "SOMA", "ARME", "TURK", "URDU", "BENG", "LAOT", "GERM", "HUNG",
    "YIDD", "TAGA", "BOSN", "SERB", "CROA", "LITH", "UKRA", "ROMA", "BULG", "DUTC", "SWED",
    "NORW", "DANI", "FINN", "ESTO", "LATV", "CZEC", "SLOV", "MACE", "AMHA", "TIGR", "SWAH",
    "YORU", "IGBO", "HAUS", "TAMI", "TELU", "GUJA", "PUNJ", "MARA", "NEPA", "SINH", "BURM",
    "MALA", "INDO", "HEBR", "FARS", "PASH", "KURD", "GEOR", "AZER", "KAZA", "UZBE",
)  # fmt: skip
RELIGION = (
    "CATHOLIC", "NOT SPECIFIED", "PROTESTANT QUAKER", "JEWISH", "UNOBTAINABLE", "OTHER",
    "EPISCOPALIAN", "GREEK ORTHODOX", "CHRISTIAN SCIENTIST", "BUDDHIST", "MUSLIM",
    "JEHOVAH'S WITNESS", "UNITARIAN-UNIVERSALIST", "7TH DAY ADVENTIST", "HINDU",
    "ROMANIAN EAST. ORTH", "BAPTIST", "HEBREW", "METHODIST", "LUTHERAN",
    None,  # empty: never drawn here, set by synthetic.quirks.admission_gaps
)  # fmt: skip


def _tail(head: tuple[float, ...], n: int, mass: float, exponent: float = 1.3) -> np.ndarray:
    """Probabilities ``head`` followed by ``n`` Zipf-like values sharing ``mass`` (sum 1)."""
    tail = 1.0 / np.arange(1, n + 1) ** exponent
    p = np.concatenate([np.asarray(head, dtype=float), mass * tail / tail.sum()])
    return p / p.sum()


# empty, ENGL, SPAN, RUSS, PTUN, CANT as before, the other 70 codes share 2 %
LANGUAGE_P = _tail((0.1, 0.73, 0.06, 0.04, 0.03, 0.02), len(LANGUAGE) - 6, 0.02)
RELIGION_P = _tail((0.35, 0.25, 0.14, 0.08, 0.1, 0.05), len(RELIGION) - 7, 0.03)
MARITAL = (None, "MARRIED", "SINGLE", "WIDOWED", "DIVORCED")
ETHNICITY = (
    "WHITE",
    "BLACK/AFRICAN AMERICAN",
    "HISPANIC OR LATINO",
    "ASIAN",
    "UNKNOWN/NOT SPECIFIED",
    "OTHER",
)
DIAGNOSIS = (
    "NEWBORN",
    "SEPSIS",
    "PNEUMONIA",
    "CONGESTIVE HEART FAILURE",
    "CORONARY ARTERY DISEASE",
    "INTRACRANIAL HEMORRHAGE",
    "GASTROINTESTINAL BLEED",
    "ALTERED MENTAL STATUS",
    "CHEST PAIN",
    "S/P FALL",
)

# Real id ranges: SUBJECT_ID < 100000, HADM_ID 100000-199999, ICUSTAY_ID 200000-299999.
ID_BASE = {"subject": 2, "hadm": 100001, "icustay": 200001}
ID_SPAN = 99_990
EXPECTED_PER_SUBJECT = {"subject": 1.0, "hadm": 1.27, "icustay": 1.33}


@dataclass
class IdState:
    """Next free id per kind and the mean id gap that keeps ids inside the real ranges.

    For more subjects than the ranges hold at a gap of 1, ids simply run past the range end.
    """

    next_id: dict[str, int]
    mean_gap: dict[str, float]

    @classmethod
    def for_subjects(cls, subjects: int) -> IdState:
        gaps = {k: max(1.0, 0.9 * ID_SPAN / (subjects * EXPECTED_PER_SUBJECT[k])) for k in ID_BASE}
        return cls(next_id=dict(ID_BASE), mean_gap=gaps)

    def take(self, rng: np.random.Generator, kind: str, n: int) -> np.ndarray:
        """``n`` increasing int64 ids of ``kind`` with random gaps (mean ``mean_gap``)."""
        gaps = 1 + rng.poisson(self.mean_gap[kind] - 1.0, n).astype(np.int64)
        ids = self.next_id[kind] - 1 + np.cumsum(gaps)
        if n:
            self.next_id[kind] = int(ids[-1]) + 1
        return ids


@dataclass
class Population:
    """One block of patients; parallel arrays per table (times in seconds, NaN = missing).

    Subjects ``s_*`` (n_subjects), admissions ``a_*`` (n_admissions, ordered by subject and
    time; ``a_subj`` indexes subjects), stays ``i_*`` (n_stays, ordered by admission and time;
    ``i_adm`` indexes admissions). Category columns hold codes into the vocabularies above.
    """

    s_id: np.ndarray
    s_male: np.ndarray
    s_group: np.ndarray
    s_mv: np.ndarray
    s_dob: np.ndarray
    s_dod: np.ndarray
    s_dod_hosp: np.ndarray
    s_dod_ssn: np.ndarray
    a_id: np.ndarray
    a_subj: np.ndarray
    a_admit: np.ndarray
    a_disch: np.ndarray
    a_deathtime: np.ndarray  # as recorded (NaN for DOD-only deaths)
    a_death: np.ndarray  # true in-hospital death time, NaN for survivors
    a_edreg: np.ndarray
    a_edout: np.ndarray
    a_severity: np.ndarray  # latent severity, N(0, 1)
    a_vent: np.ndarray  # mechanically ventilated during the admission
    a_has_icu: np.ndarray
    a_cat: dict[str, np.ndarray]
    i_id: np.ndarray
    i_adm: np.ndarray
    i_in: np.ndarray
    i_out: np.ndarray
    i_unit_first: np.ndarray
    i_unit_last: np.ndarray
    i_ward_first: np.ndarray
    i_ward_last: np.ndarray

    @property
    def a_group(self) -> np.ndarray:
        return self.s_group[self.a_subj]

    @property
    def a_mv(self) -> np.ndarray:
        return self.s_mv[self.a_subj]


def _minute(t: np.ndarray) -> np.ndarray:
    return np.floor(t / MINUTE) * MINUTE


def _day(t: np.ndarray) -> np.ndarray:
    return np.floor(t / DAY) * DAY


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def make_population(rng: np.random.Generator, first_index: int, n: int, ids: IdState) -> Population:
    """Draw ``n`` subjects (global indices ``first_index ..``), their admissions and stays."""
    group, male, mv, age, dob, first_admit = _subjects(rng, first_index, n)

    # Admissions per subject.
    n_adm = np.ones(n, dtype=np.int64)
    extra = rng.geometric(0.6, n)
    n_adm += np.where((group == ADULT) & (rng.random(n) < P_READMIT), extra, 0)
    n_adm += (group == CHILD) & (rng.random(n) < 0.05)
    a_subj = np.repeat(np.arange(n), n_adm)
    na = len(a_subj)
    a_k = np.arange(na) - np.repeat(np.cumsum(n_adm) - n_adm, n_adm)
    a_group = group[a_subj]
    severity = rng.standard_normal(na)
    age_first = np.where(group == NEONATE, 0.0, age)[a_subj]

    has_icu = ~((a_group == ADULT) & (rng.random(na) < P_NO_ICU))
    u = rng.random(na)
    n_stays = 1 + (u < 1 - STAYS_PER_ADMISSION[0]) + (u < STAYS_PER_ADMISSION[2])
    n_stays = np.where(has_icu, n_stays, 0).astype(np.int64)

    dies = (rng.random(na) < _p_death(severity, age_first, a_group)) & has_icu
    dies_in_icu = rng.random(na) < P_DEATH_IN_ICU

    # Stays of each admission: lengths and gaps, relative to the first ICU admission.
    max_stays = 3
    stay_in_rel, los, disch_rel, readmit_gap = _stay_layout(
        rng, na, severity, a_group, n_stays, dies, dies_in_icu, max_stays
    )

    # Sequential admission times within a subject.
    admit = _admit_times(a_k, a_subj, first_admit, disch_rel, readmit_gap)
    disch = _minute(admit + disch_rel)

    # A death ends the subject's admissions.
    a_idx = _before_death(dies, n_adm)
    a_subj, a_group, severity, has_icu, n_stays = (
        a_subj[a_idx],
        a_group[a_idx],
        severity[a_idx],
        has_icu[a_idx],
        n_stays[a_idx],
    )
    admit, disch, dies, dies_in_icu = admit[a_idx], disch[a_idx], dies[a_idx], dies_in_icu[a_idx]
    stay_in_rel, los = stay_in_rel[a_idx], los[a_idx]
    na = len(a_idx)

    death = np.where(dies, disch, np.nan)
    in_abs, out_abs = _stay_times(rng, admit, disch, stay_in_rel, los, n_stays, dies, dies_in_icu)

    no_deathtime = dies & (rng.random(na) < P_DEATH_NO_DEATHTIME)
    deathtime = np.where(dies & ~no_deathtime, death, np.nan)

    # Patients: date of death in hospital or after the last discharge.
    deaths = _dates_of_death(rng, n, a_subj, group, dies, disch, death)

    # ED registration and the admission's categories.
    cat, edreg, edout, vent = _admission_details(
        rng, na, a_group, a_subj, mv, admit, dies, severity
    )

    # ICU stays, flattened.
    stays = _icu_stays(rng, n_stays, in_abs, out_abs, a_group, max_stays)

    return Population(
        s_id=ids.take(rng, "subject", n),
        s_male=male,
        s_group=group,
        s_mv=mv,
        s_dob=dob,
        **deaths,
        a_id=ids.take(rng, "hadm", na),
        a_subj=a_subj,
        a_admit=admit,
        a_disch=disch,
        a_deathtime=deathtime,
        a_death=death,
        a_edreg=edreg,
        a_edout=edout,
        a_severity=severity,
        a_vent=vent,
        a_has_icu=has_icu,
        a_cat=cat,
        i_id=ids.take(rng, "icustay", len(stays["i_adm"])),
        **stays,
    )


def _subjects(rng: np.random.Generator, first_index: int, n: int):
    """The subjects' group, sex, database era, age, date of birth and first admission."""
    idx = first_index + np.arange(n)
    # Exactly round(N * 300 / 46520) shifted-age subjects, spread evenly over the indices.
    over89 = np.floor((idx + 1) * OVER89_PER_SUBJECT) > np.floor(idx * OVER89_PER_SUBJECT)
    u = rng.random(n)
    group = np.where(u < P_NEONATE, NEONATE, np.where(u < P_NEONATE + P_CHILD, CHILD, ADULT))
    group[over89] = ADULT
    male = rng.random(n) < np.where(group == NEONATE, 0.53, 0.56)
    mv = (rng.random(n) < P_METAVISION) & (group != NEONATE)
    era = rng.random(n)
    first_year = np.where(mv, 2140.0 + 60.0 * era, 2100.0 + 65.0 * era)
    first_admit = _minute(EPOCH_2100 + (first_year - 2100.0) * YEAR)
    age = 18.0 + 71.9 * rng.beta(3.0, 1.7, n)
    age = np.where(group == CHILD, rng.uniform(1.0, 17.9, n), age)
    age = np.where(over89, 300.0 + rng.exponential(2.0, n), age)
    dob = _day(first_admit - age * YEAR)
    dob = np.where(group == NEONATE, _day(first_admit - rng.uniform(0, 0.5, n) * DAY), dob)
    first_admit = np.where(
        group == NEONATE, np.maximum(first_admit, dob + 10 * MINUTE), first_admit
    )
    return group, male, mv, age, dob, first_admit


def _stay_times(rng, admit, disch, stay_in_rel, los, n_stays, dies, dies_in_icu):
    """Absolute in and out times of every stay slot (admission x slot)."""
    # Stay times carry seconds, admission times are on the minute.
    in_abs = admit[:, None] + np.round(stay_in_rel)
    out_abs = in_abs + np.round(los)
    last_slot = np.maximum(n_stays - 1, 0)
    # An ICU death leaves the unit at the death time (+ up to 30 min).
    icu_death = dies & dies_in_icu & (n_stays > 0)
    out_abs[np.flatnonzero(icu_death), last_slot[icu_death]] = (
        disch[icu_death] + rng.uniform(0, 30, int(icu_death.sum())).round() * MINUTE
    )
    return in_abs, out_abs


def _p_death(severity: np.ndarray, age_first: np.ndarray, a_group: np.ndarray) -> np.ndarray:
    """Every admission's probability of in-hospital death (logistic in severity and age for
    adults, fixed for neonates and children)."""
    logit = (
        DEATH_INTERCEPT
        + DEATH_SEVERITY * severity
        + DEATH_AGE * (np.minimum(age_first, 91) - 65) / 15
    )
    return np.where(
        a_group == ADULT,
        _sigmoid(logit),
        np.where(a_group == NEONATE, P_DEATH_NEONATE, P_DEATH_CHILD),
    )


def _admit_times(a_k, a_subj, first_admit, disch_rel, readmit_gap) -> np.ndarray:
    """Admission times, sequential within a subject (``a_k``: the admission's rank)."""
    admit = np.empty(len(a_k))
    for k in range(int(a_k.max()) + 1 if len(a_k) else 0):
        sel = a_k == k
        if k == 0:
            admit[sel] = first_admit[a_subj[sel]]
        else:
            prev = np.flatnonzero(sel) - 1
            admit[sel] = _minute(admit[prev] + disch_rel[prev] + readmit_gap[sel])
    return admit


def _before_death(dies: np.ndarray, n_adm: np.ndarray) -> np.ndarray:
    """The admissions kept: a death ends its subject's admissions."""
    cum = np.cumsum(dies)
    start_of_subject = np.repeat(np.cumsum(n_adm) - n_adm, n_adm)
    prior_deaths = cum - dies - np.where(start_of_subject > 0, cum[start_of_subject - 1], 0)
    return np.flatnonzero(prior_deaths == 0)


def _stay_layout(rng, na, severity, a_group, n_stays, dies, dies_in_icu, max_stays):
    """Each admission's stays (intime after admittime, length of stay), its discharge after
    admittime and the gap to the next admission; in :func:`make_population`'s draw order."""
    # Stays of each admission: lengths and gaps, relative to the first ICU admission.
    los = np.exp(
        np.log(LOS_MEDIAN_DAYS)
        + LOS_SEVERITY * severity[:, None]
        + LOS_SIGMA * rng.standard_normal((na, max_stays))
    )
    los = np.clip(los, rng.uniform(0.05, 0.2, (na, max_stays)), LOS_MAX_DAYS) * DAY
    ward_between = (2 * HOUR + rng.exponential(2.5 * DAY, (na, max_stays))) * (
        np.arange(max_stays) > 0
    )
    pre_icu = np.where(
        rng.random(na) < 0.55, rng.uniform(0.3, 6.0, na) * HOUR, rng.exponential(1.5 * DAY, na)
    )
    pre_icu = np.where(a_group == NEONATE, rng.uniform(0.05, 2.0, na) * HOUR, pre_icu)
    post_icu = 3 * HOUR + rng.exponential(3.5 * DAY, na)
    no_icu_len = 6 * HOUR + rng.exponential(4 * DAY, na)
    readmit_gap = 2 * DAY + rng.exponential(400 * DAY, na)

    slot = np.arange(max_stays)[None, :]
    in_use = slot < n_stays[:, None]
    offsets = (
        np.cumsum(np.where(in_use, ward_between, 0.0), axis=1)
        + np.cumsum(np.where(in_use, los, 0.0), axis=1)
        - np.where(in_use, los, 0.0)
    )
    stay_in_rel = pre_icu[:, None] + offsets  # intime relative to admittime
    stay_out_rel = stay_in_rel + los
    last_out_rel = np.where(
        n_stays > 0, stay_out_rel[np.arange(na), np.maximum(n_stays - 1, 0)], 0.0
    )
    death_rel = np.where(
        dies_in_icu, last_out_rel - rng.uniform(0, 30, na) * MINUTE, last_out_rel + post_icu
    )
    disch_rel = np.where(n_stays > 0, last_out_rel + post_icu, no_icu_len)
    disch_rel = np.where(dies, death_rel, disch_rel)
    return stay_in_rel, los, disch_rel, readmit_gap


def _dates_of_death(rng, n, a_subj, group, dies, disch, death):
    """Every subject's DOD, DOD_HOSP and DOD_SSN (in hospital, or after the last discharge),
    as the :class:`Population` fields ``s_dod``, ``s_dod_hosp`` and ``s_dod_ssn``."""
    last_adm = np.cumsum(np.bincount(a_subj, minlength=n)) - 1  # every subject has one
    s_dies_hosp = dies[last_adm]
    after = (rng.random(n) < np.where(group == ADULT, P_DEATH_AFTER, 0.01)) & ~s_dies_hosp
    dod_after = _day(disch[last_adm]) + (1 + np.floor(rng.exponential(500, n))) * DAY
    dod_hosp = np.where(s_dies_hosp, _day(death[last_adm]), np.nan)
    dod = np.where(s_dies_hosp, dod_hosp, np.where(after, dod_after, np.nan))
    dod_ssn = np.where(after | (s_dies_hosp & (rng.random(n) < 0.7)), dod, np.nan)
    return {"s_dod": dod, "s_dod_hosp": dod_hosp, "s_dod_ssn": dod_ssn}


def _admission_details(rng, na, a_group, a_subj, mv, admit, dies, severity):
    """Every admission's categories (ADMISSIONS' coded columns), ED registration times and
    ventilation, in :func:`make_population`'s draw order."""
    # ED registration for emergency admissions.
    adm_type = rng.choice(3, na, p=(0.8, 0.16, 0.04))
    adm_type = np.where(a_group == NEONATE, 3, adm_type)
    ed = (adm_type == 0) & (rng.random(na) < 0.85)
    edreg = np.where(ed, _minute(admit - rng.uniform(1, 10, na) * HOUR), np.nan)
    edout = np.where(ed, _minute(admit + rng.uniform(0, 60, na) * MINUTE), np.nan)
    adm_loc = np.where(adm_type == 0, 0, rng.choice(4, na, p=(0.05, 0.55, 0.15, 0.25)))
    adm_loc = np.where(a_group == NEONATE, 1, adm_loc)
    disch_loc = np.where(dies, 5, rng.choice(5, na, p=(0.45, 0.2, 0.2, 0.1, 0.05)))
    insurance = np.where(
        a_group == NEONATE,
        rng.choice(3, na, p=(0, 0.6, 0.4)),
        rng.choice(5, na, p=(0.5, 0.33, 0.1, 0.04, 0.03)),
    )
    # LANGUAGE is mostly empty in the CareVue years.
    language = rng.choice(len(LANGUAGE), na, p=LANGUAGE_P)
    language = np.where(mv[a_subj] & (a_group != NEONATE), language, 0)
    religion = rng.choice(len(RELIGION_P), na, p=RELIGION_P)
    marital = np.where(a_group == ADULT, rng.choice(5, na, p=(0.05, 0.45, 0.25, 0.15, 0.1)), 0)
    ethnicity = rng.choice(6, na, p=(0.7, 0.1, 0.04, 0.03, 0.08, 0.05))
    diagnosis = np.where(a_group == NEONATE, 0, 1 + rng.choice(9, na))
    vent = rng.random(na) < np.where(
        a_group == NEONATE, 0.2, _sigmoid(P_VENTILATED_BASE + 0.9 * severity)
    )
    cat = {
        "admission_type": adm_type,
        "admission_location": adm_loc,
        "discharge_location": disch_loc,
        "insurance": insurance,
        "language": language,
        "religion": religion,
        "marital_status": marital,
        "ethnicity": ethnicity,
        "diagnosis": diagnosis,
    }
    return cat, edreg, edout, vent


def _icu_stays(rng, n_stays, in_abs, out_abs, a_group, max_stays):
    """The ICU stays of every admission, flattened: admission, times, units and wards, as the
    :class:`Population` fields ``i_*`` other than ``i_id``."""
    stay_mask = np.arange(max_stays)[None, :] < n_stays[:, None]
    i_adm, i_slot = np.nonzero(stay_mask)
    ni = len(i_adm)
    i_in = in_abs[i_adm, i_slot]
    i_out = out_abs[i_adm, i_slot]
    i_group = a_group[i_adm]
    unit_first = np.where(i_group == NEONATE, 5, rng.choice(5, ni, p=ADULT_UNIT_P))
    transfer = rng.random(ni) < P_TRANSFER
    unit_change = transfer & (rng.random(ni) < P_TRANSFER_UNIT) & (i_group != NEONATE)
    unit_last = np.where(unit_change, (unit_first + rng.integers(1, 5, ni)) % 5, unit_first)
    ward_first = _pick_ward(rng, unit_first, None)
    ward_last = np.where(unit_change, _pick_ward(rng, unit_last, None), ward_first)
    ward_only = transfer & ~unit_change
    ward_last = np.where(ward_only, _pick_ward(rng, unit_first, ward_first), ward_last)
    return {
        "i_adm": i_adm,
        "i_in": i_in,
        "i_out": i_out,
        "i_unit_first": unit_first,
        "i_unit_last": unit_last,
        "i_ward_first": ward_first,
        "i_ward_last": ward_last,
    }


def _pick_ward(rng: np.random.Generator, unit: np.ndarray, avoid: np.ndarray | None) -> np.ndarray:
    """A ward id of each stay's care unit (different from ``avoid`` when given)."""
    n_wards = np.array([len(w) for w in WARDS])
    table = np.full((len(WARDS), max(n_wards)), -1, dtype=np.int64)
    for i, w in enumerate(WARDS):
        table[i, : len(w)] = w
    k = rng.integers(0, 1 << 30, len(unit)) % n_wards[unit]
    ward = table[unit, k]
    if avoid is not None:
        same = ward == avoid
        ward[same] = table[unit[same], (k[same] + 1) % n_wards[unit[same]]]
    return ward
