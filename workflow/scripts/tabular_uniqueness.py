"""Rule tabular_uniqueness: seed 003 §3.1 (R year-of-birth draws) and §3.2 (procedures)."""

import pandas as pd

from mimic_deid.core.atomic import write_json
from mimic_deid.core.logs import run_stage
from mimic_deid.tabular import uniqueness_report

p = snakemake.params
with run_stage(snakemake.rule, snakemake.log[0]):
    report = uniqueness_report(
        pd.read_parquet(snakemake.input.demographics),
        # tabular.procedures: 0 reads no PROCEDURES_ICD
        pd.read_parquet(snakemake.input.procedures) if p.procedures else None,
        p.draws,
        p.seed,
        yob_mean=p.yob_mean,
        yob_sd=p.yob_sd,
    )
    write_json(report, snakemake.output[0])
