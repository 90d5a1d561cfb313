"""Rule tabular_check: the claims of the staged OLA release, and its verdict (the run stops on
a refusal only with config `strict: true`)."""

import pandas as pd

from mimic_deid import tabular
from mimic_deid.core.atomic import read_json, write_json
from mimic_deid.core.logs import run_stage

p = snakemake.params
with run_stage(snakemake.rule, snakemake.log[0]):
    result = tabular.check_tabular_release(
        pd.read_parquet(snakemake.input.release),
        read_json(snakemake.input.summary),
        pd.read_parquet(snakemake.input.demographics),
        tabular.load_hierarchies(snakemake.input.hierarchies),
        [*tabular.DEMOGRAPHIC_QIS, *tabular.procedure_columns(p.procedures)],
        k=int(p.release["k"]),
        max_sup=float(p.release["max_sup"]),
        strict=bool(p.strict),
    )
    write_json(result, snakemake.output.check)
