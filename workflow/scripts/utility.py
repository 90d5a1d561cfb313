"""Snakemake adapter: mortality prediction under the four trust settings."""

from mimic_deid.steps import run
from mimic_deid.steps.evaluate import utility_step

run(
    snakemake,
    utility_step,
    series_path=snakemake.input.series,
    meta_path=snakemake.input.meta,
    release_series_path=snakemake.input.release_series,
    release_index_path=snakemake.input.release_index,
    Cs=list(snakemake.params.C),
    n_bootstrap=snakemake.params.bootstrap,
    seed=snakemake.params.seed,
    table_out=snakemake.output.table,
)
