# Configuration validation, sweep expansion and the inputs of rules that gather a sweep.
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))
from paths import LOGS, PATHS, POINT, PRIVATE, migrate_renamed, path

from mimic_deid.core.atomic import make_private_dir, protect_tree, write_text
from mimic_deid.config import check_config_files, validate_config, weak_k_warning
from mimic_deid.deid import (
    GROUP_BY_SPLIT,
    LABELLED,
    protected_features,
    released_variables,
    tuning_labels,
)
from mimic_deid.deid.demographics import check_release_config
from mimic_deid.deid.tuning import TUNING_GRID_METHOD
from mimic_deid.deid.methods import REGISTRY, method_labels, method_of
from mimic_deid.core.errors import ConfigError, MimicDeidError
from mimic_deid.sources import open_source
from mimic_deid.synthetic import generator_fingerprint
from mimic_deid.sources.csv_source import table_files
from mimic_deid.sources.tables import (
    ADMISSIONS_DEMOGRAPHICS,
    CODE_TABLES,
    PROCEDURES_ICD,
    SEQUENCE_TABLES,
    get_small_spec,
)
from mimic_deid.report.content import item_names
from mimic_deid.core.seeding import master_seed
from mimic_deid.core.threads import job_threads
from mimic_deid.evaluate.pairing import release_name, release_pairs
from mimic_deid.stages import (
    REPORT_MODULES,
    STAGES,
    check_source_tables,
    check_stage_configs,
    get_stage,
    report_stages,
    selected_stages,
)
from mimic_deid.stages import sweep_points as sweep_points_of
from mimic_deid.series.stage import primary_point as primary_point_of
from mimic_deid.pipeline.variables import load_variables, series_variables

try:
    # A key given twice in a config file (Snakemake keeps the last one silently).
    check_config_files(workflow.configfiles)
    # Coerces --config strings, fills the schema's defaults, checks cross-field rules.
    validate_config(config, workflow.source_path("../../config/schema.yaml"))
    # the published demographics' hierarchies, before any job reads them
    check_release_config(config["release"])
    # each selected stage's own checks across parameters (Stage.check_config)
    check_stage_configs(config)
except ConfigError as exc:
    # One line naming the parameter, no traceback, before any job runs.
    print(f"mimic-deid: invalid configuration: {exc}", file=sys.stderr)
    sys.exit(1)
# Threads of the rules that can use several cores, all that --cores gives (issue 47).
WIDE_THREADS = job_threads(workflow.resource_settings.cores)
WEAK_K_WARNING = weak_k_warning(config)
if WEAK_K_WARNING:
    print(WEAK_K_WARNING, file=sys.stderr)

try:
    # Before any job, also on a dry run: every source table the selected stages need, in one
    # message, then each one's header and first rows (a table given twice, a missing column,
    # a value not of its column's type: one line per table); then the master seed (a real
    # source never runs under the public one). Each table's own check by the driver only
    # (not again in every job's process).
    check_source_tables(config, tables=workflow.is_main_process)
    config["seed"], SEED_NOTE = master_seed(
        config["seed"], config["source"]["kind"], PATHS["master_seed"]
    )
except MimicDeidError as exc:
    for line in str(exc).splitlines():
        print(f"mimic-deid: source: {line}", file=sys.stderr)
    sys.exit(1)
if SEED_NOTE:
    print(SEED_NOTE, file=sys.stderr)
# Artefacts of an earlier version under their new names (paths.RENAMED) and below
# results/private (paths.MOVED_PRIVATE), not recomputed; by the driver only (not again in
# every job a cluster runs).
if workflow.is_main_process and migrate_renamed():
    print(
        "mimic-deid: renamed earlier artefacts (optimiser.* -> method.*) and moved the "
        "per-series attack results and method summaries below results/private",
        file=sys.stderr,
    )


def protect_private():
    """Make every file and folder below results/private and logs/ owner-only (the writers
    do so for their own outputs; this pass covers what Snakemake writes there itself); names,
    in a warning, any entry that is not the user's to change."""
    failed = [p for root in (PRIVATE, LOGS) for p in protect_tree(root)]
    if failed:
        print(
            "mimic-deid: warning: cannot make these private entries owner-only (not yours): "
            + ", ".join(str(p) for p in failed[:10])
            + (f" and {len(failed) - 10} more" if len(failed) > 10 else ""),
            file=sys.stderr,
        )


def protect_run_metadata():
    """With a real source the master seed is secret, and Snakemake records rule params (the
    seed among them) and job scripts under .snakemake/: make that directory owner-only.
    """
    if config["source"]["kind"] != "synthetic":
        make_private_dir(".snakemake")


# The stages `rule all` builds (config `stages`; mimic_deid.stages.STAGES).
SELECTED_STAGES = selected_stages(config)
# Every registered stage's rule files, which the Snakefile includes (selected or not).
STAGE_RULE_FILES = [rule_file for stage in STAGES for rule_file in stage.rule_files]
SELECTED = {stage.name for stage in SELECTED_STAGES}

