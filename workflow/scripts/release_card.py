"""Rule release_card: the card of one release (mimic_deid.evaluate.card)."""

import pandas as pd

from mimic_deid.core.atomic import read_json, write_json
from mimic_deid.core.logs import run_stage
from mimic_deid.evaluate.card import release_card

with run_stage(snakemake.rule, snakemake.log[0]):
    w = snakemake.wildcards
    point = {"dk": int(w.dk), "fk": int(w.fk), "heuristic": w.heuristic, "method": w.method}
    utility = getattr(snakemake.input, "utility", None)
    card = release_card(
        w.release,
        point,
        read_json(snakemake.input.check),
        read_json(snakemake.input.linkage),
        snakemake.params.outcome_l,
        pd.read_csv(utility) if utility else None,
        pd.read_csv(snakemake.input.cross_release),
    )
    write_json(card, snakemake.output.card)
