"""CHARTEVENTS rows of one block: which stays chart what, when, with which item and unit.

Sampling (per ICU stay): vitals (heart rate, blood pressure, respiratory rate, SpO2) on an
hourly grid with 8 min jitter, 8 % of hours skipped and 8 % doubled; temperature, GCS and
capillary refill every 4 h; glucose every 6 h; FiO2 (every 4 h) and pH (every 8 h) only while
ventilated; one admission weight plus sparse daily weights; at most one height. Each variable
is missing for a share of stays (e.g. height charted for ~38 %, glucose for ~70 %).

Recording quirks: per-stay choice among the CareVue or MetaVision items of a variable (so
Fahrenheit and Celsius temperatures, kg/lb/oz weights, inch/cm heights coexist), SpO2
sometimes as a fraction, FiO2 as percent or fraction by item, CareVue blood pressure sometimes
as "120/80" text in both the systolic and diastolic rows (VALUENUM empty), GCS and capillary
refill as text, rare out-of-range artefacts (heart rate 0 or 999, temperature 0) and
MetaVision rows flagged ERROR = 1 (with a distorted value), plus non-benchmark items as
distractors.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mimic_deid.synthetic import catalog
from mimic_deid.synthetic.physiology import Physiology
from mimic_deid.synthetic.population import HOUR, MINUTE, NEONATE, Population
from mimic_deid.synthetic.schedule import grid, pick, sort_rows

P_ERROR = 0.004  # MetaVision rows flagged ERROR = 1
P_BP_TEXT = 0.03  # CareVue blood pressure rows written as "sys/dia" text
P_SPO2_FRACTION = 0.02  # SpO2 rows recorded as a fraction <= 1

LB = 0.45359237
OZ = 0.028349523125


def num_to_string(x: np.ndarray) -> pa.Array:
    """Shortest decimal text of each float (NaN -> null), e.g. 87.0 -> "87", 36.6 -> "36.6"."""
    return pa.array(x + 0.0, type=pa.float64(), from_pandas=True).cast(pa.string())


class _Rows:
    """Accumulates event rows (stay, time, item, VALUENUM, VALUE, ERROR) of one block."""

    def __init__(self, rng: np.random.Generator, stay_mv: np.ndarray) -> None:
        self.rng = rng
        self.stay_mv = stay_mv
        self.parts: list[tuple] = []

    def add(
        self,
        stay: np.ndarray,
        t: np.ndarray,
        itemid: np.ndarray | int,
        num: np.ndarray,
        decimals: int = 0,
        text: pa.Array | None = None,
    ) -> None:
        """Add rows; VALUE is ``text`` or, when None, the text of ``num``."""
        n = len(stay)
        itemid = np.broadcast_to(np.asarray(itemid, dtype=np.int64), (n,)).copy()
        mv = self.stay_mv[stay]
        error = np.where(mv, 0, -1).astype(np.int8)
        bad = mv & (self.rng.random(n) < P_ERROR)
        error[bad] = 1
        num = np.asarray(num, dtype=np.float64)
        if text is None and bad.any():
            num = num.copy()
            num[bad] = np.round(num[bad] * self.rng.uniform(0.5, 1.5, int(bad.sum())), decimals)
        value = num_to_string(num) if text is None else text
        self.parts.append((stay, t, itemid, num, value, error))

    def finish(self) -> dict:
        """Rows sorted by (stay, time, item): arrays ``stay, t, itemid, num, error`` and
        Arrow ``value``."""
        if not self.parts:
            empty = np.array([], dtype=np.int64)
            return {
                "stay": empty,
                "t": empty.astype(float),
                "itemid": empty,
                "num": empty.astype(float),
                "value": pa.array([], pa.string()),
                "error": empty.astype(np.int8),
            }
        stay, t, itemid, num, value, error = (list(x) for x in zip(*self.parts, strict=True))
        stay, t, itemid = np.concatenate(stay), np.concatenate(t), np.concatenate(itemid)
        num, error = np.concatenate(num), np.concatenate(error)
        value = pa.concat_arrays([v.cast(pa.string()) for v in value])
        columns = {
            "stay": stay,
            "t": t,
            "itemid": itemid,
            "num": num,
            "value": value,
            "error": error,
        }
        return sort_rows(columns, ("stay", "t", "itemid"))


def _artefact(rng: np.random.Generator, x: np.ndarray, p: float, values: tuple) -> np.ndarray:
    """Replace a share ``p`` of values by implausible ones (monitor artefacts, typos)."""
    hit = rng.random(len(x)) < p
    if hit.any():
        x = x.copy()
        x[hit] = rng.choice(np.asarray(values, dtype=float), int(hit.sum()))
    return x


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


class ChartBuilder:
    """Builds the chart rows of one block's ICU stays."""

    def __init__(self, pop: Population, phys: Physiology, rng: np.random.Generator) -> None:
        self.pop, self.phys, self.rng = pop, phys, rng
        self.adm = pop.i_adm
        self.n = len(pop.i_id)
        self.mv = pop.a_mv[self.adm]
        self.group = pop.a_group[self.adm]
        self.vent = pop.a_vent[self.adm]
        self.t_in, self.t_out = pop.i_in, pop.i_out
        self.rows = _Rows(rng, self.mv)

    # helpers -------------------------------------------------------------------------------
    def _present(self, p: float | np.ndarray) -> np.ndarray:
        return self.rng.random(self.n) < p

    def _item(self, carevue: tuple, metavision: tuple) -> np.ndarray:
        return np.where(
            self.mv, pick(self.rng, self.n, metavision), pick(self.rng, self.n, carevue)
        )

    def _keep(self, n: int, p_drop: float) -> np.ndarray:
        return self.rng.random(n) >= p_drop

    def _level(self, name: str, stay: np.ndarray, t: np.ndarray) -> np.ndarray:
        return self.phys.level(name, self.adm[stay], t, self.rng)

    def _grid(self, stays: np.ndarray, every: float, jitter: float, **kw) -> tuple:
        sel = np.flatnonzero(stays)
        i, t = grid(self.rng, self.t_in[sel], self.t_out[sel], every, jitter, **kw)
        return sel[i], t

    # variables -----------------------------------------------------------------------------
    def build(self) -> dict:
        """All chart rows of the block (see ``_Rows.finish``)."""
        everyone = np.ones(self.n, dtype=bool)
        vs, vt = self._grid(
            everyone, HOUR, 8 * MINUTE, first=40 * MINUTE, p_skip=0.08, p_extra=0.08
        )
        self._heart_rate(vs, vt)
        self._blood_pressure(vs, vt)
        self._respiratory_rate(vs, vt)
        self._spo2(vs, vt)
        self._temperature()
        self._gcs()
        self._capillary_refill()
        self._glucose()
        self._fio2()
        self._ph()
        self._weight()
        self._height()
        self._distractors()
        return self.rows.finish()

    def _heart_rate(self, vs: np.ndarray, vt: np.ndarray) -> None:
        keep = self._present(0.995)[vs] & self._keep(len(vs), 0.02)
        s, t = vs[keep], vt[keep]
        x = _artefact(self.rng, np.round(self._level("hr", s, t)), 0.001, (0, 999))
        self.rows.add(s, t, np.where(self.mv[s], 220045, 211), x)

    def _blood_pressure(self, vs: np.ndarray, vt: np.ndarray) -> None:
        rng = self.rng
        # (systolic, diastolic, mean) item triples: non-invasive, arterial, manual.
        cv = ((455, 8441, 456), (51, 8368, 52), (442, 8440, 443))
        mv = ((220179, 220180, 220181), (220050, 220051, 220052))
        kind = np.where(
            self.mv,
            rng.choice(2, self.n, p=(0.55, 0.45)),
            rng.choice(3, self.n, p=(0.55, 0.4, 0.05)),
        )
        items_mv = np.array(mv + ((0, 0, 0),))[kind]  # kind < 2 for MetaVision stays
        items = np.where(self.mv[:, None], items_mv, np.array(cv)[kind])
        base = self._present(0.98)[vs]
        s_all, t_all = vs[base], vt[base]
        n = len(s_all)
        sbp = self._level("sbp", s_all, t_all)
        dbp = np.round(np.minimum(self._level("dbp", s_all, t_all), sbp - 12))
        sbp = np.round(sbp)
        mbp = np.round((sbp + 2 * dbp) / 3 + rng.normal(0, 2, n))
        text = ~self.mv[s_all] & (rng.random(n) < P_BP_TEXT)
        ratio = pc.binary_join_element_wise(num_to_string(sbp[text]), num_to_string(dbp[text]), "/")
        sbp = _artefact(rng, sbp, 0.0005, (0,))
        it = items[s_all]
        for col, x in ((0, sbp), (1, dbp)):
            keep = self._keep(n, 0.02) & ~text
            self.rows.add(s_all[keep], t_all[keep], it[keep, col], x[keep])
        nan = np.full(int(text.sum()), np.nan)
        for col in (0, 1):
            self.rows.add(s_all[text], t_all[text], it[text, col], nan, text=ratio)
        keep = self._keep(n, 0.02)
        self.rows.add(s_all[keep], t_all[keep], it[keep, 2], mbp[keep])

    def _respiratory_rate(self, vs: np.ndarray, vt: np.ndarray) -> None:
        item = self._item(((618, 0.85), (615, 0.15)), ((220210, 0.9), (224690, 0.1)))
        keep = self._present(0.98)[vs] & self._keep(len(vs), 0.03)
        s, t = vs[keep], vt[keep]
        self.rows.add(s, t, item[s], np.round(self._level("rr", s, t)))

    def _spo2(self, vs: np.ndarray, vt: np.ndarray) -> None:
        item = self._item(((646, 0.95), (834, 0.05)), ((220277, 0.95), (220227, 0.05)))
        keep = self._present(0.98)[vs] & self._keep(len(vs), 0.03)
        s, t = vs[keep], vt[keep]
        x = np.round(self._level("spo2", s, t))
        frac = self.rng.random(len(s)) < P_SPO2_FRACTION
        self.rows.add(s[~frac], t[~frac], item[s[~frac]], x[~frac])
        self.rows.add(s[frac], t[frac], item[s[frac]], np.round(x[frac] / 100, 2), 2)

    def _temperature(self) -> None:
        item = self._item(
            ((678, 0.6), (676, 0.3), (679, 0.05), (677, 0.05)), ((223761, 0.7), (223762, 0.3))
        )
        s, t = self._grid(self._present(0.97), 4 * HOUR, 15 * MINUTE, p_skip=0.05)
        c = self._level("temp", s, t)
        fahrenheit = np.isin(item[s], (678, 679, 223761))
        x = np.round(np.where(fahrenheit, c * 1.8 + 32.0, c), 1)
        x = _artefact(self.rng, x, 0.002, (0,))
        self.rows.add(s, t, item[s], x, 1)

    def _gcs(self) -> None:
        rng = self.rng
        s, t = self._grid(
            self._present(0.92) & (self.group != NEONATE), 4 * HOUR, 20 * MINUTE, p_skip=0.05
        )
        n = len(s)
        intubated = self.vent[s] & (rng.random(n) < 0.85)
        g = self._level("gcs", s, t) - 3.0 * intubated
        total = np.clip(np.round(g), 3, 15)
        eye = np.clip(np.round(total * 4 / 15 + rng.normal(0, 0.35, n)), 1, 4)
        verbal = np.clip(np.round(total * 5 / 15 + rng.normal(0, 0.35, n)), 1, 5)
        motor = np.clip(total - eye - verbal, 1, 6)
        verbal = np.where(intubated, 1.0, verbal)
        mv = self.mv[s]
        for comp, score in (("eye", eye), ("verbal", verbal), ("motor", motor)):
            texts = catalog.GCS_TEXT[comp]
            cv_words = texts["carevue"] + (catalog.GCS_VERBAL_INTUBATED["carevue"],)
            mv_words = texts["metavision"] + (catalog.GCS_VERBAL_INTUBATED["metavision"],)
            code = np.where(intubated & (comp == "verbal"), len(cv_words) - 1, score).astype(
                np.int64
            )
            code = np.where(mv, code + len(cv_words), code)
            words = pa.array(list(cv_words) + list(mv_words), pa.string())
            # MetaVision fills VALUENUM; CareVue only for about half of the rows.
            num = np.where(mv | (rng.random(n) < 0.5), score, np.nan)
            keep = self._keep(n, 0.02)
            item = np.where(
                mv, catalog.GCS_ITEMID[comp]["metavision"], catalog.GCS_ITEMID[comp]["carevue"]
            )
            self.rows.add(
                s[keep], t[keep], item[keep], num[keep], text=words.take(pa.array(code[keep]))
            )
        keep = ~mv & self._keep(n, 0.02)
        self.rows.add(s[keep], t[keep], catalog.GCS_TOTAL_ITEMID, (eye + verbal + motor)[keep])

    def _capillary_refill(self) -> None:
        rng = self.rng
        item = self._item(((3348, 0.7), (115, 0.2), (8377, 0.1)), ((223951, 0.7), (224308, 0.3)))
        s, t = self._grid(
            self._present(np.where(self.mv, 0.25, 0.45)), 4 * HOUR, 20 * MINUTE, p_skip=0.1
        )
        abnormal = rng.random(len(s)) < _sigmoid(-2.2 + 1.2 * self.phys.severity_at(self.adm[s], t))
        ids = sorted(catalog.CAPILLARY_TEXT)
        words = pa.array([w for i in ids for w in catalog.CAPILLARY_TEXT[i]], pa.string())
        code = 2 * np.searchsorted(ids, item[s]) + abnormal
        self.rows.add(s, t, item[s], np.full(len(s), np.nan), text=words.take(pa.array(code)))

    def _glucose(self) -> None:
        item = self._item(
            ((807, 0.6), (811, 0.25), (1529, 0.15)), ((225664, 0.7), (220621, 0.2), (226537, 0.1))
        )
        s, t = self._grid(self._present(0.7), 6 * HOUR, 30 * MINUTE, p_skip=0.1)
        self.rows.add(s, t, item[s], np.round(self._level("glucose", s, t)))

    def _fio2(self) -> None:
        item = self._item(((3420, 0.6), (190, 0.4)), ((223835, 1.0),))
        fraction_stay = self._present(0.15)
        s, t = self._grid(self.vent & self._present(0.95), 4 * HOUR, 20 * MINUTE, p_skip=0.05)
        frac = np.maximum(np.round(self._level("fio2", s, t) * 20) / 20, 0.21)
        as_fraction = (item[s] == 190) | ((item[s] == 223835) & fraction_stay[s])
        self.rows.add(
            s[~as_fraction],
            t[~as_fraction],
            item[s[~as_fraction]],
            np.round(frac[~as_fraction] * 100),
        )
        self.rows.add(
            s[as_fraction], t[as_fraction], item[s[as_fraction]], np.round(frac[as_fraction], 2), 2
        )

    def _ph(self) -> None:
        item = self._item(((780, 0.8), (1126, 0.2)), ((223830, 1.0),))
        s, t = self._grid(self.vent & self._present(0.6), 8 * HOUR, 30 * MINUTE, p_skip=0.1)
        self.rows.add(s, t, item[s], np.round(self._level("ph", s, t), 2), 2)

    def _weight_rows(self, s: np.ndarray, t: np.ndarray, item: np.ndarray) -> None:
        kg = self.phys.weight_kg[self.adm[s]] * (1 + 0.015 * self.rng.standard_normal(len(s)))
        for unit_items, factor, decimals in (
            ((3581, 226531), LB, 1),
            ((3582,), OZ, 0),
        ):
            hit = np.isin(item, unit_items)
            self.rows.add(s[hit], t[hit], item[hit], np.round(kg[hit] / factor, decimals), decimals)
            s, t, item, kg = s[~hit], t[~hit], item[~hit], kg[~hit]
        self.rows.add(s, t, item, np.round(kg, 1), 1)

    def _weight(self) -> None:
        rng = self.rng
        neonate = self.group == NEONATE
        present = self._present(0.88)
        admit_item = np.where(
            neonate,
            3723,
            self._item(((762, 0.7), (3581, 0.15), (3580, 0.15)), ((226512, 0.7), (226531, 0.3))),
        )
        s = np.flatnonzero(present)
        t = np.floor((self.t_in[s] + rng.uniform(0, 3 * HOUR, len(s))) / MINUTE) * MINUTE
        inside = t <= self.t_out[s]
        self._weight_rows(s[inside], t[inside], admit_item[s[inside]])
        daily_item = np.where(
            self.mv, 224639, np.where(neonate, pick(rng, self.n, ((3582, 0.6), (3580, 0.4))), 763)
        )
        s, t = self._grid(present & self._present(0.5), 24 * HOUR, 2 * HOUR, p_skip=0.6)
        early = t < self.t_in[s] + 12 * HOUR
        self._weight_rows(s[~early], t[~early], daily_item[s[~early]])

    def _height(self) -> None:
        item = self._item(((920, 0.8), (1394, 0.2)), ((226707, 0.5), (226730, 0.5)))
        s = np.flatnonzero(self._present(np.where(self.group == NEONATE, 0.5, 0.38)))
        t = np.floor((self.t_in[s] + self.rng.uniform(0, 6 * HOUR, len(s))) / MINUTE) * MINUTE
        inside = t <= self.t_out[s]
        s, t = s[inside], t[inside]
        cm = self.phys.height_cm[self.adm[s]]
        inches = item[s] != 226730
        self.rows.add(s, t, item[s], np.where(inches, np.round(cm / 2.54), np.round(cm)))

    def _distractors(self) -> None:
        rng = self.rng
        for system, specs in catalog.DISTRACTORS.items():
            mine = self.mv == (system == "metavision")
            for d in specs:
                s, t = self._grid(
                    mine & self._present(d.p_stay), d.every_h * HOUR, 15 * MINUTE, p_skip=0.1
                )
                if d.texts:
                    code = rng.integers(0, len(d.texts), len(s))
                    text = pa.array(list(d.texts), pa.string()).take(pa.array(code))
                    self.rows.add(s, t, d.itemid, np.full(len(s), np.nan), text=text)
                else:
                    x = np.maximum(
                        np.round(d.mean + d.sd * rng.standard_normal(len(s)), d.decimals), 0
                    )
                    self.rows.add(s, t, d.itemid, x, d.decimals)
