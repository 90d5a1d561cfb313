"""The JSON schemas that docs/outputs.md documents as tables of dotted keys, and the keys and
types a real document has: tests compare them so that the docs cannot drift (issue 44).

A schema table has the columns ``key | type | unit | meaning``. A key is a dotted path: ``a.b``
is key ``b`` of object ``a``; ``a[]`` every entry of list ``a``; ``<name>`` any key of an
object whose keys the run chooses. A type is ``string``, ``integer``, ``number``, ``boolean``,
``object`` or ``list``, or several joined by ``,`` and ``or`` (``integer or null``). An object or list
whose keys the table does not list is documented as a whole (e.g. "as ``summary.json``").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTPUTS = ROOT / "docs" / "outputs.md"

_ROW = re.compile(r"^\| `([^`]+)` \| ([^|]+?) \|")
_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "list": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}


def documented_schema(heading: str, doc: Path = OUTPUTS) -> dict[str, tuple[str, ...]]:
    """The schema table under the ``##`` heading that starts with ``heading``: key -> types."""
    text = doc.read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}")
    section = text[start + 1 :].split("\n## ", 1)[0]
    schema = {}
    for line in section.splitlines():
        match = _ROW.match(line)
        if match:
            types = tuple(t.strip() for t in re.split(r", | or ", match.group(2)))
            unknown = [t for t in types if t not in _TYPES]
            assert not unknown, f"{doc.name}, {heading}: key {match.group(1)}: type {unknown}"
            schema[match.group(1)] = types
    assert schema, f"{doc.name} has no schema table under '## {heading}'"
    return schema


def _child(schema: Mapping[str, tuple[str, ...]], parent: str, key: str) -> str | None:
    """The documented key of ``key`` in object ``parent``: itself, or the parent's ``<name>``."""
    prefix = f"{parent}." if parent else ""
    if f"{prefix}{key}" in schema:
        return f"{prefix}{key}"
    wild = [k for k in schema if k.startswith(f"{prefix}<") and "." not in k[len(prefix) :]]
    return wild[0] if wild else None


def _walk(document: object, schema: Mapping[str, tuple[str, ...]]):
    """(documented key or None, the key as found, value) of every key ``document`` holds."""

    def walk(value: object, path: str):
        opaque = path and not any(k.startswith((f"{path}.", f"{path}[].")) for k in schema)
        if opaque:  # an object or list documented as a whole (e.g. "as summary.json")
            return
        if isinstance(value, dict):
            for key, item in value.items():
                child = _child(schema, path, str(key))
                yield child, f"{path + '.' if path else ''}{key}", item
                if child is not None:
                    yield from walk(item, child)
        elif isinstance(value, list) and any(k.startswith(f"{path}[].") for k in schema):
            for item in value:
                for key, sub in item.items() if isinstance(item, dict) else []:
                    child = f"{path}[].{key}" if f"{path}[].{key}" in schema else None
                    yield child, f"{path}[].{key}", sub
                    if child is not None:
                        yield from walk(sub, child)

    yield from walk(document, "")


def schema_problems(document: object, schema: Mapping[str, tuple[str, ...]]) -> list[str]:
    """What in ``document`` (parsed JSON) the schema does not document, or types otherwise
    (one line each, sorted)."""
    problems = set()
    for documented, found, value in _walk(document, schema):
        if documented is None:
            problems.add(f"{found}: not documented")
        elif not any(_TYPES[t](value) for t in schema[documented]):
            types = " or ".join(schema[documented])
            problems.add(f"{documented}: {type(value).__name__}, documented {types}")
    return sorted(problems)


def schema_paths(document: object, schema: Mapping[str, tuple[str, ...]]) -> set[str]:
    """The documented keys ``document`` holds."""
    return {documented for documented, _, _ in _walk(document, schema) if documented}
