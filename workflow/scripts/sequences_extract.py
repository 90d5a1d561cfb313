"""Rule sequences_extract: TRANSFERS, CPTEVENTS or the vital-sign SAX states as records
<object, time, state> (private)."""

import pandas as pd

from mimic_deid.core.atomic import write_parquet
from mimic_deid.core.logs import run_stage
from mimic_deid.sequences import read_source_table, vital_events
from mimic_deid.sources import open_configured_source

with run_stage(snakemake.rule, snakemake.log[0]) as log:
    table = snakemake.wildcards.table
    if table == "vitals":
        vitals = snakemake.params.vitals
        series = pd.read_parquet(snakemake.input.series)
        ev = vital_events(series, vitals["variable"], vitals["level"])
    else:
        reader = open_configured_source(
            snakemake.config["source"], snakemake.input.get("source_dir", "")
        )
        ev = read_source_table(reader, table, snakemake.params.missing_times)
    write_parquet(ev.to_frame(), snakemake.output.events)
    log.info(
        "%s: %d records of %d objects, %d states; dropped %d single-record objects, %d rows "
        "without a time, %d rows with a CHARTDATE and no TICKET_ID_SEQ",
        ev.table, len(ev.obj), ev.n_objects, len(ev.states),
        ev.dropped_short, ev.dropped_missing, ev.dropped_unticketed,
    )  # fmt: skip
