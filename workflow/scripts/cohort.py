"""Rule cohort: the benchmark cohort rules and the mortality label."""

from pathlib import Path

import pandas as pd

from mimic_deid.atomic import write_json, write_parquet
from mimic_deid.cohort import build_cohort
from mimic_deid.logs import run_stage

raw = Path(snakemake.input.raw)
min_age = snakemake.params.min_age
with run_stage(snakemake.rule, snakemake.log[0]):
    stays, counts = build_cohort(
        pd.read_parquet(raw / "icustays.parquet"),
        pd.read_parquet(raw / "admissions.parquet"),
        pd.read_parquet(raw / "patients.parquet"),
        min_age=min_age,
    )
    write_parquet(stays, snakemake.output.stays)
    write_json({"min_age": min_age, "rules": counts}, snakemake.output.counts)
