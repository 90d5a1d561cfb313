"""Rule sequences_extract: TRANSFERS, CPTEVENTS or the vital-sign SAX states as records
<object, time, state> (private)."""

import pandas as pd

from mimic_deid.core.atomic import write_parquet
from mimic_deid.core.logs import run_stage
from mimic_deid.sequences import cpt_events, transfer_events, vital_events
from mimic_deid.sources import open_source

READERS = {"transfers": transfer_events, "cptevents": cpt_events}
source = snakemake.config["source"]
with run_stage(snakemake.rule, snakemake.log[0]) as log:
    table = snakemake.wildcards.table
    if table == "vitals":
        vitals = snakemake.params.vitals
        series = pd.read_parquet(snakemake.input.series)
        ev = vital_events(series, vitals["variable"], vitals["level"])
    else:
        reader = open_source(
            source["kind"],
            csv_path=snakemake.input.get("source_dir", source["csv"]["path"]),
            dsn=source["postgres"]["dsn"],
            schema=source["postgres"]["schema"],
        )
        ev = READERS[table](reader.read_table(table), snakemake.params.missing_times)
    write_parquet(ev.to_frame(), snakemake.output.events)
    log.info(
        "%s: %d records of %d objects, %d states; dropped %d single-record objects, %d rows "
        "without a time, %d rows with a CHARTDATE and no TICKET_ID_SEQ",
        ev.table, len(ev.obj), ev.n_objects, len(ev.states),
        ev.dropped_short, ev.dropped_missing, ev.dropped_unticketed,
    )  # fmt: skip
