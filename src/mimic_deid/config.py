"""Validation of the workflow configuration against ``config/schema.yaml``.

:func:`validate_config` is called once when the workflow starts, before any job runs, after
:func:`check_config_files` refused any config file that gives a key twice. It

1. refuses keys that were renamed, naming the new spelling (:data:`RENAMED`);
2. coerces string values to the schema's type where the schema asks for a number, integer or
   boolean (Snakemake's ``--config`` passes nested values such as ``deid={"fk": [5]}`` as
   strings);
3. validates against the JSON schema and fills every ``default:`` the schema declares, so the
   schema is the one place that holds defaults and bounds;
4. checks config ``stages`` against the registered stages and fills its default, every stage
   in list order (:func:`mimic_deid.stages.check_stage_selection`: the stage list, not the
   schema, knows the stages);
5. checks the rules that span several fields (:func:`check_cross_fields`).

Errors are :class:`~mimic_deid.core.errors.ConfigError` naming the parameter path, e.g.
``config parameter 'deid/fk/0': 0 is less than the minimum of 1``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import jsonschema
import yaml

from mimic_deid.core.atomic import read_yaml
from mimic_deid.core.errors import ConfigError
from mimic_deid.deid.methods import REGISTRY
from mimic_deid.sources.dsn import dsn_params
from mimic_deid.stages import check_stage_selection

__all__ = [
    "RENAMED",
    "check_config_files",
    "check_cross_fields",
    "load_schema",
    "validate_config",
    "weak_k_warning",
]

#: The k parameters that set what a published file hides each person among (``/`` paths).
#: Comparator grids (OLA, DPS, GCCens, LDA k) measure costs and publish aggregates only, so
#: they take part in the floor of 2 (schema) but not in the warning.
RELEASE_K: tuple[str, ...] = ("deid/dk", "deid/fk", "tabular/release/k")
#: Below this k a release is allowed but weak: :func:`weak_k_warning`.
WEAK_K = 5

#: Old config key path -> new one; the old spelling is refused with a message naming the new.
RENAMED: dict[tuple[str, ...], tuple[str, ...]] = {
    ("deid", "optimizers"): ("deid", "methods"),
    ("deid", "optimisers"): ("deid", "methods"),
}


def _duplicate_key(node: yaml.Node, path: tuple[str, ...] = ()) -> str | None:
    """The first key given twice in one mapping of the YAML ``node`` tree, as
    ``"'<path/key>' (lines <first> and <second>)"``, or None."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            name = str(key.value) if isinstance(key, yaml.ScalarNode) else None
            if name is not None and name != "<<":
                line = key.start_mark.line + 1
                if name in seen:
                    return f"'{'/'.join((*path, name))}' (lines {seen[name]} and {line})"
                seen[name] = line
            found = _duplicate_key(value, (*path, name if name is not None else "?"))
            if found:
                return found
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            found = _duplicate_key(item, (*path, str(i)))
            if found:
                return found
    return None


def check_config_files(paths: Iterable[str | os.PathLike]) -> None:
    """Refuse a config file that gives a key twice in one mapping (``config/config.yaml`` and
    every ``--configfile``; Snakemake's own reading keeps the last value silently, even of a
    whole duplicated ``deid:`` block).

    Raises
    ------
    ConfigError
        Naming the file, the key's path and the two lines.
    """
    for path in paths:
        try:
            with open(path, encoding="utf-8") as fh:
                root = yaml.compose(fh, Loader=yaml.SafeLoader)
        except (OSError, yaml.YAMLError):
            continue  # Snakemake reports an unreadable or malformed config file itself
        found = _duplicate_key(root) if root is not None else None
        if found:
            raise ConfigError(
                f"config file {path}: key {found} is given twice; give each key once (YAML "
                "readers keep the last one and silently drop the first)"
            )


def load_schema(schema_path: str | os.PathLike) -> dict:
    """The JSON schema (YAML file) of the configuration."""
    return read_yaml(schema_path, "config schema")


def _resolve(schema: Mapping, root: Mapping) -> Mapping:
    while "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            return schema
        node: Any = root
        for part in ref[2:].split("/"):
            node = node[part]
        schema = node
    return schema


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def _coerce_scalar(value: str, types: list[str]) -> Any:
    text = value.strip()
    if "boolean" in types and text.lower() in _TRUE | _FALSE:
        return text.lower() in _TRUE
    if "integer" in types:
        try:
            return int(text)
        except ValueError:
            pass
    if "number" in types:
        try:
            return float(text)
        except ValueError:
            pass
    return value


def _coerce(value: Any, schema: Mapping, root: Mapping) -> Any:
    """``value`` with strings turned into the numbers/booleans ``schema`` asks for."""
    schema = _resolve(schema, root)
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else list(types)
    if isinstance(value, str) and "string" not in types:
        if set(types) & {"array", "object"}:
            try:
                parsed = yaml.safe_load(value)
            except yaml.YAMLError:
                return value
            return _coerce(parsed, schema, root) if not isinstance(parsed, str) else value
        return _coerce_scalar(value, types)
    if isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        out = {}
        for key, item in value.items():
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            out[key] = _coerce(item, sub, root) if sub else item
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_coerce(item, schema["items"], root) for item in value]
    return value


