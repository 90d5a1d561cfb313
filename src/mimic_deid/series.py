"""Hourly resampling of cleaned events and the ``stays`` / ``ihm48`` releases.

Grid: per stay, hour 0 is the stay's first recording (first CHARTTIME over all series
dimensions after cleaning); grid points every hour up to the last recording, so
``length = floor((last - first) / 1 h) + 1``. Grid hour ``h`` covers ``[first + h, first + h + 1)``:
the observations of a dimension inside that hour are averaged (resampling), and hours without
an observation are linearly interpolated between the nearest observed hours of the same
dimension. A dimension is NaN before its first and after its last observed hour and where never
observed. No extrapolation or filling.

Why bins rather than interpolation at exact instants: a variable measured once (height and
weight usually are) would otherwise vanish whenever its one measurement falls between two grid
points, and its mean is one of the attacker's features (seed 5.1). Binning keeps every
observation on the grid, as the seed's resample-then-interpolate pre-processing did (5.3).
Times are handled in whole seconds.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from mimic_deid.cleaning import clean_events, empty_stats, merge_stats
from mimic_deid.cohort import assign_events_to_stays, require_table
from mimic_deid.errors import ConfigError, InputDataError
from mimic_deid.logs import Progress, get_logger
from mimic_deid.variables import Variable, series_variables

log = get_logger(__name__)

RELEASES = ("stays", "ihm48")
HOUR_S = 3600
META_COLUMNS = ("icustay_id", "subject_id", "hadm_id", "length", "mortality")
EVENTS_GLOB = "part-*.parquet"


def _empty_long(dims: list[str]) -> pd.DataFrame:
    data = {"icustay_id": np.array([], dtype=np.int64), "hour": np.array([], dtype=np.int32)}
    data.update({d: np.array([], dtype=np.float64) for d in dims})
    return pd.DataFrame(data)


def _seconds(times: pd.Series) -> np.ndarray:
    """datetime64 values as int64 seconds since the epoch (NaT -> int64 min)."""
    return times.to_numpy().astype("datetime64[s]").astype(np.int64)


def _interpolate(
    obs_key: np.ndarray, obs_val: np.ndarray, grid_key: np.ndarray, big: int
) -> np.ndarray:
    """Linear interpolation of observations at grid points, per stay, without extrapolation.

    Keys are ``stay_index * big + seconds_from_stay_start``; ``obs_key`` is sorted. Duplicate
    observation keys are averaged. Returns float64 ``(len(grid_key),)``, NaN where a grid point
    is not bracketed by two observations of its own stay (or hit exactly by one).
    """
    out = np.full(len(grid_key), np.nan)
    if len(obs_key) == 0:
        return out
    keys, inverse = np.unique(obs_key, return_inverse=True)
    values = np.bincount(inverse, weights=obs_val) / np.bincount(inverse)
    stay_of_key = keys // big
    grid_stay = grid_key // big
    right = np.searchsorted(keys, grid_key, side="right")
    left = right - 1
    left_c = np.clip(left, 0, len(keys) - 1)
    right_c = np.clip(right, 0, len(keys) - 1)
    has_left = (left >= 0) & (stay_of_key[left_c] == grid_stay)
    exact = has_left & (keys[left_c] == grid_key)
    has_right = (right < len(keys)) & (stay_of_key[right_c] == grid_stay)
    between = has_left & has_right & ~exact
    out[exact] = values[left_c[exact]]
    k0, k1 = keys[left_c[between]], keys[right_c[between]]
    v0, v1 = values[left_c[between]], values[right_c[between]]
    out[between] = v0 + (v1 - v0) * (grid_key[between] - k0) / (k1 - k0)
    return out


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
    times = _seconds(clean["charttime"])
    values = clean["value"].to_numpy(dtype=np.float64)
    keep = (codes >= 0) & ~np.isnat(clean["charttime"].to_numpy()) & ~np.isnan(values)
    if not keep.any():
        return _empty_long(dims)
    codes, times, values = codes[keep], times[keep], values[keep]
    stay_ids, stay_idx = np.unique(
        clean["icustay_id"].to_numpy(dtype=np.int64)[keep], return_inverse=True
    )
    order = np.lexsort((times, stay_idx))
    codes, times, values, stay_idx = codes[order], times[order], values[order], stay_idx[order]

    n_stays = len(stay_ids)
    starts = np.searchsorted(stay_idx, np.arange(n_stays), side="left")
    ends = np.searchsorted(stay_idx, np.arange(n_stays), side="right")
    first, last = times[starts], times[ends - 1]
    lengths = (last - first) // HOUR_S + 1
    big = int((last - first).max()) + 1
    if n_stays * big >= 2**62:
        raise InputDataError(
            "clean events: a stay spans too long a time to resample "
            f"(longest {(big - 1) / HOUR_S:.0f} h); check the charttime column"
        )

    grid_stay = np.repeat(np.arange(n_stays, dtype=np.int64), lengths)
    grid_offset = np.repeat(np.cumsum(lengths) - lengths, lengths)
    hours = np.arange(len(grid_stay), dtype=np.int64) - grid_offset
    grid_key = grid_stay * big + hours * HOUR_S
    # Snap each observation to the start of its hour bin; _interpolate averages a bin.
    obs_key = stay_idx * big + ((times - first[stay_idx]) // HOUR_S) * HOUR_S

    out = {"icustay_id": stay_ids[grid_stay], "hour": hours.astype(np.int32)}
    for code, dim in enumerate(dims):
        mine = codes == code
        out[dim] = _interpolate(obs_key[mine], values[mine], grid_key, big)
    return pd.DataFrame(out)


def _window_ihm(events: pd.DataFrame, stays: pd.DataFrame, hours: int) -> tuple[pd.DataFrame, int]:
    """Events with charttime in [INTIME, INTIME + hours) of their stay, and the number of
    events dropped because they fall exactly at INTIME + hours.

    The window is half-open so that the series has exactly ``hours`` hourly bins;
    mimic3-benchmarks keeps an observation at exactly 48.0 h, this project drops it and
    counts it (``cleaning.json``: ``ihm_window.dropped_at_end``).
    """
    intime = stays.set_index("icustay_id")["intime"]
    start = intime.reindex(events["icustay_id"].to_numpy()).to_numpy()
    charttime = events["charttime"].to_numpy()
    end = start + np.timedelta64(hours * HOUR_S, "s")
    return events[(charttime >= start) & (charttime < end)], int((charttime == end).sum())


def release_meta(series_long: pd.DataFrame, stays: pd.DataFrame) -> pd.DataFrame:
    """One row per series: icustay_id, subject_id, hadm_id, length (int32), mortality (int8)."""
    ids, lengths = np.unique(series_long["icustay_id"].to_numpy(dtype=np.int64), return_counts=True)
    meta = pd.DataFrame({"icustay_id": ids, "length": lengths.astype(np.int32)})
    info = stays.loc[:, ["icustay_id", "subject_id", "hadm_id", "mortality"]]
    meta = meta.merge(info, on="icustay_id", how="left", validate="one_to_one")
    meta = meta.loc[:, list(META_COLUMNS)]
    meta["subject_id"] = meta["subject_id"].astype(np.int64)
    meta["hadm_id"] = meta["hadm_id"].astype(np.int64)
    meta["mortality"] = meta["mortality"].astype(np.int8)
    return meta


def build_release(
    raw_dir: str | os.PathLike,
    stays: pd.DataFrame,
    variables: list[Variable],
    release: str,
    ihm_hours: int = 48,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Build the hourly series of one release from the bucketed raw events.

    Reads ``raw_dir/events/part-*.parquet`` one part at a time (parts are by hadm_id, so every
    stay's events are in one part), assigns events to cohort stays, cleans and resamples.

    Args:
        raw_dir: the raw artefact directory (``results/private/raw``).
        stays: the cohort (``cohort/stays.parquet``).
        variables: all configured variables; the ``in_series`` ones are the dimensions.
        release: ``stays`` (whole ICU stays) or ``ihm48`` (stays with los_hours >= ihm_hours,
            events in [INTIME, INTIME + ihm_hours)).
        ihm_hours: the in-hospital-mortality observation window, hours.

    Returns:
        ``(series_long, meta, stats)``: the long table of :func:`resample_hourly` over all
        stays with at least one recording; meta (icustay_id, subject_id, hadm_id, length,
        mortality; sorted by icustay_id; no split column, see
        :func:`mimic_deid.split.add_splits`); cleaning counts per variable.
    """
    if release not in RELEASES:
        raise ConfigError(f"release must be one of {RELEASES}, got {release!r}")
    if ihm_hours <= 0:
        raise ConfigError(
            f"config parameter 'series/ihm_hours': expected a positive number of hours, "
            f"got {ihm_hours}"
        )
    require_table(
        stays,
        "stays",
        ("subject_id", "hadm_id", "icustay_id", "intime", "outtime", "los_hours", "mortality"),
    )
    events_dir = Path(raw_dir) / "events"
    parts = sorted(events_dir.glob(EVENTS_GLOB))
    if not parts:
        raise InputDataError(f"{events_dir}: no {EVENTS_GLOB} files (run the extract step first)")
    cohort = stays if release == "stays" else stays[stays["los_hours"] >= ihm_hours]
    log.info("%s: %d cohort stays eligible", release, len(cohort))
    dims = [v.name for v in series_variables(variables)]

    stats = empty_stats(variables)
    dropped_at_end = 0
    pieces = []
    progress = Progress(f"{release} event parts", len(parts), log, every_s=5.0, unit="parts")
    for path in parts:
        events = pd.read_parquet(path)
        events = assign_events_to_stays(events, cohort)
        if release == "ihm48":
            events, at_end = _window_ihm(events, cohort, ihm_hours)
            dropped_at_end += at_end
        clean, part_stats = clean_events(events, variables)
        stats = merge_stats(stats, part_stats)
        pieces.append(resample_hourly(clean, dims))
        progress.update()
    progress.close()

    series_long = pd.concat(pieces, ignore_index=True) if pieces else _empty_long(dims)
    if series_long.empty:
        raise InputDataError(
            f"release '{release}': no cohort stay has a recording of a series variable "
            f"in {events_dir}"
        )
    series_long = series_long.sort_values(["icustay_id", "hour"], kind="stable")
    series_long = series_long.reset_index(drop=True)
    meta = release_meta(series_long, cohort)
    if release == "ihm48":
        stats["ihm_window"] = {
            "rule": f"charttime in [INTIME, INTIME + {ihm_hours} h)",
            "dropped_at_end": dropped_at_end,
        }
    log.info(
        "%s: %d series, %d grid hours (median length %d h)",
        release,
        len(meta),
        len(series_long),
        int(np.median(meta["length"])),
    )
    return series_long, meta, stats
