# Series stage: cleaned, hourly resampled series of each release, with splits.


rule series:
    input:
        raw=PATHS["raw"],
        stays=PATHS["cohort_stays"],
        variables=config["variables"],
    output:
        series=PATHS["series"],
        meta=PATHS["meta"],
        cleaning=PATHS["cleaning"],
    log:
        "logs/series/{release}.log",
    benchmark:
        "logs/benchmarks/series/{release}.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=6000,
    params:
        ihm_hours=config["series"]["ihm_hours"],
        split=config["series"]["split"],
        seed=config["seed"],
    script:
        "../scripts/series.py"
