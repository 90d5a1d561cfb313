"""Snakemake adapter: disagreement and linkage attack of a release."""

from mimic_deid.steps import run
from mimic_deid.steps.evaluate import privacy_step

run(
    snakemake,
    privacy_step,
    series_path=snakemake.input.series,
    classes_path=snakemake.input.classes,
    release_series_path=snakemake.input.release_series,
    pseudonyms_path=snakemake.input.pseudonyms,
    features=dict(snakemake.params.features),
    standardise=snakemake.params.standardise,
    linkage_errors=list(snakemake.params.linkage_errors),
    seed=snakemake.params.seed,
    per_series_out=snakemake.output.per_series,
    summary_out=snakemake.output.summary,
    linkage_out=snakemake.output.linkage,
)
