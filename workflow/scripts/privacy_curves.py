"""Rule privacy_curves: every disagreement curve of the release's main class, for the report."""

import pandas as pd

from mimic_deid.core.atomic import write_table
from mimic_deid.core.logs import run_stage
from mimic_deid.evaluate.curves import (
    MAIN_CLASS_HOURS,
    closest_class,
    curves_table,
    main_class_curves,
)

with run_stage(snakemake.rule, snakemake.log[0]):
    curves = main_class_curves(
        pd.read_parquet(snakemake.input.series),
        pd.read_parquet(snakemake.input.classes),
        pd.read_parquet(snakemake.input.release_series),
        pd.read_parquet(snakemake.input.pseudonyms),
        closest_class(pd.read_parquet(snakemake.input.summary), MAIN_CLASS_HOURS),
        dict(snakemake.params.features),
        snakemake.params.standardise,
        snakemake.params.series_distance,
        snakemake.params.dtw_window,
    )
    write_table(curves_table(curves), snakemake.output.curves)
