"""The physiological variables: item ids, parsing, unit conversions and plausible values.

A variable's plausible values are its valid range (cleaning drops a value outside it), for a
discrete variable its value set, and whether it is static (one value per stay); every released
value is plausible (:mod:`mimic_deid.deid.plausible`).

Loaded from ``config/variables.yaml`` (the project's table of facts) and validated here, so
that a typo in that file is reported with the variable and key at fault.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from mimic_deid.core.atomic import read_yaml
from mimic_deid.core.errors import ConfigError

SOURCES = ("carevue", "metavision", "labevents")
PARSERS = ("numeric", "ratio_first", "ratio_second", "text_map")


@dataclass(frozen=True)
class Conversion:
    """``value * multiply + add`` for rows where any condition holds."""

    multiply: float = 1.0
    add: float = 0.0
    uom: tuple[str, ...] = ()
    itemids: tuple[int, ...] = ()
    above: float | None = None
    at_most: float | None = None


@dataclass(frozen=True)
class Variable:
    """One physiological variable (one dimension of the series when ``in_series``).

    ``valid_range`` is ``(low, high)`` inclusive in the canonical unit; ``values`` the sorted
    value set of a discrete variable (None: continuous), inside the range; ``static`` marks a
    variable with one value per stay (height).
    """

    name: str
    label: str
    unit: str
    itemids: dict[str, tuple[int, ...]]
    parse: str
    valid_range: tuple[float, float]
    text_map: dict[str, float] = field(default_factory=dict)
    conversions: tuple[Conversion, ...] = ()
    in_series: bool = True
    values: tuple[float, ...] | None = None
    static: bool = False

    @property
    def all_itemids(self) -> tuple[int, ...]:
        return tuple(i for src in SOURCES for i in self.itemids.get(src, ()))

    @property
    def chart_itemids(self) -> tuple[int, ...]:
        return self.itemids.get("carevue", ()) + self.itemids.get("metavision", ())


def _fail(path: str, name: str, msg: str) -> ConfigError:
    return ConfigError(f"{path}: variable '{name}': {msg}")


def _parse_variable(path: str, name: str, spec: dict) -> Variable:
    if not isinstance(spec, dict):
        raise _fail(path, name, "expected a mapping of keys (label, unit, itemids, ...)")
    for key in ("label", "unit", "itemids", "range"):
        if key not in spec:
            raise _fail(path, name, f"missing key '{key}'")
    itemids_raw = spec["itemids"]
    if not isinstance(itemids_raw, dict) or set(itemids_raw) - set(SOURCES):
        raise _fail(path, name, f"'itemids' must map some of {SOURCES} to lists of integers")
    itemids: dict[str, tuple[int, ...]] = {}
    for src in SOURCES:
        ids = itemids_raw.get(src, []) or []
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise _fail(path, name, f"itemids.{src} must be a list of integers, got {ids!r}")
        itemids[src] = tuple(ids)
    parse = spec.get("parse", "numeric")
    if parse not in PARSERS:
        raise _fail(path, name, f"'parse' must be one of {PARSERS}, got {parse!r}")
    text_map = {str(k).strip().lower(): float(v) for k, v in (spec.get("text_map") or {}).items()}
    if parse == "text_map" and not text_map:
        raise _fail(path, name, "parse 'text_map' needs a non-empty 'text_map'")
    rng = spec["range"]
    if not (isinstance(rng, list) and len(rng) == 2 and float(rng[0]) <= float(rng[1])):
        raise _fail(path, name, f"'range' must be [low, high] with low <= high, got {rng!r}")
    low, high = float(rng[0]), float(rng[1])
    values = spec.get("values")
    if values is not None:
        numbers = isinstance(values, list) and values
        numbers = numbers and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in values
        )
        if not numbers or not all(low <= float(v) <= high for v in values):
            raise _fail(
                path,
                name,
                f"'values' must be a non-empty list of numbers inside its range {rng!r}, "
                f"got {values!r}",
            )
        values = tuple(sorted({float(v) for v in values}))
    static = spec.get("static", False)
    if not isinstance(static, bool):
        raise _fail(path, name, f"'static' must be true or false, got {static!r}")
    conversions = []
    for i, conv in enumerate(spec.get("conversions") or []):
        unknown = set(conv) - {"multiply", "add", "uom", "itemids", "above", "at_most"}
        if unknown:
            raise _fail(path, name, f"conversions[{i}] has unknown keys {sorted(unknown)}")
        if not any(k in conv for k in ("uom", "itemids", "above", "at_most")):
            raise _fail(
                path, name, f"conversions[{i}] needs a condition (uom/itemids/above/at_most)"
            )
        conversions.append(
            Conversion(
                multiply=float(conv.get("multiply", 1.0)),
                add=float(conv.get("add", 0.0)),
                uom=tuple(str(u).lower() for u in conv.get("uom", [])),
                itemids=tuple(int(x) for x in conv.get("itemids", [])),
                above=None if conv.get("above") is None else float(conv["above"]),
                at_most=None if conv.get("at_most") is None else float(conv["at_most"]),
            )
        )
    return Variable(
        name=name,
        label=str(spec["label"]),
        unit=str(spec["unit"]),
        itemids=itemids,
        parse=parse,
        valid_range=(low, high),
        text_map=text_map,
        conversions=tuple(conversions),
        in_series=bool(spec.get("in_series", True)),
        values=values,
        static=static,
    )


def load_variables(path: str | os.PathLike) -> list[Variable]:
    """Read and validate a variables file; return the variables in file order."""
    path = str(path)
    doc = read_yaml(path, "variables file")
    if not isinstance(doc, dict) or not isinstance(doc.get("variables"), dict):
        raise ConfigError(f"{path}: expected a top-level mapping 'variables:'")
    variables = [_parse_variable(path, n, s) for n, s in doc["variables"].items()]
    seen: dict[int, str] = {}
    for var in variables:
        for itemid in var.all_itemids:
            if itemid in seen:
                raise _fail(path, var.name, f"itemid {itemid} is also listed for '{seen[itemid]}'")
            seen[itemid] = var.name
    return variables


def series_variables(variables: list[Variable]) -> list[Variable]:
    """The variables that are dimensions of the hourly series, in order."""
    return [v for v in variables if v.in_series]


def configured_itemids(variables: list[Variable]) -> set[int]:
    """Every item id of every variable (CHARTEVENTS and LABEVENTS ids together)."""
    return {i for v in variables for i in v.all_itemids}
