"""Snakemake adapter: one row per point of the genetic tuning grid."""

from mimic_deid.steps import run
from mimic_deid.steps.report import tuning_grid_step

run(
    snakemake,
    tuning_grid_step,
    labels=list(snakemake.params.labels),
    tables=list(snakemake.input.tables),
    summary_out=snakemake.output.summary,
)
