"""Rule tabular_uniqueness: seed 003 §3.1 (R year-of-birth draws) and §3.2 (procedures)."""

import pandas as pd

from mimic_deid.atomic import write_json
from mimic_deid.logs import run_stage
from mimic_deid.seeding import derive_rng
from mimic_deid.tabular import demographic_uniqueness, procedure_uniqueness

p = snakemake.params
with run_stage(snakemake.rule, snakemake.log[0]):
    report = {
        "demographics": demographic_uniqueness(
            pd.read_parquet(snakemake.input.demographics),
            p.draws,
            lambda r: derive_rng(p.seed, "tabular", "uniqueness", r),
            yob_mean=p.yob_mean,
            yob_sd=p.yob_sd,
        ),
        "procedures": (
            procedure_uniqueness(pd.read_parquet(snakemake.input.procedures))
            if p.procedures
            else {}  # tabular.procedures: 0 reads no PROCEDURES_ICD
        ),
    }
    write_json(report, snakemake.output[0])
