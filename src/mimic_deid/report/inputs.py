"""The report's one reader: every input file of ``rule report`` / ``rule private_report``.

:func:`load_report_data` reads every input once (:func:`read_input`: by its suffix, Parquet,
CSV, JSON or the variables' YAML) and applies the public report's filter as it reads: the GA
examples' input (:data:`~mimic_deid.report.items.GA_INPUTS`) is refused and the main class's
original series and features (:data:`~mimic_deid.evaluate.curves.ORIGINAL_KEYS`) are dropped,
so no public item can draw them. Nothing is computed here but selections; the items of each
stage's report module draw from the :class:`~mimic_deid.report.items.ReportData` it returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from mimic_deid.core.atomic import read_json
from mimic_deid.core.errors import ConfigError, InputDataError, require_choice
from mimic_deid.deid.classes import KEY
from mimic_deid.deid.examples import examples_from_json
from mimic_deid.deid.tuning import TUNED_METHODS
from mimic_deid.evaluate.curves import ORIGINAL_KEYS, curves_from_table
from mimic_deid.pipeline.variables import load_variables
from mimic_deid.report.items import AUDIENCES, GA_INPUTS, ReportData

__all__ = ["load_report_data", "read_input"]

#: The series inputs that are :class:`ReportData` fields of the same name, as read.
AS_READ = (
    "duration_methods",
    "baseline_summary",
    "summary",
    "baseline_series",
    "per_series",
    "linkage",
    "utility",
)
#: The series inputs :func:`load_report_data` turns into :class:`ReportData` fields; every
#: other input is kept as read in ``ReportData.inputs``.
SERIES_INPUTS = (
    "meta",
    "classes",
    "records_lost",
    *AS_READ,
    "variables",
    "main_curves",
    "cross_release",
    "frontier",
    "sweep",
    "cohort_counts",
    *GA_INPUTS,
)


def read_input(name: str, path: str, audience: str = "public") -> Any:
    """Read the report input ``name`` at ``path`` as the report uses it.

    Parquet, CSV and JSON files by their suffix; ``variables`` (the variables table) as
    :func:`~mimic_deid.pipeline.variables.load_variables` reads it; ``main_curves`` as
    :func:`~mimic_deid.evaluate.curves.curves_from_table` reads it, without the original
    values for the ``public`` audience; ``ga_examples`` as
    :func:`~mimic_deid.deid.examples.examples_from_json` reads it (private report only).
    """
    text = str(path)
    if name == "variables":
        return load_variables(text)
    if name == "main_curves":
        curves = curves_from_table(pq.read_table(text), text)
        if audience == "public":
            curves = {k: v for k, v in curves.items() if k not in ORIGINAL_KEYS}
        return curves
    if name in GA_INPUTS:
        return examples_from_json(read_json(text))
    if text.endswith(".parquet"):
        return pd.read_parquet(text)
    if text.endswith(".csv"):
        return pd.read_csv(text)
    if text.endswith(".json"):
        return read_json(text)
    raise InputDataError(f"report input {name!r} ({text}): expected a .parquet, .csv or .json file")


def load_report_data(
    inputs: Mapping[str, str],
    point: Mapping[str, Any],
    *,
    duration_method: str,
    series_distance: str,
    audience: str = "public",
) -> ReportData:
    """Read the run's artefacts the report draws (input names as in ``rule report``).

    Nothing is computed here but selections: the main class's curves come finished from
    rule ``privacy_curves`` (input ``main_curves``), the GA examples from rule
    ``method_examples`` (input ``ga_examples``). ``duration_method`` and ``series_distance``
    are the run's config values (the §6.1 table marks the method; the disagreement figures
    name the distance's unit). For the ``public`` audience the GA inputs (:data:`GA_INPUTS`)
    are refused and the main class's original series and features are dropped as they are
    read: the public report holds measures of them, never the values.
    """
    require_choice(audience, AUDIENCES, "report audience")
    refused = [name for name in GA_INPUTS if name in inputs]
    if audience == "public" and refused:
        raise ConfigError(
            f"public report: input {refused[0]!r} holds original values of individual "
            "patients; only the private report (audience 'private') reads it"
        )
    read = {name: read_input(name, path, audience) for name, path in inputs.items()}
    meta = read["meta"]
    classes = read["classes"].set_index(KEY).loc[meta[KEY]]
    lost = read["records_lost"].set_index(KEY).loc[meta[KEY]]
    return ReportData(
        point=dict(point),
        lengths=meta["length"].to_numpy(),
        class_lengths=classes["class_length"].to_numpy(),
        records_lost=lost["records_lost"].to_numpy(),
        **{name: read[name] for name in AS_READ},
        tuning={kind: read[f"tuning_{kind}"] for kind in TUNED_METHODS if f"tuning_{kind}" in read},
        ga_examples=read.get("ga_examples", []),
        units={v.name: (v.label, v.unit) for v in read["variables"]},
        duration_method=duration_method,
        series_distance=series_distance,
        main_curves=read.get("main_curves", {}),
        cards=[v for k, v in sorted(read.items()) if k.startswith("card_")],
        cross_release=read.get("cross_release", pd.DataFrame()),
        frontier=read.get("frontier", pd.DataFrame()),
        sweep=read.get("sweep"),
        cohort=read.get("cohort_counts", {}),
        inputs={
            k: v
            for k, v in read.items()
            if k not in SERIES_INPUTS and not k.startswith(("card_", "tuning_"))
        },
        audience=audience,
    )
