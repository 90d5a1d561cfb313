# Cohort stage: benchmark cohort rules and in-hospital mortality label.


rule cohort:
    input:
        raw=f"{PRIVATE}/raw",
    output:
        stays=f"{PRIVATE}/cohort/stays.parquet",
        counts=f"{PRIVATE}/cohort/cohort.json",
    log:
        "logs/cohort.log",
    benchmark:
        "logs/benchmarks/cohort.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        min_age=config["cohort"].get("min_age", 18),
    script:
        "../scripts/cohort.py"
