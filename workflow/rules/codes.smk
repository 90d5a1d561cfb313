# Codes stage (seed 002): DIAGNOSES_ICD from the source, the distinguishability / k-map audit
# of the released cohort's codes, and the GCCens and LDA comparators (mimic_deid.codes;
# docs/codes.md). Every output under results/codes/ is an aggregate. Target: `codes`.
CODES = config["codes"]


rule codes_extract:
    input:
        unpack(codes_extract_input),
    output:
        diagnoses=PATHS["codes_diagnoses"],
        counts=PATHS["codes_extract"],
    log:
        "logs/codes/extract.log",
    benchmark:
        "logs/benchmarks/codes/extract.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=4000,
    script:
        "../scripts/codes_extract.py"


rule codes_audit:
    input:
        diagnoses=PATHS["codes_diagnoses"],
        cohort=PATHS["cohort_stays"],
    output:
        audit=PATHS["codes_audit"],
        cdf=PATHS["codes_cdf"],
    log:
        "logs/codes/audit.log",
    benchmark:
        "logs/benchmarks/codes/audit.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=4000,
    params:
        codes={key: CODES[key] for key in ("unit", "level", "codes", "k")},
    script:
        "../scripts/codes_audit.py"


rule codes_gccens:
    input:
        diagnoses=PATHS["codes_diagnoses"],
        cohort=PATHS["cohort_stays"],
    output:
        PATHS["codes_gccens"],
    log:
        "logs/codes/gccens.log",
    benchmark:
        "logs/benchmarks/codes/gccens.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=4000,
    params:
        codes={key: CODES[key] for key in ("unit", "level", "codes", "gccens")},
    script:
        "../scripts/codes_gccens.py"


rule codes_lda:
    input:
        diagnoses=PATHS["codes_diagnoses"],
        cohort=PATHS["cohort_stays"],
    output:
        table=PATHS["codes_lda"],
        info=PATHS["codes_lda_info"],
    log:
        "logs/codes/lda.log",
    benchmark:
        "logs/benchmarks/codes/lda.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    # its (alignment, k) points spread over every core --cores gives (issue 47)
    threads: WIDE_THREADS
    resources:
        mem_mb=2000,
    params:
        codes={key: CODES[key] for key in ("unit", "level", "lda")},
        seed=config["seed"],
    script:
        "../scripts/codes_lda.py"


rule codes_check:
    """The claims of the stage's public outputs (mimic_deid.codes.check, C1-C3): no
    identifier, aggregates only, a k-anonymous LDA; the verdict is public."""
    input:
        audit=PATHS["codes_audit"],
        gccens=PATHS["codes_gccens"],
        lda=PATHS["codes_lda"],
        lda_info=PATHS["codes_lda_info"],
    output:
        check=PATHS["codes_check"],
    log:
        "logs/codes/check.log",
    benchmark:
        "logs/benchmarks/codes/check.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        codes={key: CODES[key] for key in ("gccens", "lda")},
        strict=config["strict"],
    script:
        "../scripts/codes_check.py"


rule codes:
    """Target: every artefact of the codes stage."""
    input:
        stage_outputs("codes"),
