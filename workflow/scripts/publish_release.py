"""Rules publish_release, sequences_publish: copy a certified release to its public directory
with its card and data dictionary, or withhold it (refused.txt with the verdict, and the card).
The card's verdict decides (the check's, unless a pairing refuses the release)."""

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from mimic_deid.core.atomic import read_json
from mimic_deid.core.logs import run_stage
from mimic_deid.deid import publish_release, release_verdict
from mimic_deid.deid.dictionary import (
    dictionary_documents,
    release_dictionary,
    sequence_dictionary,
)
from mimic_deid.deid.hierarchy import load_hierarchies
from mimic_deid.pipeline.variables import load_variables

with run_stage(snakemake.rule, snakemake.log[0]):
    inputs = snakemake.input
    check = read_json(inputs.check)
    staged = {
        Path(getattr(inputs, name)).name: getattr(inputs, name) for name in snakemake.params.staged
    }
    card = getattr(inputs, "card", None)
    passed = release_verdict(check, card)["passed"]
    documents = None
    if passed and hasattr(inputs, "hierarchies"):  # a series release: its dictionary
        series = pq.ParquetFile(inputs.series)  # its columns and row count, not its values
        dictionary = release_dictionary(
            snakemake.wildcards.release,
            series.schema_arrow.empty_table().to_pandas(),
            pd.read_parquet(inputs.index),
            load_variables(inputs.variables),
            load_hierarchies(inputs.hierarchies),
            series_rows=series.metadata.num_rows,
        )
        documents = dictionary_documents(dictionary)
    elif passed:  # a sequence release
        dictionary = sequence_dictionary(snakemake.wildcards.table, pd.read_parquet(inputs.release))
        documents = dictionary_documents(dictionary)
    publish_release(check, staged, snakemake.output.public, card, documents)
