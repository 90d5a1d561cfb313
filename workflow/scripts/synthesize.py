"""Snakemake adapter: generate the synthetic MIMIC-III copy."""

from mimic_deid.steps import run
from mimic_deid.steps.source import synthesize_step

run(
    snakemake,
    synthesize_step,
    out_dir=snakemake.output[0],
    subjects=int(snakemake.wildcards.subjects),
    seed=int(snakemake.wildcards.seed),
)
