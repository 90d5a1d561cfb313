"""Rule codes_extract: DIAGNOSES_ICD from the source with each admission's age (private).

Read through the configured source (synthetic copy, CSV or PostgreSQL), typed, key-checked and
sorted as the raw extraction does its small tables; the DSN is read from the config here.
"""

from pathlib import Path

import pandas as pd

from mimic_deid.codes import read_source_tables
from mimic_deid.core.atomic import write_json, write_parquet
from mimic_deid.core.logs import run_stage
from mimic_deid.sources import open_configured_source

raw = Path(snakemake.input.raw)
with run_stage(snakemake.rule, snakemake.log[0]):
    reader = open_configured_source(
        snakemake.config["source"], snakemake.input.get("source_dir", "")
    )
    diag, counts = read_source_tables(
        reader,
        pd.read_parquet(raw / "admissions.parquet"),
        pd.read_parquet(raw / "patients.parquet"),
    )
    write_parquet(diag, snakemake.output.diagnoses)
    write_json(counts, snakemake.output.counts)
