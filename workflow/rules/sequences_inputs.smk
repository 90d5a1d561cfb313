# Inputs and parameters of the sequences stage (seed 004), kept apart from its rules.

SEQ = config["sequences"]
SEQ_TABLES = SEQ["tables"]


def sequences_source_input(wildcards):
    """The source the extraction reads: the synthetic copy, the table's CSV file, or the
    PostgreSQL fingerprint file (see extract_input); for `vitals`, the stays series."""
    if wildcards.table == "vitals":
        return {"series": path("series", release="stays")}
    kind = config["source"]["kind"]
    if kind == "synthetic":
        return {"source_dir": synthetic_dir()}
    if kind == "csv":
        return {"tables": [str(p) for p in sequence_table_files(wildcards.table)]}
    return {"fingerprint": postgres_fingerprint()}


def sequence_table_files(table):
    from mimic_deid.sources.tables import SEQUENCE_TABLES

    return table_files(config["source"]["csv"]["path"], [SEQUENCE_TABLES[table]])


def sequence_outputs():
    """Every artefact of the stage (target `sequences`, part of `rule all`)."""
    return stage_outputs("sequences")


def sequence_settings():
    lsh, split = SEQ["lsh"], SEQ["split"]
    return dict(
        mechanism=SEQ["mechanism"],
        epsilon=SEQ["epsilon"],
        hashes=lsh["hashes"],
        shingles=lsh["shingles"],
        cluster_fraction=lsh["cluster_fraction"],
        lsh_threshold=lsh["threshold"],
        gap_hours=split["gap_hours"] or None,
        histogram_bins=split["histogram_bins"],
        histogram_sample=split["histogram_sample"],
        drop_fraction=split["drop_fraction"],
        sampler=SEQ["laplace"]["sampler"],
        metric_sample=SEQ["metric_sample"],
    )
