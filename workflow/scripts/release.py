"""Snakemake adapter: the pseudonymous release."""

from mimic_deid.steps import run
from mimic_deid.steps.deid import release_step

run(
    snakemake,
    release_step,
    perturbed_path=snakemake.input.perturbed,
    classes_path=snakemake.input.classes,
    meta_path=snakemake.input.meta,
    seed=snakemake.params.seed,
    salt=snakemake.output.series,
    series_out=snakemake.output.series,
    index_out=snakemake.output.index,
    pseudonyms_out=snakemake.output.pseudonyms,
)
