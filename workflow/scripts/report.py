"""Snakemake adapter: the report's figures, tables and index page."""

from mimic_deid.steps import run
from mimic_deid.steps.report import report_step

run(
    snakemake,
    report_step,
    inputs=dict(snakemake.input.items()),
    point=dict(snakemake.params.point),
    genetic_point=snakemake.params.genetic_point,
    features=dict(snakemake.params.features),
    index_out=snakemake.output.index,
    figures_out=list(snakemake.output.figures),
    tables_out=list(snakemake.output.tables),
)
