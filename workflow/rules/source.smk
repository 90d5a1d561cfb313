# Source stage: the synthetic MIMIC-III copy (default) and the raw extraction from any source.


rule synthesize:
    output:
        directory("resources/synthetic/n{subjects}-s{seed}"),
    log:
        "logs/synthesize/n{subjects}-s{seed}.log",
    benchmark:
        "logs/benchmarks/synthesize/n{subjects}-s{seed}.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    script:
        "../scripts/synthesize.py"


rule extract:
    input:
        unpack(extract_input),
    output:
        directory(f"{PRIVATE}/raw"),
    log:
        "logs/extract.log",
    benchmark:
        "logs/benchmarks/extract.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 2
    resources:
        mem_mb=4000,
    params:
        kind=config["source"]["kind"],
        csv_path=config["source"].get("csv", {}).get("path", ""),
        schema=config["source"].get("postgres", {}).get("schema", "mimiciii"),
        event_buckets=config["source"].get("event_buckets", 8),
        chunk_rows=config["source"].get("chunk_rows", 1_000_000),
    script:
        "../scripts/extract.py"
