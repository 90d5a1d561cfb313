"""Rule codes_extract: DIAGNOSES_ICD from the source with each admission's age (private).

The tables are typed, key-checked and sorted as the raw extraction does its small tables.
"""

from pathlib import Path

import pandas as pd

from mimic_deid.codes import diagnoses_with_ages
from mimic_deid.core.atomic import write_json, write_parquet
from mimic_deid.core.logs import run_stage
from mimic_deid.sources import open_source
from mimic_deid.sources.extract import small_table_to_arrow
from mimic_deid.sources.tables import CODE_TABLES


def read(reader, name):
    return small_table_to_arrow(
        reader.read_table(name), CODE_TABLES[name], repr(reader)
    ).to_pandas()


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
        read(reader, "diagnoses_icd"),
        pd.read_parquet(raw / "admissions.parquet"),
        pd.read_parquet(raw / "patients.parquet"),
    )
    counts["dictionary_codes"] = int(len(read(reader, "d_icd_diagnoses")))
    write_parquet(diag, snakemake.output.diagnoses)
    write_json(counts, snakemake.output.counts)
