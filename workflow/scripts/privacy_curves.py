"""Rule privacy_curves: every disagreement curve of the release's main class, for the report.

Only the main class's series are read, original and released (a filter on the Parquet files).
"""

import pandas as pd

from mimic_deid.core.atomic import read_rows, write_table
from mimic_deid.core.logs import run_stage
from mimic_deid.deid import KEY
from mimic_deid.evaluate.curves import (
    MAIN_CLASS_HOURS,
    closest_class,
    curves_table,
    main_class_curves,
    main_class_keys,
)

with run_stage(snakemake.rule, snakemake.log[0]):
    classes = pd.read_parquet(snakemake.input.classes)
    length = closest_class(pd.read_parquet(snakemake.input.summary), MAIN_CLASS_HOURS)
    keys = main_class_keys(classes, length)
    pseudonyms = pd.read_parquet(snakemake.input.pseudonyms)
    names = pseudonyms.loc[pseudonyms[KEY].isin(keys), "pseudonym"]
    curves = main_class_curves(
        read_rows(snakemake.input.series, KEY, keys),
        classes,
        read_rows(snakemake.input.release_series, "pseudonym", names),
        pseudonyms,
        length,
        dict(snakemake.params.features),
        snakemake.params.standardise,
        snakemake.params.series_distance,
        snakemake.params.dtw_window,
    )
    write_table(curves_table(curves), snakemake.output.curves)
