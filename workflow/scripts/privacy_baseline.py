"""Snakemake adapter: disagreement of the original series (pre-release baseline)."""

from mimic_deid.steps import run
from mimic_deid.steps.evaluate import privacy_baseline_step

run(
    snakemake,
    privacy_baseline_step,
    series_path=snakemake.input.series,
    classes_path=snakemake.input.classes,
    features=dict(snakemake.params.features),
    standardise=snakemake.params.standardise,
    per_series_out=snakemake.output.per_series,
    summary_out=snakemake.output.summary,
)
