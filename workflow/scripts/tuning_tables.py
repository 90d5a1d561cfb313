"""Rule tuning_tables: seed Tables 6.1/6.2 of every ad-hoc and genetic point in one table,
and seed §6.2's comparison of the fitness variants beside the seed's figures."""

import pandas as pd

from mimic_deid.core.atomic import write_csv
from mimic_deid.core.logs import run_stage
from mimic_deid.deid import fitness_comparison, tuning_tables_summary

with run_stage(snakemake.rule, snakemake.log[0]):
    summary = tuning_tables_summary(
        list(snakemake.params.labels), [pd.read_csv(p) for p in snakemake.input.tables]
    )
    write_csv(summary, snakemake.output.tables)
    write_csv(fitness_comparison(summary), snakemake.output.fitness)
