"""Parse raw event values, convert them to each variable's canonical unit, drop implausible ones.

Per variable (``config/variables.yaml``), vectorised over its rows:

1. parse: ``numeric`` (VALUENUM, else VALUE as a number), ``ratio_first`` / ``ratio_second``
   ("120/80" -> 120 / 80; anything else parsed as numeric), ``text_map`` (VALUE lower-cased
   and stripped looked up in the map, else numeric). Rows that give no number are counted as
   ``unparseable`` and dropped.
2. conversions, in order: a rule fires on a row when ANY of its conditions holds (VALUEUOM
   contains one of ``uom``, case ignored; ITEMID in ``itemids``; value > ``above``;
   value <= ``at_most``), conditions evaluated on the value before that rule;
   new value = value * multiply + add. ``converted`` counts the rows changed by each rule.
3. range: values outside ``valid_range`` (inclusive) are counted as ``out_of_range`` and dropped.

How the string rules are vectorised (no Python call per row):

- ratios: only the rows whose VALUE contains ``/`` are matched, with Arrow's RE2
  (``pyarrow.compute.extract_regex``) on ASCII text; RE2's pattern spells out the characters
  Python's ``\\s`` and ``\\d`` match in ASCII, and the rare non-ASCII rows keep Python's
  ``re`` (whose ``\\d`` and ``\\s`` are Unicode-aware), so the result equals the per-row rule;
- text maps and VALUEUOM conditions are row-local functions of one string: they are evaluated
  once per distinct string (Arrow dictionary encoding) and broadcast back to the rows.

:func:`clean_rows` cleans once and keeps a status per (event row, variable), so that the
counts of any subset of the rows (a release's window) are :func:`clean_stats` of the same
pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from mimic_deid.core.logs import get_logger
from mimic_deid.pipeline.variables import Conversion, Variable

log = get_logger(__name__)

CLEAN_COLUMNS = ("icustay_id", "charttime", "variable", "value")
EVENT_COLUMNS = ("icustay_id", "charttime", "itemid", "value", "valuenum", "valueuom")
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)"
_RATIO = rf"^\s*({_NUMBER})\s*/\s*({_NUMBER})\s*$"
# The same pattern for RE2 on ASCII text: Python's \s matches these ASCII characters
# (str.isspace), its \d matches 0-9; \s* before $ makes Python's "$ before a final newline"
# and RE2's end of text the same.
_SPACE = r"[\t\n\x0b\x0c\r\x1c-\x1f ]*"
_NUMBER_ASCII = r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)"
RATIO_RE2 = (
    rf"^{_SPACE}(?P<first>{_NUMBER_ASCII}){_SPACE}/{_SPACE}(?P<second>{_NUMBER_ASCII}){_SPACE}$"
)

#: Status of a cleaned (row, variable) pair.
UNPARSEABLE, OUT_OF_RANGE, KEPT = np.int8(0), np.int8(1), np.int8(2)


def _as_text(values: pd.Series) -> pd.Series:
    """Nullable string view of a text column (pd.NA for missing)."""
    return values.astype("string")


def _arrow_text(values: pd.Series | pa.Array | pa.ChunkedArray) -> pa.Array:
    """A text column as one Arrow string array (nulls for missing)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not isinstance(values, pa.Array):
        values = pa.array(_as_text(pd.Series(values)), from_pandas=True)
    if pa.types.is_null(values.type):
        values = values.cast(pa.string())
    return values


def _pandas_text(values: pa.Array) -> pd.Series:
    """The nullable pandas string Series of an Arrow string array (index 0..n-1)."""
    return _as_text(pd.Series(values.to_pandas(), copy=False))


#: Results of the string rules per distinct string, kept across calls (event batches) per rule:
#: ``{rule key: {string or None: result}}``; each memo stops growing at :data:`MEMO_SIZE`.
_MEMOS: dict[tuple, dict] = {}
MEMO_SIZE = 1 << 16
_ABSENT = object()


