"""Real MIMIC-III quirks of ADMISSIONS and CHARTEVENTS that the synthetic copy reproduces.

ADMISSIONS shares measured on real MIMIC-III v1.4 tables of 100 subjects (129 admissions; the
size of PhysioNet's open demo; docs/real-mimic.md, "Real MIMIC-III quirks and the rules applied"). Each
quirk is drawn from its own random stream, so every table other than the one it changes keeps
its bytes, and CHARTEVENTS keeps every row it had, in order (:func:`add_other_chart_rows`).
The quirks of TRANSFERS and CPTEVENTS are drawn in :mod:`mimic_deid.synthetic.sequences`, the
diagnosis codes outside D_ICD_DIAGNOSES in :mod:`mimic_deid.synthetic.diagnoses`.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mimic_deid.core.errors import ConfigError
from mimic_deid.core.seeding import derive_rng
from mimic_deid.synthetic.catalog import CAREVUE_MAX_ITEMID, OTHER_CHART_ITEMS
from mimic_deid.synthetic.population import LANGUAGE, MARITAL, RELIGION, Population

__all__ = [
    "ADMISSION_GAPS",
    "MAX_OTHER_CHART_ROWS",
    "OTHER_CHART_TEXTS",
    "REAL_OTHER_CHART_ROWS",
    "admission_gaps",
    "check_other_chart_rows",
    "add_other_chart_rows",
]

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


#: ``other_chart_rows`` that gives the real table's mix: the generator's own CHARTEVENTS rows
#: carry a benchmark variable's item id in ~88 % of cases (its distractors the rest), real
#: MIMIC-III's in ~17 % (benchmarks/README.md, "Extraction (CSV source)"): 0.88 / (1 + 4.2)
#: = 0.17.
REAL_OTHER_CHART_ROWS = 4.2
MAX_OTHER_CHART_ROWS = 50.0
#: VALUE of the text items of :data:`~mimic_deid.synthetic.catalog.OTHER_CHART_ITEMS`.
OTHER_CHART_TEXTS: tuple[str, ...] = (
    "Yes",
    "No",
    "Done",
    "Within Normal Limits",
    "See Notes",
    "Other/Remarks",
)

_OTHER_IDS = np.array([it.itemid for it in OTHER_CHART_ITEMS], dtype=np.int64)
_OTHER_TEXT = np.array([it.param_type == "Text" for it in OTHER_CHART_ITEMS])
_PER_SYSTEM = len(OTHER_CHART_ITEMS) // 2
#: Rank weights of the items within a system: a Zipf-like tail (a few items charted often,
#: most rarely), the same shape as the realistic writer of benchmarks/bench_extract.py.
_OTHER_CDF = np.cumsum(1.0 / np.arange(1, _PER_SYSTEM + 1) ** 0.8)
_OTHER_CDF /= _OTHER_CDF[-1]


def check_other_chart_rows(value: object) -> float:
    """``value`` as a float in [0, :data:`MAX_OTHER_CHART_ROWS`], else ``ConfigError``."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or not 0 <= value <= MAX_OTHER_CHART_ROWS:
        raise ConfigError(
            "synthetic generator: other_chart_rows must be a number from 0 to "
            f"{MAX_OTHER_CHART_ROWS:g} ({REAL_OTHER_CHART_ROWS:g}: real MIMIC-III's mix), "
            f"got {value!r}"
        )
    return float(value)


def add_other_chart_rows(
    chartevents: dict[str, pa.Array], rate: float, seed: int, block: int
) -> None:
    """Add CHARTEVENTS rows of items outside the benchmark to one block's rows, in place.

    Real CHARTEVENTS is mostly rows no benchmark variable reads (nursing assessments, alarms,
    settings), charted at the times the vitals are: the extraction's cost per kept row
    depends on it. After each row, ``Poisson(rate)`` rows follow at the same stay and
    CHARTTIME, of an item of :data:`~mimic_deid.synthetic.catalog.OTHER_CHART_ITEMS` of the
    row's system (CareVue or MetaVision by its ITEMID, Zipf-like weights): numeric items a
    value ``Gamma(2, 10)`` to one decimal, text items one of :data:`OTHER_CHART_TEXTS`
    (VALUENUM empty); STORETIME 0-89 min after CHARTTIME, a random CGID, VALUEUOM and
    RESULTSTATUS empty, WARNING/ERROR 0 for MetaVision and empty for CareVue, STOPPED as the
    system writes it. The block's own rows keep their order; the stream is ``derive_rng(seed,
    "other-chart-rows", block)``.

    Parameters
    ----------
    chartevents : dict of column name -> pyarrow.Array
        Every CHARTEVENTS column but ROW_ID, one block's rows; replaced by the longer columns.
    rate : float
        Mean added rows per row (0: nothing changes; :data:`REAL_OTHER_CHART_ROWS`: the real
        table's mix).
    seed, block : int
        The copy's master seed and the block number.
    """
    n = len(chartevents["ITEMID"])
    if rate <= 0 or n == 0:
        return
    rng = derive_rng(seed, "other-chart-rows", block)
    extra = rng.poisson(rate, n)
    src = np.repeat(np.arange(n), extra)
    m = len(src)
    metavision = chartevents["ITEMID"].to_numpy()[src] >= CAREVUE_MAX_ITEMID
    item = np.searchsorted(_OTHER_CDF, rng.random(m), side="right")
    item = np.minimum(item, _PER_SYSTEM - 1) + np.where(metavision, _PER_SYSTEM, 0)
    text = _OTHER_TEXT[item]
    num = np.where(text, np.nan, np.round(rng.gamma(2.0, 10.0, m), 1))
    words = pa.array(OTHER_CHART_TEXTS, pa.string())
    value = pc.if_else(
        pa.array(text),
        words.take(pa.array(rng.integers(0, len(OTHER_CHART_TEXTS), m))),
        pa.array(num + 0.0, pa.float64(), from_pandas=True).cast(pa.string()),
    )
    take = pa.array(src)
    charttime = chartevents["CHARTTIME"].take(take)
    minutes = pa.array(rng.integers(0, 90, m) * 60, pa.duration("s"))
    flag = pa.array(np.zeros(m, dtype=np.int64), mask=~metavision)
    added = {
        "SUBJECT_ID": chartevents["SUBJECT_ID"].take(take),
        "HADM_ID": chartevents["HADM_ID"].take(take),
        "ICUSTAY_ID": chartevents["ICUSTAY_ID"].take(take),
        "ITEMID": pa.array(_OTHER_IDS[item]),
        "CHARTTIME": charttime,
        "STORETIME": pc.add(charttime, minutes),
        "CGID": pa.array(rng.integers(14010, 21570, m)),
        "VALUE": value,
        "VALUENUM": pa.array(num, pa.float64(), from_pandas=True),
        "VALUEUOM": pa.nulls(m, pa.string()),
        "WARNING": flag,
        "ERROR": flag,
        "RESULTSTATUS": pa.nulls(m, pa.string()),
        "STOPPED": pc.if_else(pa.array(metavision), pa.scalar(None, pa.string()), "NotStopd"),
    }
    # each block row, then the rows added after it: a stable sort of (2 * row, 2 * source + 1)
    order = pa.array(np.argsort(np.r_[2 * np.arange(n), 2 * src + 1], kind="stable"))
    for column, rows in added.items():
        both = pa.concat_arrays([chartevents[column], rows.cast(chartevents[column].type)])
        chartevents[column] = both.take(order)
