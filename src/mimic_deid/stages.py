"""The list of workflow stages: each declared by its own package, collected here.

A stage is one selectable part of the workflow (config ``stages``): the series pipeline
(``series``: extraction, cohort, hourly series, de-identification, evaluation and the report of
the sweep) and the comparators ``tabular`` (seed 003), ``codes`` (seed 002) and ``sequences``
(seed 004). Each package declares its own :class:`~mimic_deid.core.stage.Stage` (``STAGE`` in
its ``stage.py``: tables, artefact paths, rule files, targets, report inputs and items, config
check); :data:`STAGE_PACKAGES` names the packages, one line each, and :data:`STAGES` is the one
list of their stages that ``rule all``, ``workflow/paths.py``, the report's inputs and items,
config ``stages`` (:func:`check_stage_selection`) and the start-up table check loop over. This
module imports nothing from ``report/``.

:func:`check_source_tables` runs when the workflow starts, before any job (also on a dry run):
it lists, in one message, every MIMIC-III table the selected stages need that the source lacks,
then reads the header of every one of them (and, for CSV, its first rows) and refuses a table
given twice, a missing column and a column whose values are not of the type read.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from importlib import import_module
from typing import Any

from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.core.stage import Stage, Target
from mimic_deid.series.stage import sweep_points
from mimic_deid.sources.extract import EXTRACTION_TABLES
from mimic_deid.sources.tables import Column, TableSpec, get_small_spec, get_spec

__all__ = [
    "EXTRACTION_TABLES",
    "REPORT_MODULES",
    "STAGES",
    "STAGE_PACKAGES",
    "Stage",
    "Target",
    "check_source_tables",
    "check_stage_selection",
    "check_stage_configs",
    "get_stage",
    "missing_tables_message",
    "report_stages",
    "required_specs",
    "required_tables",
    "selected_stages",
    "stage_names",
    "sweep_points",
]

#: Every stage's package (``mimic_deid.<name>``, whose ``stage.py`` declares its ``STAGE``),
#: one line each, in the order of the report's sections and of config ``stages``' default.
#: The first builds the report (its rules read the others' artefacts).
STAGE_PACKAGES: tuple[str, ...] = (
    "series",
    "tabular",
    "codes",
    "sequences",
)


def _declared_stage(package: str) -> Stage:
    """The ``STAGE`` of ``mimic_deid.<package>.stage``, which must be named after its package."""
    stage = import_module(f"mimic_deid.{package}.stage").STAGE
    if not isinstance(stage, Stage) or stage.name != package:
        raise TypeError(
            f"mimic_deid.{package}.stage.STAGE: expected the Stage named {package!r} (a stage "
            f"is named after its package), got {stage!r}"
        )
    return stage


#: Every stage, in :data:`STAGE_PACKAGES` order.
STAGES: tuple[Stage, ...] = tuple(_declared_stage(package) for package in STAGE_PACKAGES)
#: The modules of every stage's report items, in page order (``rule report``'s outputs and
#: :func:`mimic_deid.report.content.report_items`).
REPORT_MODULES: tuple[str, ...] = tuple(s.report_module for s in STAGES if s.report_module)


def report_stages(config: Mapping[str, Any]) -> tuple[Stage, ...]:
    """The stages whose artefacts the report reads: the first of :data:`STAGES` (whose rules
    build the report) and every other selected one (a deselected comparator is absent from
    the report; its items say it did not run)."""
    chosen = {s.name for s in selected_stages(config)}
    return tuple(s for i, s in enumerate(STAGES) if i == 0 or s.name in chosen)


def check_stage_configs(config: Mapping[str, Any]) -> None:
    """Every selected stage's :attr:`Stage.check_config`, in registry order (``ConfigError``)."""
    for stage in selected_stages(config):
        stage.check_config(config)


def stage_names() -> tuple[str, ...]:
    """The names of :data:`STAGES` (the values config ``stages`` accepts)."""
    return tuple(s.name for s in STAGES)


def get_stage(name: str) -> Stage:
    """The registered stage ``name``; ``ConfigError`` naming the known ones otherwise."""
    for stage in STAGES:
        if stage.name == name:
            return stage
    raise ConfigError(f"config parameter 'stages': unknown stage {name!r}; expected one of "
                      f"{list(stage_names())}")  # fmt: skip


def check_stage_selection(config: MutableMapping[str, Any]) -> None:
    """Refuse an unknown name in config ``stages``, and fill it with every stage of
    :data:`STAGES`, in list order, when it is absent (run by
    :func:`mimic_deid.config.validate_config`; the schema lists no stage).

    Raises
    ------
    ConfigError
        Naming ``stages``, the first unknown name and the known ones (:func:`get_stage`).
    """
    for name in config.setdefault("stages", list(stage_names())):
        get_stage(name)


def selected_stages(config: Mapping[str, Any]) -> tuple[Stage, ...]:
    """The stages config ``stages`` selects, in registry order (``ConfigError`` for an unknown
    name: :func:`check_stage_selection`)."""
    chosen = config["stages"]
    for name in chosen:
        get_stage(name)
    return tuple(s for s in STAGES if s.name in chosen)


