"""Rule mondrian: Mondrian equivalence classes and feature targets per duration class, inside
its demographic cells (ℓ-diverse in the outcome labels of a release that publishes them)."""

import pandas as pd

from mimic_deid.core.atomic import write_json, write_parquet
from mimic_deid.core.logs import run_stage
from mimic_deid.deid import encode_demographics, mondrian_targets, read_release_classes
from mimic_deid.deid.hierarchy import load_hierarchies

with run_stage(snakemake.rule, snakemake.log[0]):
    ell = snakemake.params.outcome_l  # None: the release publishes no label
    classes, dims, outcomes = read_release_classes(
        snakemake.input.series, snakemake.input.classes, snakemake.input.meta, ell
    )
    columns = list(snakemake.params.demographics)
    demographics = (
        encode_demographics(
            pd.read_parquet(snakemake.input.demographics),
            columns,
            load_hierarchies(snakemake.input.hierarchies),
        )
        if columns
        else None
    )
    targets, summary = mondrian_targets(
        classes,
        dims,
        dict(snakemake.params.features),
        fk=int(snakemake.wildcards.fk),
        heuristic=snakemake.wildcards.heuristic,
        outcomes=outcomes,
        ell=int(ell or 1),
        demographics=demographics,
    )
    write_parquet(targets, snakemake.output.targets)
    write_json(summary, snakemake.output.summary)
