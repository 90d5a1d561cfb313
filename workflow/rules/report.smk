# Report stage: the seed's figures and tables regenerated from this run, a table with a row
# per sweep point, and a static index page. The figures and tables are those of the registry
# mimic_deid.report.content.ITEMS: the public ones (rule report, each with its caption
# workflow/report/<name>.rst, bundled by `snakemake --report`) and the private ones, which
# show original values of individual patients (rule private_report, owner-only, not bundled).
import time


def report_run():
    """What was run, for the report's front matter (report.front.run_table): the source
    kind and the sweep's parameters; never the master seed or a source path or DSN."""
    source = config["source"]
    return {
        "source_kind": source["kind"],
        "synthetic_subjects": source["synthetic"]["subjects"],
        "dk": DEID["dk"],
        "fk": DEID["fk"],
        "heuristic": DEID["heuristic"],
        "methods": METHODS,
        "release_variables": config["release"]["variables"],
    }


def done_line(workflow):
    """The run's last line (Snakefile onsuccess, which Snakemake calls only after jobs ran).

    The report's path only when the public report is part of this run: rebuilt by it, or a
    dependency of its targets and therefore up to date; a partial target (`tuning_tables`,
    `codes`, a file) did not refresh it, so its path is not offered as this run's result.
    """
    index = PATHS["report_index"]
    try:
        in_run = any(index in map(str, job.output) for job in workflow.dag.jobs)
    except AttributeError:
        # a Snakemake without this DAG attribute: the file's age decides
        in_run = Path(index).exists() and Path(index).stat().st_mtime >= RUN_START
    if in_run:
        return (
            f"mimic-deid: done. Report: {Path(index).resolve()} "
            "(for the Snakemake HTML report: snakemake --report report.html)"
        )
    return (
        "mimic-deid: done. The report was not among this run's targets and was not "
        "rebuilt; `snakemake --cores all` builds it."
    )


RUN_START = time.time()


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
        audience="public",
        point=primary_point(),
        features=DEID["features"],
        duration_method=config["duration"]["method"],
        evaluate=config["evaluate"],
        run=report_run(),
    script:
        "../scripts/report.py"


rule private_report:
    """Figures with original values of individual patients: never marked report()."""
    input:
        unpack(private_report_input),
    output:
        index=PATHS["private_report_index"],
        figures=[path("private_report_figure", name=name) for name in PRIVATE_FIGURES],
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
        features=DEID["features"],
        duration_method=config["duration"]["method"],
        evaluate=config["evaluate"],
        run=report_run(),
    script:
        "../scripts/report.py"
