"""The series stage's declaration: the tables it reads, its sweep, targets and report inputs.

The series pipeline (extraction, cohort, hourly series, de-identification, evaluation, the
report of the sweep; config section ``deid``) is one :class:`~mimic_deid.core.stage.Stage`
like the comparators. Its report inputs are the artefacts of the sweep point the report shows
(the first, :func:`primary_point`), every release's card, and the first tuning table of each
tuned optimiser; the private report adds the GA examples of the first point of a method with
examples and reads the owner's pairing table of every pair.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mimic_deid.core.stage import Stage, Target
from mimic_deid.deid.duration import GROUP_BY_SPLIT
from mimic_deid.deid.methods import method_labels, method_of
from mimic_deid.deid.tuning import TUNED_METHODS
from mimic_deid.evaluate.pairing import release_name
from mimic_deid.sources.extract import EXTRACTION_TABLES

__all__ = ["STAGE", "primary_point", "sweep_points"]


def sweep_points(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every (dk, fk, heuristic, method label) point of the series sweep, as wildcard dicts,
    in sweep order (dk, then fk, heuristic, method)."""
    deid = config["deid"]
    return [
        dict(dk=dk, fk=fk, heuristic=h, method=m)
        for dk in deid["dk"]
        for fk in deid["fk"]
        for h in deid["heuristic"]
        for m in method_labels(deid["methods"])
    ]


def primary_point(config: Mapping[str, Any]) -> dict[str, Any]:
    """The sweep point the report's figures show: the first of the sweep."""
    return sweep_points(config)[0]


def _tables(config: Mapping[str, Any]) -> tuple[str, ...]:
    return EXTRACTION_TABLES


def _targets(config: Mapping[str, Any]) -> tuple[Target, ...]:
    # every release's public directory (its tables, card and dictionary, or refused.txt and
    # its card), then the report
    published = tuple(
        (key, dict(point, release=release))
        for release in GROUP_BY_SPLIT
        for point in sweep_points(config)
        for key in ("published", "card")
    )
    return published + (
        ("report_index", {}),
        ("private_report_index", {}),
        ("sweep_csv", {}),
        ("frontier", {}),
    )


def _report_inputs(config: Mapping[str, Any], audience: str = "public") -> dict[str, Target]:
    """The public report's series inputs: public artefacts, and private ones the report
    reduces to counts (meta, duration: lengths) or to disagreement measures (main_curves: the
    main class's curves, drawn without its original values; the per-series and per-class
    disagreement tables, drawn for a certified release only); the private report's: the
    same without the sweep summary, the owner's pairing table (every pair) and the GA
    examples (original and perturbed series of two patients)."""
    p = dict(primary_point(config), release="stays")
    dk = {"release": "stays", "dk": p["dk"]}
    point = {k: v for k, v in p.items() if k != "release"}
    inputs: dict[str, Target] = {
        "meta": ("meta", {"release": "stays"}),
        "classes": ("duration", dk),
        "records_lost": ("records_lost", dk),
        "duration_methods": ("duration_methods", dk),
        "baseline_summary": ("baseline_summary", dk),
        "baseline_series": ("baseline_series", dk),
        "summary": ("disagreement_summary", p),
        "per_series": ("disagreement_series", p),
        "linkage": ("linkage", p),
        "utility": ("utility", point),
        # aggregate counts of the source and the cohort for the front matter (report.front)
        "cohort_counts": ("cohort_counts", {}),
        # the main class's individual disagreement curves (seed Figs 3.1 and 5.4)
        "main_curves": ("main_curves", p),
    }
    if audience == "public":
        inputs["sweep"] = ("sweep_csv", {})
        inputs["cross_release"] = ("cross_release", {})
        # the privacy-utility frontier (its figure and the first screen's best releases)
        inputs["frontier"] = ("frontier", {})
    else:
        inputs["cross_release"] = ("cross_release_all", {})
    # every release's card (the release_cards table)
    for point in sweep_points(config):
        for release in GROUP_BY_SPLIT:
            inputs[f"card_{release_name(release, point)}"] = ("card", dict(point, release=release))
    labels = method_labels(config["deid"]["methods"])
    for name in TUNED_METHODS:
        label = next((m for m in labels if m.startswith(f"{name}-")), None)
        if label:
            inputs[f"tuning_{name}"] = ("tuning_table", {"dk": p["dk"], "method": label})
    if audience == "private":
        # the first point of a method whose examples the private report draws (the genetic one)
        g = next((q for q in sweep_points(config) if method_of(q["method"]).examples), None)
        if g:
            inputs["ga_examples"] = ("method_examples", dict(g, release="stays"))
    return inputs


#: The series stage; its report items in :mod:`mimic_deid.report.series`.
STAGE = Stage(name="series", config_section="deid", tables=_tables, targets=_targets,
              report_inputs=_report_inputs, report_module="mimic_deid.report.series",
              rule_files=("source.smk", "cohort.smk", "series.smk", "deid.smk", "evaluate.smk",
                          "report.smk"))  # fmt: skip
