"""Rule codes_check: the claims of the codes stage's public outputs (C1-C3), and their verdict
(the run stops on a refusal only with config `strict: true`)."""

import pandas as pd

from mimic_deid.codes import ALIGNMENTS, check_codes_outputs
from mimic_deid.core.atomic import read_json, write_json
from mimic_deid.core.logs import run_stage

with run_stage(snakemake.rule, snakemake.log[0]):
    result = check_codes_outputs(
        read_json(snakemake.input.audit),
        pd.read_csv(snakemake.input.gccens),
        pd.read_csv(snakemake.input.lda),
        read_json(snakemake.input.lda_info),
        snakemake.params.codes,
        ALIGNMENTS,
        strict=bool(snakemake.params.strict),
    )
    write_json(result, snakemake.output.check)
