"""Snakemake adapter: hourly series of one release."""

from mimic_deid.steps import run
from mimic_deid.steps.series import series_step

run(
    snakemake,
    series_step,
    raw_dir=snakemake.input.raw,
    stays_path=snakemake.input.stays,
    variables_path=snakemake.input.variables,
    release=snakemake.wildcards.release,
    ihm_hours=snakemake.params.ihm_hours,
    split_fractions=dict(snakemake.params.split),
    seed=snakemake.params.seed,
    series_out=snakemake.output.series,
    meta_out=snakemake.output.meta,
    cleaning_out=snakemake.output.cleaning,
)
