"""Snakemake adapter: constraint optimisation towards the feature targets."""

from mimic_deid.steps import run
from mimic_deid.steps.deid import optimise_step

run(
    snakemake,
    optimise_step,
    series_path=snakemake.input.series,
    classes_path=snakemake.input.classes,
    targets_path=snakemake.input.targets,
    features=dict(snakemake.params.features),
    optimizer=snakemake.wildcards.opt,
    seed=snakemake.params.seed,
    perturbed_out=snakemake.output.perturbed,
    per_series_out=snakemake.output.per_series,
    summary_out=snakemake.output.summary,
    threads=snakemake.threads,
)
