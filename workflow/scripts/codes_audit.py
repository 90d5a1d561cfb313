"""Rule codes_audit: distinguishability and k-map of the cohort's codes (public aggregates)."""

import pandas as pd

from mimic_deid.codes import plot_dis_cdf, restrict_codes, risk_audit, sample_ids
from mimic_deid.core.atomic import write_json
from mimic_deid.core.logs import run_stage

cfg = snakemake.params.codes
with run_stage(snakemake.rule, snakemake.log[0]):
    diag = restrict_codes(pd.read_parquet(snakemake.input.diagnoses), cfg["codes"], cfg["level"])
    cohort = sample_ids(pd.read_parquet(snakemake.input.cohort), cfg["unit"])
    summary, dis = risk_audit(diag, cohort, cfg["unit"], cfg["level"], cfg["k"])
    summary["codes_kept"] = list(cfg["codes"]) or "all"
    write_json(summary, snakemake.output.audit)
    plot_dis_cdf(dis, cfg["k"], snakemake.output.cdf)
