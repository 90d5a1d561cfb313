"""Rule extract: the raw artefacts (stays tables and configured events) from the source.

The PostgreSQL DSN is read from the config here rather than passed as a rule parameter, so it
never lands in Snakemake's job metadata; a password never comes from the config (refused at
start-up) but from libpq: PGPASSWORD, ~/.pgpass or a service file.
"""

import os

from mimic_deid.core.memory import COMPACT_POOL_ENV

# Before pandas/pyarrow load: Arrow reads its memory pool from the environment once
os.environ.update(COMPACT_POOL_ENV)

from mimic_deid.core.logs import run_stage
from mimic_deid.core.threads import limit_threads
from mimic_deid.pipeline.variables import configured_itemids, load_variables
from mimic_deid.sources import extract_raw, open_configured_source

source = snakemake.config["source"]
with run_stage(snakemake.rule, snakemake.log[0]), limit_threads(snakemake.threads):
    reader = open_configured_source(source, snakemake.input.get("source_dir", ""))
    extract_raw(
        reader,
        snakemake.output[0],
        itemids=configured_itemids(load_variables(snakemake.input.variables)),
        event_buckets=source["event_buckets"],
        chunk_rows=source["chunk_rows"],
        empty_tables=source["empty_tables"],
    )
