"""Rule utility: per task (mortality, long stay) the data owner's baseline and the four
train/test trust settings, the original side shipped and gap-filled."""

import pandas as pd

from mimic_deid.core.atomic import write_csv
from mimic_deid.core.logs import run_stage
from mimic_deid.evaluate import utility_table

with run_stage(snakemake.rule, snakemake.log[0]):
    table = utility_table(
        pd.read_parquet(snakemake.input.series),
        pd.read_parquet(snakemake.input.meta),
        pd.read_parquet(snakemake.input.release_series),
        pd.read_parquet(snakemake.input.release_index),
        Cs=snakemake.params.C,
        n_bootstrap=snakemake.params.bootstrap,
        seed=snakemake.params.seed,
    )
    write_csv(table, snakemake.output.table)