RELEASES = list(GROUP_BY_SPLIT)
DEID = config["deid"]
SERIES_VARIABLES = [
    v.name for v in series_variables(load_variables(config["variables"]))
]
# What de-identification protects and what a release publishes (config release/variables).
PROTECTED = protected_features(
    DEID["features"], SERIES_VARIABLES, config["release"]["variables"]
)
RELEASED = released_variables(PROTECTED, SERIES_VARIABLES)
METHODS = method_labels(DEID["methods"])
TUNING_GRID = (
    method_labels({TUNING_GRID_METHOD: DEID["tuning_grid"]})
    if "tuning_grid" in DEID
    else []
)
TUNING_TABLES = tuning_labels(METHODS, DEID["tuning"]["fitness"])


wildcard_constraints:
    release="|".join(RELEASES),
    dk=r"\d+",
    fk=r"\d+",
    heuristic="range|diversity",
    method=rf"({'|'.join(REGISTRY)})(-[A-Za-z0-9._\-]+)?",


def sweep_points():
    """Every (dk, fk, heuristic, method) combination of the config, as wildcard dicts."""
    return sweep_points_of(config)


def stage_paths(targets):
    """The paths of a stage's targets ((artefact key, wildcards) pairs)."""
    return [path(key, **wildcards) for key, wildcards in targets]


def stage_outputs(name):
    """Every artefact stage ``name`` contributes to `rule all` (its named target)."""
    return stage_paths(get_stage(name).targets(config))


def all_targets():
    """The input of `rule all`, the selected stages' targets and those needing two of them."""
    out = []
    for stage in SELECTED_STAGES:
        out += stage_paths(stage.targets(config))
        for other, targets in stage.with_stages.items():
            if other in SELECTED:
                out += stage_paths(targets)
    return out


def point_paths(name, **extra):
    """Path ``name`` at every sweep point."""
    return [path(name, **point, **extra) for point in sweep_points()]


def synthetic_dir():
    synth = config["source"]["synthetic"]
    return path("synthetic", subjects=synth["subjects"], seed=synth["seed"])


def source_input(specs=None):
    """What the source-reading rules read, so that a changed source re-runs it: the
    synthetic copy, the CSV files of ``specs`` present (csv_source.table_files; default the
    extraction's tables), or a file holding the PostgreSQL database's fingerprint."""
    kind = config["source"]["kind"]
    if kind == "synthetic":
        return {"source_dir": synthetic_dir()}
    if kind == "csv":
        files = table_files(config["source"]["csv"]["path"], specs)
        return {"tables": [str(p) for p in files]}
    return {"fingerprint": postgres_fingerprint()}


def extract_input(wildcards):
    """What the raw extraction reads: the variables table and the source."""
    return {"variables": config["variables"], **source_input()}


def codes_extract_input(wildcards):
    """The codes stage's extraction: the raw admissions/patients (ages) and the source's
    diagnosis tables."""
    return {"raw": PATHS["raw"], **source_input(CODE_TABLES.values())}


def sequences_extract_input(wildcards):
    """The sequences stage's extraction: the table from the source; `vitals` reads the stays
    series instead."""
    if wildcards.table == "vitals":
        return {"series": path("series", release="stays")}
    return source_input([SEQUENCE_TABLES[wildcards.table]])


def tabular_extract_input(wildcards):
    """The tabular stage's extraction: PATIENTS, ADMISSIONS and, when the stage reads it
    (`tabular.procedures` > 0), PROCEDURES_ICD."""
    specs = [get_small_spec("patients"), ADMISSIONS_DEMOGRAPHICS]
    if config["tabular"]["procedures"] > 0:
        specs.append(PROCEDURES_ICD)
    return source_input(specs)


def postgres_fingerprint():
    """Write the database's fingerprint (or the user's version tag) where the extraction sees
    it; the file changes, and the extraction re-runs, only when the database does."""
    pg = config["source"]["postgres"]
    try:
        text = (
            pg["version_tag"]
            or open_source("postgres", dsn=pg["dsn"], schema=pg["schema"]).fingerprint()
        )
    except MimicDeidError as exc:
        print(f"mimic-deid: source: {exc}", file=sys.stderr)
        sys.exit(1)
    target = Path(PATHS["source_fingerprint"])
    if not target.exists() or target.read_text(encoding="utf-8") != text:
        write_text(text, target)
    return str(target)


def group_by_split(wildcards):
    return GROUP_BY_SPLIT[wildcards.release]


def labelled(wildcards):
    return LABELLED[wildcards.release]


def outcome_l(wildcards):
    """Distinct outcomes per class, for a release that publishes labels (else None)."""
    return DEID["outcome_l"] if LABELLED[wildcards.release] else None


