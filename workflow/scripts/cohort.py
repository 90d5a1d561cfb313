"""Rule cohort: the benchmark cohort rules, the mortality label and the stays' demographics."""

from pathlib import Path

import pandas as pd

from mimic_deid.core.atomic import write_json, write_parquet
from mimic_deid.core.logs import run_stage
from mimic_deid.pipeline.cohort import build_cohort, stay_demographics

raw = Path(snakemake.input.raw)
min_age = snakemake.params.min_age
with run_stage(snakemake.rule, snakemake.log[0]):
    admissions = pd.read_parquet(raw / "admissions.parquet")
    patients = pd.read_parquet(raw / "patients.parquet")
    stays, counts = build_cohort(
        pd.read_parquet(raw / "icustays.parquet"), admissions, patients, min_age=min_age
    )
    write_parquet(stays, snakemake.output.stays)
    write_parquet(stay_demographics(stays, admissions, patients), snakemake.output.demographics)
    write_json({"min_age": min_age, "rules": counts}, snakemake.output.counts)
