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

import functools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.core.logs import Progress, get_logger
from mimic_deid.core.memory import release_memory
from mimic_deid.core.threads import map_tasks
from mimic_deid.pipeline.cleaning import KEPT, clean_rows, clean_stats, empty_stats, merge_stats
from mimic_deid.pipeline.cohort import StayLookup, long_stay, match_events_to_stays, require_table
from mimic_deid.pipeline.series_spool import ReleaseSeries, empty_long
from mimic_deid.pipeline.variables import Variable, series_variables

log = get_logger(__name__)

RELEASES = ("stays", "ihm48")
HOUR_S = 3600
META_COLUMNS = ("icustay_id", "subject_id", "hadm_id", "length", "mortality", "long_stay")
EVENTS_GLOB = "part-*.parquet"


def _interpolate(
    obs_key: np.ndarray, obs_val: np.ndarray, grid_key: np.ndarray, big: int
) -> np.ndarray:
    """Linear interpolation of observations at grid points, per stay, without extrapolation.

    Keys are ``stay_index * big + seconds_from_stay_start`` (``obs_key`` in any order). Duplicate
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


def _resample(
    icustay_id: np.ndarray,
    charttime: np.ndarray,
    codes: np.ndarray,
    values: np.ndarray,
    dims: list[str],
) -> pd.DataFrame:
    """Hourly series of observations given as arrays (n,): icustay_id int64, charttime
    datetime64, codes int64 (index into ``dims``; < 0 ignored), values float64.

    Returns the long table icustay_id (int64), hour (int32, 0-based from the stay's first
    recording), one float64 column per dim (NaN = null), sorted by (icustay_id, hour); a stay
    without any observation is absent. Observations of one dimension in one hour bin are
    averaged in their input order.
    """
    times = charttime.astype("datetime64[s]").astype(np.int64)
    keep = (codes >= 0) & ~np.isnat(charttime) & ~np.isnan(values)
    if not keep.any():
        return empty_long(dims)
    codes, times, values = codes[keep], times[keep], values[keep]
    stay_ids, stay_idx = np.unique(icustay_id[keep], return_inverse=True)
    order = np.lexsort((times, stay_idx))
    codes, times, values, stay_idx = codes[order], times[order], values[order], stay_idx[order]

    n_stays = len(stay_ids)
    starts = np.searchsorted(stay_idx, np.arange(n_stays), side="left")
    ends = np.searchsorted(stay_idx, np.arange(n_stays), side="right")
    first, last = times[starts], times[ends - 1]
    lengths = (last - first) // HOUR_S + 1
    big = int((last - first).max()) + 1
    if n_stays * big >= 2**62:
        raise InputDataError(  # the limit, not the stay's span: that is a patient's data
            "clean events: a stay spans too long a time to resample (over "
            f"{2**62 // n_stays // HOUR_S:,} h with {n_stays:,} stays); check the charttime column"
        )

    grid_stay = np.repeat(np.arange(n_stays, dtype=np.int64), lengths)
    grid_offset = np.repeat(np.cumsum(lengths) - lengths, lengths)
    hours = np.arange(len(grid_stay), dtype=np.int64) - grid_offset
    grid_key = grid_stay * big + hours * HOUR_S
    # Snap each observation to the start of its hour bin; _interpolate averages a bin.
    obs_key = stay_idx * big + ((times - first[stay_idx]) // HOUR_S) * HOUR_S

    out = {"icustay_id": stay_ids[grid_stay], "hour": hours.astype(np.int32)}
    span = n_stays * big  # keys of one dimension lie in [0, span)
    if len(dims) * span < 2**62:
        # every dimension at once: dimension d's keys are shifted by d * span, so each
        # (dimension, stay) is its own "stay" of _interpolate (same sums, in the same order)
        grid = np.arange(len(dims), dtype=np.int64)[:, None] * span + grid_key[None, :]
        series = _interpolate(codes * span + obs_key, values, grid.ravel(), big)
        for code, dim in enumerate(dims):
            out[dim] = series[code * len(grid_key) : (code + 1) * len(grid_key)]
    else:
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
    start = intime.reindex(events["icustay_id"].to_numpy()).to_numpy().astype("datetime64[s]")
    charttime = events["charttime"].to_numpy().astype("datetime64[s]")
    inside, at_end = _ihm_window(charttime, start, np.ones(len(events), dtype=bool), hours)
    return events[inside], at_end


def release_meta(icustay_id: np.ndarray, length: np.ndarray, stays: pd.DataFrame) -> pd.DataFrame:
    """One row per series: icustay_id, subject_id, hadm_id, length (int32), mortality and
    long_stay (int8 labels, :func:`mimic_deid.pipeline.cohort.long_stay`).

    ``icustay_id`` (int64, sorted, distinct) and ``length`` (hours) are per series.
    """
    meta = pd.DataFrame(
        {"icustay_id": np.asarray(icustay_id, dtype=np.int64), "length": length.astype(np.int32)}
    )
    info = stays.loc[:, ["icustay_id", "subject_id", "hadm_id", "mortality", "los_hours"]]
    meta = meta.merge(info, on="icustay_id", how="left", validate="one_to_one")
    meta["long_stay"] = long_stay(meta["los_hours"])
    meta = meta.loc[:, list(META_COLUMNS)]
    meta["subject_id"] = meta["subject_id"].astype(np.int64)
    meta["hadm_id"] = meta["hadm_id"].astype(np.int64)
    meta["mortality"] = meta["mortality"].astype(np.int8)
    return meta


PART_COLUMNS = ["hadm_id", "icustay_id", "itemid", "charttime", "value", "valuenum", "valueuom"]


def _ihm_window(
    charttime: np.ndarray, intime: np.ndarray, eligible: np.ndarray, hours: int
) -> tuple[np.ndarray, int]:
    """The events of eligible stays with charttime in [INTIME, INTIME + hours), and how many
    events of eligible stays fall exactly at INTIME + hours (arrays (n,) per event)."""
    end = intime + np.timedelta64(hours * HOUR_S, "s")
    inside = eligible & (charttime >= intime) & (charttime < end)
    return inside, int((eligible & (charttime == end)).sum())


def _assign(table: pa.Table, stays: StayLookup) -> tuple[pa.Table, np.ndarray]:
    """The events of ``table`` assigned to cohort stays (same row order) and their ICUSTAY_ID
    (:func:`mimic_deid.pipeline.cohort.match_events_to_stays` on the key columns; the other columns are
    taken once for the assigned rows)."""
    icustay = table.column("icustay_id")
    keep, stay_id = match_events_to_stays(
        table.column("hadm_id").to_numpy(),
        pc.fill_null(icustay, -1).to_numpy(),
        icustay.is_valid().to_numpy(zero_copy_only=False),
        table.column("charttime").to_numpy(),
        stays,
    )
    rows = np.flatnonzero(keep)
    return table.take(pa.array(rows)), stay_id[rows]


#: Event rows read from a part at a time: bounds the stage's memory whatever the part size.
PART_BATCH_ROWS = 262_144


def _read_part(path: Path, stays: StayLookup) -> Iterator[tuple[pa.Table, np.ndarray]]:
    """The assigned events of one part (see :func:`_assign`), :data:`PART_BATCH_ROWS` rows at
    a time.

    Parts are sorted by hadm_id (``tables.EVENT_SORT_KEYS``) and every stay's events share its
    admission, so the rows of the last admission of a batch are carried over to the next one:
    each batch holds whole stays, and memory holds about one batch. A part's row groups (one
    spool range of the extraction, ~180,000 rows) are read one at a time.
    """
    part = pq.ParquetFile(path)
    # row group by row group: read across row groups, the reader held ~60 MB more at 20 M rows
    batches = (
        batch
        for group in range(part.num_row_groups)
        for batch in part.iter_batches(
            batch_size=PART_BATCH_ROWS, row_groups=[group], columns=PART_COLUMNS
        )
    )
    carry = None
    batch = next(batches, None)
    while batch is not None:
        following = next(batches, None)
        table = pa.Table.from_batches([batch])
        if carry is not None:
            table = pa.concat_tables([carry, table])
        if following is not None and table.num_rows:
            hadm = table.column("hadm_id").to_numpy()
            if (np.diff(hadm) < 0).any():
                raise InputDataError(
                    f"{path}: events are not sorted by hadm_id; expected a part written by the "
                    "extract step (re-run it)"
                )
            cut = int(np.searchsorted(hadm, hadm[-1], side="left"))
            table, carry = table.slice(0, cut), table.slice(cut)
        if table.num_rows:
            yield _assign(table, stays)
        batch = following


@dataclass
class _PartSeries:
    """What one event part gives each release: its spooled series, cleaning counts, and the
    ihm48 events dropped at the window's end."""

    series: dict[str, ReleaseSeries]
    stats: dict[str, dict]
    dropped_at_end: int


