"""Rule tuning_table: seed Tables 6.1/6.2 for one release method on the tuning series."""

import pandas as pd

from mimic_deid.core.atomic import write_csv
from mimic_deid.core.logs import run_stage
from mimic_deid.deid import class_arrays, tuning_table

with run_stage(snakemake.rule, snakemake.log[0]):
    classes, dims = class_arrays(
        pd.read_parquet(snakemake.input.series), pd.read_parquet(snakemake.input.classes)
    )
    table = tuning_table(
        classes,
        dims,
        dict(snakemake.params.features),
        label=snakemake.wildcards.method,
        seed=snakemake.params.seed,
        series_per_class=snakemake.params.series_per_class,
        eligibility=snakemake.params.eligibility,
    )
    write_csv(table, snakemake.output.table)
