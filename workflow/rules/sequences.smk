# Sequences stage (seed 004): TRANSFERS and CPTEVENTS read from the source, a Markov-model
# synthetic release per table (mechanism seed_ratio or laplace) and the sweep over eps and the
# LSH settings with Friedman tests. Target: `snakemake --cores 2 sequences`.

SEQ = config["sequences"]
SEQ_TABLES = SEQ["tables"]


wildcard_constraints:
    table="transfers|cptevents",


def sequences_source_input(wildcards):
    """The source the extraction reads: the synthetic copy, the table's CSV file, or the
    PostgreSQL fingerprint file (see extract_input)."""
    kind = config["source"]["kind"]
    if kind == "synthetic":
        return {"source_dir": synthetic_dir()}
    if kind == "csv":
        return {"tables": [str(p) for p in sequence_table_files(wildcards.table)]}
    return {"fingerprint": postgres_fingerprint()}


def sequence_table_files(table):
    from mimic_deid.sources.csv_source import find_table_file

    try:
        return [find_table_file(config["source"]["csv"]["path"], table.upper())]
    except MimicDeidError:
        return []


def sequence_outputs():
    """Every artefact of the stage (target `sequences`, part of `rule all`)."""
    return [
        path(key, table=t)
        for t in SEQ_TABLES
        for key in ("seq_release", "seq_summary", "seq_sweep", "seq_friedman")
    ]


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


rule sequences_extract:
    """The table's records <object, time, state> (seed 004 §2.1) from the source."""
    input:
        unpack(sequences_source_input),
    output:
        events=PATHS["seq_events"],
    log:
        "logs/sequences/{table}/extract.log",
    benchmark:
        "logs/benchmarks/sequences/{table}/extract.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=3000,
    params:
        missing_times=SEQ["missing_times"],
    script:
        "../scripts/sequences_extract.py"


rule sequences_release:
    """One synthetic release of the table and its seed 004 measures."""
    input:
        events=PATHS["seq_events"],
    output:
        generated=PATHS["seq_generated"],
        release=PATHS["seq_release"],
        summary=PATHS["seq_summary"],
    log:
        "logs/sequences/{table}/release.log",
    benchmark:
        "logs/benchmarks/sequences/{table}/release.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=4000,
    params:
        settings=sequence_settings(),
        seed=config["seed"],
    script:
        "../scripts/sequences_release.py"


rule sequences_sweep:
    """The sweep mechanism x eps x |H| x w x repetitions and Friedman tests (seed 004 §5)."""
    input:
        events=PATHS["seq_events"],
    output:
        sweep=PATHS["seq_sweep"],
        friedman=PATHS["seq_friedman"],
    log:
        "logs/sequences/{table}/sweep.log",
    benchmark:
        "logs/benchmarks/sequences/{table}/sweep.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=4000,
    params:
        settings=sequence_settings(),
        grid=SEQ["sweep"],
        seed=config["seed"],
    script:
        "../scripts/sequences_sweep.py"


rule sequences:
    """Target: every artefact of the sequences stage."""
    input:
        sequence_outputs(),
