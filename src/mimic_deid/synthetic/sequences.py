"""TRANSFERS and CPTEVENTS rows of one block of synthetic patients (seed 004 inputs).

Both tables are drawn from their own random stream ``derive_rng(seed, "sequence-tables",
block)``, after the block's other tables, so adding them leaves every other table's bytes
unchanged.

TRANSFERS follows each admission through the hospital with the stays the population already
holds: an ``admit`` row on a general ward until the first ICU intime, one row per care unit of
each ICU stay (two when the stay has a care-unit or ward transfer, split at a uniform point in
the middle 60 % of the stay), a ward row between two ICU stays and after the last one (40 %
of the latter move to a second ward half-way), and a
``discharge`` row at DISCHTIME (no unit, no ward, no OUTTIME). Admissions without an ICU stay
have an ``admit`` ward row and the ``discharge`` row. About 4.5 rows per admission (264,188 at
full size, 46,520 subjects; MIMIC-III has 261,897).

CPTEVENTS holds the professional-fee CPT codes of each ICU admission, numbered by
TICKET_ID_SEQ from 1. The codes follow a small Markov chain (:data:`CPT_CHAIN`): an initial
evaluation, then daily critical/subsequent care with ventilation management for ventilated
patients and interspersed procedures, ending with discharge management; the number of codes
grows with the length of stay (about 10 per ICU admission, 577,195 rows at full size;
MIMIC-III has 573,146).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from mimic_deid.core.seeding import derive_rng
from mimic_deid.synthetic.population import CAREUNITS, DAY, HOUR, MINUTE, Population
from mimic_deid.synthetic.writer import floats, ints, nulls, strings, times

__all__ = ["CPT_CODES", "CPT_CHAIN", "FLOOR_WARDS", "sequence_tables"]

#: General-ward ids used for the non-ICU rows of TRANSFERS (ICU wards are population.WARDS).
FLOOR_WARDS = (2, 4, 6, 17, 25, 27, 29, 36, 40, 53)
#: Share of stays on a general ward after the ICU that move to a second ward before discharge.
P_WARD_MOVE = 0.12
#: Share of ICU admissions whose first row is the ICU (admitted straight to the unit: the
#: ``admit`` row carries the care unit and the ICU stay). Real MIMIC-III v1.4 (100 subjects,
#: every admission with an ICU stay): CURR_CAREUNIT empty in 33.3 % of ``admit`` rows. Drawn
#: from ``derive_rng(seed, "transfers-direct-icu", block)``.
P_DIRECT_ICU = 0.667
#: CPTEVENTS rows of the respiratory cost centre per row of the ICU cost centre. Real
#: MIMIC-III v1.4 (100 subjects): 291 of 1,579 rows (18.4 %) are COSTCENTER ``Resp`` with a
#: CHARTDATE and no TICKET_ID_SEQ, the other 1,288 ``ICU`` with a TICKET_ID_SEQ, no CHARTDATE
#: and an empty DESCRIPTION (81.6 % of rows); no row has both. Drawn from
#: ``derive_rng(seed, "cptevents-resp", block)``.
P_RESP_ROWS = 0.184
RESP_PER_ICU_ROW = P_RESP_ROWS / (1.0 - P_RESP_ROWS)

#: (code, section header, subsection header, description) of the CPT vocabulary.
CPT_CODES: tuple[tuple[str, str, str, str], ...] = (
    ("99223", "Evaluation and management", "Hospital inpatient services", "Initial hospital care, high"),
    ("99291", "Evaluation and management", "Critical care services", "Critical care, first hour"),
    ("99292", "Evaluation and management", "Critical care services", "Critical care, each additional 30 min"),
    ("99231", "Evaluation and management", "Hospital inpatient services", "Subsequent hospital care, low"),
    ("99232", "Evaluation and management", "Hospital inpatient services", "Subsequent hospital care, moderate"),
    ("99233", "Evaluation and management", "Hospital inpatient services", "Subsequent hospital care, high"),
    ("99254", "Evaluation and management", "Consultations", "Inpatient consultation, moderate"),
    ("94002", "Medicine", "Pulmonary", "Ventilation management, first day"),
    ("94003", "Medicine", "Pulmonary", "Ventilation management, subsequent day"),
    ("31500", "Surgery", "Respiratory system", "Emergency endotracheal intubation"),
    ("36556", "Surgery", "Cardiovascular system", "Central venous catheter insertion"),
    ("36620", "Surgery", "Cardiovascular system", "Arterial catheter insertion"),
    ("93010", "Medicine", "Cardiovascular", "Electrocardiogram report"),
    ("71010", "Radiology", "Diagnostic radiology", "Chest x-ray, single view"),
    ("99238", "Evaluation and management", "Hospital inpatient services", "Hospital discharge day"),
)  # fmt: skip

_N_CPT = len(CPT_CODES)
_INITIAL = (0.45, 0.55)  # 99223, 99291
_END = 14  # 99238
# Transition weights between codes (rows: from, columns: to), the end code excluded: the
# chain stops by length. Ventilated patients use the second matrix's pulmonary row weights.
_BASE = np.array(
    [
        # 223 291 292 231 232 233 254 002 003 500 556 620 010 071
        [0, 2, 1, 2, 6, 3, 3, 0, 0, 1, 1, 1, 2, 2],  # 99223
        [0, 0, 6, 1, 3, 3, 2, 0, 0, 2, 2, 2, 2, 2],  # 99291
        [0, 5, 2, 0, 2, 3, 1, 0, 0, 1, 1, 1, 1, 1],  # 99292
        [0, 0, 0, 6, 4, 1, 1, 0, 0, 0, 0, 0, 1, 1],  # 99231
        [0, 1, 0, 2, 7, 3, 2, 0, 0, 0, 1, 0, 1, 1],  # 99232
        [0, 3, 1, 1, 3, 6, 2, 0, 0, 1, 1, 1, 1, 1],  # 99233
        [0, 1, 0, 1, 4, 3, 1, 0, 0, 0, 1, 0, 1, 1],  # 99254
        [0, 2, 1, 0, 1, 2, 0, 0, 6, 0, 1, 1, 1, 1],  # 94002
        [0, 3, 1, 0, 1, 3, 0, 0, 6, 0, 0, 0, 1, 2],  # 94003
        [0, 3, 1, 0, 0, 1, 0, 8, 0, 0, 2, 1, 0, 1],  # 31500
        [0, 3, 1, 0, 2, 2, 1, 1, 0, 0, 0, 3, 0, 2],  # 36556
        [0, 3, 1, 0, 2, 2, 1, 1, 0, 0, 1, 0, 1, 2],  # 36620
        [0, 2, 1, 1, 3, 2, 1, 0, 0, 0, 0, 0, 0, 2],  # 93010
        [0, 2, 1, 1, 3, 3, 1, 0, 1, 0, 0, 0, 1, 0],  # 71010
    ],
    dtype=np.float64,
)
_VENT_BOOST = np.zeros(_N_CPT - 1)
_VENT_BOOST[[7, 8, 9]] = (2.0, 4.0, 1.5)


def _chain(ventilated: bool) -> np.ndarray:
    w = _BASE + (_VENT_BOOST[None, :] if ventilated else 0.0)
    if not ventilated:
        w[:, [7, 8, 9]] *= 0.1
    return np.cumsum(w / w.sum(axis=1, keepdims=True), axis=1)


#: Cumulative transition probabilities (2, 14, 14): [not ventilated, ventilated].
CPT_CHAIN = np.stack([_chain(False), _chain(True)])


def _after_icu(pop: Population, rng: np.random.Generator, has_icu, last_out, floor) -> list:
    """The general-ward segments after an admission's last ICU stay (a second ward for some)."""
    segs = []
    post = np.flatnonzero(has_icu & (pop.a_disch > last_out + MINUTE))
    # some patients move to a second general ward before discharge
    move = rng.random(len(post)) < P_WARD_MOVE
    k = rng.integers(0, len(floor), len(post))
    mid = np.round(
        last_out[post] + rng.uniform(0.3, 0.7, len(post)) * (pop.a_disch[post] - last_out[post])
    )
    segs.append(
        (
            post,
            last_out[post],
            np.where(move, mid, pop.a_disch[post]),
            np.full(len(post), -1),
            floor[k],
            np.full(len(post), -1),
            np.ones(len(post)),
        )
    )
    m = np.flatnonzero(move)
    segs.append(
        (
            post[m],
            mid[m],
            pop.a_disch[post[m]],
            np.full(len(m), -1),
            floor[(k[m] + rng.integers(1, len(floor), len(m))) % len(floor)],
            np.full(len(m), -1),
            np.ones(len(m)),
        )
    )
    return segs


