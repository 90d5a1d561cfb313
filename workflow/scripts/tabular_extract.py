"""Rule tabular_extract: PATIENTS, ADMISSIONS (demographic columns) and PROCEDURES_ICD.

Read through the configured source (synthetic copy, CSV or PostgreSQL) with the same readers
as the extraction; the DSN is read from the config here, never passed as a rule parameter.
"""

from mimic_deid.core.atomic import write_parquet
from mimic_deid.core.logs import get_logger, run_stage
from mimic_deid.sources import open_configured_source
from mimic_deid.tabular import read_source_tables

source = snakemake.config["source"]
with run_stage(snakemake.rule, snakemake.log[0]):
    reader = open_configured_source(source, snakemake.input.get("source_dir", ""))
    frames = read_source_tables(reader, procedures=snakemake.params.procedures)
    for name, frame in frames.items():
        write_parquet(frame, snakemake.output[name])
    get_logger(__name__).info(
        "tabular extraction: %s", {name: len(frame) for name, frame in frames.items()}
    )
