"""Rule sequences_check: the privacy claims of a staged sequence release, and its verdict
(the run stops on a refusal only with config `strict: true`)."""

import pandas as pd

from mimic_deid.core.atomic import read_json, write_json
from mimic_deid.core.logs import run_stage
from mimic_deid.sequences import check_sequence_release

with run_stage(snakemake.rule, snakemake.log[0]):
    result = check_sequence_release(
        pd.read_parquet(snakemake.input.release),
        read_json(snakemake.input.attack),
        table=f"sequences/{snakemake.wildcards.table}/release",
        max_verbatim_unique=float(snakemake.params.bounds["max_verbatim_unique"]),
        max_advantage=float(snakemake.params.bounds["max_advantage"]),
        strict=bool(snakemake.params.strict),
    )
    write_json(result, snakemake.output.check)
