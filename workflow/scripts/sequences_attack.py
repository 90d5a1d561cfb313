"""Rule sequences_attack: the verbatim-copy membership attack on a sequence release."""

import pandas as pd

from mimic_deid.core.atomic import write_json
from mimic_deid.core.logs import run_stage
from mimic_deid.core.numbers import percent
from mimic_deid.sequences import EventLog, Settings, fit_release, membership_attack

with run_stage(snakemake.rule, snakemake.log[0]) as log:
    table = snakemake.wildcards.table.upper()
    events = EventLog.from_frame(pd.read_parquet(snakemake.input.events), table)
    settings = Settings(**snakemake.params.settings)
    seed = snakemake.params.seed
    attack = membership_attack(
        events,
        pd.read_parquet(snakemake.input.release),
        lambda half: fit_release(half, settings, seed)[0],
        seed,
    )
    write_json({"table": table, **attack}, snakemake.output.attack)
    log.info(
        "%s: verbatim-unique share %s, membership advantage %s",
        table,
        percent(attack["release"]["verbatim_unique"]),
        percent(attack["advantage"]),
    )
