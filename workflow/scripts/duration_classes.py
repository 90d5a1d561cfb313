"""Rule duration_classes: every series of a release in a duration class of >= dk series."""

import pandas as pd

from mimic_deid.core.atomic import write_json, write_parquet
from mimic_deid.core.logs import run_stage
from mimic_deid.deid import duration_classes
from mimic_deid.deid.duration_methods import duration_methods_table, records_lost_table
from mimic_deid.deid.sizes import require_drawable

with run_stage(snakemake.rule, snakemake.log[0]):
    meta = pd.read_parquet(snakemake.input.meta)
    classes, summary = duration_classes(
        meta,
        dk=int(snakemake.wildcards.dk),
        group_by_split=snakemake.params.group_by_split,
        outcome_l=snakemake.params.outcome_l,
        method=snakemake.params.method,
    )
    # a group too small is left out here and refused by the check; a stays release of no
    # series stops the run (the report draws it), naming the sizes and the fix
    require_drawable(classes, int(snakemake.wildcards.dk), snakemake.wildcards.release)
    write_parquet(classes, snakemake.output.classes)
    write_json(summary, snakemake.output.summary)
    # seed §6.1 for every duration method, and the hours each series loses (the report's)
    methods = duration_methods_table(
        classes["length"].to_numpy(),
        classes["class_length"].to_numpy(),
        int(snakemake.wildcards.dk),
        snakemake.params.method,
    )
    write_parquet(methods, snakemake.output.methods)
    write_parquet(records_lost_table(classes), snakemake.output.records_lost)
