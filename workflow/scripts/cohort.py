"""Snakemake adapter: build the benchmark cohort."""

from mimic_deid.steps import run
from mimic_deid.steps.cohort import cohort_step

run(
    snakemake,
    cohort_step,
    raw_dir=snakemake.input.raw,
    stays_out=snakemake.output.stays,
    counts_out=snakemake.output.counts,
    min_age=snakemake.params.min_age,
)
