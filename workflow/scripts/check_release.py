"""Rule check_release: verify every privacy claim of a staged release and write its verdict
(the run stops on a refusal only with config `strict: true`)."""

import pandas as pd

from mimic_deid.core.atomic import read_json, write_json
from mimic_deid.core.logs import run_stage
from mimic_deid.deid import PlausibleValues, check_sweep_point, encode_demographics
from mimic_deid.deid.hierarchy import load_hierarchies
from mimic_deid.pipeline.variables import load_variables

with run_stage(snakemake.rule, snakemake.log[0]):
    columns = list(snakemake.params.demographics)
    tables = ("series", "index", "classes", "targets", "pseudonyms", "per_series")
    read = {name: pd.read_parquet(getattr(snakemake.input, name)) for name in tables}
    variables = list(snakemake.params.variables)
    result = check_sweep_point(
        *(read[name] for name in tables[:5]),
        dk=int(snakemake.wildcards.dk),
        fk=int(snakemake.wildcards.fk),
        group_by_split=snakemake.params.group_by_split,
        variables=variables,
        labelled=snakemake.params.labelled,
        outcome_l=snakemake.params.outcome_l,
        method=snakemake.wildcards.method,
        per_series=read["per_series"],
        linkage=read_json(snakemake.input.linkage),
        strict=bool(snakemake.params.strict),
        labels=pd.read_parquet(snakemake.input.meta) if snakemake.params.labelled else None,
        demographics=(
            encode_demographics(
                pd.read_parquet(snakemake.input.demographics),
                columns,
                load_hierarchies(snakemake.input.hierarchies),
            ).publishable()
            if columns
            else None
        ),
        plausible=PlausibleValues.from_variables(
            load_variables(snakemake.input.variables), variables
        ),
    )
    write_json(result, snakemake.output.check)
