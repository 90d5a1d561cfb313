"""Snakemake adapter: one row per sweep point."""

from mimic_deid.steps import run
from mimic_deid.steps.report import sweep_summary_step

run(
    snakemake,
    sweep_summary_step,
    points=list(snakemake.params.points),
    inputs={k: list(v) for k, v in snakemake.input.items()},
    csv_out=snakemake.output.csv,
    md_out=snakemake.output.md,
)
