# Report stage: the seed's figures and tables regenerated from this run, a table with a row
# per sweep point, and a static index page. Figures are also in `snakemake --report`.

FIGURES = [
    "duration_classes",
    "records_lost",
    "summary_disagreement_mean",
    "summary_disagreement_min",
    "summary_disagreement_normalised",
    "first_disagreement_cdf",
    "linkage",
    "trust_settings",
    "ga_example_high",
    "ga_example_low",
]
TABLES = [
    "optimiser_adhoc",
    "optimiser_genetic",
    "trust_settings_train",
    "trust_settings_test",
]


rule sweep_summary:
    input:
        unpack(sweep_summary_input),
    output:
        csv=report(
            "results/report/sweep_summary.csv",
            caption="../report/sweep_summary.rst",
            category="Sweep",
        ),
        md="results/report/sweep_summary.md",
    log:
        "logs/report/sweep_summary.log",
    benchmark:
        "logs/benchmarks/report/sweep_summary.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        points=sweep_points(),
    script:
        "../scripts/sweep_summary.py"


rule report:
    input:
        unpack(report_input),
    output:
        index="results/report/index.html",
        figures=[
            report(
                f"results/report/figures/{name}.png",
                caption=f"../report/{name}.rst",
                category="Figures",
            )
            for name in FIGURES
        ],
        tables=[
            report(
                f"results/report/tables/{name}.csv",
                caption=f"../report/{name}.rst",
                category="Tables",
            )
            for name in TABLES
        ],
    log:
        "logs/report/report.log",
    benchmark:
        "logs/benchmarks/report/report.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=4000,
    params:
        point=primary_point(),
        genetic_point=genetic_point(),
        features=config["deid"]["features"],
    script:
        "../scripts/report.py"
