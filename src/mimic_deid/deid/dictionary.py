"""The data dictionary of a published series release (issue 44): what each column holds.

A certified release folder (:func:`mimic_deid.deid.release.publish_release`) carries, beside
``series.parquet`` and ``index.parquet`` and the release card, ``dictionary.json`` and its
rendering ``DICTIONARY.md``. Both are derived by :func:`release_dictionary` from the published
tables and the configuration, never written by hand:

- the variables' labels and units from ``config/variables.yaml``
  (:class:`~mimic_deid.pipeline.variables.Variable`);
- each published demographic's categories and generalisation levels from its hierarchy in
  ``config/hierarchies.yaml`` (:mod:`mimic_deid.deid.hierarchy`): every label the column may
  publish (levels at or above its floor, :data:`~mimic_deid.deid.demographics.FLOORS`), what
  it means (an age band's range, a group's members, a suppression), its level, and how many
  series of this release carry it;
- level 0 of a categorical demographic is the value as recorded: the labels the hierarchy
  file names (a group's members) and the values the release shows, with the meaning of the
  known codes (:data:`CODE_MEANINGS`).

A refused release publishes no dictionary: the counts and the level-0 categories come from the
values it withholds.

Schema (``dictionary.json``, docs/outputs.md "The data dictionary"): ``release``; ``files``:
one entry per file of the folder, ``file``, ``meaning``, and for the tables ``rows`` and
``columns``, each column ``name``, ``type`` (the Parquet column's dtype), ``unit`` (null when
none), ``meaning``, and for a categorical column ``categories`` (``value``, ``meaning``,
``level``, ``series``) and, for a demographic, ``levels`` (``level``, ``step``, ``published``,
``labels``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from mimic_deid.core.errors import InputDataError
from mimic_deid.deid.demographics import FLOORS
from mimic_deid.deid.hierarchy import MISSING
from mimic_deid.pipeline.cohort import STAY_DEMOGRAPHICS
from mimic_deid.pipeline.variables import Variable

__all__ = [
    "CODE_MEANINGS",
    "DICTIONARY_JSON",
    "DICTIONARY_MD",
    "dictionary_documents",
    "dictionary_markdown",
    "release_dictionary",
    "sequence_dictionary",
]

#: The data dictionary's file names in a certified release folder.
DICTIONARY_JSON = "dictionary.json"
DICTIONARY_MD = "DICTIONARY.md"

#: Where each demographic comes from, and its unit (age only).
_DEMOGRAPHICS: dict[str, tuple[str, str | None]] = {
    "age": (
        "age at ICU admission in whole years (from PATIENTS.DOB and ICUSTAYS.INTIME; MIMIC-III "
        "shifts ages above 89, so the top band holds them all)",
        "years",
    ),
    "gender": ("gender (PATIENTS.GENDER)", None),
    "admission_type": ("admission type of the hospital stay (ADMISSIONS.ADMISSION_TYPE)", None),
    "insurance": ("insurance of the hospital stay (ADMISSIONS.INSURANCE)", None),
    "ethnicity": ("ethnicity recorded for the hospital stay (ADMISSIONS.ETHNICITY)", None),
}

#: What the recorded codes of a demographic mean (level 0; other values read as recorded).
CODE_MEANINGS: dict[str, dict[str, str]] = {
    "gender": {"F": "female", "M": "male"},
}

#: The published labels (``index.parquet``): column -> (meaning of 0, meaning of 1, what).
_LABELS: dict[str, tuple[str, str, str]] = {
    "label": ("survived the hospital stay", "died in hospital", "in-hospital mortality"),
    "long_stay": (
        "the ICU stay lasted at most 7 days (168 h)",
        "the ICU stay lasted more than 7 days (168 h)",
        "length of stay above 7 days",
    ),
}

_SPLITS = {
    "train": "training split",
    "validation": "validation split (choice of the model's settings)",
    "test": "test split",
}


def _type(dtype: Any) -> str:
    """The column's type as the dictionary names it: ``string`` or the NumPy dtype."""
    return "string" if pd.api.types.is_string_dtype(dtype) else str(dtype)


