"""The synthetic tables the tabular stage reads, drawn in memory without writing any file.

:func:`tabular_sources` replays the generator's random streams (one per block of subjects for
the population, :mod:`mimic_deid.synthetic.procedures` for PROCEDURES_ICD) and returns the
columns of PATIENTS, ADMISSIONS and PROCEDURES_ICD that the tabular stage uses, with the values
the generator writes for the same ``subjects`` and ``seed``: full-size (46,520 subjects)
tables in about a second, for benchmarks and tests (no part of the library uses it: the
workflow reads the generated files).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mimic_deid.core.seeding import derive_rng
from mimic_deid.synthetic import population as popmod
from mimic_deid.synthetic.generator import BLOCK_SUBJECTS
from mimic_deid.synthetic.procedures import procedure_rows, vocabulary
from mimic_deid.synthetic.quirks import admission_gaps

__all__ = ["tabular_sources"]


def _times(seconds: np.ndarray) -> np.ndarray:
    return np.asarray(seconds, dtype=np.float64).astype("int64").astype("datetime64[s]")


def tabular_sources(subjects: int, seed: int) -> dict[str, pd.DataFrame]:
    """``patients`` (subject_id, gender), ``admissions`` (subject_id, hadm_id, admittime,
    insurance, language, religion, marital_status) and ``procedures`` (subject_id, hadm_id,
    seq_num, icd9_code) as the generator draws them; missing values are None."""
    ids = popmod.IdState.for_subjects(subjects)
    pats, adms, procs = [], [], []
    vocab = np.array(vocabulary(), dtype=object)
    for b in range(-(-subjects // BLOCK_SUBJECTS)):
        n = min(BLOCK_SUBJECTS, subjects - b * BLOCK_SUBJECTS)
        pop = popmod.make_population(derive_rng(seed, b), b * BLOCK_SUBJECTS, n, ids)
        pop = admission_gaps(pop, seed, b)
        cat = pop.a_cat
        pats.append(
            pd.DataFrame({"subject_id": pop.s_id, "gender": np.where(pop.s_male, "M", "F")})
        )
        columns = {
            "insurance": popmod.INSURANCE,
            "language": popmod.LANGUAGE,
            "religion": popmod.RELIGION,
            "marital_status": popmod.MARITAL,
        }
        adms.append(
            pd.DataFrame(
                {
                    "subject_id": pop.s_id[pop.a_subj],
                    "hadm_id": pop.a_id,
                    "admittime": _times(pop.a_admit),
                    **{c: np.array(v, dtype=object)[cat[c]] for c, v in columns.items()},
                }
            )
        )
        rows = procedure_rows(pop, seed, b)
        procs.append(
            pd.DataFrame(
                {
                    "subject_id": rows["SUBJECT_ID"],
                    "hadm_id": rows["HADM_ID"],
                    "seq_num": rows["SEQ_NUM"],
                    "icd9_code": vocab[rows["code"]],
                }
            )
        )
    return {
        "patients": pd.concat(pats, ignore_index=True),
        "admissions": pd.concat(adms, ignore_index=True),
        "procedures": pd.concat(procs, ignore_index=True),
    }
