"""Configuration helpers: validation and the sweep grid of optimiser points.

An optimiser point is named by a label that spells out every parameter, e.g.
``adhoc-it50-ns0.01`` or ``genetic-NA-pop24-tour5-par2-msd3-mp0.2-isd1-pat100-max600-norm0``,
so that a result path names exactly the parameters that produced it.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import jsonschema
import yaml

from mimic_deid.errors import ConfigError

# (parameter, label key, type) in label order.
OPTIMIZER_PARAMS: dict[str, list[tuple[str, str, type]]] = {
    "adhoc": [("iterations", "it", int), ("noise_sd", "ns", float)],
    "genetic": [
        ("population", "pop", int),
        ("tournament", "tour", int),
        ("parents", "par", int),
        ("mutation_sd", "msd", float),
        ("mutation_prob", "mp", float),
        ("init_sd", "isd", float),
        ("patience", "pat", int),
        ("max_iterations", "max", int),
        ("normalise_features", "norm", bool),
    ],
}
FITNESS_VARIANTS = ("annealed", "DF", "CI", "NA")


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def optimizer_label(name: str, params: dict[str, Any]) -> str:
    """Return the label of optimiser ``name`` with ``params`` (see module docstring)."""
    if name not in OPTIMIZER_PARAMS:
        raise ConfigError(f"unknown optimiser '{name}', expected one of {sorted(OPTIMIZER_PARAMS)}")
    parts = [name]
    if name == "genetic":
        parts.append(str(params["fitness"]))
    parts += [f"{key}{_fmt(params[p])}" for p, key, _ in OPTIMIZER_PARAMS[name]]
    return "-".join(parts)


def parse_optimizer_label(label: str) -> tuple[str, dict[str, Any]]:
    """Inverse of :func:`optimizer_label`: ``(name, params)``."""
    name, *rest = label.split("-")
    if name not in OPTIMIZER_PARAMS:
        raise ConfigError(f"optimiser label '{label}': unknown optimiser '{name}'")
    params: dict[str, Any] = {}
    if name == "genetic":
        if not rest or rest[0] not in FITNESS_VARIANTS:
            raise ConfigError(
                f"optimiser label '{label}': expected a fitness in {FITNESS_VARIANTS}"
            )
        params["fitness"] = rest.pop(0)
    spec = OPTIMIZER_PARAMS[name]
    if len(rest) != len(spec):
        raise ConfigError(f"optimiser label '{label}': expected {len(spec)} parameters")
    for part, (param, key, typ) in zip(rest, spec, strict=True):
        if not part.startswith(key):
            raise ConfigError(f"optimiser label '{label}': expected '{key}<value>', got '{part}'")
        raw = part[len(key) :]
        try:
            params[param] = bool(int(raw)) if typ is bool else typ(raw)
        except ValueError as exc:
            raise ConfigError(f"optimiser label '{label}': bad value for {param}: {raw!r}") from exc
    return name, params


def optimizer_labels(optimizers: dict[str, dict[str, list]]) -> list[str]:
    """Expand the ``deid.optimizers`` sweep lists into the labels of their product."""
    labels: list[str] = []
    for name, grid in optimizers.items():
        keys = (["fitness"] if name == "genetic" else []) + [
            p for p, _, _ in OPTIMIZER_PARAMS[name]
        ]
        for values in itertools.product(*(grid[k] for k in keys)):
            labels.append(optimizer_label(name, dict(zip(keys, values, strict=True))))
    return labels


def validate_config(config: dict, schema_path: str | os.PathLike) -> None:
    """Validate ``config`` against the JSON schema; raise ConfigError naming the bad key."""
    with open(schema_path, encoding="utf-8") as fh:
        schema = yaml.safe_load(fh)
    try:
        jsonschema.validate(config, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise ConfigError(f"config parameter '{where}': {exc.message}") from None
    split = config["series"].get("split")
    if split and abs(sum(split.values()) - 1.0) > 1e-9:
        raise ConfigError(f"config parameter 'series/split': fractions must sum to 1, got {split}")
    kind = config["source"]["kind"]
    if kind == "csv" and not config["source"].get("csv", {}).get("path"):
        raise ConfigError("config parameter 'source/csv/path': required when source kind is csv")
