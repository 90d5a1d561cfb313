"""Rule codes_gccens: CUL statistics of GCCens in the layout of seed Tables 1 and 2."""

import pandas as pd

from mimic_deid.codes import gccens_table, sample_ids
from mimic_deid.core.atomic import write_csv
from mimic_deid.core.logs import run_stage

cfg = snakemake.params.codes
g = cfg["gccens"]
with run_stage(snakemake.rule, snakemake.log[0]):
    codes = g["codes"] or cfg["codes"]
    parameter = "codes/gccens/codes" if g["codes"] else "codes/codes"
    diag = pd.read_parquet(snakemake.input.diagnoses)
    cohort = sample_ids(pd.read_parquet(snakemake.input.cohort), cfg["unit"])
    table = gccens_table(
        diag, cohort, cfg["unit"], cfg["level"], g["k"], g["cap"], g["caps"], g["k_caps"],
        g["per_code"], codes=codes, parameter=parameter,
    )  # fmt: skip
    write_csv(table, snakemake.output[0])