def card_input(wildcards):
    """A release card's inputs: its check and attacks, and for ihm48 its utility table."""
    inputs = {"check": PATHS["check"], "linkage": PATHS["linkage"]}
    if wildcards.release == "ihm48":
        inputs["utility"] = PATHS["utility"]
    inputs = {name: path.format(**wildcards) for name, path in inputs.items()}
    # every pair with whether each release is certified: the card lists certified others
    return inputs | {"cross_release": PATHS["cross_release_all"]}


def cross_release_pairs():
    """The release pairs measured by pair_releases (input names of both, and their k)."""
    return [
        (release_name(*a), release_name(*b), min(a[1]["fk"], b[1]["fk"]))
        for a, b in release_pairs(sweep_points())
    ]


def cross_release_methods():
    """The method label of every release the pair_releases rule reads, by input name."""
    return {
        release_name(release, point): point["method"]
        for release in RELEASES
        for point in sweep_points()
    }


def pair_releases_input(wildcards):
    """The staged series, index and pseudonym map of every release of the sweep (and the
    private per-series table of a release with recoverable groups)."""
    inputs = {}
    for release in RELEASES:
        for point in sweep_points():
            name = release_name(release, point)
            inputs[f"series_{name}"] = path("release_series", release=release, **point)
            inputs[f"index_{name}"] = path("release_index", release=release, **point)
            inputs[f"pseudonyms_{name}"] = path("pseudonyms", release=release, **point)
            if method_of(point["method"]).groups is not None:
                # a release with recoverable groups (k-groups): its private per-series
                # table, for the intersection measure
                inputs[f"groups_{name}"] = path(
                    "method_series", release=release, **point
                )
    return inputs


def cross_release_input(wildcards):
    """The pairing rows of every pair (pair_releases) and the check of every release."""
    inputs = {"rows": PATHS["cross_release_rows"]}
    for release in RELEASES:
        for point in sweep_points():
            name = release_name(release, point)
            inputs[f"check_{name}"] = path("check", release=release, **point)
    return inputs


def primary_point():
    """The sweep point the figures show: the first of the sweep."""
    return primary_point_of(config)


def sweep_summary_input(wildcards):
    return {
        "duration": [
            path("duration_summary", release="stays", dk=dk) for dk in DEID["dk"]
        ],
        "baseline": [
            path("baseline_series", release="stays", dk=dk) for dk in DEID["dk"]
        ],
        "method_summary": point_paths("method_summary", release="stays"),
        "disagreement": point_paths("disagreement_series", release="stays"),
        "linkage": point_paths("linkage", release="stays"),
        "utility": point_paths("utility"),
        # the final verdicts: the cards' (the check's, unless a pairing refuses a release)
        "card_stays": point_paths("card", release="stays"),
        "card_ihm48": point_paths("card", release="ihm48"),
        "cross_release": PATHS["cross_release"],
    }


def stage_report_input(audience):
    """The inputs of the report of ``audience``: the variables table (labels and units) and
    the report inputs each stage declares (Stage.report_inputs: the series stage's, and
    those of every selected comparator; a deselected one is absent from the report)."""
    inputs = {"variables": config["variables"]}
    for stage in report_stages(config):
        for name, (key, wildcards) in stage.report_inputs(config, audience).items():
            inputs[name] = path(key, **wildcards)
    return inputs


def report_input(wildcards):
    """The public report's inputs (never the GA examples': private_report_input)."""
    return stage_report_input("public")


def private_report_input(wildcards):
    """The private report's inputs: the public report's without the sweep summary, the
    owner's pairing table and the GA examples (original and perturbed series of two
    patients, report.items.GA_INPUTS)."""
    return stage_report_input("private")


# the report's figures and tables: every stage's report items (Stage.report_module)
REPORT_FIGURES = item_names("public", "figure", REPORT_MODULES)
REPORT_TABLES = item_names("public", "table", REPORT_MODULES)
PRIVATE_REPORT_FIGURES = item_names("private", "figure", REPORT_MODULES)


# --- report: front matter parameters and the run's last line (report.smk, Snakefile) ---


def report_run():
    """What was run, for the report's front matter (report.front.run_table): the source
    kind and the sweep's parameters; never the master seed or a source path or DSN."""
    source = config["source"]
    return {
        "source_kind": source["kind"],
        "synthetic_subjects": source["synthetic"]["subjects"],
        "synthetic_other_chart_rows": source["synthetic"]["other_chart_rows"],
        "dk": DEID["dk"],
        "fk": DEID["fk"],
        "heuristic": DEID["heuristic"],
        "methods": METHODS,
        "release_variables": config["release"]["variables"],
    }


def report_folders():
    """Every release's published folder by release name, for the report's first screen
    (report.decision: the folder to hand out)."""
    return {
        release_name(release, point): path("published", release=release, **point)
        for point in sweep_points()
        for release in RELEASES
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
