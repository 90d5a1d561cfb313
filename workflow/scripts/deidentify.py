"""Rule deidentify: every released series changed by the sweep point's release method, then
projected onto its variables' plausible values."""

import pandas as pd

from mimic_deid.core.atomic import write_json, write_parquet
from mimic_deid.core.logs import run_stage
from mimic_deid.deid import PlausibleValues, apply_method, read_release_classes
from mimic_deid.pipeline.variables import load_variables

with run_stage(snakemake.rule, snakemake.log[0]):
    ell = snakemake.params.outcome_l  # None: the release publishes no label
    classes, dims, outcomes = read_release_classes(
        snakemake.input.series, snakemake.input.classes, snakemake.input.meta, ell
    )
    perturbed, per_series, summary = apply_method(
        classes,
        dims,
        pd.read_parquet(snakemake.input.targets),
        dict(snakemake.params.features),
        label=snakemake.wildcards.method,
        seed=snakemake.params.seed,
        threads=snakemake.threads,
        fk=int(snakemake.wildcards.fk),
        outcomes=outcomes,
        ell=int(ell or 1),
        plausible=PlausibleValues.from_variables(load_variables(snakemake.input.variables), dims),
    )
    write_parquet(perturbed, snakemake.output.perturbed)
    write_parquet(per_series, snakemake.output.per_series)
    write_json(summary, snakemake.output.summary)
