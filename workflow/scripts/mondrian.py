"""Snakemake adapter: Mondrian feature targets per duration class."""

from mimic_deid.steps import run
from mimic_deid.steps.deid import mondrian_step

run(
    snakemake,
    mondrian_step,
    series_path=snakemake.input.series,
    classes_path=snakemake.input.classes,
    features=dict(snakemake.params.features),
    fk=int(snakemake.wildcards.fk),
    heuristic=snakemake.wildcards.heuristic,
    targets_out=snakemake.output.targets,
    summary_out=snakemake.output.summary,
)
