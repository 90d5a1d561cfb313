"""Rule sequences_sweep: the grid of seed 004 §5 on one table, and Friedman tests."""

import pandas as pd

from mimic_deid.core.atomic import write_csv
from mimic_deid.core.logs import run_stage
from mimic_deid.sequences import EventLog, Settings, friedman_tests, run_sweep

with run_stage(snakemake.rule, snakemake.log[0]) as log:
    table = snakemake.wildcards.table.upper()
    events = EventLog.from_frame(pd.read_parquet(snakemake.input.events), table)
    sweep = run_sweep(
        events,
        Settings(**snakemake.params.settings),
        dict(snakemake.params.grid),
        snakemake.params.seed,
        log,
    )
    write_csv(sweep, snakemake.output.sweep)
    write_csv(friedman_tests(sweep), snakemake.output.friedman)
