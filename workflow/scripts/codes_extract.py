"""Rule codes_extract: DIAGNOSES_ICD from the source with each admission's age (private)."""

from pathlib import Path

import pandas as pd

from mimic_deid.atomic import write_json, write_parquet
from mimic_deid.codes import diagnoses_with_ages
from mimic_deid.logs import run_stage
from mimic_deid.sources import open_source

source = snakemake.config["source"]
raw = Path(snakemake.input.raw)
with run_stage(snakemake.rule, snakemake.log[0]):
    reader = open_source(
        source["kind"],
        csv_path=snakemake.input.get("source_dir", source["csv"]["path"]),
        dsn=source["postgres"]["dsn"],
        schema=source["postgres"]["schema"],
    )
    diag, counts = diagnoses_with_ages(
        reader.read_table("diagnoses_icd"),
        pd.read_parquet(raw / "admissions.parquet"),
        pd.read_parquet(raw / "patients.parquet"),
    )
    counts["dictionary_codes"] = int(len(reader.read_table("d_icd_diagnoses")))
    write_parquet(diag, snakemake.output.diagnoses)
    write_json(counts, snakemake.output.counts)
