"""Snakemake adapter: the seed's optimiser tables (6.1 ad-hoc, 6.2 genetic)."""

from mimic_deid.steps import run
from mimic_deid.steps.deid import tuning_step

run(
    snakemake,
    tuning_step,
    series_path=snakemake.input.series,
    classes_path=snakemake.input.classes,
    features=dict(snakemake.params.features),
    optimizer=snakemake.wildcards.opt,
    seed=snakemake.params.seed,
    table_out=snakemake.output.table,
)
