"""Rule tuning_grid: one row per point of the seed's genetic tuning grid."""

import pandas as pd

from mimic_deid.core.atomic import write_csv
from mimic_deid.core.logs import run_stage
from mimic_deid.deid import tuning_grid_summary

with run_stage(snakemake.rule, snakemake.log[0]):
    summary = tuning_grid_summary(
        list(snakemake.params.labels), [pd.read_csv(p) for p in snakemake.input.tables]
    )
    write_csv(summary, snakemake.output.summary)
