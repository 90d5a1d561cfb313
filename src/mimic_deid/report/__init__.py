"""The report: its content registry (figures, tables, captions), drawing, tables, the sweep
summary and the static HTML index."""

from mimic_deid.report.content import (
    FIGURES,
    ITEMS,
    PRIVATE_FIGURES,
    TABLES,
    ReportData,
    ReportItem,
    build_report,
    load_report_data,
    report_items,
)
from mimic_deid.report.sweep import sweep_row, sweep_table
from mimic_deid.report.tables import to_markdown

__all__ = [
    "FIGURES",
    "ITEMS",
    "PRIVATE_FIGURES",
    "TABLES",
    "ReportData",
    "ReportItem",
    "build_report",
    "load_report_data",
    "report_items",
    "sweep_row",
    "sweep_table",
    "to_markdown",
]
