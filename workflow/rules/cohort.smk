# Cohort stage: benchmark cohort rules and in-hospital mortality label.


rule cohort:
    input:
        raw=PATHS["raw"],
    output:
        stays=PATHS["cohort_stays"],
        demographics=PATHS["cohort_demographics"],
        counts=PATHS["cohort_counts"],
    log:
        "logs/cohort.log",
    benchmark:
        "logs/benchmarks/cohort.tsv"
    # the critical path first (issue 47; source.smk)
    priority: 50
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        min_age=config["cohort"]["min_age"],
    script:
        "../scripts/cohort.py"