def _transfer_rows(pop: Population, segs: list[tuple], ni: int) -> dict[str, pa.Array]:
    """TRANSFERS' columns of the segments ``segs`` (admission, in, out, unit, ward, stay,
    kind), ordered by admission, intime and kind."""
    adm, t_in, t_out, unit, ward, stay, kind = (np.concatenate(c) for c in zip(*segs, strict=True))
    order = np.lexsort((kind, t_in, adm))
    adm, t_in, t_out, unit, ward, stay, kind = (
        a[order] for a in (adm, t_in, t_out, unit, ward, stay, kind)
    )
    unit, ward, stay = unit.astype(np.int64), ward.astype(np.int64), stay.astype(np.int64)
    n = len(adm)
    starts = np.r_[True, adm[1:] != adm[:-1]] if n else np.zeros(0, dtype=bool)
    prev_unit = np.where(starts, -1, np.r_[-1, unit[:-1]] if n else unit)
    prev_ward = np.where(starts, -1, np.r_[-1, ward[:-1]] if n else ward)
    event = np.where(kind == 2, 2, np.where(starts, 0, 1))
    units = (*CAREUNITS, None)
    mv_adm = pop.a_mv[adm]
    return {
        "SUBJECT_ID": ints(pop.s_id[pop.a_subj[adm]]),
        "HADM_ID": ints(pop.a_id[adm]),
        "ICUSTAY_ID": ints(pop.i_id[np.maximum(stay, 0)] if ni else np.zeros(n), stay < 0),
        "DBSOURCE": strings(("carevue", "metavision"), mv_adm.astype(np.int64)),
        "EVENTTYPE": strings(("admit", "transfer", "discharge"), event),
        "PREV_CAREUNIT": strings(units, np.where(prev_unit < 0, len(units) - 1, prev_unit)),
        "CURR_CAREUNIT": strings(units, np.where(unit < 0, len(units) - 1, unit)),
        "PREV_WARDID": ints(prev_ward, prev_ward < 0),
        "CURR_WARDID": ints(ward, ward < 0),
        "INTIME": times(t_in),
        "OUTTIME": times(t_out),
        "LOS": floats(np.round((t_out - t_in) / HOUR, 2)),
    }


