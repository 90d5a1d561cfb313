# Report stage: the seed's figures and tables regenerated from this run, a table with a row
# per sweep point, and a static index page. The figures and tables are those of the registry
# mimic_deid.report.content.ITEMS, each with its caption workflow/report/<name>.rst.


rule sweep_summary:
    input:
        unpack(sweep_summary_input),
    output:
        csv=report(
            PATHS["sweep_csv"],
            caption="../report/sweep_summary.rst",
            category="Sweep",
        ),
        md=PATHS["sweep_md"],
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
        index=PATHS["report_index"],
        figures=[
            report(
                path("report_figure", name=name),
                caption=f"../report/{name}.rst",
                category="Figures",
            )
            for name in FIGURES
        ],
        tables=[
            report(
                path("report_table", name=name),
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
        features=DEID["features"],
        duration_method=config["duration"]["method"],
        evaluate=config["evaluate"],
    script:
        "../scripts/report.py"
