"""Real MIMIC-III quirks of ADMISSIONS that the synthetic copy reproduces.

Shares measured on real MIMIC-III v1.4 tables of 100 subjects (129 admissions; the size of
PhysioNet's open demo; README "Real MIMIC-III quirks and the rules applied"). Each quirk is
drawn from its own random stream, so every table other than the one it changes keeps its bytes.
The quirks of TRANSFERS and CPTEVENTS are drawn in :mod:`mimic_deid.synthetic.sequences`, the
diagnosis codes outside D_ICD_DIAGNOSES in :mod:`mimic_deid.synthetic.diagnoses`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from mimic_deid.core.seeding import derive_rng
from mimic_deid.synthetic.population import LANGUAGE, MARITAL, RELIGION, Population

__all__ = ["ADMISSION_GAPS", "admission_gaps"]

#: Share of admissions whose value is empty, per ADMISSIONS column (real MIMIC-III v1.4,
#: 100 subjects: LANGUAGE 37.2 %, MARITAL_STATUS 12.4 %, RELIGION 0.8 %), with the column's
#: vocabulary (its None entry is the empty value).
ADMISSION_GAPS: dict[str, tuple[float, tuple]] = {
    "language": (0.372, LANGUAGE),
    "marital_status": (0.124, MARITAL),
    "religion": (0.008, RELIGION),
}


def admission_gaps(pop: Population, seed: int, block: int) -> Population:
    """``pop`` with LANGUAGE, MARITAL_STATUS and RELIGION empty at the measured shares.

    Each admission's value is empty with the column's share of :data:`ADMISSION_GAPS`
    (independently per column); an admission the population left empty but that is not drawn
    empty here takes a value drawn from the block's non-empty values of that column. The
    stream is ``derive_rng(seed, "admission-gaps", block)``; only ADMISSIONS changes.

    Parameters
    ----------
    pop : Population
        One block of the population (its category codes are not modified in place).
    seed, block : int
        The copy's master seed and the block number.

    Returns
    -------
    Population
        A copy whose ``a_cat`` holds the new codes of the three columns.
    """
    rng = derive_rng(seed, "admission-gaps", block)
    cat = dict(pop.a_cat)
    for column, (share, vocabulary) in ADMISSION_GAPS.items():
        codes = cat[column]
        empty_code = vocabulary.index(None)
        empty = rng.random(len(codes)) < share
        present = codes[codes != empty_code]
        refill = ~empty & (codes == empty_code)
        fill = rng.choice(present, len(codes)) if present.size else codes
        cat[column] = np.where(empty, empty_code, np.where(refill, fill, codes))
    return replace(pop, a_cat=cat)
