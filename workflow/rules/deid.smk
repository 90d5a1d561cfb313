# De-identification stage: duration k-classes, Mondrian feature targets, constraint
# optimisation, the pseudonymous release and its privacy check. Paths name exactly the
# parameters each artefact depends on, so a sweep re-runs only what changed.


rule duration_classes:
    input:
        meta=f"{PRIVATE}/series/{{release}}/meta.parquet",
    output:
        classes=f"{PRIVATE}/{{release}}/dk{{dk}}/duration.parquet",
        summary="results/{release}/dk{dk}/duration.json",
    log:
        "logs/{release}/dk{dk}/duration.log",
    benchmark:
        "logs/benchmarks/{release}/dk{dk}/duration.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        group_by_split=lambda wc: GROUP_BY_SPLIT[wc.release],
    script:
        "../scripts/duration_classes.py"


rule mondrian:
    input:
        series=f"{PRIVATE}/series/{{release}}/series.parquet",
        classes=f"{PRIVATE}/{{release}}/dk{{dk}}/duration.parquet",
    output:
        targets=f"{PRIVATE}/{{release}}/dk{{dk}}/fk{{fk}}-{{heuristic}}/targets.parquet",
        summary="results/{release}/dk{dk}/fk{fk}-{heuristic}/mondrian.json",
    log:
        "logs/{release}/dk{dk}/fk{fk}-{heuristic}/mondrian.log",
    benchmark:
        "logs/benchmarks/{release}/dk{dk}/fk{fk}-{heuristic}/mondrian.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=4000,
    params:
        features=config["deid"]["features"],
    script:
        "../scripts/mondrian.py"


rule optimise:
    input:
        series=f"{PRIVATE}/series/{{release}}/series.parquet",
        classes=f"{PRIVATE}/{{release}}/dk{{dk}}/duration.parquet",
        targets=f"{PRIVATE}/{{release}}/dk{{dk}}/fk{{fk}}-{{heuristic}}/targets.parquet",
    output:
        perturbed=f"{PRIVATE}/{{release}}/{POINT}/perturbed.parquet",
        per_series=f"{PRIVATE}/{{release}}/{POINT}/optimiser.parquet",
        summary=f"results/{{release}}/{POINT}/optimiser.json",
    log:
        f"logs/{{release}}/{POINT}/optimise.log",
    benchmark:
        f"logs/benchmarks/{{release}}/{POINT}/optimise.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 2
    resources:
        mem_mb=6000,
    params:
        features=config["deid"]["features"],
        seed=config["seed"],
    script:
        "../scripts/optimise.py"


rule release:
    input:
        perturbed=f"{PRIVATE}/{{release}}/{POINT}/perturbed.parquet",
        classes=f"{PRIVATE}/{{release}}/dk{{dk}}/duration.parquet",
        meta=f"{PRIVATE}/series/{{release}}/meta.parquet",
    output:
        series=f"results/{{release}}/{POINT}/release/series.parquet",
        index=f"results/{{release}}/{POINT}/release/index.parquet",
        pseudonyms=f"{PRIVATE}/{{release}}/{POINT}/pseudonyms.parquet",
    log:
        f"logs/{{release}}/{POINT}/release.log",
    benchmark:
        f"logs/benchmarks/{{release}}/{POINT}/release.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=4000,
    params:
        seed=config["seed"],
    script:
        "../scripts/release.py"


rule check_release:
    input:
        series=f"results/{{release}}/{POINT}/release/series.parquet",
        index=f"results/{{release}}/{POINT}/release/index.parquet",
        classes=f"{PRIVATE}/{{release}}/dk{{dk}}/duration.parquet",
        targets=f"{PRIVATE}/{{release}}/dk{{dk}}/fk{{fk}}-{{heuristic}}/targets.parquet",
        pseudonyms=f"{PRIVATE}/{{release}}/{POINT}/pseudonyms.parquet",
    output:
        check=f"results/{{release}}/{POINT}/check.json",
    log:
        f"logs/{{release}}/{POINT}/check_release.log",
    benchmark:
        f"logs/benchmarks/{{release}}/{POINT}/check_release.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        group_by_split=lambda wc: GROUP_BY_SPLIT[wc.release],
    script:
        "../scripts/check_release.py"


rule optimiser_tuning_table:
    """Seed Tables 6.1/6.2: 20 series from each of 5 duration classes, Mondrian k=5."""
    input:
        series=f"{PRIVATE}/series/stays/series.parquet",
        classes=f"{PRIVATE}/stays/dk{{dk}}/duration.parquet",
    output:
        table="results/stays/dk{dk}/tuning/{opt}.csv",
    log:
        "logs/stays/dk{dk}/tuning/{opt}.log",
    benchmark:
        "logs/benchmarks/stays/dk{dk}/tuning/{opt}.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        features=config["deid"]["features"],
        seed=config["seed"],
    script:
        "../scripts/tuning_table.py"


rule tuning_sweep:
    """The seed's genetic tuning grid (6.2) on the tuning series: one row per grid point."""
    input:
        tables=expand(
            "results/stays/dk{dk}/tuning/{opt}.csv", dk=DK[0], opt=TUNING_GRID
        ),
    output:
        summary=f"results/stays/dk{DK[0]}/tuning/grid_summary.csv",
    log:
        "logs/stays/tuning_sweep.log",
    benchmark:
        "logs/benchmarks/stays/tuning_sweep.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        labels=TUNING_GRID,
    script:
        "../scripts/tuning_sweep.py"
