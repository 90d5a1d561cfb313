"""DataFrame entry points to the series chain, for the tests only: the workflow streams Arrow
batches through the array functions these wrap (cleaning ``clean_rows``, cohort
``match_events_to_stays``, series ``build_releases``), so the library keeps those alone."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from mimic_deid.core import atomic
from mimic_deid.core.errors import ConfigError
from mimic_deid.core.logs import get_logger
from mimic_deid.pipeline.cleaning import (
    EVENT_COLUMNS,
    KEPT,
    _arrow_text,
    _float_array,
    _numeric,
    _ratio,
    _text_map,
    clean_rows,
    clean_stats,
)
from mimic_deid.pipeline.cohort import (
    EVENTS_COLUMNS,
    StayLookup,
    match_events_to_stays,
    require_table,
)
from mimic_deid.pipeline.series import RELEASES, _resample, build_releases
from mimic_deid.pipeline.variables import Variable

log = get_logger(__name__)


def assign_events_to_stays(events: pd.DataFrame, stays: pd.DataFrame) -> pd.DataFrame:
    """Keep the events of cohort stays and give each its stay's ICUSTAY_ID.

    An event with an ICUSTAY_ID belongs to that stay; an event without one (LABEVENTS)
    belongs to the stay of its admission when CHARTTIME is in [INTIME, OUTTIME]. Events of
    stays outside the cohort, or outside any stay, are dropped. Relies on the cohort having one
    stay per admission (:func:`~mimic_deid.pipeline.cohort.match_events_to_stays`).

    Args:
        events: rows of ``raw/events/part-*.parquet`` (at least hadm_id, icustay_id (Int64),
            charttime).
        stays: the cohort (at least hadm_id, icustay_id, intime, outtime).

    Returns:
        The kept events, same columns and row order as ``events``, with icustay_id as int64.
    """
    require_table(events, "events", EVENTS_COLUMNS)
    lookup = StayLookup.of(stays)
    hadm = events["hadm_id"]
    has_hadm = hadm.notna().to_numpy(dtype=bool)
    own = events["icustay_id"]
    has_id = own.notna().to_numpy(dtype=bool)
    keep, stay_id = match_events_to_stays(
        pd.to_numeric(hadm.where(has_hadm, -1)).to_numpy(dtype=np.int64),
        pd.to_numeric(own.where(has_id, -1)).to_numpy(dtype=np.int64),
        has_id,
        events["charttime"].to_numpy(),
        lookup,
    )
    keep &= has_hadm
    out = events.loc[keep, list(events.columns)]
    out["icustay_id"] = stay_id[keep]
    return out.reset_index(drop=True)


def clean_events(events: pd.DataFrame, variables: list[Variable]) -> tuple[pd.DataFrame, dict]:
    """Clean the events of stays (after :func:`assign_events_to_stays`).

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
    itemid = events["itemid"].to_numpy(dtype=np.int64)
    rows = clean_rows(
        itemid,
        _arrow_text(events["value"]),
        _float_array(events["valuenum"]),
        _arrow_text(events["valueuom"]),
        variables,
    )
    stats = clean_stats(rows, variables)
    if len(rows.row) < len(events):
        log.info("%d events of unconfigured itemids ignored", len(events) - len(rows.row))
    kept = rows.status == KEPT
    take = rows.row[kept]
    names = np.array([v.name for v in variables], dtype=object)
    clean = pd.DataFrame(
        {
            "icustay_id": events["icustay_id"].to_numpy(dtype=np.int64)[take],
            "charttime": events["charttime"].to_numpy()[take],
            "variable": pd.Series(names[rows.variable[kept]], dtype="str"),
            "value": rows.value[kept],
        }
    )
    clean = clean.sort_values(["icustay_id", "charttime", "variable"], kind="stable")
    return clean.reset_index(drop=True), stats


def resample_hourly(clean: pd.DataFrame, dims: list[str]) -> pd.DataFrame:
    """Hourly series of every stay in ``clean`` (vectorised over stays and dimensions).

    Args:
        clean: cleaned events, columns icustay_id (int64), charttime (datetime64),
            variable (str), value (float64). Rows of variables not in ``dims`` are ignored
            (they neither add a column nor move the grid).
        dims: the series dimensions, in output column order.

    Returns:
        Long table with columns icustay_id (int64), hour (int32, 0-based from the stay's first
        recording), one float64 column per dim (NaN = null); sorted by (icustay_id, hour).
        Stays without any observation of a dim are absent.
    """
    require_table(clean, "clean events", ("icustay_id", "charttime", "variable", "value"))
    codes = pd.Index(list(dims)).get_indexer(clean["variable"]).astype(np.int64)
    return _resample(
        clean["icustay_id"].to_numpy(dtype=np.int64),
        clean["charttime"].to_numpy(),
        codes,
        clean["value"].to_numpy(dtype=np.float64),
        dims,
    )


def build_release(
    raw_dir: str | os.PathLike,
    stays: pd.DataFrame,
    variables: list[Variable],
    release: str,
    ihm_hours: int = 48,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """One release of :func:`~mimic_deid.pipeline.series.build_releases` (``stays`` or ``ihm48``), its series as one
    DataFrame sorted by (icustay_id, hour).

    The series are spooled meanwhile in a scratch directory next to ``raw_dir`` (private
    data stays below the private tree, never in the system's temporary directory; see
    :func:`mimic_deid.core.atomic.scratch_dir`).
    """
    if release not in RELEASES:
        raise ConfigError(f"release must be one of {RELEASES}, got {release!r}")
    with atomic.scratch_dir(Path(raw_dir).parent / "series-spool") as spool:
        series, meta, stats = build_releases(
            raw_dir, stays, variables, spool, ihm_hours, (release,)
        )[release]
        return series.frame(), meta, stats


def parse_numeric(value: pd.Series, valuenum: pd.Series) -> np.ndarray:
    """VALUENUM where present, else VALUE parsed as a number; NaN when neither is a number."""
    return _numeric(_arrow_text(value), _float_array(valuenum))


def parse_ratio(value: pd.Series, valuenum: pd.Series, part: int) -> np.ndarray:
    """Part ``part`` (0 first, 1 second) of "a/b" values; other values parsed as numeric."""
    return _ratio(_arrow_text(value), _float_array(valuenum), part)


def parse_text_map(value: pd.Series, valuenum: pd.Series, text_map: dict[str, float]) -> np.ndarray:
    """VALUE (lower-cased, stripped) looked up in ``text_map``; values not in it parsed as numeric."""
    return _text_map(_arrow_text(value), _float_array(valuenum), text_map)


def itemid_to_variable(variables: list[Variable]) -> dict[int, str]:
    """Map every configured itemid to its variable name."""
    return {i: v.name for v in variables for i in v.all_itemids}