def _column(name: str, dtype: Any, unit: str | None, meaning: str, **more: Any) -> dict:
    return {"name": name, "type": _type(dtype), "unit": unit, "meaning": meaning, **more}


def _counts(values: pd.Series) -> dict[str, int]:
    return {str(k): int(v) for k, v in values.astype(str).value_counts(sort=False).items()}


def _span(lo: float, hi: float, top: float, unit: str) -> str:
    return f"at least {lo:g}{unit}" if hi >= top else f"{lo:g} to {hi:g}{unit}"


def _levels(column: str, steps: Sequence[Mapping], unit: str | None) -> list[dict]:
    """Each level of a demographic's hierarchy above level 0: its labels and their meanings.

    A range's label reads as its interval; a group of ranges that join up reads as theirs
    (``<40``: 0 to 39 years), any other group as its members."""
    unit = f" {unit}" if unit else ""
    bounds: dict[str, tuple[float, float]] = {}
    top = float("inf")
    levels = []
    prefixed = False  # the previous step kept the values' first characters
    for level, step in enumerate(steps, start=1):
        kind, body = step["kind"], step["body"]
        meanings: dict[str, str] = {}
        if kind == "ranges":
            bounds = {str(lab): (float(lo), float(hi)) for lab, (lo, hi) in body.items()}
            top = max(hi for _, hi in bounds.values())
            meanings = {lab: _span(lo, hi, top, unit) for lab, (lo, hi) in bounds.items()}
        elif kind == "groups":
            joined: dict[str, tuple[float, float]] = {}
            for label, members in body.items():
                listed = ("recorded values beginning with " if prefixed else "one of ") + ", ".join(
                    map(str, members)
                )
                spans = sorted(bounds[str(m)] for m in members if str(m) in bounds)
                whole = len(spans) == len(members) and all(
                    b[0] <= a[1] + 1 for a, b in zip(spans, spans[1:], strict=False)
                )
                if whole and spans:
                    joined[str(label)] = (spans[0][0], max(hi for _, hi in spans))
                    meanings[str(label)] = f"{_span(*joined[str(label)], top, unit)} ({listed})"
                else:
                    meanings[str(label)] = listed
                if str(label) == MISSING:
                    meanings[str(label)] = "missing in the source"
            bounds = joined
        elif kind == "suppress":
            meanings = {str(body): f"suppressed: any {column.replace('_', ' ')}"}
            bounds = {}
        # prefix: the values' first characters (no stay demographic publishes this level)
        prefixed = kind == "prefix"
        levels.append(
            {
                "level": level,
                "step": kind if kind != "prefix" else f"prefix {int(body)}",
                "published": level >= FLOORS.get(column, 0),
                "labels": meanings,
            }
        )
    return levels


