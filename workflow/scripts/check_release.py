"""Snakemake adapter: verify every privacy claim of a release; fail the run otherwise."""

from mimic_deid.steps import run
from mimic_deid.steps.deid import check_step

run(
    snakemake,
    check_step,
    series_path=snakemake.input.series,
    index_path=snakemake.input.index,
    classes_path=snakemake.input.classes,
    targets_path=snakemake.input.targets,
    pseudonyms_path=snakemake.input.pseudonyms,
    dk=int(snakemake.wildcards.dk),
    fk=int(snakemake.wildcards.fk),
    group_by_split=snakemake.params.group_by_split,
    check_out=snakemake.output.check,
)
