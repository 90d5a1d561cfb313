# Sequences stage (seed 004): TRANSFERS and CPTEVENTS read from the source, a Markov-model
# synthetic release per table (mechanism seed_ratio or laplace) and the sweep over eps and the
# LSH settings with Friedman tests (mimic_deid.sequences; docs/sequences.md). Target:
# `sequences`.
import dataclasses

from mimic_deid.sequences import release_settings

SEQ = config["sequences"]
# one release's settings (mimic_deid.sequences.Settings), as a rule parameter
SEQ_SETTINGS = dataclasses.asdict(release_settings(SEQ))


wildcard_constraints:
    table="transfers|cptevents|vitals",


rule sequences_extract:
    """The table's records <object, time, state> (seed 004 §2.1) from the source. Scheduled
    after the main pipeline's jobs (priority), so a broken source is reported by `extract`.
    """
    input:
        unpack(sequences_extract_input),
    output:
        events=PATHS["seq_events"],
    log:
        "logs/sequences/{table}/extract.log",
    benchmark:
        "logs/benchmarks/sequences/{table}/extract.tsv"
    priority: -1
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=3000,
    params:
        missing_times=SEQ["missing_times"],
        vitals=SEQ["vitals"],
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
        settings=SEQ_SETTINGS,
        seed=config["seed"],
    script:
        "../scripts/sequences_release.py"


rule sequences_attack:
    """The verbatim-copy membership attack on the release: the release against the source,
    and a release fitted on a random half against both halves (the holdout baseline)."""
    input:
        events=PATHS["seq_events"],
        release=PATHS["seq_release"],
    output:
        attack=PATHS["seq_attack"],
    log:
        "logs/sequences/{table}/attack.log",
    benchmark:
        "logs/benchmarks/sequences/{table}/attack.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=4000,
    params:
        settings=SEQ_SETTINGS,
        seed=config["seed"],
    script:
        "../scripts/sequences_attack.py"


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
        settings=SEQ_SETTINGS,
        grid=SEQ["sweep"],
        seed=config["seed"],
    script:
        "../scripts/sequences_sweep.py"


rule sequences_check:
    """The privacy claims of the staged release (deid.check claims 12 and 13): the verdict."""
    input:
        release=PATHS["seq_release"],
        attack=PATHS["seq_attack"],
    output:
        check=PATHS["seq_check"],
    log:
        "logs/sequences/{table}/check.log",
    benchmark:
        "logs/benchmarks/sequences/{table}/check.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        bounds=SEQ["attack"],
        strict=config["strict"],
    script:
        "../scripts/sequences_check.py"


rule sequences_card:
    """The card of the sequence release: mechanism, guarantee, attack and verdict."""
    input:
        check=PATHS["seq_check"],
        summary=PATHS["seq_summary"],
        attack=PATHS["seq_attack"],
    output:
        card=PATHS["seq_card"],
    log:
        "logs/sequences/{table}/card.log",
    benchmark:
        "logs/benchmarks/sequences/{table}/card.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=500,
    script:
        "../scripts/sequences_card.py"


rule sequences_publish:
    """The public sequence release: the table, card and data dictionary if certified, else
    refused.txt and the card (after sequences_card, as publish_release)."""
    input:
        release=PATHS["seq_release"],
        check=PATHS["seq_check"],
        card=PATHS["seq_card"],
    output:
        public=directory(PATHS["seq_published"]),
    log:
        "logs/sequences/{table}/publish.log",
    benchmark:
        "logs/benchmarks/sequences/{table}/publish.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=500,
    params:
        staged=["release"],
    script:
        "../scripts/publish_release.py"


rule sequences:
    """Target: every artefact of the sequences stage."""
    input:
        stage_outputs("sequences"),
