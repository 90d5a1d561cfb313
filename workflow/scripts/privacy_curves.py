"""Rule privacy_curves: every disagreement curve of the release's main class, for the report.

Only the main class's series are read, original and released (a filter on the Parquet files;
a key that no series has when there is no main class).
"""

import pandas as pd

from mimic_deid.core.atomic import write_table
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
    keys = main_class_keys(classes, length).tolist()
    pseudonyms = pd.read_parquet(snakemake.input.pseudonyms)
    names = pseudonyms.loc[pseudonyms[KEY].isin(keys), "pseudonym"].tolist()
    curves = main_class_curves(
        pd.read_parquet(snakemake.input.series, filters=[(KEY, "in", keys or [-1])]),
        classes,
        pd.read_parquet(
            snakemake.input.release_series, filters=[("pseudonym", "in", names or [""])]
        ),
        pseudonyms,
        length,
        dict(snakemake.params.features),
        snakemake.params.standardise,
        snakemake.params.series_distance,
        snakemake.params.dtw_window,
    )
    write_table(curves_table(curves), snakemake.output.curves)
