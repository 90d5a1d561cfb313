"""Rule method_examples: the worst and the median series of a release method."""

import pandas as pd

from mimic_deid.core.atomic import write_json
from mimic_deid.core.logs import run_stage
from mimic_deid.deid.examples import examples_to_json, method_examples

with run_stage(snakemake.rule, snakemake.log[0]):
    examples = method_examples(
        pd.read_parquet(snakemake.input.series),
        pd.read_parquet(snakemake.input.classes),
        pd.read_parquet(snakemake.input.perturbed),
        pd.read_parquet(snakemake.input.targets),
        pd.read_parquet(snakemake.input.per_series),
        dict(snakemake.params.features),
    )
    write_json(examples_to_json(examples), snakemake.output.examples)