def _demographic(column: str, values: pd.Series, steps: Sequence[Mapping]) -> dict:
    what, unit = _DEMOGRAPHICS[column]
    levels = _levels(column, steps, unit)
    counts = _counts(values)
    categories: dict[str, dict] = {}
    for entry in levels:
        if entry["published"]:
            for label, meaning in entry["labels"].items():
                categories.setdefault(label, {"meaning": meaning, "level": entry["level"]})
    floor = FLOORS.get(column, 0)
    if floor == 0:  # level 0: as recorded, the values a group names and those the data shows
        first = steps[0] if steps else None
        named = (
            [str(m) for members in first["body"].values() for m in members]
            if first is not None and first["kind"] == "groups"
            else []
        )
        known = CODE_MEANINGS.get(column, {})
        recorded = {}
        for value in sorted({*named, *known, *counts} - set(categories)):
            meaning = (
                "missing in the source" if value == MISSING else known.get(value, "as recorded")
            )
            recorded[value] = {"meaning": meaning, "level": 0}
        categories = {**recorded, **categories}
    unknown = sorted(set(counts) - set(categories))
    if unknown:
        raise InputDataError(
            f"index.parquet: column '{column}' holds {len(unknown)} value(s) that no publishable "
            f"level of its hierarchy names (values are never shown); expected labels of levels "
            f">= {floor}"
        )
    level0 = {"level": 0, "step": "as recorded", "published": floor == 0,
              "labels": {v: c["meaning"] for v, c in categories.items() if c["level"] == 0}}  # fmt: skip
    levels = [level0, *levels]
    return _column(
        column,
        values.dtype,
        unit,
        f"{what}, generalised through its hierarchy: each series shows one label of one "
        "published level (the level can differ between cells of a duration class)",
        categories=[
            {"value": value, **entry, "count": counts.get(value, 0)}
            for value, entry in categories.items()
        ],
        levels=[{**entry, "labels": sorted(entry["labels"])} for entry in levels],
    )


def release_dictionary(
    release: str,
    series_public: pd.DataFrame,
    index_public: pd.DataFrame,
    variables: Sequence[Variable],
    hierarchies: Mapping[str, Sequence[Mapping]],
    series_rows: int | None = None,
) -> dict[str, Any]:
    """The data dictionary of a certified series release (module docstring).

    Parameters
    ----------
    release : str
        ``stays`` or ``ihm48``.
    series_public : DataFrame
        ``series.parquet``: ``pseudonym``, ``hour``, one float column per released variable;
        only its columns and dtypes are read, so any part of it will do (e.g. none of its
        rows, with ``series_rows``).
    index_public : DataFrame
        ``index.parquet``: ``pseudonym``, ``duration_class``, (``ihm48``) ``split``, the published
        demographics and (``ihm48``) the labels.
    variables : sequence of Variable
        ``config/variables.yaml`` (:func:`~mimic_deid.pipeline.variables.load_variables`):
        the label and unit of each released variable.
    hierarchies : mapping
        ``config/hierarchies.yaml`` (:func:`~mimic_deid.deid.hierarchy.load_hierarchies`):
        the hierarchy of each published demographic.
    series_rows : int, optional
        Rows of ``series.parquet`` (default: ``len(series_public)``).

    Returns
    -------
    dict
        JSON-ready: ``release`` and ``files`` (module docstring).

    Raises
    ------
    InputDataError
        A column of either table has no entry (an unknown column, a variable missing from
        ``variables``, a demographic without hierarchy) or a demographic's value is no label
        of a publishable level: the dictionary describes every published column or none.
    """
    by_name = {v.name: v for v in variables}
    series_columns = [
        _column("pseudonym", series_public["pseudonym"].dtype, None,
                "random per-release name of a series (derived from no identifier)"),
        _column("hour", series_public["hour"].dtype, "hours",
                "hour since the series' first released hour (0-based); no timestamp is released"),
    ]  # fmt: skip
    for name in series_public.columns.drop(["pseudonym", "hour"], errors="ignore"):
        if name not in by_name:
            raise InputDataError(
                f"series.parquet: column '{name}' is not a variable of the variables file; "
                f"expected one of {sorted(by_name)}"
            )
        var = by_name[name]
        series_columns.append(
            _column(
                name,
                series_public[name].dtype,
                var.unit,
                f"{var.label}: the de-identified hourly value; hours never observed are "
                "filled within the series or its class (no missing-hours pattern is "
                "published)",
            )  # fmt: skip
        )
    index_columns = [
        _index_column(name, index_public[name], hierarchies) for name in index_public.columns
    ]
    files = [
        {"file": "series.parquet", "meaning": "one row per (series, hour)",
         "rows": int(len(series_public) if series_rows is None else series_rows), "columns": series_columns},
        {"file": "index.parquet", "meaning": "one row per series, sorted by pseudonym",
         "rows": int(len(index_public)), "columns": index_columns},
        {"file": "card.json", "meaning": "the release card: method, promises, attacks against "
         "the bound, verdict and (ihm48) utility (docs/outputs.md)"},
        {"file": DICTIONARY_JSON, "meaning": "this data dictionary"},
        {"file": DICTIONARY_MD, "meaning": "this data dictionary, as text"},
    ]  # fmt: skip
    return {"release": release, "files": files}


