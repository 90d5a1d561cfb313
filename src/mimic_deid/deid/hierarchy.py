"""Generalisation hierarchies (seed 003 §4.1.4, App. B) and the integer encoding of a table.

A hierarchy file (``config/hierarchies.yaml``) maps a hierarchy name to its ``steps``; step
``s`` maps every label of level ``s - 1`` (level 0: the original values) to one label of level
``s``. Four kinds of step exist: ``groups`` (explicit sets), ``ranges`` (inclusive numeric
intervals, first step only), ``prefix`` (first ``n`` characters) and ``suppress`` (one label).

Built against the values of a column, a hierarchy becomes integer lookup tables: the original
values get codes ``0 .. n0 - 1`` (sorted), and ``maps[l][c]`` is the code at level ``l`` of the
value with code ``c``. Generalising a whole column to level ``l`` is then one fancy index,
``maps[l][codes]``, which is what the lattice algorithms use.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mimic_deid.core.atomic import read_yaml
from mimic_deid.core.errors import ConfigError, InputDataError

__all__ = [
    "MISSING",
    "Encoded",
    "Hierarchy",
    "build_hierarchy",
    "encode",
    "hierarchy_name",
    "load_hierarchies",
]

#: The label of a missing value (App. B writes it ``?``).
MISSING = "?"
STEP_KINDS = ("groups", "ranges", "prefix", "suppress")
_PROCEDURE_COLUMN = re.compile(r"^proc_\d+$")


def hierarchy_name(column: str) -> str:
    """The hierarchy of ``column``: ``procedure`` for ``proc_<i>``, else the column's name."""
    return "procedure" if _PROCEDURE_COLUMN.match(column) else column


def _step_error(source: str, name: str, index: int, what: str) -> ConfigError:
    return ConfigError(f"hierarchies file {source}: hierarchy '{name}', step {index}: {what}")


def _check_step(source: str, name: str, index: int, step: object) -> dict:
    if not isinstance(step, Mapping) or len(step) != 1 or next(iter(step)) not in STEP_KINDS:
        raise _step_error(
            source,
            name,
            index,
            f"expected a mapping with one key of {list(STEP_KINDS)}, got {step!r}",
        )
    kind, body = next(iter(step.items()))
    if kind == "suppress":
        if not isinstance(body, str) or not body:
            raise _step_error(source, name, index, f"suppress needs a label, got {body!r}")
    elif kind == "prefix":
        if isinstance(body, bool) or not isinstance(body, int) or body < 1:
            raise _step_error(source, name, index, f"prefix needs an integer >= 1, got {body!r}")
    elif kind == "groups":
        if not isinstance(body, Mapping) or not body:
            raise _step_error(
                source, name, index, f"groups needs a mapping label -> values, got {body!r}"
            )
        seen: dict[str, str] = {}
        for label, members in body.items():
            if not isinstance(members, list) or not members:
                raise _step_error(
                    source, name, index, f"group '{label}' needs a non-empty list, got {members!r}"
                )
            for m in members:
                if str(m) in seen:
                    raise _step_error(
                        source, name, index,
                        f"value '{m}' is in both group '{seen[str(m)]}' and group '{label}'",
                    )  # fmt: skip
                seen[str(m)] = str(label)
    else:  # ranges
        if index != 1:
            raise _step_error(source, name, index, "ranges are allowed on the first step only")
        if not isinstance(body, Mapping) or not body:
            raise _step_error(
                source, name, index, f"ranges needs a mapping label -> [low, high], got {body!r}"
            )
        bounds = []
        for label, rng in body.items():
            ok = (
                isinstance(rng, list)
                and len(rng) == 2
                and all(isinstance(v, int | float) and not isinstance(v, bool) for v in rng)
                and rng[0] <= rng[1]
            )
            if not ok:
                raise _step_error(
                    source,
                    name,
                    index,
                    f"range '{label}' must be [low, high] with low <= high, got {rng!r}",
                )
            bounds.append((float(rng[0]), float(rng[1]), str(label)))
        bounds.sort()
        for (_, hi, a), (lo, _, b) in zip(bounds, bounds[1:], strict=False):
            if lo <= hi:
                raise _step_error(source, name, index, f"ranges '{a}' and '{b}' overlap")
    return {"kind": kind, "body": body}