def _transfers(
    pop: Population, rng: np.random.Generator, direct_rng: np.random.Generator
) -> dict[str, pa.Array]:
    na, ni = len(pop.a_id), len(pop.i_id)
    n_stays = np.bincount(pop.i_adm, minlength=na)
    if ni:
        last_of_adm = np.r_[pop.i_adm[1:] != pop.i_adm[:-1], True]
        first_of_adm = np.r_[True, pop.i_adm[1:] != pop.i_adm[:-1]]
    else:
        last_of_adm = first_of_adm = np.zeros(0, dtype=bool)
    has_icu = n_stays > 0
    first_in = np.full(na, np.nan)
    last_out = np.full(na, np.nan)
    first_in[pop.i_adm[first_of_adm]] = pop.i_in[first_of_adm]
    last_out[pop.i_adm[last_of_adm]] = pop.i_out[last_of_adm]

    moved = (pop.i_unit_last != pop.i_unit_first) | (pop.i_ward_last != pop.i_ward_first)
    split = np.round(pop.i_in + rng.uniform(0.2, 0.8, ni) * (pop.i_out - pop.i_in))
    floor = np.array(FLOOR_WARDS, dtype=np.int64)
    # segments: (admission, in, out, unit code (-1 = none), ward (-1 = none), icu stay (-1), kind)
    # kind orders rows with equal intime: 0 admit, 1 transfer, 2 discharge
    segs = []
    segs.append(
        (
            np.arange(na),
            pop.a_admit,
            np.where(has_icu, first_in, pop.a_disch),
            np.full(na, -1),
            floor[rng.integers(0, len(floor), na)],
            np.full(na, -1),
            np.zeros(na),
        )
    )
    segs.append(
        (
            pop.i_adm,
            pop.i_in,
            np.where(moved, split, pop.i_out),
            pop.i_unit_first,
            pop.i_ward_first,
            np.arange(ni),
            np.ones(ni),
        )
    )
    mv = np.flatnonzero(moved)
    segs.append(
        (
            pop.i_adm[mv],
            split[mv],
            pop.i_out[mv],
            pop.i_unit_last[mv],
            pop.i_ward_last[mv],
            mv,
            np.ones(len(mv)),
        )
    )
    between = np.flatnonzero(~last_of_adm)
    segs.append(
        (
            pop.i_adm[between],
            pop.i_out[between],
            pop.i_in[between + 1],
            np.full(len(between), -1),
            floor[rng.integers(0, len(floor), len(between))],
            np.full(len(between), -1),
            np.ones(len(between)),
        )
    )
    segs += _after_icu(pop, rng, has_icu, last_out, floor)
    end = np.where(has_icu, np.fmax(pop.a_disch, last_out), pop.a_disch)
    segs.append(
        (
            np.arange(na),
            end,
            np.full(na, np.nan),
            np.full(na, -1),
            np.full(na, -1),
            np.full(na, -1),
            np.full(na, 2.0),
        )
    )
    # admitted straight to the ICU: no ward row before the first ICU row, which becomes `admit`
    direct = has_icu & (direct_rng.random(na) < P_DIRECT_ICU)
    segs[0] = tuple(c[~direct] for c in segs[0])
    return _transfer_rows(pop, segs, ni)