def _coded(name: str, values: pd.Series, meaning: str, codes) -> dict:
    """The dictionary entry of a coded index column: ``codes`` (value, meaning) with their
    counts in ``values``."""
    counts = _counts(values)
    categories = [
        {"value": v, "meaning": m, "level": 0, "count": counts.get(v, 0)} for v, m in codes
    ]
    return _column(name, values.dtype, None, meaning, categories=categories)


def _index_column(name: str, values: pd.Series, hierarchies: Mapping) -> dict:
    """The dictionary entry of one column of the release index."""
    if name == "pseudonym":
        return _column(name, values.dtype, None, "as in series.parquet")
    elif name == "duration_class":
        return (
            _column(
                name,
                values.dtype,
                "hours",
                "released length of the series (every class holds at least dk series)",
            )  # fmt: skip
        )
    elif name == "split":
        return _coded(
            name,
            values,
            "the series' split of the data (published only by a release de-identified "
            "per split, whose classes and demographic cells are counted within it)",
            _SPLITS.items(),
        )
    elif name in _LABELS:
        no, yes, what = _LABELS[name]
        return _coded(
            name,
            values,
            f"{what} (every published class holds at least deid.outcome_l distinct values)",
            (("0", no), ("1", yes)),
        )
    elif name in STAY_DEMOGRAPHICS:
        if name not in hierarchies:
            raise InputDataError(
                f"index.parquet: demographic '{name}' has no hierarchy in the hierarchies "
                f"file; it defines {sorted(hierarchies)}"
            )
        return _demographic(name, values, hierarchies[name])
    else:
        raise InputDataError(
            f"index.parquet: column '{name}' has no entry in the data dictionary; expected "
            "pseudonym, duration_class, split, a demographic "
            f"{list(STAY_DEMOGRAPHICS)} or a label {list(_LABELS)}"
        )


#: A sequence release's states, per table: what a state is, and what each known one means.
_STATES: dict[str, tuple[str, dict[str, str]]] = {
    "transfers": (
        "care unit of the record (TRANSFERS.CURR_CAREUNIT), or WARD for a general ward",
        {
            "CCU": "coronary care unit",
            "CSRU": "cardiac surgery recovery unit",
            "MICU": "medical intensive care unit",
            "NICU": "neonatal intensive care unit",
            "NWARD": "neonatal ward",
            "SICU": "surgical intensive care unit",
            "TSICU": "trauma surgical intensive care unit",
            "WARD": "general ward (no ICU care unit)",
        },
    ),
    "cptevents": ("CPT procedure code (CPTEVENTS.CPT_CD)", {}),
    "vitals": (
        "SAX symbol of the vital sign's value, z-normalised within the stay (a = lowest)",
        {},
    ),
}


