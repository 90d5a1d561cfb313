"""Rule check_release: verify every privacy claim of a release; fail the run otherwise."""

import pandas as pd

from mimic_deid.atomic import write_json
from mimic_deid.deid import check_sweep_point
from mimic_deid.logs import run_stage

with run_stage(snakemake.rule, snakemake.log[0]):
    result = check_sweep_point(
        *(pd.read_parquet(p) for p in snakemake.input),
        dk=int(snakemake.wildcards.dk),
        fk=int(snakemake.wildcards.fk),
        group_by_split=snakemake.params.group_by_split,
        variables=list(snakemake.params.variables),
        labelled=snakemake.params.labelled,
        outcome_l=snakemake.params.outcome_l,
    )
    write_json(result, snakemake.output.check)