def _cptevents(
    pop: Population, rng: np.random.Generator, resp_rng: np.random.Generator
) -> dict[str, pa.Array]:
    n_stays = np.bincount(pop.i_adm, minlength=len(pop.a_id))
    icu_adm = np.flatnonzero(n_stays > 0)
    los_days = np.zeros(len(pop.a_id))
    np.add.at(los_days, pop.i_adm, (pop.i_out - pop.i_in) / DAY)
    lam = 1.6 + 1.7 * los_days[icu_adm]
    length = np.minimum(2 + rng.poisson(lam), 80)
    vent = pop.a_vent[icu_adm].astype(np.int64)
    m = len(icu_adm)
    max_len = int(length.max()) if m else 0
    codes = np.full((m, max_len), -1, dtype=np.int64)
    if m:
        codes[:, 0] = np.where(rng.random(m) < _INITIAL[0], 0, 1)
    for k in range(1, max_len):
        alive = length > k
        u = rng.random(m)
        cdf = CPT_CHAIN[vent, np.clip(codes[:, k - 1], 0, _N_CPT - 2)]
        nxt = np.minimum((u[:, None] > cdf).sum(axis=1), _N_CPT - 2)
        nxt = np.where(length - 1 == k, _END, nxt)
        codes[:, k] = np.where(alive, nxt, -1)
    keep = codes >= 0
    row_adm = np.repeat(icu_adm, keep.sum(axis=1))
    seq = (np.cumsum(keep, axis=1)[keep]).astype(np.int64)
    code = codes[keep]
    # the respiratory cost centre: ventilation management by day, dated, without a ticket
    r_adm, r_date, r_code = _resp_rows(pop, icu_adm, keep.sum(axis=1), resp_rng)
    resp = np.r_[np.zeros(len(code), dtype=bool), np.ones(len(r_adm), dtype=bool)]
    row_adm = np.r_[row_adm, r_adm]
    code = np.r_[code, r_code]
    seq = np.r_[seq, np.zeros(len(r_adm), dtype=np.int64)]
    date = np.r_[np.full(len(resp) - len(r_adm), np.nan), r_date]
    order = np.lexsort((date, seq, resp, row_adm))
    row_adm, code, seq, date, resp = (a[order] for a in (row_adm, code, seq, date, resp))
    n = len(code)
    cpt = [c[0] for c in CPT_CODES]
    return {
        "SUBJECT_ID": ints(pop.s_id[pop.a_subj[row_adm]]),
        "HADM_ID": ints(pop.a_id[row_adm]),
        "COSTCENTER": strings(("ICU", "Resp"), resp.astype(np.int64)),
        "CHARTDATE": times(date),
        "CPT_CD": strings(cpt, code),
        "CPT_NUMBER": ints(np.array([int(c) for c in cpt], dtype=np.int64)[code]),
        "CPT_SUFFIX": nulls(n, pa.string()),
        "TICKET_ID_SEQ": ints(seq, resp),
        "SECTIONHEADER": strings([c[1] for c in CPT_CODES], code),
        "SUBSECTIONHEADER": strings([c[2] for c in CPT_CODES], code),
        "DESCRIPTION": strings([*(c[3] for c in CPT_CODES), None], np.where(resp, code, _N_CPT)),
    }