def sequence_dictionary(table: str, release: pd.DataFrame) -> dict[str, Any]:
    """The data dictionary of a certified sequence release (``release.parquet``, seed 004).

    Parameters
    ----------
    table : str
        ``transfers``, ``cptevents`` or ``vitals``.
    release : DataFrame
        ``object``, ``section``, ``position``, ``state`` (claim 12 of
        :mod:`mimic_deid.sequences.check`).

    Returns
    -------
    dict
        As :func:`release_dictionary`: ``release`` (``sequences/<table>``) and ``files``;
        ``state`` lists every state of the release with the records that show it.

    Raises
    ------
    InputDataError
        ``table`` is not a sequence table, or the release has other columns.
    """
    if table not in _STATES:
        raise InputDataError(
            f"sequence release: unknown table '{table}'; expected one of {sorted(_STATES)}"
        )
    expected = ["object", "section", "position", "state"]
    if list(release.columns) != expected:
        raise InputDataError(
            f"sequences/{table}/release.parquet: columns {list(release.columns)}; expected "
            f"{expected}"
        )
    what, known = _STATES[table]
    counts = _counts(release["state"])
    columns = [
        _column("object", release["object"].dtype, None,
                "synthetic object, numbered from 0 (drawn from the model: no person of the "
                "source)"),
        _column("section", release["section"].dtype, None,
                "section of the object, from 0 (its records up to a long gap between two)"),
        _column("position", release["position"].dtype, None,
                "the record's place in its section, from 0 (no time is released)"),
        _column("state", release["state"].dtype, None, what,
                categories=[{"value": v, "meaning": known.get(v, "as recorded"), "level": 0,
                             "count": n} for v, n in sorted(counts.items())]),
    ]  # fmt: skip
    files = [
        {"file": "release.parquet", "meaning": "one row per synthetic record, sorted by object, "
         "section and position", "rows": int(len(release)), "columns": columns},
        {"file": "card.json", "meaning": "the release card: mechanism, guarantee, attack, "
         "verdict (docs/outputs.md)"},
        {"file": DICTIONARY_JSON, "meaning": "this data dictionary"},
        {"file": DICTIONARY_MD, "meaning": "this data dictionary, as text"},
    ]  # fmt: skip
    return {"release": f"sequences/{table}", "files": files}


def _cell(value: Any) -> str:
    return "" if value is None else str(value).replace("|", "\\|")


def dictionary_markdown(dictionary: Mapping[str, Any]) -> str:
    """``DICTIONARY.md``: the dictionary of :func:`release_dictionary` as Markdown tables."""
    lines = [f"# Data dictionary of the `{dictionary['release']}` release", ""]
    lines += ["| file | meaning |", "|---|---|"]
    lines += [f"| `{f['file']}` | {_cell(f['meaning'])} |" for f in dictionary["files"]]
    for entry in dictionary["files"]:
        if "columns" not in entry:
            continue
        lines += ["", f"## `{entry['file']}` ({entry['rows']} rows): {entry['meaning']}", ""]
        lines += ["| column | type | unit | meaning |", "|---|---|---|---|"]
        for col in entry["columns"]:
            lines.append(
                f"| `{col['name']}` | {col['type']} | {_cell(col['unit'])} | "
                f"{_cell(col['meaning'])} |"
            )
        for col in entry["columns"]:
            if "categories" not in col:
                continue
            lines += ["", f"### `{col['name']}`", ""]
            if "levels" in col:
                lines += ["| level | step | published | labels |", "|---|---|---|---|"]
                for lev in col["levels"]:
                    labels = ", ".join(f"`{lab}`" for lab in lev["labels"])
                    lines.append(
                        f"| {lev['level']} | {lev['step']} | "
                        f"{'yes' if lev['published'] else 'no'} | {_cell(labels)} |"
                    )
                lines.append("")
            lines += ["| value | meaning | level | count |", "|---|---|---|---|"]
            lines += [
                f"| `{_cell(c['value'])}` | {_cell(c['meaning'])} | {c['level']} | {c['count']} |"
                for c in col["categories"]
            ]
    return "\n".join(lines) + "\n"


def dictionary_documents(dictionary: Mapping[str, Any]) -> dict[str, str]:
    """The dictionary's files in a release folder: :data:`DICTIONARY_JSON` (sorted, indented
    JSON, as every JSON artefact) and :data:`DICTIONARY_MD` (:func:`dictionary_markdown`)."""
    return {
        DICTIONARY_JSON: json.dumps(dictionary, indent=2, sort_keys=True, allow_nan=False) + "\n",
        DICTIONARY_MD: dictionary_markdown(dictionary),
    }
