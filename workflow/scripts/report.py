"""Rule report: the report's figures, tables and index page."""

from pathlib import Path

from mimic_deid.logs import run_stage
from mimic_deid.report import build_report, load_report_data

with run_stage(snakemake.rule, snakemake.log[0]):
    data = load_report_data(
        dict(snakemake.input.items()),
        snakemake.params.point,
        dict(snakemake.params.features),
        snakemake.params.duration_method,
        snakemake.params.evaluate,
    )
    build_report(
        data,
        figures_dir=Path(snakemake.output.figures[0]).parent,
        tables_dir=Path(snakemake.output.tables[0]).parent,
        index_out=snakemake.output.index,
        sweep_csv=snakemake.input.sweep,
    )
