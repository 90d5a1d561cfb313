"""Rule series: the hourly series of both releases (one pass), each with its split."""

import os

from mimic_deid.core.memory import COMPACT_POOL_ENV

# Before pandas/pyarrow load: Arrow reads its memory pool from the environment once
os.environ.update(COMPACT_POOL_ENV)

from pathlib import Path

import pandas as pd

from mimic_deid.core.atomic import scratch_dir, write_json, write_parquet
from mimic_deid.core.logs import run_stage
from mimic_deid.core.threads import limit_threads
from mimic_deid.pipeline.series import build_releases
from mimic_deid.pipeline.split import add_splits
from mimic_deid.pipeline.variables import load_variables

# The spooled series are private: they live next to the outputs (a killed job's spool is
# removed by the next run, as every temporary).
spool_path = Path(snakemake.output.series[0]).parents[1] / "series-spool"
with (
    run_stage(snakemake.rule, snakemake.log[0]) as log,
    limit_threads(snakemake.threads),
    scratch_dir(spool_path) as spool,
):
    releases = build_releases(
        snakemake.input.raw,
        pd.read_parquet(snakemake.input.stays),
        load_variables(snakemake.input.variables),
        spool,
        ihm_hours=snakemake.params.ihm_hours,
        releases=tuple(snakemake.params.releases),
        threads=snakemake.threads,
    )
    for i, release in enumerate(snakemake.params.releases):
        series, meta, stats = releases.pop(release)
        meta = add_splits(meta, dict(snakemake.params.split), snakemake.params.seed)
        log.info("%s splits: %s", release, meta["split"].value_counts().to_dict())
        series.write(snakemake.output.series[i])
        write_parquet(meta, snakemake.output.meta[i])
        write_json(stats, snakemake.output.cleaning[i])
