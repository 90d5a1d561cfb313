"""Rules report and private_report: the figures, tables and index page of one audience."""

from pathlib import Path

from mimic_deid.core.logs import run_stage
from mimic_deid.report import build_report, load_report_data
from mimic_deid.report.front import git_revision

with run_stage(snakemake.rule, snakemake.log[0]):
    audience = snakemake.params.audience
    data = load_report_data(
        dict(snakemake.input.items()),
        snakemake.params.point,
        duration_method=snakemake.params.duration_method,
        series_distance=snakemake.params.series_distance,
        audience=audience,
    )
    # the checkout's commit and date, read once per report (__file__ is this script's path)
    run = dict(snakemake.params.run, **git_revision(Path(__file__).resolve().parent))
    run["cohort"] = data.cohort
    figures_dir = Path(snakemake.output.figures[0]).parent
    tables = snakemake.output.get("tables")
    build_report(
        data,
        figures_dir=figures_dir,
        tables_dir=Path(tables[0]).parent if tables else figures_dir.parent / "tables",
        index_out=snakemake.output.index,
        sweep_csv=snakemake.input.get("sweep"),
        audience=audience,
        run=run,
        # the published release/ folder of every release, named on the first screen
        folders=snakemake.params.get("folders"),
        # every stage's report module, in the stage list's order
        modules=snakemake.params.modules,
    )