def load_hierarchies(path: str | os.PathLike) -> dict[str, list[dict]]:
    """Read and validate a hierarchies YAML file.

    Parameters
    ----------
    path : path
        The file (format in ``config/hierarchies.yaml``).

    Returns
    -------
    dict of str to list of dict
        Per hierarchy name, its steps as ``{"kind", "body"}`` (level ``s`` is step ``s``).

    Raises
    ------
    ConfigError
        The file is missing or not YAML, or a hierarchy or step is malformed (the message
        names the file, the hierarchy and the step).
    """
    source = os.fspath(path)
    doc = read_yaml(source, "hierarchies file")
    if not isinstance(doc, Mapping) or not doc:
        raise ConfigError(f"hierarchies file {source}: expected a mapping of hierarchy names")
    out: dict[str, list[dict]] = {}
    for name, entry in doc.items():
        steps = entry.get("steps") if isinstance(entry, Mapping) else None
        if not isinstance(steps, list) or not steps:
            raise ConfigError(
                f"hierarchies file {source}: hierarchy '{name}' needs a non-empty list 'steps'"
            )
        out[str(name)] = [_check_step(source, str(name), i + 1, s) for i, s in enumerate(steps)]
    return out


@dataclass(frozen=True)
class Hierarchy:
    """A hierarchy built against the values of one column.

    Attributes
    ----------
    column : str
        The column it generalises.
    labels : tuple of tuple of str
        ``labels[l]`` are the distinct labels of level ``l`` (level 0: the original values,
        sorted, missing as ``"?"``).
    maps : tuple of ndarray of int64
        ``maps[l]``, shape ``(len(labels[0]),)``: level-``l`` code of every original code;
        ``maps[0]`` is the identity.
    """

    column: str
    labels: tuple[tuple[str, ...], ...]
    maps: tuple[np.ndarray, ...]

    @property
    def height(self) -> int:
        """Number of generalisation steps (the top level's index)."""
        return len(self.maps) - 1

    @property
    def cardinalities(self) -> tuple[int, ...]:
        """Number of labels per level."""
        return tuple(len(lab) for lab in self.labels)


class UncoveredValue(InputDataError):
    """A value outside a hierarchy step; the message never shows it (it may be a patient's),
    ``value`` lets :func:`encode` name its first row instead."""

    def __init__(self, message: str, value: str) -> None:
        super().__init__(message)
        self.value = value


def _uncovered(
    column: str, name: str, level: int, value: str, expected: Sequence[str]
) -> UncoveredValue:
    shown = ", ".join(repr(e) for e in list(expected)[:12])
    more = ", ..." if len(expected) > 12 else ""
    return UncoveredValue(
        f"column '{column}': a value is not covered by step {level} of hierarchy '{name}' "
        f"(values are never shown in messages); the step covers {shown}{more}",
        value,
    )


def _apply_step(
    column: str, name: str, level: int, step: dict, labels: Sequence[str]
) -> tuple[np.ndarray, list[str]]:
    """Level-``level`` labels of the previous level's ``labels``: (code per label, new labels)."""
    kind, body = step["kind"], step["body"]
    if kind == "suppress":
        return np.zeros(len(labels), dtype=np.int64), [str(body)]
    if kind == "prefix":
        new = [lab if lab == MISSING else lab[: int(body)] for lab in labels]
    elif kind == "groups":
        member = {str(m): str(label) for label, members in body.items() for m in members}
        missing = [lab for lab in labels if lab not in member]
        if missing:
            raise _uncovered(column, name, level, missing[0], sorted(member))
        new = [member[lab] for lab in labels]
    else:  # ranges
        bounds = sorted((float(lo), float(hi), str(lab)) for lab, (lo, hi) in body.items())
        new = []
        for lab in labels:
            try:
                x = float(lab)
            except ValueError:
                x = float("nan")
            hit = [b for lo, hi, b in bounds if lo <= x <= hi]
            if not hit:
                ranges = [f"{b} [{lo:g}, {hi:g}]" for lo, hi, b in bounds]
                raise _uncovered(column, name, level, lab, ranges)
            new.append(hit[0])
    uniq = sorted(set(new))
    index = {u: i for i, u in enumerate(uniq)}
    return np.array([index[n] for n in new], dtype=np.int64), uniq


def build_hierarchy(
    column: str, steps: list[dict], values: Sequence[str], name: str = ""
) -> Hierarchy:
    """Build a hierarchy for ``column`` whose original values are ``values`` (distinct, sorted).

    Raises
    ------
    InputDataError
        A value (or a label of an intermediate level) is covered by no group or range; the
        message names the column, the value and the step.
    """
    name = name or hierarchy_name(column)
    labels: list[tuple[str, ...]] = [tuple(values)]
    maps = [np.arange(len(values), dtype=np.int64)]
    for level, step in enumerate(steps, start=1):
        code, new = _apply_step(column, name, level, step, labels[-1])
        maps.append(code[maps[-1]])
        labels.append(tuple(new))
    return Hierarchy(column, tuple(labels), tuple(maps))


