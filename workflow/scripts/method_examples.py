"""Rule method_examples: the worst and the median series of a release method.

Only the two series shown are read from the original and the perturbed tables (a filter on
the Parquet files).
"""

import pandas as pd

from mimic_deid.core.atomic import read_rows, write_json
from mimic_deid.core.logs import run_stage
from mimic_deid.deid import KEY
from mimic_deid.deid.examples import example_keys, examples_to_json, method_examples

with run_stage(snakemake.rule, snakemake.log[0]):
    targets = pd.read_parquet(snakemake.input.targets)
    per_series = pd.read_parquet(snakemake.input.per_series)
    features = dict(snakemake.params.features)
    shown = example_keys(targets, per_series, features)
    examples = method_examples(
        read_rows(snakemake.input.series, KEY, shown),
        pd.read_parquet(snakemake.input.classes),
        read_rows(snakemake.input.perturbed, KEY, shown),
        targets,
        per_series,
        features,
    )
    write_json(examples_to_json(examples), snakemake.output.examples)
