"""Rule privacy: disagreement and linkage attacks of a release against the original series."""

import pandas as pd

from mimic_deid.core.atomic import write_json, write_parquet
from mimic_deid.core.logs import run_stage
from mimic_deid.deid import attacker_features, class_arrays, dims_of, iter_class_arrays
from mimic_deid.evaluate import ATTACKERS, evaluate_release, released_by_key
from mimic_deid.pipeline.cohort import STAY_DEMOGRAPHICS

with run_stage(snakemake.rule, snakemake.log[0]):
    durations = pd.read_parquet(snakemake.input.classes)
    original, dims = class_arrays(pd.read_parquet(snakemake.input.series), durations)
    pseudonyms = pd.read_parquet(snakemake.input.pseudonyms)
    release_series = pd.read_parquet(snakemake.input.release_series)
    index = pd.read_parquet(snakemake.input.release_index)
    released = released_by_key(release_series, pseudonyms, durations, dims)
    per_series, summary, linkage = evaluate_release(
        original,
        list(iter_class_arrays(released, dims)),
        pseudonyms,
        dims,
        dict(snakemake.params.features),
        snakemake.params.standardise,
        snakemake.params.linkage_errors,
        snakemake.params.seed,
        strong_features=attacker_features(dims_of(release_series)),
        fk=int(snakemake.wildcards.fk),
        block_rows=snakemake.params.block_rows,
        series_distance=snakemake.params.series_distance,
        dtw_window=snakemake.params.dtw_window,
        alt_features=dict(snakemake.params.attacker_features),
        # every attacker knows the demographics the index publishes
        demographics=index[["pseudonym", *(c for c in index.columns if c in STAY_DEMOGRAPHICS)]],
        max_targets=snakemake.params.max_targets,
        # the release is certified against the whole attacker family (docs/threat-model.md)
        family=list(ATTACKERS),
    )
    write_parquet(per_series, snakemake.output.per_series)
    write_parquet(summary, snakemake.output.summary)
    write_json(linkage, snakemake.output.linkage)