def _per_distinct(
    values: pa.Array, rule: Callable[[pd.Series], np.ndarray], key: tuple | None = None
) -> np.ndarray:
    """Apply a row-local string ``rule`` once per distinct value and broadcast it to the rows.

    ``rule`` maps a pandas string Series to a NumPy array of the same length; it must depend on
    each element alone. Nulls get ``rule`` of a null. With a ``key`` (naming the rule and its
    parameters), results are remembered across calls, so a string seen in an earlier batch is
    not evaluated again. Returns ``(len(values),)``.
    """
    encoded = pc.dictionary_encode(values)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    strings = [*encoded.dictionary.to_pylist(), None]  # the last entry stands for nulls
    memo = {} if key is None else _MEMOS.setdefault(key, {})
    results = [memo.get(text, _ABSENT) for text in strings]
    todo = [i for i, r in enumerate(results) if r is _ABSENT]
    if todo:
        computed = rule(_as_text(pd.Series([strings[i] for i in todo], dtype=object)))
        for i, r in zip(todo, computed.tolist(), strict=True):
            results[i] = r
            if len(memo) < MEMO_SIZE:
                memo[strings[i]] = r
    table = np.array(results)
    index = pc.fill_null(encoded.indices, len(strings) - 1).to_numpy(zero_copy_only=False)
    return table[index]


def _numeric(value: pa.Array, valuenum: np.ndarray) -> np.ndarray:
    out = np.array(valuenum, dtype=np.float64, copy=True)
    missing = np.flatnonzero(np.isnan(out))
    if len(missing):
        text = _pandas_text(value.take(pa.array(missing))).str.strip()
        out[missing] = pd.to_numeric(text, errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan
        )
    return out


def _ratio(value: pa.Array, valuenum: np.ndarray, part: int) -> np.ndarray:
    out = _numeric(value, valuenum)
    slash = pc.fill_null(pc.match_substring(value, "/"), False).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(slash)
    if not len(rows):
        return out
    text = value.take(pa.array(rows))
    ascii_ = pc.string_is_ascii(text).to_numpy(zero_copy_only=False)
    captured = np.empty(len(rows), dtype=object)
    is_ratio = np.zeros(len(rows), dtype=bool)
    fast = np.flatnonzero(ascii_)
    if len(fast):
        parts = pc.extract_regex(text.take(pa.array(fast)), RATIO_RE2)
        valid = parts.is_valid().to_numpy(zero_copy_only=False)
        is_ratio[fast[valid]] = True
        field = parts.field(part).filter(parts.is_valid())
        captured[fast[valid]] = field.to_numpy(zero_copy_only=False)
    slow = np.flatnonzero(~ascii_)
    if len(slow):  # non-ASCII: Python's Unicode-aware \d and \s, as the rule is written
        parts = _pandas_text(text.take(pa.array(slow))).str.extract(_RATIO)
        valid = parts[0].notna().to_numpy(dtype=bool)
        is_ratio[slow[valid]] = True
        captured[slow[valid]] = parts.loc[valid, part].to_numpy(dtype=object)
    if is_ratio.any():
        numbers = _as_text(pd.Series(captured[is_ratio], dtype=object))
        # errors="coerce": a number of Unicode digits (which Python's \d accepts but pandas
        # does not parse) is unparseable rather than stopping the job.
        out[rows[is_ratio]] = pd.to_numeric(numbers, errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan
        )
    return out


def _text_map(value: pa.Array, valuenum: np.ndarray, text_map: dict[str, float]) -> np.ndarray:
    def rule(text: pd.Series) -> np.ndarray:
        mapped = text.str.strip().str.lower().map(text_map)
        return pd.to_numeric(mapped, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)

    out = _per_distinct(value, rule, ("text_map", *sorted(text_map.items())))
    missing = np.flatnonzero(np.isnan(out))
    if len(missing):
        out[missing] = _numeric(value.take(pa.array(missing)), valuenum[missing])
    return out


