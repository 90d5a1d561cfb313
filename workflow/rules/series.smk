# Series stage: cleaned, hourly resampled series of each release, with splits.


rule series:
    input:
        raw=f"{PRIVATE}/raw",
        stays=f"{PRIVATE}/cohort/stays.parquet",
        variables=config["variables"],
    output:
        series=f"{PRIVATE}/series/{{release}}/series.parquet",
        meta=f"{PRIVATE}/series/{{release}}/meta.parquet",
        cleaning=f"{PRIVATE}/series/{{release}}/cleaning.json",
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
        ihm_hours=config["series"].get("ihm_hours", 48),
        split=config["series"]["split"],
        seed=config["seed"],
    script:
        "../scripts/series.py"
