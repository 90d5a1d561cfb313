"""Rule tuning_grid: one row per point of the seed's genetic tuning grid."""

import pandas as pd

from mimic_deid.atomic import write_csv
from mimic_deid.deid import tuning_grid_summary
from mimic_deid.logs import run_stage

with run_stage(snakemake.rule, snakemake.log[0]):
    summary = tuning_grid_summary(
        list(snakemake.params.labels), [pd.read_csv(p) for p in snakemake.input.tables]
    )
    write_csv(summary, snakemake.output.summary)
