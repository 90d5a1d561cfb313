# Configuration validation, sweep expansion and path helpers shared by every rule file.
import json

from mimic_deid.config import optimizer_labels, validate_config
from mimic_deid.errors import ConfigError


try:
    validate_config(config, workflow.source_path("../../config/schema.yaml"))
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
SYNTH = config["source"].get("synthetic", {})
SYNTH_DIR = f"resources/synthetic/n{SYNTH.get('subjects', 3000)}-s{SYNTH.get('seed', 1)}"

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