def _part_series(
    path: Path,
    name: str,
    stays: pd.DataFrame,
    variables: list[Variable],
    releases: tuple[str, ...],
    ihm_hours: int,
    spool_dir: Path,
) -> _PartSeries:
    """The series of every release from one event part (see :func:`build_releases`), spooled
    to ``spool_dir`` under file names starting with ``{release}-{name}``."""
    dims = [v.name for v in series_variables(variables)]
    dim_of = np.array([dims.index(v.name) if v.in_series else -1 for v in variables])
    by_stay = stays.set_index("icustay_id")
    intime_of, long_of = by_stay["intime"], by_stay["los_hours"] >= ihm_hours
    stats = {r: empty_stats(variables) for r in releases}
    pieces = {r: ReleaseSeries(spool_dir, f"{r}-{name}", dims) for r in releases}
    dropped_at_end = 0
    for events, icustay_id in _read_part(path, StayLookup.of(stays)):
        charttime = events.column("charttime").to_numpy().astype("datetime64[s]")
        rows = clean_rows(
            events.column("itemid").to_numpy(),
            events.column("value").combine_chunks(),
            events.column("valuenum").to_numpy(),
            events.column("valueuom").combine_chunks(),
            variables,
        )
        windows = {"stays": None}
        if "ihm48" in releases:
            windows["ihm48"], at_end = _ihm_window(
                charttime,
                intime_of.reindex(icustay_id).to_numpy().astype("datetime64[s]"),
                long_of.reindex(icustay_id).to_numpy(dtype=bool),
                ihm_hours,
            )
            dropped_at_end += at_end
        kept = rows.status == KEPT
        for release in releases:
            window = windows[release]
            stats[release] = merge_stats(stats[release], clean_stats(rows, variables, window))
            use = kept if window is None else kept & window[rows.row]
            take = rows.row[use]
            pieces[release].add(
                _resample(
                    icustay_id[take],
                    charttime[take],
                    dim_of[rows.variable[use]],
                    rows.value[use],
                    dims,
                )
            )
    for series in pieces.values():
        series.close()
    release_memory()
    return _PartSeries(pieces, stats, dropped_at_end)


