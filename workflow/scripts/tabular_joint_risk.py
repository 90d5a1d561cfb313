"""Rule tabular_joint_risk: the stays release's duration classes joined to the demographics."""

import pandas as pd

from mimic_deid.core.atomic import write_csv
from mimic_deid.core.logs import run_stage
from mimic_deid.tabular import joint_risk, load_hierarchies

rel = snakemake.params.release
with run_stage(snakemake.rule, snakemake.log[0]):
    table = joint_risk(
        pd.read_parquet(snakemake.input.duration),
        pd.read_parquet(snakemake.input.stays),
        pd.read_parquet(snakemake.input.demographics),
        load_hierarchies(snakemake.input.hierarchies),
        rel["k"],
        rel["max_sup"],
        rel["metric"],
        release_index=pd.read_parquet(snakemake.input.release_index),
        release_name=snakemake.params.release_name,
    )
    write_csv(table, snakemake.output[0])
