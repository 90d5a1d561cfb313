"""The contract of a workflow stage: what a stage declares about itself, in its own package.

A stage is one selectable part of the workflow (config ``stages``). Each package that is a
stage declares one :class:`Stage` object, ``STAGE``, in its ``stage.py`` (the series pipeline
in ``mimic_deid.series.stage``, the comparators in ``tabular/``, ``codes/`` and
``sequences/``); :mod:`mimic_deid.stages` only collects them into its list. Nothing here
knows a stage: the contract is data and callables of the config.

A stage declares its own artefacts (:attr:`Stage.public_paths`, :attr:`Stage.private_paths`):
artefact key -> path template relative to the public or the owner-only results folder.
``workflow/paths.py`` holds the roots and the series pipeline's own paths and composes
``PATHS`` from them and every stage's declarations, so no stage spells ``results/``. Targets are
``(artefact key, wildcards)`` pairs over those keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Stage", "Target", "artefacts", "no_check", "no_report_inputs"]

#: An artefact of a stage: its key in ``workflow/paths.py`` and the wildcards to fill in.
Target = tuple[str, Mapping[str, Any]]


def no_report_inputs(config: Mapping[str, Any], audience: str = "public") -> dict[str, Target]:
    """The report inputs of a stage the report does not read: none."""
    return {}


def artefacts(keys: tuple[str, ...]) -> Callable[..., Any]:
    """The ``targets`` or ``report_inputs`` of a stage whose artefacts have no wildcards:
    ``(key, {})`` for every key (as a dict keyed by the key itself for report inputs, given
    an ``audience``)."""

    def targets(config: Mapping[str, Any], audience: str | None = None) -> Any:
        pairs = tuple((key, {}) for key in keys)
        return pairs if audience is None else dict(zip(keys, pairs, strict=True))

    return targets


def no_check(config: Mapping[str, Any]) -> None:
    """The config check of a stage without checks across its parameters: nothing."""
    return None


@dataclass(frozen=True)
class Stage:
    """One selectable stage of the workflow, declared by its own package.

    Attributes
    ----------
    name : str
        The name in config ``stages``, the name of the stage's package
        (``mimic_deid.<name>.stage``).
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
        ``report_inputs(config, audience) -> {report-rule input name: Target}``: the stage's
        artefacts the report of ``audience`` (``public`` or ``private``) reads; a comparator's
        are absent from the report when it is not selected.
    report_module : str
        The dotted name of the module holding the stage's report items (its ``ITEMS``, drawn
        from :class:`mimic_deid.report.items.ReportData`), in page order; empty: none. The
        report imports it by this name, so no list of stages is kept in ``report/``.
    with_stages : mapping
        Other stage name -> targets built by ``rule all`` only when that stage is selected too
        (they read both stages' artefacts).
    check_config : callable
        ``check_config(config)``: the stage's checks across parameters of its config section
        that the schema cannot state, run at start-up (before any job, also on a dry run)
        when the stage is selected; raises ``ConfigError`` naming the parameter.
    rule_files : tuple of str
        The stage's rule files (``workflow/rules/<file>``), included by the Snakefile in
        stage-list order after ``common.smk`` whether the stage is selected or not (a
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
    public_paths : mapping
        Artefact key -> path template relative to the public results folder (``results/``),
        with the rules' wildcards (``"sequences/{table}/check.json"``): what anyone may read.
        The key is the stage's artefact in ``PATHS`` (``workflow/paths.py``, which adds the
        root) and in its targets and report inputs; unique across the workflow.
    private_paths : mapping
        Artefact key -> path template relative to the owner-only results folder
        (``results/private/``): what holds or is computed from patients' values before a
        check certifies it.
    """

    name: str
    config_section: str
    tables: Callable[[Mapping[str, Any]], tuple[str, ...]]
    targets: Callable[[Mapping[str, Any]], tuple[Target, ...]]
    report_inputs: Callable[..., dict[str, Target]] = no_report_inputs
    report_module: str = ""
    with_stages: Mapping[str, tuple[Target, ...]] = field(default_factory=dict)
    check_config: Callable[[Mapping[str, Any]], None] = no_check
    rule_files: tuple[str, ...] = ()
    seed_namespace: str = ""
    table_readers: tuple[str, ...] = ()
    public_paths: Mapping[str, str] = field(default_factory=dict)
    private_paths: Mapping[str, str] = field(default_factory=dict)
