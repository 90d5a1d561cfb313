"""Rule release: replace identifiers with random per-release pseudonyms."""

import pandas as pd

from mimic_deid.core.atomic import write_parquet
from mimic_deid.core.logs import run_stage
from mimic_deid.deid import KEY, PlausibleValues, pseudonymous_release
from mimic_deid.pipeline.variables import load_variables

with run_stage(snakemake.rule, snakemake.log[0]):
    columns = list(snakemake.params.demographics)
    demographics = pd.read_parquet(snakemake.input.targets, columns=[KEY, *columns])
    variables = list(snakemake.params.variables)
    series, index, pseudonyms = pseudonymous_release(
        pd.read_parquet(snakemake.input.perturbed),
        pd.read_parquet(snakemake.input.classes),
        pd.read_parquet(snakemake.input.meta),
        seed=snakemake.params.seed,
        # The release path as salt: two releases get unrelated pseudonyms for one seed.
        salt=snakemake.output.series,
        variables=variables,
        labelled=snakemake.params.labelled,
        # split only in a release de-identified per split (its classes are counted within it)
        publish_split=snakemake.params.group_by_split,
        demographics=demographics if columns else None,
        plausible=PlausibleValues.from_variables(
            load_variables(snakemake.input.variables), variables
        ),
    )
    write_parquet(series, snakemake.output.series)
    write_parquet(index, snakemake.output.index)
    write_parquet(pseudonyms, snakemake.output.pseudonyms)
