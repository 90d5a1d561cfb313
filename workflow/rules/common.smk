# Configuration validation, sweep expansion and path helpers shared by every rule file.
import json

from mimic_deid.config import optimizer_labels, validate_config
from mimic_deid.deid.features import feature_spec
from mimic_deid.variables import load_variables, series_variables
from mimic_deid.errors import ConfigError

try:
    validate_config(config, workflow.source_path("../../config/schema.yaml"))
    # Fail now, not hours later in the Mondrian step, on a feature of an unknown variable.
    feature_spec(
        config["deid"]["features"],
        [v.name for v in series_variables(load_variables(config["variables"]))],
    )
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None

RELEASES = ["stays", "ihm48"]
# The utility release is de-identified separately per split: the parties that train and
# test differ (DESIGN section 6), so no training series may share a class with a test series.
GROUP_BY_SPLIT = {"stays": False, "ihm48": True}

DK = config["deid"]["dk"]
FK = config["deid"]["fk"]
HEURISTICS = config["deid"]["heuristic"]
OPTIMIZERS = optimizer_labels(config["deid"]["optimizers"])
TUNING_GRID = (
    optimizer_labels({"genetic": config["deid"]["tuning_grid"]})
    if "tuning_grid" in config["deid"]
    else []
)
SYNTH = config["source"].get("synthetic", {})
SYNTH_DIR = (
    f"resources/synthetic/n{SYNTH.get('subjects', 3000)}-s{SYNTH.get('seed', 1)}"
)

PRIVATE = "results/private"
POINT = "dk{dk}/fk{fk}-{heuristic}/{opt}"


wildcard_constraints:
    release="|".join(RELEASES),
    dk=r"\d+",
    fk=r"\d+",
    heuristic="range|diversity",
    opt=r"(adhoc|genetic)-[A-Za-z0-9.\-]+",


def sweep_points():
    """Every (dk, fk, heuristic, optimiser) combination of the config, as wildcard dicts."""
    return [
        dict(dk=dk, fk=fk, heuristic=h, opt=opt)
        for dk in DK
        for fk in FK
        for h in HEURISTICS
        for opt in OPTIMIZERS
    ]


def point_paths(pattern, **extra):
    """Expand ``pattern`` over every sweep point."""
    return [pattern.format(**point, **extra) for point in sweep_points()]


def final_outputs():
    return [
        "results/report/index.html",
        "results/report/sweep_summary.csv",
    ]


def extract_input(wildcards):
    inputs = {"variables": config["variables"]}
    if config["source"]["kind"] == "synthetic":
        inputs["source_dir"] = SYNTH_DIR
    return inputs


def primary_point():
    """The sweep point the figures show: the first of the sweep."""
    return sweep_points()[0]


def genetic_point():
    """The first sweep point that uses the genetic optimiser, or None."""
    return next((p for p in sweep_points() if p["opt"].startswith("genetic")), None)


def first_opt(kind):
    return next((o for o in OPTIMIZERS if o.startswith(kind)), None)


def sweep_summary_input(wildcards):
    return {
        "duration": [f"results/stays/dk{dk}/duration.json" for dk in DK],
        "optimiser": point_paths(f"results/stays/{POINT}/optimiser.json"),
        "disagreement": point_paths(
            f"results/stays/{POINT}/privacy/disagreement_series.parquet"
        ),
        "baseline": [
            f"results/stays/dk{dk}/baseline/disagreement_series.parquet" for dk in DK
        ],
        "linkage": point_paths(f"results/stays/{POINT}/privacy/linkage.json"),
        "utility": point_paths(f"results/ihm48/{POINT}/utility/trust_settings.csv"),
    }


def report_input(wildcards):
    p = primary_point()
    inputs = {
        "meta": f"{PRIVATE}/series/stays/meta.parquet",
        "classes": f"{PRIVATE}/stays/dk{p['dk']}/duration.parquet",
        "baseline_summary": f"results/stays/dk{p['dk']}/baseline/disagreement_summary.parquet",
        "baseline_series": f"results/stays/dk{p['dk']}/baseline/disagreement_series.parquet",
        "summary": f"results/stays/{POINT.format(**p)}/privacy/disagreement_summary.parquet",
        "per_series": f"results/stays/{POINT.format(**p)}/privacy/disagreement_series.parquet",
        "linkage": f"results/stays/{POINT.format(**p)}/privacy/linkage.json",
        "utility": f"results/ihm48/{POINT.format(**p)}/utility/trust_settings.csv",
        "sweep": "results/report/sweep_summary.csv",
        "variables": config["variables"],
    }
    for kind in ("adhoc", "genetic"):
        opt = first_opt(kind)
        if opt:
            inputs[f"tuning_{kind}"] = f"results/stays/dk{p['dk']}/tuning/{opt}.csv"
    g = genetic_point()
    if g:
        inputs["ga_series"] = f"{PRIVATE}/series/stays/series.parquet"
        inputs["ga_classes"] = f"{PRIVATE}/stays/dk{g['dk']}/duration.parquet"
        inputs["ga_perturbed"] = (
            f"{PRIVATE}/stays/{POINT.format(**g)}/perturbed.parquet"
        )
        inputs["ga_targets"] = (
            f"{PRIVATE}/stays/dk{g['dk']}/fk{g['fk']}-{g['heuristic']}/targets.parquet"
        )
        inputs["ga_optimiser"] = (
            f"{PRIVATE}/stays/{POINT.format(**g)}/optimiser.parquet"
        )
    return inputs