def _float_array(values: pd.Series | np.ndarray) -> np.ndarray:
    return pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan
    )


def _parse(value: pa.Array, valuenum: np.ndarray, variable: Variable) -> np.ndarray:
    if variable.parse == "numeric":
        return _numeric(value, valuenum)
    if variable.parse == "ratio_first":
        return _ratio(value, valuenum, 0)
    if variable.parse == "ratio_second":
        return _ratio(value, valuenum, 1)
    return _text_map(value, valuenum, variable.text_map)


def _uom_mask(conversion: Conversion, uom: pa.Array) -> np.ndarray:
    pattern = "|".join(re.escape(u) for u in conversion.uom)

    def rule(text: pd.Series) -> np.ndarray:
        hit = text.str.contains(pattern, case=False, regex=True, na=False)
        return hit.to_numpy(dtype=bool, na_value=False)

    return _per_distinct(uom, rule, ("uom", pattern))


def conversion_mask(
    conversion: Conversion, values: np.ndarray, itemids: np.ndarray, uom: pd.Series | pa.Array
) -> np.ndarray:
    """Rows on which ``conversion`` fires (ANY condition), evaluated on ``values`` as they are."""
    fires = np.zeros(len(values), dtype=bool)
    if conversion.uom:
        fires |= _uom_mask(conversion, _arrow_text(uom))
    if conversion.itemids:
        fires |= np.isin(itemids, np.asarray(conversion.itemids, dtype=np.int64))
    with np.errstate(invalid="ignore"):
        if conversion.above is not None:
            fires |= values > conversion.above
        if conversion.at_most is not None:
            fires |= values <= conversion.at_most
    return fires


@dataclass(frozen=True)
class CleanRows:
    """One cleaning pass over event rows: one entry per (event row, variable) pair.

    Entries are grouped by variable (configuration order), rows ascending within a variable.

    Attributes
    ----------
    row : int64 (m,)
        Index of the event row.
    variable : int64 (m,)
        Index of the variable in the configured list.
    value : float64 (m,)
        Cleaned value in the canonical unit; NaN unless ``status == KEPT``.
    status : int8 (m,)
        ``UNPARSEABLE``, ``OUT_OF_RANGE`` or ``KEPT``.
    fired : bool (m, r)
        Conversion ``j`` of the entry's variable fired (parsed rows only); ``r`` is the largest
        number of conversions of a variable.
    """

    row: np.ndarray
    variable: np.ndarray
    value: np.ndarray
    status: np.ndarray
    fired: np.ndarray


