# Series stage: cleaned, hourly resampled series of both releases (one pass), with splits.


rule series:
    input:
        raw=PATHS["raw"],
        stays=PATHS["cohort_stays"],
        variables=config["variables"],
    output:
        series=expand(PATHS["series"], release=RELEASES),
        meta=expand(PATHS["meta"], release=RELEASES),
        cleaning=expand(PATHS["cleaning"], release=RELEASES),
    log:
        "logs/series.log",
    benchmark:
        "logs/benchmarks/series.tsv"
    # the critical path first (issue 47; source.smk); its parts spread over every core
    priority: 50
    conda:
        "../envs/mimic-deid.yaml"
    threads: WIDE_THREADS
    resources:
        mem_mb=6000,
    params:
        releases=RELEASES,
        ihm_hours=config["series"]["ihm_hours"],
        split=config["series"]["split"],
        seed=config["seed"],
    script:
        "../scripts/series.py"
