"""The report: the stages' report items gathered (``content``), the one reader of its inputs
(``inputs``), drawing, tables, the sweep summary and the static HTML index."""

from mimic_deid.report.content import build_report, item_names, report_items, stage_items
from mimic_deid.report.inputs import load_report_data
from mimic_deid.report.items import ReportData, ReportItem
from mimic_deid.report.sweep import sweep_row, sweep_table
from mimic_deid.report.tables import to_markdown

__all__ = [
    "ReportData",
    "ReportItem",
    "build_report",
    "item_names",
    "load_report_data",
    "report_items",
    "stage_items",
    "sweep_row",
    "sweep_table",
    "to_markdown",
]
