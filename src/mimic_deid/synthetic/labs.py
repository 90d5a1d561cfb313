"""LABEVENTS rows of one block: hospital labs without ICUSTAY_ID, and outpatient labs.

Draw times follow a renewal process over the whole admission (ED arrival up to 3 h before
ADMITTIME until DISCHTIME) with intervals uniform in 4-24 h, so many rows fall outside the
ICU stays. Each draw runs a chemistry panel (with glucose 50931), often a blood count, and,
mostly in ventilated ICU patients, a blood gas (pH 50820, glucose 50809, SpO2 50817, FiO2
50816 as percent). A share of adults also has outpatient draws without HADM_ID. Values of
glucose, pH, SpO2 and FiO2 come from the latent physiology; other items are independent
normals. FLAG = 'abnormal' outside the item's reference range.
"""

from __future__ import annotations

import numpy as np

from mimic_deid.synthetic import catalog
from mimic_deid.synthetic.physiology import Physiology
from mimic_deid.synthetic.population import ADULT, DAY, HOUR, MINUTE, Population
from mimic_deid.synthetic.schedule import sort_rows

LAB_MIN_GAP = 4 * HOUR
LAB_MAX_GAP = 24 * HOUR
P_OUTPATIENT = 0.3


def _draw_times(
    rng: np.random.Generator, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Renewal process with U(4 h, 24 h) intervals from ``start`` to ``end`` per admission."""
    n = len(start)
    n_max = np.floor((end - start) / LAB_MIN_GAP).astype(np.int64) + 1
    idx = np.repeat(np.arange(n, dtype=np.int64), n_max)
    gaps = rng.uniform(LAB_MIN_GAP, LAB_MAX_GAP, len(idx))
    first = np.cumsum(n_max) - n_max
    gaps[first] = rng.uniform(0, 2 * HOUR, n)
    csum = np.cumsum(gaps)
    before = np.where(first > 0, csum[first - 1], 0.0)
    t = start[idx] + csum - np.repeat(before, n_max)
    keep = t <= end[idx]
    return idx[keep], np.floor(t[keep] / MINUTE) * MINUTE


def lab_events(pop: Population, phys: Physiology, rng: np.random.Generator) -> dict:
    """Lab rows of the block, sorted by (subject, time, item).

    Returns arrays ``subj`` (subject index), ``adm`` (admission index, -1 = outpatient),
    ``t`` (seconds), ``itemid``, ``num`` (VALUENUM), ``decimals`` per row.
    """
    na = len(pop.a_id)
    start = pop.a_admit - rng.uniform(0, 3 * HOUR, na)
    adm, t = _draw_times(rng, start, pop.a_disch)
    n = len(adm)

    # Is the draw inside an ICU stay of its admission?
    n_stays = np.bincount(pop.i_adm, minlength=na)
    first_stay = np.cumsum(n_stays) - n_stays
    in_icu = np.zeros(n, dtype=bool)
    for j in range(int(n_stays.max()) if na and len(pop.i_adm) else 0):
        has = n_stays[adm] > j
        s = np.where(has, first_stay[adm] + j, 0)
        in_icu |= has & (t >= pop.i_in[s]) & (t <= pop.i_out[s])
    vent = pop.a_vent[adm]

    rows_adm, rows_t, rows_item, rows_num = [], [], [], []

    def emit(sel: np.ndarray, itemid: int, values: np.ndarray) -> None:
        rows_adm.append(adm[sel])
        rows_t.append(t[sel])
        rows_item.append(np.full(int(sel.sum()), itemid, dtype=np.int64))
        rows_num.append(values)

    def independent(sel: np.ndarray, itemid: int) -> None:
        it = catalog.LAB_BY_ID[itemid]
        x = np.maximum(it.mean + it.sd * rng.standard_normal(int(sel.sum())), it.low)
        emit(sel, itemid, np.round(x, it.decimals))

    def latent(name: str, sel: np.ndarray, noise: float = 1.0) -> np.ndarray:
        return phys.level(name, adm[sel], t[sel], rng, noise_scale=noise)

    chem = rng.random(n) < 0.95
    emit(chem, 50931, np.round(latent("glucose", chem, 0.8)))
    for itemid in catalog.CHEMISTRY_PANEL[1:]:
        independent(chem, itemid)
    cbc = rng.random(n) < 0.6
    for itemid in catalog.BLOOD_COUNT_PANEL:
        independent(cbc, itemid)
    p_gas = np.where(in_icu, np.where(vent, 0.7, 0.2), 0.03)
    gas = rng.random(n) < p_gas
    emit(gas, 50820, np.round(latent("ph", gas, 0.8), 2))
    independent(gas, 50818)
    independent(gas, 50821)
    sel = gas & (rng.random(n) < 0.4)
    emit(sel, 50809, np.round(latent("glucose", sel, 0.8)))
    sel = gas & (rng.random(n) < 0.6)
    emit(sel, 50817, np.round(np.minimum(latent("spo2", sel) + 0.5, 100)))
    sel = gas & vent & in_icu & (rng.random(n) < 0.6)
    emit(sel, 50816, np.round(np.maximum(latent("fio2", sel), 0.21) * 100))
    sel = rng.random(n) < 0.005
    emit(sel, 50831, np.round(7.5 + 0.5 * rng.standard_normal(int(sel.sum())), 1))

    r_adm = np.concatenate(rows_adm)
    r_subj = pop.a_subj[r_adm]
    r_t = np.concatenate(rows_t)
    r_item = np.concatenate(rows_item)
    r_num = np.concatenate(rows_num)

    # Outpatient chemistry before the first admission, without HADM_ID.
    ns = len(pop.s_id)
    first_adm = np.searchsorted(pop.a_subj, np.arange(ns))
    out = (pop.s_group == ADULT) & (rng.random(ns) < P_OUTPATIENT)
    n_out = np.where(out, rng.integers(1, 6, ns), 0)
    o_subj = np.repeat(np.arange(ns), n_out)
    o_t = pop.a_admit[first_adm[o_subj]] - rng.uniform(20, 700, len(o_subj)) * DAY
    o_t = np.floor(o_t / MINUTE) * MINUTE
    o_rows = len(o_subj) * len(catalog.CHEMISTRY_PANEL)
    o_item = np.tile(np.array(catalog.CHEMISTRY_PANEL, dtype=np.int64), len(o_subj))
    o_num = np.empty(o_rows)
    for k, itemid in enumerate(catalog.CHEMISTRY_PANEL):
        it = catalog.LAB_BY_ID[itemid]
        mean, sd = (110.0, 25.0) if itemid == 50931 else (it.mean, it.sd)
        x = np.maximum(mean + sd * rng.standard_normal(len(o_subj)), it.low)
        o_num[k :: len(catalog.CHEMISTRY_PANEL)] = np.round(
            x, 0 if itemid == 50931 else it.decimals
        )

    subj = np.concatenate([r_subj, np.repeat(o_subj, len(catalog.CHEMISTRY_PANEL))])
    adm_all = np.concatenate([r_adm, np.full(o_rows, -1, dtype=np.int64)])
    t_all = np.concatenate([r_t, np.repeat(o_t, len(catalog.CHEMISTRY_PANEL))])
    item_all = np.concatenate([r_item, o_item])
    num_all = np.concatenate([r_num, o_num])
    columns = {"subj": subj, "adm": adm_all, "t": t_all, "itemid": item_all, "num": num_all}
    return sort_rows(columns, ("subj", "t", "itemid"))


def lab_flags(itemid: np.ndarray, num: np.ndarray) -> np.ndarray:
    """True where the value lies outside the item's reference range."""
    ids = np.array([it.itemid for it in catalog.LAB_ITEMS])
    lo = np.array([it.ref[0] for it in catalog.LAB_ITEMS])
    hi = np.array([it.ref[1] for it in catalog.LAB_ITEMS])
    k = np.searchsorted(ids, itemid)
    return (num < lo[k]) | (num > hi[k])
