"""Rule deidentify: every released series changed by the sweep point's release method."""

import pandas as pd

from mimic_deid.core.atomic import write_json, write_parquet
from mimic_deid.core.logs import run_stage
from mimic_deid.deid import KEY, LABELS, apply_method, class_arrays

with run_stage(snakemake.rule, snakemake.log[0]):
    classes, dims = class_arrays(
        pd.read_parquet(snakemake.input.series),
        pd.read_parquet(snakemake.input.classes),
        fill_missing=True,
    )
    ell = snakemake.params.outcome_l  # None: the release publishes no label
    outcomes = pd.read_parquet(snakemake.input.meta, columns=[KEY, *LABELS]) if ell else None
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
    )
    write_parquet(perturbed, snakemake.output.perturbed)
    write_parquet(per_series, snakemake.output.per_series)
    write_json(summary, snakemake.output.summary)
