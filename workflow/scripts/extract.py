"""Snakemake adapter: extract the raw artefacts from the configured source.

The PostgreSQL DSN is read from the config here rather than passed as a rule parameter, so it
never lands in Snakemake's job metadata; prefer ~/.pgpass or PGPASSWORD for passwords.
"""

from mimic_deid.steps import run
from mimic_deid.steps.source import extract_step

source = snakemake.config["source"]
run(
    snakemake,
    extract_step,
    out_dir=snakemake.output[0],
    kind=snakemake.params.kind,
    csv_path=snakemake.input.get("source_dir", snakemake.params.csv_path),
    dsn=source.get("postgres", {}).get("dsn", ""),
    schema=snakemake.params.schema,
    variables_path=snakemake.input.variables,
    event_buckets=snakemake.params.event_buckets,
    chunk_rows=snakemake.params.chunk_rows,
)