def _with_defaults(cls: type, root: Mapping) -> type:
    """A jsonschema validator class that fills ``default`` values of absent properties.

    ``$ref`` targets resolve against ``root`` (inside a referenced definition the validator's
    own schema is that definition, which has no ``definitions``).
    """
    validate_properties = cls.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if name in instance:
                    continue
                if "default" not in sub:  # a $ref's sibling default wins over the target's
                    sub = _resolve(sub, root)
                if "default" in sub:
                    instance[name] = _copy(sub["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(cls, {"properties": set_defaults})


def _copy(value: Any) -> Any:
    return yaml.safe_load(yaml.safe_dump(value))


def _check_renamed(config: Mapping) -> None:
    for old, new in RENAMED.items():
        node: Any = config
        for part in old[:-1]:
            node = node.get(part, {}) if isinstance(node, Mapping) else {}
        if isinstance(node, Mapping) and old[-1] in node:
            raise ConfigError(
                f"config parameter '{'/'.join(old)}' has been renamed: use "
                f"'{'/'.join(new)}' (same contents)"
            )


def _check_dsn(dsn: str) -> None:
    """Refuse a DSN that cannot be parsed or that carries a password (never echoing it)."""
    if "password" in dsn_params(dsn):
        raise ConfigError(
            "config parameter 'source/postgres/dsn': contains a password; remove it and give the "
            "password to libpq instead (PGPASSWORD, ~/.pgpass or a service file named by "
            "PGSERVICE), so that it never reaches logs, job scripts or the process list"
        )


def check_cross_fields(config: Mapping, variables: Iterable[str] | None = None) -> None:
    """Rules that span several parameters; ``ConfigError`` naming them.

    - ``deid/fk`` <= ``deid/dk`` for every swept pair (a Mondrian class cannot be larger
      than the duration class it partitions);
    - each release method's own rules (its registry entry's ``check_config``, e.g. ``P`` <=
      ``deid/fk`` for the (k,P)-anonymity methods, whose k is the fk);
    - ``series/split`` fractions sum to 1;
    - ``source/csv/path`` is given for ``kind: csv`` and not set for ``kind: postgres``;
    - ``source/postgres/dsn`` holds no password (it would reach Snakemake's logs, job scripts
      and the process list; libpq reads it from ``PGPASSWORD``, ``~/.pgpass`` or a service file);
    - every variable named in ``deid/features`` (and ``evaluate/attacker_features``) is a
      series variable (when ``variables``, the series variable names, is given).
    """
    deid = config["deid"]
    if max(deid["fk"]) > min(deid["dk"]):
        raise ConfigError(
            f"config parameters 'deid/fk' and 'deid/dk': every fk must be <= every dk "
            f"(a Mondrian class lies inside a duration class), got fk {deid['fk']} and "
            f"dk {deid['dk']}"
        )
    for name, grid in deid.get("methods", {}).items():  # each method's own rules
        method = REGISTRY.get(name)
        if method is not None and method.check_config is not None:
            method.check_config(name, grid, deid)
    split = config["series"]["split"]
    if abs(sum(split.values()) - 1.0) > 1e-9:
        raise ConfigError(f"config parameter 'series/split': fractions must sum to 1, got {split}")
    source = config["source"]
    csv_path = source.get("csv", {}).get("path", "")
    if source["kind"] == "csv" and not csv_path:
        raise ConfigError("config parameter 'source/csv/path': required when source kind is csv")
    if source["kind"] == "postgres" and csv_path:
        raise ConfigError(
            "config parameters 'source/kind' and 'source/csv/path': kind is postgres but a "
            "CSV path is set; remove one of them"
        )
    _check_dsn(source.get("postgres", {}).get("dsn", ""))
    if variables is not None:
        known = set(variables)
        unknown = sorted(set(deid["features"]) - known)
        if unknown:
            raise ConfigError(
                f"config parameter 'deid/features': unknown variable(s) {unknown}; "
                f"expected some of {sorted(known)}"
            )
        alt = sorted(set(config.get("evaluate", {}).get("attacker_features", {})) - known)
        if alt:
            raise ConfigError(
                f"config parameter 'evaluate/attacker_features': unknown variable(s) {alt}; "
                f"expected some of {sorted(known)}"
            )


def validate_config(config: dict, schema_path: str | os.PathLike, variables: bool = True) -> dict:
    """Coerce, validate and complete ``config`` in place (module docstring); return it.

    Parameters
    ----------
    config : dict
        The workflow configuration (Snakemake's ``config``); defaults are filled in place.
    schema_path : path
        ``config/schema.yaml``.
    variables : bool
        Also read the variables table (config ``variables``) and check that ``deid/features``
        names series variables.
    """
    schema = load_schema(schema_path)
    _check_renamed(config)
    config.update(_coerce(config, schema, schema))
    validator = _with_defaults(jsonschema.validators.validator_for(schema), schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(config))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ConfigError(f"config parameter '{where}': {error.message}")
    check_stage_selection(config)
    names = None
    if variables:
        from mimic_deid.pipeline.variables import load_variables, series_variables

        names = [v.name for v in series_variables(load_variables(config["variables"]))]
    check_cross_fields(config, names)
    return config


def weak_k_warning(config: Mapping) -> str | None:
    """One warning line naming every release k parameter (:data:`RELEASE_K`) below
    :data:`WEAK_K`, or None. The schema already refuses k below 2."""
    weak = []
    for key in RELEASE_K:
        value: Any = config
        for part in key.split("/"):
            value = value.get(part, {}) if isinstance(value, Mapping) else {}
        values = value if isinstance(value, list) else [value]
        low = [v for v in values if isinstance(v, int) and v < WEAK_K]
        if low:
            weak.append(f"'{key}' = {low[0] if len(low) == 1 else low}")
    if not weak:
        return None
    return (
        f"mimic-deid: warning: k below {WEAK_K} hides each person among fewer than {WEAK_K} "
        f"(the strong attacker's bound 1/k is above {100 // WEAK_K} %): config parameter "
        + ", ".join(weak)
    )
