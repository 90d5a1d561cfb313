"""Rule privacy_baseline: disagreement of the original series, per duration class."""

import pandas as pd

from mimic_deid.core.atomic import write_parquet
from mimic_deid.core.logs import run_stage
from mimic_deid.deid import class_arrays
from mimic_deid.evaluate import baseline_disagreement

with run_stage(snakemake.rule, snakemake.log[0]):
    classes, dims = class_arrays(
        pd.read_parquet(snakemake.input.series), pd.read_parquet(snakemake.input.classes)
    )
    per_series, summary = baseline_disagreement(
        classes,
        dims,
        dict(snakemake.params.features),
        snakemake.params.standardise,
        block_rows=snakemake.params.block_rows,
        series_distance=snakemake.params.series_distance,
        dtw_window=snakemake.params.dtw_window,
        seed=snakemake.params.seed,
        max_targets=snakemake.params.max_targets,
    )
    write_parquet(per_series, snakemake.output.per_series)
    write_parquet(summary, snakemake.output.summary)
