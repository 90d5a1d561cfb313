"""OUTPUTEVENTS rows of one block: urine output every ~2 h during each ICU stay."""

from __future__ import annotations

import numpy as np

from mimic_deid.synthetic import catalog
from mimic_deid.synthetic.physiology import Physiology
from mimic_deid.synthetic.population import HOUR, MINUTE, Population
from mimic_deid.synthetic.schedule import grid


def output_events(pop: Population, phys: Physiology, rng: np.random.Generator) -> dict:
    """Urine rows: arrays ``stay`` (stay index), ``t`` (s), ``itemid``, ``num`` (mL)."""
    stay, t = grid(rng, pop.i_in, pop.i_out, 2 * HOUR, 20 * MINUTE, p_skip=0.25)
    mv = pop.a_mv[pop.i_adm[stay]]
    itemid = np.where(mv, catalog.URINE_ITEMID["metavision"], catalog.URINE_ITEMID["carevue"])
    num = np.round(phys.level("urine", pop.i_adm[stay], t, rng))
    return {"stay": stay, "t": t, "itemid": itemid.astype(np.int64), "num": num}
