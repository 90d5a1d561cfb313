"""Snakemake adapter: duration k-classes."""

from mimic_deid.steps import run
from mimic_deid.steps.deid import duration_step

run(
    snakemake,
    duration_step,
    meta_path=snakemake.input.meta,
    dk=int(snakemake.wildcards.dk),
    group_by_split=snakemake.params.group_by_split,
    classes_out=snakemake.output.classes,
    summary_out=snakemake.output.summary,
)