def _as_labels(series: pd.Series) -> np.ndarray:
    """Column values as strings (integers without a decimal point), missing as ``"?"``."""
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        vals = series.to_numpy(dtype=np.float64, na_value=np.nan)
        finite = vals[~np.isnan(vals)]
        if np.array_equal(finite, np.round(finite)):
            series = pd.Series(vals).round().astype("Int64")
        return series.astype(str).where(series.notna(), MISSING).to_numpy(dtype=object)
    return series.astype(object).where(series.notna(), MISSING).astype(str).to_numpy(dtype=object)


@dataclass(frozen=True)
class Encoded:
    """A table's quasi-identifiers as integer codes with their hierarchies.

    Attributes
    ----------
    columns : tuple of str
        The quasi-identifiers, in lattice order.
    codes : ndarray of int64, shape (n_rows, n_columns)
        Level-0 code of every value.
    hierarchies : tuple of Hierarchy
        One per column.
    """

    columns: tuple[str, ...]
    codes: np.ndarray
    hierarchies: tuple[Hierarchy, ...]

    @property
    def n_rows(self) -> int:
        return int(self.codes.shape[0])

    @property
    def heights(self) -> np.ndarray:
        """Top level of every column, shape ``(n_columns,)``."""
        return np.array([h.height for h in self.hierarchies], dtype=np.int64)

    def generalised(self, node: Sequence[int]) -> np.ndarray:
        """Codes at ``node`` (one level per column), shape ``(n_rows, n_columns)``."""
        return (
            np.column_stack(
                [
                    h.maps[int(lv)][self.codes[:, j]]
                    for j, (h, lv) in enumerate(zip(self.hierarchies, node, strict=True))
                ]
            )
            if self.columns
            else np.zeros((self.n_rows, 0), dtype=np.int64)
        )

    def labels(self, node: Sequence[int]) -> pd.DataFrame:
        """The generalised table at ``node`` as strings, one column per quasi-identifier."""
        gen = self.generalised(node)
        return pd.DataFrame(
            {
                c: np.asarray(h.labels[int(lv)], dtype=object)[gen[:, j]]
                for j, (c, h, lv) in enumerate(
                    zip(self.columns, self.hierarchies, node, strict=True)
                )
            }
        )


def encode(
    df: pd.DataFrame,
    columns: Sequence[str],
    hierarchies: Mapping[str, list[dict]],
    what: str = "table",
) -> Encoded:
    """Encode the quasi-identifiers ``columns`` of ``df`` against their hierarchies.

    Parameters
    ----------
    df : DataFrame
        The table (missing values are encoded as ``"?"``).
    columns : sequence of str
        Quasi-identifiers; ``proc_<i>`` use the ``procedure`` hierarchy.
    hierarchies : mapping
        :func:`load_hierarchies` output.
    what : str
        How error messages name ``df``.

    Raises
    ------
    InputDataError
        A column is missing from ``df`` or a value is not covered by its hierarchy.
    ConfigError
        A column has no hierarchy.
    """
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputDataError(
            f"{what}: missing quasi-identifier column(s) {missing}; it has {list(df.columns)}"
        )
    codes, built = [], []
    for col in columns:
        name = hierarchy_name(col)
        if name not in hierarchies:
            raise ConfigError(
                f"quasi-identifier '{col}' has no hierarchy '{name}'; the hierarchies file "
                f"defines {sorted(hierarchies)}"
            )
        labels = _as_labels(df[col])
        values, inverse = np.unique(labels.astype(str), return_inverse=True)
        try:
            built.append(build_hierarchy(col, hierarchies[name], [str(v) for v in values], name))
        except UncoveredValue as exc:
            rows = np.flatnonzero(labels.astype(str) == exc.value)[:1] + 1
            where = f"{what}, row {rows[0]}: " if len(rows) else f"{what}: "
            raise InputDataError(where + str(exc)) from None
        codes.append(inverse.astype(np.int64))
    arr = np.column_stack(codes) if codes else np.zeros((len(df), 0), dtype=np.int64)
    return Encoded(tuple(columns), arr, tuple(built))
