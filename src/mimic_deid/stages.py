"""The registry of workflow stages: what each one reads from the source and what it builds.

A stage is one selectable part of the workflow (config ``stages``): the series pipeline
(``series``: extraction, cohort, hourly series, de-identification, evaluation and the report of
the sweep) and the comparators ``tabular`` (seed 003), ``codes`` (seed 002) and ``sequences``
(seed 004). :data:`STAGES` is the one list that ``rule all``, the report's inputs and the
start-up table check loop over (the first piece of the ``Stage`` contract of issue 29).

Targets are ``(artefact key, wildcards)`` pairs: the keys are those of ``workflow/paths.py``,
which alone spells the paths, so this module never knows a path under ``results/``.

:func:`check_source_tables` runs when the workflow starts, before any job (also on a dry run):
it lists, in one message, every MIMIC-III table the selected stages need that the source lacks,
then reads the header of every one of them (and, for CSV, its first rows) and refuses a table
given twice, a missing column and a column whose values are not of the type read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mimic_deid.codes.stage import check_codes_config
from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.deid.duration import GROUP_BY_SPLIT
from mimic_deid.deid.methods import method_labels
from mimic_deid.pipeline.variables import load_variables, series_variables
from mimic_deid.report.tabular import TABULAR_INPUTS
from mimic_deid.sequences.stage import check_sequences_config
from mimic_deid.sources.extract import EVENT_ORDER, SMALL_ORDER
from mimic_deid.sources.tables import (
    CODE_TABLES,
    PROCEDURES_ICD,
    SEQUENCE_TABLES,
    Column,
    TableSpec,
    get_small_spec,
    get_spec,
)
from mimic_deid.tabular.stage import SOURCE_TABLES as TABULAR_READERS
from mimic_deid.tabular.stage import check_tabular_config

__all__ = [
    "EXTRACTION_TABLES",
    "STAGES",
    "Stage",
    "Target",
    "check_source_tables",
    "check_stage_configs",
    "get_stage",
    "missing_tables_message",
    "required_specs",
    "required_tables",
    "selected_stages",
    "stage_names",
    "sweep_points",
]

#: An artefact of a stage: its key in ``workflow/paths.py`` and the wildcards to fill in.
Target = tuple[str, Mapping[str, Any]]

#: The tables the raw extraction reads (``sources.extract_raw``): every stage that needs the
#: cohort or the hourly series needs them.
EXTRACTION_TABLES: tuple[str, ...] = tuple(t.upper() for t in (*SMALL_ORDER, *EVENT_ORDER))


def _none(config: Mapping[str, Any]) -> dict[str, Target]:
    return {}


def _no_check(config: Mapping[str, Any]) -> None:
    return None


@dataclass(frozen=True)
class Stage:
    """One selectable stage of the workflow.

    Attributes
    ----------
    name : str
        The name in config ``stages``.
    config_section : str
        The top-level config section (``config/schema.yaml``) holding the stage's parameters.
    tables : callable
        ``tables(config) -> tuple of str``: the MIMIC-III tables (file stems, e.g.
        ``"TRANSFERS"``) the stage reads from the source under ``config``, including those of
        the raw extraction when it needs the cohort or the series.
    targets : callable
        ``targets(config) -> tuple of Target``: what the stage contributes to ``rule all``
        (and its named target).
    report_inputs : callable
        ``report_inputs(config) -> {report-rule input name: Target}``: the stage's artefacts
        the report of the sweep draws (absent from the report when the stage is not selected).
    with_stages : mapping
        Other stage name -> targets built by ``rule all`` only when that stage is selected too
        (they read both stages' artefacts).
    check_config : callable
        ``check_config(config)``: the stage's checks across parameters of its config section
        that the schema cannot state, run at start-up (before any job, also on a dry run)
        when the stage is selected; raises ``ConfigError`` naming the parameter.
    rule_files : tuple of str
        The stage's rule files (``workflow/rules/<file>``), included by the Snakefile in
        registry order after ``common.smk`` whether the stage is selected or not (a
        deselected stage's rules exist; ``rule all`` just does not ask for them).
    table_readers : tuple of str
        Names of the readers of ``sources.tables.get_small_spec`` the stage reads a table
        through in place of the table's own spec (the tabular stage reads ADMISSIONS as
        ``admissions_demographics``): which columns the start-up check requires.
    seed_namespace : str
        The prefix of the first key of every random stream the stage's library derives from
        the master seed (``derive_rng(seed, "<namespace>...", ...)``, never in a workflow
        script), so that no two stages share a stream; empty for the series pipeline, whose
        streams are keyed by what they draw (``linkage``, ``targets``, ``pairing``, ...).
    """

    name: str
    config_section: str
    tables: Callable[[Mapping[str, Any]], tuple[str, ...]]
    targets: Callable[[Mapping[str, Any]], tuple[Target, ...]]
    report_inputs: Callable[[Mapping[str, Any]], dict[str, Target]] = _none
    with_stages: Mapping[str, tuple[Target, ...]] = field(default_factory=dict)
    check_config: Callable[[Mapping[str, Any]], None] = _no_check
    rule_files: tuple[str, ...] = ()
    seed_namespace: str = ""
    table_readers: tuple[str, ...] = ()


# --------------------------------------------------------------------------- the stages


def _series_tables(config: Mapping[str, Any]) -> tuple[str, ...]:
    return EXTRACTION_TABLES


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


def _series_targets(config: Mapping[str, Any]) -> tuple[Target, ...]:
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


CODES_TARGETS = ("codes_audit", "codes_cdf", "codes_gccens", "codes_lda", "codes_check")


def _codes_tables(config: Mapping[str, Any]) -> tuple[str, ...]:
    # the audit reads the cohort (raw extraction) and the diagnosis tables
    return EXTRACTION_TABLES + tuple(t.upper() for t in CODE_TABLES)


def _codes_targets(config: Mapping[str, Any]) -> tuple[Target, ...]:
    return tuple((key, {}) for key in CODES_TARGETS)


def _codes_report(config: Mapping[str, Any]) -> dict[str, Target]:
    return {key: (key, {}) for key in ("codes_audit", "codes_gccens", "codes_lda")}


SEQUENCE_TARGETS = ("seq_published", "seq_summary", "seq_check", "seq_sweep", "seq_friedman")


def _sequences_tables(config: Mapping[str, Any]) -> tuple[str, ...]:
    chosen = config["sequences"]["tables"]
    own = tuple(t.upper() for t in chosen if t in SEQUENCE_TABLES)
    # the `vitals` table is made of the stays series (the series pipeline's extraction)
    return own + (EXTRACTION_TABLES if "vitals" in chosen else ())


def _sequences_targets(config: Mapping[str, Any]) -> tuple[Target, ...]:
    return tuple(
        (key, {"table": t}) for t in config["sequences"]["tables"] for key in SEQUENCE_TARGETS
    )


def _sequences_report(config: Mapping[str, Any]) -> dict[str, Target]:
    inputs = {}
    for t in config["sequences"]["tables"]:
        for name, key in (("sweep", "seq_sweep"), ("friedman", "seq_friedman")):
            inputs[f"sequences_{name}_{t}"] = (key, {"table": t})
        inputs[f"sequences_attack_{t}"] = ("seq_attack", {"table": t})
        inputs[f"sequences_check_{t}"] = ("seq_check", {"table": t})
    return inputs


#: The tabular stage's own artefacts (the light `tabular` target); the joint risk with the
#: stays' duration classes is built only with the series pipeline (``with_stages``).
TABULAR_TARGETS = (
    "tabular_uniqueness",
    "tabular_ola",
    "tabular_inverse",
    "tabular_concealing",
    "tabular_dps_grid",
    "tabular_dps",
    "tabular_epsilon_la",
    "tabular_release_summary",
    "tabular_check",
)


def _tabular_tables(config: Mapping[str, Any]) -> tuple[str, ...]:
    # PROCEDURES_ICD is read only when procedures are joined to the demographics
    procedures = (PROCEDURES_ICD.file_stem,) if config["tabular"]["procedures"] > 0 else ()
    return ("PATIENTS", "ADMISSIONS", *procedures)


def _tabular_targets(config: Mapping[str, Any]) -> tuple[Target, ...]:
    return tuple((key, {}) for key in TABULAR_TARGETS)


def _tabular_report(config: Mapping[str, Any]) -> dict[str, Target]:
    return {key: (key, {}) for key in TABULAR_INPUTS}


def _codes_check(config: Mapping[str, Any]) -> None:
    check_codes_config(config["codes"])


def _tabular_check(config: Mapping[str, Any]) -> None:
    check_tabular_config(config["tabular"])


def _sequences_check(config: Mapping[str, Any]) -> None:
    section = config["sequences"]
    names: list[str] = []  # the variables table is read only when `vitals` needs it
    if "vitals" in section["tables"]:
        names = [v.name for v in series_variables(load_variables(config["variables"]))]
    check_sequences_config(section, names)


#: Every stage, in the order of the report's sections and of config ``stages``' default.
STAGES: tuple[Stage, ...] = (
    Stage("series", "deid", _series_tables, _series_targets,
          rule_files=("source.smk", "cohort.smk", "series.smk", "deid.smk", "evaluate.smk",
                      "report.smk")),
    Stage("tabular", "tabular", _tabular_tables, _tabular_targets, _tabular_report,
          {"series": (("tabular_joint_risk", {}),)}, _tabular_check, ("tabular.smk",),
          "tabular", tuple(TABULAR_READERS.values())),
    Stage("codes", "codes", _codes_tables, _codes_targets, _codes_report,
          check_config=_codes_check, rule_files=("codes.smk",), seed_namespace="codes"),
    Stage("sequences", "sequences", _sequences_tables, _sequences_targets, _sequences_report,
          check_config=_sequences_check, rule_files=("sequences.smk",),
          seed_namespace="sequences"),
)  # fmt: skip


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


def selected_stages(config: Mapping[str, Any]) -> tuple[Stage, ...]:
    """The stages config ``stages`` selects, in registry order (all when it is absent)."""
    chosen = config.get("stages")
    if chosen is None:
        return STAGES
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