def _clean_variable(
    rows: np.ndarray,
    itemid: np.ndarray,
    value: pa.Array,
    valuenum: np.ndarray,
    valueuom: pa.Array,
    variable: Variable,
    n_rules: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Values, status and fired conversions of one variable's rows (see :class:`CleanRows`)."""
    take = pa.array(rows)
    values = _parse(value.take(take), valuenum[rows], variable)
    parsed = np.flatnonzero(~np.isnan(values))
    fired = np.zeros((len(rows), n_rules), dtype=bool)
    status = np.full(len(rows), UNPARSEABLE, dtype=np.int8)
    v = values[parsed]
    if variable.conversions:
        ids, uom = itemid[rows[parsed]], valueuom.take(pa.array(rows[parsed]))
        for j, conversion in enumerate(variable.conversions):
            fires = conversion_mask(conversion, v, ids, uom)
            v = np.where(fires, v * conversion.multiply + conversion.add, v)
            fired[parsed, j] = fires
    low, high = variable.valid_range
    ok = (v >= low) & (v <= high)
    status[parsed] = np.where(ok, KEPT, OUT_OF_RANGE)
    out = np.full(len(rows), np.nan)
    out[parsed[ok]] = v[ok]
    return out, status, fired


def clean_rows(
    itemid: np.ndarray,
    value: pa.Array,
    valuenum: np.ndarray,
    valueuom: pa.Array,
    variables: list[Variable],
) -> CleanRows:
    """Parse, convert and range-check every event row of a configured item id, once.

    Parameters
    ----------
    itemid : int64 (n,)
    value, valueuom : Arrow string arrays (n,) (or chunked, or pandas), nulls for missing.
    valuenum : float64 (n,), NaN for missing.
    variables : all configured variables (including ``in_series: false``).

    Returns the :class:`CleanRows` of the rows whose item id belongs to a variable.
    """
    value, valueuom = _arrow_text(value), _arrow_text(valueuom)
    n_rules = max((len(v.conversions) for v in variables), default=0)
    pieces: list[tuple[np.ndarray, ...]] = []
    for k, variable in enumerate(variables):
        ids = np.asarray(variable.all_itemids, dtype=np.int64)
        # a lookup table over the ids' span (MIMIC-III item ids < 10^6): one look-up per row
        # instead of one comparison pass per item id
        kind = "table" if len(ids) and int(ids.max() - ids.min()) < 1 << 24 else None
        mask = np.isin(itemid, ids, kind=kind)
        rows = np.flatnonzero(mask)
        if not len(rows):
            continue
        values, status, fired = _clean_variable(
            rows, itemid, value, valuenum, valueuom, variable, n_rules
        )
        pieces.append((rows, np.full(len(rows), k, dtype=np.int64), values, status, fired))
    if not pieces:
        empty = np.zeros(0, dtype=np.int64)
        return CleanRows(
            empty, empty, np.zeros(0), np.zeros(0, np.int8), np.zeros((0, n_rules), bool)
        )
    return CleanRows(*(np.concatenate(cols) for cols in zip(*pieces, strict=True)))


def clean_stats(
    rows: CleanRows, variables: list[Variable], row_mask: np.ndarray | None = None
) -> dict[str, dict]:
    """Per variable, the counts ``{rows, unparseable, converted (list per rule), out_of_range,
    kept}`` of the event rows selected by ``row_mask``.

    ``row_mask`` is a bool array over event rows (``None``: all rows).
    """
    sel = np.ones(len(rows.row), dtype=bool) if row_mask is None else row_mask[rows.row]
    var, status = rows.variable[sel], rows.status[sel]
    n = len(variables)

    def count(mask: np.ndarray) -> list[int]:
        return np.bincount(var[mask], minlength=n).tolist()

    total = np.bincount(var, minlength=n).tolist()
    unparseable, out_of_range, kept = (
        count(status == s) for s in (UNPARSEABLE, OUT_OF_RANGE, KEPT)
    )
    fired = rows.fired[sel]
    converted = [count(fired[:, j]) for j in range(fired.shape[1])]
    return {
        v.name: {
            "rows": total[k],
            "unparseable": unparseable[k],
            "converted": [converted[j][k] for j in range(len(v.conversions))],
            "out_of_range": out_of_range[k],
            "kept": kept[k],
        }
        for k, v in enumerate(variables)
    }


def empty_stats(variables: list[Variable]) -> dict[str, dict]:
    """Zero cleaning counts for every variable."""
    return {
        v.name: {
            "rows": 0,
            "unparseable": 0,
            "converted": [0] * len(v.conversions),
            "out_of_range": 0,
            "kept": 0,
        }
        for v in variables
    }


def merge_stats(total: dict[str, dict], part: dict[str, dict]) -> dict[str, dict]:
    """Add the counts of ``part`` to ``total`` (per variable; ``converted`` element-wise)."""
    out = {name: dict(counts) for name, counts in total.items()}
    for name, counts in part.items():
        if name not in out:
            out[name] = dict(counts)
            continue
        acc = out[name]
        for key, val in counts.items():
            if isinstance(val, list):
                acc[key] = [a + b for a, b in zip(acc.get(key, [0] * len(val)), val, strict=True)]
            else:
                acc[key] = acc.get(key, 0) + val
    return out
