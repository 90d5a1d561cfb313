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
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from mimic_deid.cohort import require_table
from mimic_deid.logs import get_logger
from mimic_deid.variables import Conversion, Variable

log = get_logger(__name__)

CLEAN_COLUMNS = ("icustay_id", "charttime", "variable", "value")
EVENT_COLUMNS = ("icustay_id", "charttime", "itemid", "value", "valuenum", "valueuom")
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)"
_RATIO = rf"^\s*({_NUMBER})\s*/\s*({_NUMBER})\s*$"


def _as_text(values: pd.Series) -> pd.Series:
    """Nullable string view of a text column (pd.NA for missing)."""
    return values.astype("string")


def parse_numeric(value: pd.Series, valuenum: pd.Series) -> np.ndarray:
    """VALUENUM where present, else VALUE parsed as a number; NaN when neither is a number."""
    out = pd.to_numeric(valuenum, errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan, copy=True
    )
    missing = np.isnan(out)
    if missing.any():
        text = _as_text(value[missing]).str.strip()
        out[missing] = pd.to_numeric(text, errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan
        )
    return out


def parse_ratio(value: pd.Series, valuenum: pd.Series, part: int) -> np.ndarray:
    """Part ``part`` (0 first, 1 second) of "a/b" values; other values parsed as numeric."""
    out = parse_numeric(value, valuenum)
    parts = _as_text(value).str.extract(_RATIO)
    is_ratio = parts[0].notna().to_numpy(dtype=bool)
    if is_ratio.any():
        out[is_ratio] = pd.to_numeric(parts.loc[is_ratio, part]).to_numpy(dtype=np.float64)
    return out


def parse_text_map(value: pd.Series, valuenum: pd.Series, text_map: dict[str, float]) -> np.ndarray:
    """VALUE (lower-cased, stripped) looked up in ``text_map``; values not in it parsed as numeric."""
    mapped = _as_text(value).str.strip().str.lower().map(text_map)
    out = pd.to_numeric(mapped, errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan, copy=True
    )
    missing = np.isnan(out)
    if missing.any():
        out[missing] = parse_numeric(value[missing], valuenum[missing])
    return out


def parse_values(rows: pd.DataFrame, variable: Variable) -> np.ndarray:
    """Parse the raw values of ``rows`` (one variable's events) to float64, NaN = unparseable."""
    value, valuenum = rows["value"], rows["valuenum"]
    if variable.parse == "numeric":
        return parse_numeric(value, valuenum)
    if variable.parse == "ratio_first":
        return parse_ratio(value, valuenum, 0)
    if variable.parse == "ratio_second":
        return parse_ratio(value, valuenum, 1)
    return parse_text_map(value, valuenum, variable.text_map)


def conversion_mask(
    conversion: Conversion, values: np.ndarray, itemids: np.ndarray, uom: pd.Series
) -> np.ndarray:
    """Rows on which ``conversion`` fires (ANY condition), evaluated on ``values`` as they are."""
    fires = np.zeros(len(values), dtype=bool)
    if conversion.uom:
        pattern = "|".join(re.escape(u) for u in conversion.uom)
        hit = _as_text(uom).str.contains(pattern, case=False, regex=True, na=False)
        fires |= hit.to_numpy(dtype=bool, na_value=False)
    if conversion.itemids:
        fires |= np.isin(itemids, np.asarray(conversion.itemids, dtype=np.int64))
    with np.errstate(invalid="ignore"):
        if conversion.above is not None:
            fires |= values > conversion.above
        if conversion.at_most is not None:
            fires |= values <= conversion.at_most
    return fires


def clean_variable(rows: pd.DataFrame, variable: Variable) -> tuple[pd.DataFrame, dict]:
    """Parse, convert and range-check the events of one variable.

    Returns ``(clean, stats)``: clean has columns icustay_id, charttime, variable, value
    (float64, canonical unit); stats is ``{rows, unparseable, converted: [per rule],
    out_of_range, kept}``.
    """
    values = parse_values(rows, variable)
    parsed = ~np.isnan(values)
    rows, values = rows[parsed], values[parsed]
    itemids = rows["itemid"].to_numpy(dtype=np.int64)
    converted = []
    for conversion in variable.conversions:
        fires = conversion_mask(conversion, values, itemids, rows["valueuom"])
        values = np.where(fires, values * conversion.multiply + conversion.add, values)
        converted.append(int(fires.sum()))
    low, high = variable.valid_range
    ok = (values >= low) & (values <= high)
    clean = pd.DataFrame(
        {
            "icustay_id": rows["icustay_id"].to_numpy(dtype=np.int64)[ok],
            "charttime": rows["charttime"].to_numpy()[ok],
            "variable": variable.name,
            "value": values[ok],
        }
    )
    stats = {
        "rows": int(len(parsed)),
        "unparseable": int((~parsed).sum()),
        "converted": converted,
        "out_of_range": int((~ok).sum()),
        "kept": int(ok.sum()),
    }
    return clean, stats


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


def clean_events(events: pd.DataFrame, variables: list[Variable]) -> tuple[pd.DataFrame, dict]:
    """Clean the events of stays (after :func:`mimic_deid.cohort.assign_events_to_stays`).

    Args:
        events: columns icustay_id (int64), charttime, itemid, value (string), valuenum
            (float64, nullable), valueuom (string); events of unconfigured itemids are ignored.
        variables: the configured variables (all of them, including ``in_series: false``).

    Returns:
        ``(clean, stats)``: clean has columns icustay_id (int64), charttime, variable (str),
        value (float64, canonical unit), sorted by (icustay_id, charttime, variable);
        stats maps variable name -> ``{rows, unparseable, converted (list per rule),
        out_of_range, kept}``.
    """
    require_table(events, "events", EVENT_COLUMNS)
    stats = empty_stats(variables)
    parts = []
    itemids = events["itemid"].to_numpy(dtype=np.int64)
    n_mapped = 0
    for variable in variables:
        mask = np.isin(itemids, np.asarray(variable.all_itemids, dtype=np.int64))
        n_mapped += int(mask.sum())
        if not mask.any():
            continue
        clean, stats[variable.name] = clean_variable(events[mask], variable)
        parts.append(clean)
    if n_mapped < len(events):
        log.info("%d events of unconfigured itemids ignored", len(events) - n_mapped)
    if not parts:
        empty = pd.DataFrame(
            {
                "icustay_id": np.array([], dtype=np.int64),
                "charttime": events["charttime"].iloc[:0].to_numpy(),
                "variable": pd.Series([], dtype="str"),
                "value": np.array([], dtype=np.float64),
            }
        )
        return empty, stats
    clean = pd.concat(parts, ignore_index=True)
    clean = clean.sort_values(["icustay_id", "charttime", "variable"], kind="stable")
    return clean.reset_index(drop=True), stats
