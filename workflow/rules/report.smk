# Report stage: the seed's figures and tables regenerated from this run, a table with a row
# per sweep point, and a static index page. The figures and tables are those of the registry
# the report modules of every stage (mimic_deid.stages.REPORT_MODULES): the public ones (rule report, each with its caption
# workflow/report/<name>.rst, bundled by `snakemake --report`) and the private ones, which
# show original values of individual patients (rule private_report, owner-only, not bundled).


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
    # the critical path first (issue 47; source.smk)
    priority: 20
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        points=sweep_points(),
        utility_cross=config["evaluate"]["utility"]["cross"],
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
            for name in REPORT_FIGURES
        ],
        tables=[
            report(
                path("report_table", name=name),
                caption=f"../report/{name}.rst",
                category="Tables",
            )
            for name in REPORT_TABLES
        ],
    log:
        "logs/report/report.log",
    benchmark:
        "logs/benchmarks/report/report.tsv"
    # the critical path first (issue 47; source.smk)
    priority: 20
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=4000,
    params:
        audience="public",
        point=primary_point(),
        duration_method=config["duration"]["method"],
        series_distance=config["evaluate"]["series_distance"],
        run=report_run(),
        folders=report_folders(),
        modules=REPORT_MODULES,
    script:
        "../scripts/report.py"


rule private_report:
    """Figures with original values of individual patients: never marked report()."""
    input:
        unpack(private_report_input),
    output:
        index=PATHS["private_report_index"],
        figures=[
            path("private_report_figure", name=name) for name in PRIVATE_REPORT_FIGURES
        ],
    log:
        "logs/report/private_report.log",
    benchmark:
        "logs/benchmarks/report/private_report.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=4000,
    params:
        audience="private",
        point=primary_point(),
        duration_method=config["duration"]["method"],
        series_distance=config["evaluate"]["series_distance"],
        run=report_run(),
        modules=REPORT_MODULES,
    script:
        "../scripts/report.py"