def _resp_rows(
    pop: Population, icu_adm: np.ndarray, icu_rows: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Respiratory cost-centre rows: admission index, CHARTDATE (s, midnight), code index.

    Each ICU admission gets Poisson(``RESP_PER_ICU_ROW`` x its ICU rows) rows, so they are
    ``P_RESP_ROWS`` of all rows in expectation; the first is 94002 (first day of ventilation
    management), the others 94003, dated on days drawn uniformly between the admission's
    first ICU intime and last outtime.
    """
    n = rng.poisson(RESP_PER_ICU_ROW * icu_rows)
    adm = np.repeat(icu_adm, n)
    first_in = np.full(len(pop.a_id), np.inf)
    last_out = np.full(len(pop.a_id), -np.inf)
    np.minimum.at(first_in, pop.i_adm, pop.i_in)
    np.maximum.at(last_out, pop.i_adm, pop.i_out)
    t = first_in[adm] + rng.random(len(adm)) * (last_out[adm] - first_in[adm])
    date = np.floor(t / DAY) * DAY
    date = date[np.lexsort((date, adm))]  # adm is sorted: dates in order within an admission
    first = np.r_[True, adm[1:] != adm[:-1]] if len(adm) else np.zeros(0, dtype=bool)
    return adm, date, np.where(first, 7, 8)  # 94002, 94003


def sequence_tables(pop: Population, seed: int, block: int) -> dict[str, dict[str, pa.Array]]:
    """TRANSFERS and CPTEVENTS columns (ROW_ID excluded) of one block.

    Parameters
    ----------
    pop : Population
        The block's subjects, admissions and ICU stays.
    seed, block : int
        Master seed and block number; the stream is ``derive_rng(seed, "sequence-tables",
        block)``, separate from the block's other tables.

    Returns
    -------
    dict
        ``{"TRANSFERS": {column: Arrow array}, "CPTEVENTS": {...}}``.
    """
    rng = derive_rng(seed, "sequence-tables", block)
    return {
        "TRANSFERS": _transfers(pop, rng, derive_rng(seed, "transfers-direct-icu", block)),
        "CPTEVENTS": _cptevents(pop, rng, derive_rng(seed, "cptevents-resp", block)),
    }