def build_releases(
    raw_dir: str | os.PathLike,
    stays: pd.DataFrame,
    variables: list[Variable],
    spool_dir: str | os.PathLike,
    ihm_hours: int = 48,
    releases: tuple[str, ...] = RELEASES,
    threads: int = 1,
) -> dict[str, tuple[ReleaseSeries, pd.DataFrame, dict]]:
    """Build the hourly series of both releases from the bucketed raw events, in one pass.

    Reads ``raw_dir/events/part-*.parquet`` one batch of rows at a time (parts are by hadm_id,
    so every stay's events are in one part, and sorted by it, see :func:`_read_part`); the
    events are assigned to cohort stays and cleaned once (:func:`mimic_deid.pipeline.cleaning.clean_rows`). ``stays`` resamples every stay's cleaned
    events; ``ihm48`` keeps the stays with ``los_hours >= ihm_hours`` and, of their cleaned
    events, those with charttime in [INTIME, INTIME + ihm_hours) (half-open, so the series has
    at most ``ihm_hours`` hourly bins; events exactly at the end are counted in
    ``ihm_window.dropped_at_end``), and resamples them on their own grid, whose hour 0 is the
    first recording inside the window. Its cleaning counts are those of the window's rows.

    Args:
        raw_dir: the raw artefact directory (``results/private/raw``).
        stays: the cohort (``cohort/stays.parquet``).
        variables: all configured variables; the ``in_series`` ones are the dimensions.
        spool_dir: a private directory for the spooled series (the caller removes it after
            writing them).
        ihm_hours: the in-hospital-mortality observation window, hours.
        releases: the releases to build (a subset of :data:`RELEASES`).
        threads: worker processes over which the parts are spread (1: this process); the
            releases are the same whatever the number, since the parts' series are assembled
            in part order.

    Returns:
        ``{release: (series, meta, stats)}``: the :class:`ReleaseSeries` (the long table of
        :func:`_resample` over all stays with at least one recording, spooled; write it
        with :meth:`ReleaseSeries.write`); meta (icustay_id, subject_id, hadm_id,
        length, mortality; sorted by icustay_id; no split column, see
        :func:`mimic_deid.pipeline.split.add_splits`); cleaning counts per variable.
    """
    events_dir = Path(raw_dir) / "events"
    parts = _check_build(events_dir, stays, ihm_hours, releases)
    cohorts = {"stays": stays, "ihm48": stays[stays["los_hours"] >= ihm_hours]}
    for release in releases:
        log.info("%s: %d cohort stays eligible", release, len(cohorts[release]))
    dims = [v.name for v in series_variables(variables)]

    progress = Progress("event parts", len(parts), log, every_s=5.0, unit="parts")
    tasks = [
        functools.partial(
            _part_series, path, f"p{k:05d}", stays, variables, releases, ihm_hours, Path(spool_dir)
        )
        for k, path in enumerate(parts)
    ]
    done = map_tasks(
        tasks,
        threads=threads,
        costs=[path.stat().st_size for path in parts],
        on_done=lambda _: progress.update(),
    )
    progress.close()
    stats = {r: empty_stats(variables) for r in releases}
    pieces = {r: ReleaseSeries(Path(spool_dir), r, dims) for r in releases}
    dropped_at_end = 0
    for part in done:  # in part order, whatever order the workers finished in
        for release in releases:
            pieces[release].extend(part.series[release])
            stats[release] = merge_stats(stats[release], part.stats[release])
        dropped_at_end += part.dropped_at_end

    if "ihm48" in releases:
        stats["ihm48"]["ihm_window"] = {
            "rule": f"charttime in [INTIME, INTIME + {ihm_hours} h)",
            "dropped_at_end": dropped_at_end,
        }
    return {
        r: (pieces[r], _release_meta(pieces[r], r, cohorts[r], events_dir), stats[r])
        for r in releases
    }


def _check_build(
    events_dir: Path, stays: pd.DataFrame, ihm_hours: int, releases: tuple[str, ...]
) -> list[Path]:
    """The event parts of :func:`build_releases`, after its arguments are checked."""
    for release in releases:
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
    parts = sorted(events_dir.glob(EVENTS_GLOB))
    if not parts:
        raise InputDataError(f"{events_dir}: no {EVENTS_GLOB} files (run the extract step first)")
    return parts


def _release_meta(
    series: ReleaseSeries, release: str, cohort: pd.DataFrame, events_dir: Path
) -> pd.DataFrame:
    """The meta table of one release's series (:func:`release_meta`), logged."""
    ids, _, _, length = series.stays()
    if not len(ids):
        raise InputDataError(
            f"release '{release}': no cohort stay has a recording of a series variable "
            f"in {events_dir}"
        )
    meta = release_meta(ids, length, cohort)
    log.info(
        "%s: %d series, %d grid hours (median length %d h)",
        release,
        len(meta),
        int(length.sum()),
        int(np.median(meta["length"])),
    )
    return meta
