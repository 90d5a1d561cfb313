"""Rule codes_lda: LDA (MDAV with Baseline / A-GS) on the cohort's (ICD, age) trajectories."""

import pandas as pd

from mimic_deid.codes import lda_table, sample_ids
from mimic_deid.core.atomic import write_csv, write_json
from mimic_deid.core.logs import run_stage
from mimic_deid.core.threads import limit_threads

cfg = snakemake.params.codes
lda = cfg["lda"]
# The job's threads are worker processes (map_tasks); this process keeps one native thread, as
# before issue 47 (BLAS threads beside the workers would only contend for the same cores).
with run_stage(snakemake.rule, snakemake.log[0]), limit_threads(1):
    diag = pd.read_parquet(snakemake.input.diagnoses)
    cohort = sample_ids(pd.read_parquet(snakemake.input.cohort), cfg["unit"])
    table, info = lda_table(
        diag, cohort, cfg["unit"], cfg["level"], lda["k"], lda["w_icd"], lda["w_age"],
        lda["age_min"], lda["age_intervals"], lda["max_trajectories"], lda["support"],
        snakemake.params.seed, max_query_pairs=lda["max_query_pairs"], codes=lda["codes"],
        threads=snakemake.threads,
    )  # fmt: skip
    write_csv(table, snakemake.output.table)
    write_json(info, snakemake.output.info)
