"""Rule series: the hourly series of one release, with its train/validation/test split."""

import pandas as pd

from mimic_deid.atomic import write_json, write_parquet
from mimic_deid.logs import run_stage
from mimic_deid.series import build_release
from mimic_deid.split import add_splits
from mimic_deid.variables import load_variables

with run_stage(snakemake.rule, snakemake.log[0]) as log:
    series, meta, stats = build_release(
        snakemake.input.raw,
        pd.read_parquet(snakemake.input.stays),
        load_variables(snakemake.input.variables),
        snakemake.wildcards.release,
        ihm_hours=snakemake.params.ihm_hours,
    )
    meta = add_splits(meta, dict(snakemake.params.split), snakemake.params.seed)
    log.info("splits: %s", meta["split"].value_counts().to_dict())
    write_parquet(series, snakemake.output.series)
    write_parquet(meta, snakemake.output.meta)
    write_json(stats, snakemake.output.cleaning)
