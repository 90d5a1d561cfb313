# Source stage: the synthetic MIMIC-III copy (default) and the raw extraction from any source.


rule synthesize:
    output:
        directory(PATHS["synthetic"]),
    log:
        "logs/synthesize/n{subjects}-s{seed}.log",
    benchmark:
        "logs/benchmarks/synthesize/n{subjects}-s{seed}.tsv"
    # the critical path first when jobs compete for cores (issue 47): extraction, cohort,
    # series, duration, mondrian (50), deidentify (40), release and its check (30), the
    # sweep's gatherers and the report (20)
    priority: 50
    conda:
        "../envs/mimic-deid.yaml"
    # the tables are formatted and compressed beside the generation (issue 47)
    threads: WIDE_THREADS
    resources:
        mem_mb=2000,
    params:
        # a copy made by another version of the generator is regenerated
        generator=generator_fingerprint(),
        other_chart_rows=config["source"]["synthetic"]["other_chart_rows"],
    script:
        "../scripts/synthesize.py"


rule extract:
    input:
        unpack(extract_input),
    output:
        directory(PATHS["raw"]),
    log:
        "logs/extract.log",
    benchmark:
        "logs/benchmarks/extract.tsv"
    # Arrow's parsing threads and the parallel inflate use every core (issue 47)
    priority: 50
    conda:
        "../envs/mimic-deid.yaml"
    threads: WIDE_THREADS
    resources:
        mem_mb=4000,
    script:
        "../scripts/extract.py"
