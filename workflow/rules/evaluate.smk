# Evaluation stage: disagreement and linkage attack (privacy, on `stays`), distortion, and
# in-hospital-mortality utility under four trust settings (on `ihm48`).


rule privacy_baseline:
    """Disagreement of the original series (released = original) per duration class."""
    input:
        series=f"{PRIVATE}/series/{{release}}/series.parquet",
        classes=f"{PRIVATE}/{{release}}/dk{{dk}}/duration.parquet",
    output:
        per_series="results/{release}/dk{dk}/baseline/disagreement_series.parquet",
        summary="results/{release}/dk{dk}/baseline/disagreement_summary.parquet",
    log:
        "logs/{release}/dk{dk}/privacy_baseline.log",
    benchmark:
        "logs/benchmarks/{release}/dk{dk}/privacy_baseline.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=6000,
    params:
        features=config["deid"]["features"],
        standardise=config["evaluate"].get("standardise", False),
    script:
        "../scripts/privacy_baseline.py"


rule privacy:
    """Disagreement and linkage attack of a release against the original series."""
    input:
        series=f"{PRIVATE}/series/{{release}}/series.parquet",
        classes=f"{PRIVATE}/{{release}}/dk{{dk}}/duration.parquet",
        release_series=f"results/{{release}}/{POINT}/release/series.parquet",
        pseudonyms=f"{PRIVATE}/{{release}}/{POINT}/pseudonyms.parquet",
        check=f"results/{{release}}/{POINT}/check.json",
    output:
        per_series=f"results/{{release}}/{POINT}/privacy/disagreement_series.parquet",
        summary=f"results/{{release}}/{POINT}/privacy/disagreement_summary.parquet",
        linkage=f"results/{{release}}/{POINT}/privacy/linkage.json",
    log:
        f"logs/{{release}}/{POINT}/privacy.log",
    benchmark:
        f"logs/benchmarks/{{release}}/{POINT}/privacy.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=6000,
    params:
        features=config["deid"]["features"],
        standardise=config["evaluate"].get("standardise", False),
        linkage_errors=config["evaluate"].get("linkage_errors", [0.0, 0.05, 0.1, 0.2]),
        seed=config["seed"],
    script:
        "../scripts/privacy.py"


rule utility:
    """Logistic-regression mortality under the four train/test trust settings."""
    input:
        series=f"{PRIVATE}/series/ihm48/series.parquet",
        meta=f"{PRIVATE}/series/ihm48/meta.parquet",
        release_series=f"results/ihm48/{POINT}/release/series.parquet",
        release_index=f"results/ihm48/{POINT}/release/index.parquet",
        check=f"results/ihm48/{POINT}/check.json",
    output:
        table=f"results/ihm48/{POINT}/utility/trust_settings.csv",
    log:
        f"logs/ihm48/{POINT}/utility.log",
    benchmark:
        f"logs/benchmarks/ihm48/{POINT}/utility.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=4000,
    params:
        C=config["evaluate"].get("utility", {}).get("C", [0.001, 0.01, 0.1, 1.0, 10.0]),
        bootstrap=config["evaluate"].get("utility", {}).get("bootstrap", 1000),
        seed=config["seed"],
    script:
        "../scripts/utility.py"
