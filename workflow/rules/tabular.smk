# Tabular stage (seed 003): the demographics table of MIMIC-III, its uniqueness, OLA, Inverse
# OLA, m-concealing and epsilon-safe LA (mimic_deid.tabular; docs/tabular.md). Raw tables and
# the demographics table are private; every output under results/tabular/ is an aggregate.
# Target: `tabular`.
TABULAR = config["tabular"]
# PROCEDURES_ICD is read only when `tabular.procedures` > 0; with 0 the stage is demographics
# only: no procedure uniqueness, no m-concealing models (they are procedures known).
TABULAR_READS_PROCEDURES = TABULAR["procedures"] > 0
TABULAR_MODELS = TABULAR["concealing"]["models"] if TABULAR_READS_PROCEDURES else {}
TABULAR_PROCEDURES = sorted(
    {0, TABULAR["procedures"]} | {len(p) for p in TABULAR_MODELS.values()}
)


# the demographics table with p procedures, for every p a rule reads
DEMOGRAPHICS = {
    p: path("tabular_demographics", procedures=p) for p in TABULAR_PROCEDURES
}


wildcard_constraints:
    procedures=r"\d+",


# Lower priority than `extract`: when both are ready it starts second, so that a missing or
# broken source is reported once, by the raw extraction, on one core.
rule tabular_extract:
    input:
        unpack(tabular_extract_input),
    output:
        patients=PATHS["tabular_patients"],
        admissions=PATHS["tabular_admissions"],
        procedures=PATHS["tabular_procedures"],
    log:
        "logs/tabular/extract.log",
    benchmark:
        "logs/benchmarks/tabular/extract.tsv"
    priority: -1
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        procedures=TABULAR_READS_PROCEDURES,
    script:
        "../scripts/tabular_extract.py"


rule tabular_demographics:
    input:
        patients=PATHS["tabular_patients"],
        admissions=PATHS["tabular_admissions"],
        procedures=PATHS["tabular_procedures"],
    output:
        PATHS["tabular_demographics"],
    log:
        "logs/tabular/demographics_p{procedures}.log",
    benchmark:
        "logs/benchmarks/tabular/demographics_p{procedures}.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        seed=config["seed"],
        yob_mean=TABULAR["yob_mean"],
        yob_sd=TABULAR["yob_sd"],
        missing=TABULAR["missing"],
    script:
        "../scripts/tabular_demographics.py"


rule tabular_uniqueness:
    input:
        demographics=DEMOGRAPHICS[0],
        procedures=PATHS["tabular_procedures"],
    output:
        PATHS["tabular_uniqueness"],
    log:
        "logs/tabular/uniqueness.log",
    benchmark:
        "logs/benchmarks/tabular/uniqueness.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        seed=config["seed"],
        draws=TABULAR["draws"],
        yob_mean=TABULAR["yob_mean"],
        yob_sd=TABULAR["yob_sd"],
        procedures=TABULAR_READS_PROCEDURES,
    script:
        "../scripts/tabular_uniqueness.py"


rule tabular_ola:
    input:
        demographics=DEMOGRAPHICS[TABULAR["procedures"]],
        hierarchies=TABULAR["hierarchies"],
    output:
        grid=PATHS["tabular_ola"],
        release=PATHS["tabular_release"],
        summary=PATHS["tabular_release_summary"],
    log:
        "logs/tabular/ola.log",
    benchmark:
        "logs/benchmarks/tabular/ola.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        procedures=TABULAR["procedures"],
        ola=TABULAR["ola"],
        release=TABULAR["release"],
    script:
        "../scripts/tabular_ola.py"


rule tabular_inverse:
    input:
        demographics=DEMOGRAPHICS[TABULAR["procedures"]],
        models=[DEMOGRAPHICS[p] for p in TABULAR_PROCEDURES if p],
        hierarchies=TABULAR["hierarchies"],
    output:
        inverse=PATHS["tabular_inverse"],
        concealing=PATHS["tabular_concealing"],
    log:
        "logs/tabular/inverse.log",
    benchmark:
        "logs/benchmarks/tabular/inverse.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        procedures=TABULAR["procedures"],
        model_procedures=[p for p in TABULAR_PROCEDURES if p],
        inverse=TABULAR["inverse"],
        models=TABULAR_MODELS,
    script:
        "../scripts/tabular_inverse.py"


rule tabular_dps:
    input:
        demographics=DEMOGRAPHICS[TABULAR["procedures"]],
        hierarchies=TABULAR["hierarchies"],
    output:
        grid=PATHS["tabular_dps_grid"],
        summary=PATHS["tabular_dps"],
        la=PATHS["tabular_epsilon_la"],
    log:
        "logs/tabular/dps.log",
    benchmark:
        "logs/benchmarks/tabular/dps.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        seed=config["seed"],
        epsilon=TABULAR["epsilon"],
    script:
        "../scripts/tabular_dps.py"


# The recipient's view of the first stays release of the sweep (its index: duration class and
# published demographics) is the joint-risk table's last row.
JOINT_RISK_RELEASE = path(
    "release_index",
    release="stays",
    dk=DEID["dk"][0],
    fk=DEID["fk"][0],
    heuristic=DEID["heuristic"][0],
    method=METHODS[0],
)


rule tabular_joint_risk:
    input:
        duration=path("duration", release="stays", dk=DEID["dk"][0]),
        stays=PATHS["cohort_stays"],
        demographics=DEMOGRAPHICS[0],
        hierarchies=TABULAR["hierarchies"],
        release_index=JOINT_RISK_RELEASE,
    output:
        PATHS["tabular_joint_risk"],
    log:
        "logs/tabular/joint_risk.log",
    benchmark:
        "logs/benchmarks/tabular/joint_risk.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        release=TABULAR["release"],
        release_name=METHODS[0],
    script:
        "../scripts/tabular_joint_risk.py"


rule tabular_check:
    """The OLA release's claims T1-T4 (mimic_deid.tabular.check), re-checked from the
    demographics table (the run stops on a refusal only with config `strict: true`). The
    release stays owner-only: its year of birth may be published at level 0 by OLA, and no
    release of this project publishes a raw year of birth or age; check.json is public.
    """
    input:
        release=PATHS["tabular_release"],
        summary=PATHS["tabular_release_summary"],
        demographics=DEMOGRAPHICS[TABULAR["procedures"]],
        hierarchies=TABULAR["hierarchies"],
    output:
        check=PATHS["tabular_check"],
    log:
        "logs/tabular/check.log",
    benchmark:
        "logs/benchmarks/tabular/check.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        procedures=TABULAR["procedures"],
        release=TABULAR["release"],
        strict=config["strict"],
    script:
        "../scripts/tabular_check.py"


rule tabular:
    """Target: every artefact of the tabular stage. The joint risk needs the series pipeline
    (the duration classes of `stays`): it is part of `rule all` (with stage series) and the
    report, not of this light target."""
    input:
        stage_outputs("tabular"),
