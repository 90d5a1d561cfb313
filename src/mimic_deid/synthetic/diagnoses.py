"""DIAGNOSES_ICD and D_ICD_DIAGNOSES of the synthetic copy (ICD-9-CM diagnosis codes).

Every admission gets several codes ordered by ``SEQ_NUM`` (1 = principal diagnosis): chronic
conditions that a subject carries across all of their admissions (so codes repeat over a
subject's record, seed 002 §III) and acute conditions drawn per admission. Chronic conditions
come in comorbidity clusters driven by one latent score per subject: the metabolic cluster
(diabetes 250, lipid disorders 272, hypertension 401, coronary disease 414, heart failure 428),
the musculoskeletal cluster (back disorders 724) and a cardio-pulmonary one. Frequencies are
of the order of MIMIC-III's (hypertension in about a third of adult admissions, about 11 codes
per adult admission, ~650k rows for the full-size copy of 46,520 subjects).

The rows of a block come from their own random stream
(``derive_rng(seed, "DIAGNOSES_ICD", block)``), so adding these tables leaves every other
table of the copy byte-identical.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from mimic_deid.core.seeding import derive_rng
from mimic_deid.synthetic.population import ADULT, CHILD, NEONATE, YEAR, Population
from mimic_deid.synthetic.reference import read_table
from mimic_deid.synthetic.writer import ints, strings

__all__ = [
    "ACUTE",
    "CHRONIC",
    "NEONATAL",
    "OUTSIDE_DICTIONARY",
    "P_OUTSIDE_DICTIONARY",
    "block_tables",
    "dictionary_tables",
]

#: Chronic conditions: (code, short title, cluster, base probability for an adult of 65).
#: Cluster 0 = metabolic, 1 = musculoskeletal, 2 = cardio-pulmonary, 3 = none.
CHRONIC: tuple[tuple[str, str, int, float], ...] = read_table(
    "diagnoses_chronic", (str, str, int, float)
)

#: Acute conditions: (code, short title, relative frequency).
ACUTE: tuple[tuple[str, str, float], ...] = read_table("diagnoses_acute", (str, str, float))

#: Codes of newborns: (code, short title, probability per neonatal admission).
NEONATAL: tuple[tuple[str, str, float], ...] = read_table("diagnoses_neonatal", (str, str, float))

#: Valid ICD-9-CM diagnosis codes that D_ICD_DIAGNOSES does not list. Real MIMIC-III v1.4
#: (100 subjects): 45 of 1,761 DIAGNOSES_ICD rows (2.6 %) hold a code missing from
#: D_ICD_DIAGNOSES; :data:`P_OUTSIDE_DICTIONARY` of the rows get one of these, drawn from
#: ``derive_rng(seed, "diagnoses-outside-dictionary", block)``.
OUTSIDE_DICTIONARY = ("99591", "5845", "2639", "42823", "42833", "51851", "78959", "V4986")
P_OUTSIDE_DICTIONARY = 0.026
LONG_TITLE_PREFIX = "Synthetic copy: "
ACUTE_PER_ADULT = 11.5  # mean acute codes per adult admission (severity raises it)
CHILD_SCALE = 0.3  # children carry fewer chronic codes
CHRONIC_RECORDED = 0.85  # a carried chronic condition is coded at a given admission
CLUSTER_SD = 1.0  # spread of the latent cluster scores (log-odds)
AGE_SLOPE = 0.035  # log-odds of a chronic condition per year of age from 65
MAX_AGE = 90.0


def _titles() -> tuple[list[str], list[str]]:
    codes = [c[0] for c in CHRONIC] + [c[0] for c in ACUTE] + [c[0] for c in NEONATAL]
    titles = [c[1] for c in CHRONIC] + [c[1] for c in ACUTE] + [c[1] for c in NEONATAL]
    order = np.argsort(codes, kind="stable")
    return [codes[i] for i in order], [titles[i] for i in order]


def dictionary_tables() -> dict[str, dict[str, pa.Array]]:
    """D_ICD_DIAGNOSES: every code the generator can write, sorted by code."""
    codes, titles = _titles()
    return {
        "D_ICD_DIAGNOSES": {
            "ICD9_CODE": pa.array(codes, pa.string()),
            "SHORT_TITLE": pa.array(titles, pa.string()),
            "LONG_TITLE": pa.array([LONG_TITLE_PREFIX + t for t in titles], pa.string()),
        }
    }


def _logit(p: np.ndarray) -> np.ndarray:
    return np.log(p / (1.0 - p))


def block_tables(pop: Population, seed: int, block: int) -> dict[str, dict[str, pa.Array]]:
    """The DIAGNOSES_ICD rows of one block of subjects.

    Parameters
    ----------
    pop : Population
        The block's subjects and admissions.
    seed, block : int
        The copy's seed and the block number; the rows use their own stream
        ``derive_rng(seed, "DIAGNOSES_ICD", block)``.

    Returns
    -------
    dict
        ``{"DIAGNOSES_ICD": columns}`` with SUBJECT_ID, HADM_ID, SEQ_NUM, ICD9_CODE, one row
        per (admission, code), ordered by admission then SEQ_NUM.
    """
    rng = derive_rng(seed, "DIAGNOSES_ICD", block)
    ns, na = len(pop.s_id), len(pop.a_id)
    codes, _ = _titles()
    code_index = {c: i for i, c in enumerate(codes)}
    a_group = pop.s_group[pop.a_subj]

    # Chronic conditions carried by each subject (one draw per subject and condition).
    clusters = rng.normal(0.0, CLUSTER_SD, (ns, 4))
    clusters[:, 3] = 0.0
    first_adm = np.searchsorted(pop.a_subj, np.arange(ns))  # admissions ordered by subject
    s_age = np.clip((pop.a_admit[first_adm] - pop.s_dob) / YEAR, 0.0, MAX_AGE)
    base = np.array([c[3] for c in CHRONIC])
    cluster_of = np.array([c[2] for c in CHRONIC])
    logit = _logit(base)[None, :] + clusters[:, cluster_of] + AGE_SLOPE * (s_age[:, None] - 65.0)
    p = 1.0 / (1.0 + np.exp(-logit))
    p = np.where(
        (pop.s_group == ADULT)[:, None],
        p,
        np.where((pop.s_group == CHILD)[:, None], CHILD_SCALE * p, 0.0),
    )
    carries = rng.random((ns, len(CHRONIC))) < p
    recorded = carries[pop.a_subj] & (rng.random((na, len(CHRONIC))) < CHRONIC_RECORDED)
    c_adm, c_idx = np.nonzero(recorded)
    chronic_codes = np.array([code_index[c[0]] for c in CHRONIC])[c_idx]

    # Acute conditions per admission (duplicates within an admission dropped below).
    weights = np.array([a[2] for a in ACUTE])
    lam = ACUTE_PER_ADULT * np.exp(0.25 * pop.a_severity) * np.where(a_group == CHILD, 0.5, 1.0)
    n_acute = np.where(a_group == NEONATE, 0, 1 + rng.poisson(np.maximum(lam - 1.0, 0.0)))
    a_adm = np.repeat(np.arange(na), n_acute)
    a_idx = rng.choice(len(ACUTE), size=len(a_adm), p=weights / weights.sum())
    acute_codes = np.array([code_index[a[0]] for a in ACUTE])[a_idx]

    # Newborn codes.
    neo_p = np.array([n[2] for n in NEONATAL])
    neo = (a_group == NEONATE)[:, None] & (rng.random((na, len(NEONATAL))) < neo_p)
    neo[:, 1] &= ~neo[:, 0]  # one delivery code at most
    n_adm, n_idx = np.nonzero(neo)
    neo_codes = np.array([code_index[n[0]] for n in NEONATAL])[n_idx]

    adm = np.concatenate([a_adm, c_adm, n_adm])
    code = np.concatenate([acute_codes, chronic_codes, neo_codes])
    # Acute codes tend to come first (principal diagnosis), chronic ones later.
    priority = np.concatenate(
        [rng.random(len(a_adm)), 0.6 + rng.random(len(c_adm)), rng.random(len(n_adm))]
    )
    key = adm.astype(np.int64) * len(codes) + code
    _, first = np.unique(key, return_index=True)
    adm, code, priority = adm[first], code[first], priority[first]
    order = np.lexsort((code, priority, adm))
    adm, code = adm[order], code[order]
    starts = np.searchsorted(adm, adm, side="left")
    seq = np.arange(len(adm)) - starts + 1
    out_rng = derive_rng(seed, "diagnoses-outside-dictionary", block)
    outside = out_rng.random(len(code)) < P_OUTSIDE_DICTIONARY
    offset = out_rng.integers(0, len(OUTSIDE_DICTIONARY), na)[adm]
    # distinct codes within an admission: consecutive entries from a random offset
    rank = np.cumsum(outside) - np.cumsum(outside)[starts] + outside[starts]
    outside &= rank <= len(OUTSIDE_DICTIONARY)
    other = len(codes) + (offset + rank - 1) % len(OUTSIDE_DICTIONARY)
    code = np.where(outside, other, code)
    return {
        "DIAGNOSES_ICD": {
            "SUBJECT_ID": ints(pop.s_id[pop.a_subj[adm]]),
            "HADM_ID": ints(pop.a_id[adm]),
            "SEQ_NUM": ints(seq),
            "ICD9_CODE": strings([*codes, *OUTSIDE_DICTIONARY], code),
        }
    }