def required_tables(config: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Every source table the selected stages read -> the stages that read it.

    Returns
    -------
    dict of str to tuple of str
        Table file stem (``"TRANSFERS"``) -> stage names, tables in first-need order.
    """
    needs: dict[str, list[str]] = {}
    for stage in selected_stages(config):
        for table in stage.tables(config):
            names = needs.setdefault(table, [])
            if stage.name not in names:
                names.append(stage.name)
    return {table: tuple(names) for table, names in needs.items()}


def required_specs(config: Mapping[str, Any]) -> dict[str, TableSpec]:
    """Every source table the selected stages read -> the columns they read from it.

    A table read by several stages (ADMISSIONS by ``series`` and ``tabular``) gets the union
    of their columns, in first-need order; a column is required when any stage requires it.

    Returns
    -------
    dict of str to TableSpec
        Table file stem -> a spec of that stem, tables in :func:`required_tables` order.
    """
    columns: dict[str, dict[str, Column]] = {}
    for stage in selected_stages(config):
        readers = {}
        for name in stage.table_readers:
            spec = get_small_spec(name)
            readers[spec.file_stem] = spec
        for table in stage.tables(config):
            spec = readers.get(table) or get_spec(table)
            merged = columns.setdefault(table, {})
            for col in spec.columns:
                known = merged.get(col.name)
                if known is not None and known.type != col.type:  # pragma: no cover - specs
                    raise TypeError(f"{table}.{col.name}: read as {known.type} and {col.type}")
                merged[col.name] = Column(
                    col.name, col.type, col.required or (known is not None and known.required)
                )
    return {
        table: TableSpec(table.lower(), tuple(cols.values())) for table, cols in columns.items()
    }


def missing_tables_message(
    where: str,
    needs: Mapping[str, tuple[str, ...]],
    missing: set[str] | frozenset[str],
    none_found: str = "",
) -> str:
    """The one-line message listing every missing table with the stages that need it.

    Parameters
    ----------
    where : str
        The source, e.g. ``"CSV source /data/mimic"``.
    needs : mapping
        :func:`required_tables`.
    missing : set of str
        The tables of ``needs`` the source lacks.
    none_found : str
        The advice when the source holds none of the tables (the source's
        ``none_found_advice``: the path or schema is wrong, leaving stages out would not
        help); empty: the generic advice.
    """
    listed = ", ".join(
        f"{table} (stage{'s' if len(stages) > 1 else ''} {', '.join(stages)})"
        for table, stages in sorted(needs.items())
        if table in missing
    )
    present = sorted(t for t in needs if t not in missing)
    if not present and none_found:
        return (
            f"{where}: holds none of the MIMIC-III tables the selected stages need "
            f"({', '.join(sorted(needs))}); {none_found}"
        )
    found = ", ".join(present) or "none of them"
    return (
        f"{where}: missing MIMIC-III tables for the selected stages: {listed}; found: {found}. "
        "Add the missing tables, or leave their stages out of config parameter 'stages'"
    )


def check_source_tables(config: Mapping[str, Any], tables: bool = True) -> None:
    """Check, before any job runs, the source tables the selected stages need.

    The synthetic copy is generated with every table, so nothing is checked for it. First
    every table must be present: a CSV table when ``NAME.csv`` or ``NAME.csv.gz`` exists
    (name case ignored, as the reader looks it up); a PostgreSQL table when the configured
    schema holds a table or view of that name. Then every table is checked as its job would
    read it (the source's ``check_table`` with :func:`required_specs`): a CSV table given more
    than once (``X.csv`` beside ``X.csv.gz``, or names differing only in case), a column
    missing from its header, or a value among its first ``source.csv.check_rows`` data rows
    that is not of the column's type; a PostgreSQL column missing or of a type that does not
    hold the values read. Only headers and the first rows are read, never a whole table.

    Parameters
    ----------
    config : mapping
        The validated config.
    tables : bool, default True
        False: only the presence check (a job's own process, where the workflow's driver
        has checked the tables already).

    Raises
    ------
    InputDataError
        One message naming every missing table and the stages that need it
        (:func:`missing_tables_message`), or the CSV directory that does not exist; else one
        line per table that fails its check, each naming the file or table, the column and
        what was expected.
    SourceConnectionError
        The PostgreSQL server cannot be reached.
    """
    source = config["source"]
    if source["kind"] == "synthetic":
        return
    from mimic_deid.sources import open_configured_source

    needs = required_tables(config)
    reader = open_configured_source(source)
    missing = set(reader.missing_tables(list(needs)))
    if missing:
        raise InputDataError(
            missing_tables_message(
                reader.describe(), needs, missing, reader.none_found_advice(list(needs))
            )
        )
    if not tables:
        return
    sample_rows = source["csv"].get("check_rows", 0) if source["kind"] == "csv" else 0
    problems = []
    for spec in required_specs(config).values():
        try:
            reader.check_table(spec, sample_rows)
        except InputDataError as exc:
            problems.append(str(exc))
    if problems:
        raise InputDataError("\n".join(problems))
