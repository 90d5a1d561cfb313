"""Rule sequences_release: one synthetic release of a table and its seed 004 measures.

Private: the generated records with times. Public: states only (synthetic object, section and
position numbers, no times) and the summary.
"""

import pandas as pd

from mimic_deid.core.atomic import write_json, write_parquet
from mimic_deid.core.logs import run_stage
from mimic_deid.sequences import EventLog, Settings, fit_release

with run_stage(snakemake.rule, snakemake.log[0]) as log:
    table = snakemake.wildcards.table.upper()
    events = EventLog.from_frame(pd.read_parquet(snakemake.input.events), table)
    generated, summary = fit_release(
        events, Settings(**snakemake.params.settings), snakemake.params.seed
    )
    write_parquet(generated, snakemake.output.generated)
    write_parquet(generated.drop(columns=["time", "cluster"]), snakemake.output.release)
    write_json(summary, snakemake.output.summary)
    log.info(
        "%s: %d records generated for %d objects",
        table,
        len(generated),
        summary["generated_objects"],
    )
