"""Rule tabular_demographics: the seed 003 demographics table with {procedures} procedures."""

import pandas as pd

from mimic_deid.core.atomic import write_parquet
from mimic_deid.core.logs import get_logger, run_stage
from mimic_deid.tabular import demographics_table

p = snakemake.params
with run_stage(snakemake.rule, snakemake.log[0]):
    n = int(snakemake.wildcards.procedures)
    table = demographics_table(
        pd.read_parquet(snakemake.input.patients),
        pd.read_parquet(snakemake.input.admissions),
        pd.read_parquet(snakemake.input.procedures),
        n,
        p.seed,
        yob_mean=p.yob_mean,
        yob_sd=p.yob_sd,
        missing=p.missing,
    )
    write_parquet(table, snakemake.output[0])
    get_logger(__name__).info("demographics with %d procedures: %d rows", n, len(table))
