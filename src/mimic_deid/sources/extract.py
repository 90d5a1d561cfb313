"""The extraction driver: from a source (CSV or PostgreSQL) to the raw artefacts.

Writes, atomically (a temporary directory renamed onto ``out_dir``)::

    icustays.parquet  admissions.parquet  patients.parquet
    events/part-000.parquet ... part-{B-1}.parquet   (bucket b = hadm_id % B)
    extract.json

The key columns of the small tables are checked where they enter (``check_keys``: non-null and
unique where MIMIC-III says so). Event rows are kept when their itemid is configured, ERROR is
not 1 and HADM_ID is present; an event table with no row of the configured item ids is an error
unless it is listed as intentionally empty. Each part is sorted by
:data:`tables.EVENT_SORT_KEYS`, and exact duplicate rows (equal in every column, which the
sort makes adjacent) are dropped and counted per table (``dropped_duplicate``), so the files
are byte-identical for the same data whatever the source or chunk size.

Memory is bounded and flat: filtered batches are spooled to temporary Arrow IPC files while the
source streams, one file per bucket and ``hadm_id`` range (:func:`spool_bounds`: ranges of
about :data:`SPOOL_ADMISSIONS` admissions per bucket, cut from ADMISSIONS, which is read
first), and each file is loaded, sorted and written at the end as one row group of its part
(a file over :data:`SORT_ROWS` rows in ``hadm_id`` sub-ranges), on the job's threads (Arrow's
CPU pool size), in order. Peak memory is therefore about two source blocks (one is read
ahead, :func:`mimic_deid.core.threads.read_ahead`) plus ``max(chunk_rows, 100k)`` buffered rows
(twice: one flush is being written while the next is buffered) plus a few spool files being
sorted, independent of the table size.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from mimic_deid.core import atomic
from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.core.logs import Progress, get_logger
from mimic_deid.core.threads import read_ahead
from mimic_deid.sources import tables
from mimic_deid.sources.spool import (
    SORT_ROWS,
    SPOOL_ADMISSIONS,
    BucketSpool,
    spool_bounds,
    write_parts,
)

log = get_logger(__name__)

SMALL_ORDER = ("icustays", "admissions", "patients")
EVENT_ORDER = ("chartevents", "labevents")
#: The MIMIC-III file stems the raw extraction reads: every stage that needs the cohort or
#: the hourly series reads them.
EXTRACTION_TABLES: tuple[str, ...] = tuple(t.upper() for t in (*SMALL_ORDER, *EVENT_ORDER))


class Reader(Protocol):
    """What ``extract_raw`` needs from a source (``CsvSource``, ``PostgresSource``); the
    start-up table check (``mimic_deid.stages.check_source_tables``) uses ``describe``,
    ``missing_tables``, ``none_found_advice`` and ``check_table``."""

    def read_table(self, name: str) -> pd.DataFrame: ...

    def describe(self) -> str: ...

    def missing_tables(self, stems: Iterable[str]) -> list[str]: ...

    def none_found_advice(self, stems: Iterable[str]) -> str: ...

    def check_table(self, spec: tables.TableSpec, sample_rows: int = 0) -> None: ...

    def iter_events(
        self, table: str, itemids: Iterable[int], chunk_rows: int, stats: dict | None = None
    ) -> Iterator[pa.RecordBatch | pa.Table]: ...


# --------------------------------------------------------------------------- small tables

#: Most offending rows a key error shows.
EXAMPLES = 5


def check_keys(table: pa.Table, spec: tables.TableSpec, source: str) -> None:
    """Raise :class:`InputDataError` unless ``spec``'s key columns are non-null and unique.

    The message names the source, table and column, the offending count and the first
    1-based data rows (the rows missing a key; the rows repeating an earlier row's key), never
    a value: keys are identifiers.
    """
    for col in spec.not_null:
        missing = np.flatnonzero(table.column(col).is_null().to_numpy(zero_copy_only=False))
        if len(missing):
            rows = ", ".join(str(i + 1) for i in missing[:EXAMPLES])
            raise InputDataError(
                f"{source}: table {spec.name}: column {col} must not be empty (a MIMIC-III key); "
                f"{len(missing)} row(s) have no value (first data rows: {rows})"
            )
    for col in spec.unique:
        values = table.column(col).to_numpy()
        _, first, inverse, counts = np.unique(
            values, return_index=True, return_inverse=True, return_counts=True
        )
        if (counts > 1).any():
            # rows repeating an earlier row's value, named by row: a key is an identifier
            again = np.flatnonzero(np.arange(len(values)) != first[inverse])
            rows = ", ".join(str(i + 1) for i in again[:EXAMPLES])
            raise InputDataError(
                f"{source}: table {spec.name}: column {col} must be unique (a MIMIC-III key); "
                f"{int((counts > 1).sum())} value(s) occur more than once (first data rows "
                f"repeating an earlier row's value: {rows})"
            )


def small_table_to_arrow(df: pd.DataFrame, spec: tables.TableSpec, source: str) -> pa.Table:
    """Select and type the spec columns of a small table and sort it (deterministic order)."""
    missing = [c for c in spec.column_names if c not in df.columns]
    if missing:
        raise InputDataError(f"{source}: table {spec.name}: missing columns {missing}")
    try:
        table = pa.Table.from_pandas(
            df[spec.column_names], schema=spec.schema, preserve_index=False
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # Arrow's text quotes the value: not shown
        raise InputDataError(
            f"{source}: table {spec.name}: columns do not have the expected types "
            f"{dict(zip(spec.column_names, map(str, spec.schema.types), strict=True))}"
        ) from None
    table = table.replace_schema_metadata(None)
    check_keys(table, spec, source)
    if spec.sort_by:
        table = table.sort_by([(k, "ascending") for k in spec.sort_by])
    return table.combine_chunks()


def read_small_table(reader: Reader, name: str) -> pa.Table:
    """Table ``name`` read whole through ``reader``, as :func:`small_table_to_arrow` types,
    key-checks and sorts it (the raw extraction's small tables and the comparator stages')."""
    spec = tables.get_small_spec(name)
    return small_table_to_arrow(reader.read_table(name), spec, repr(reader))


# --------------------------------------------------------------------------- event filtering


def normalise_batch(batch: pa.RecordBatch | pa.Table, source: str, table: str) -> pa.Table:
    """Check/cast a source batch to :data:`tables.SOURCE_EVENT_SCHEMA` (as a Table)."""
    tab = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    schema = tables.SOURCE_EVENT_SCHEMA
    if tab.schema.names != schema.names:
        missing = [n for n in schema.names if n not in tab.schema.names]
        if missing:
            raise InputDataError(f"{source}: {table} batch lacks columns {missing}")
        tab = tab.select(schema.names)
    if not tab.schema.equals(schema):
        try:
            tab = tab.cast(schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # Arrow's text quotes values
            raise InputDataError(
                f"{source}: {table}: cannot cast batch to {schema} (columns "
                f"{dict(zip(tab.schema.names, map(str, tab.schema.types), strict=True))})"
            ) from None
    return tab


def filter_events(tab: pa.Table, table: str, itemids: pa.Array, counts: dict[str, int]) -> pa.Table:
    """Apply the row rules and add the ``table`` column; update ``counts`` in place.

    Order of the rules (each row is counted once): other itemid, ERROR = 1, no HADM_ID.
    Returns a table with :data:`tables.EVENT_SCHEMA`.
    """
    n0 = tab.num_rows
    wanted = pc.is_in(tab.column("itemid"), value_set=itemids)
    error = pc.and_(wanted, pc.fill_null(pc.equal(tab.column("error"), 1), False))
    no_hadm = pc.and_(pc.and_not(wanted, error), pc.is_null(tab.column("hadm_id")))
    keep = pc.and_not(pc.and_not(wanted, error), no_hadm)
    n_wanted = pc.sum(wanted).as_py() or 0
    n_error = pc.sum(error).as_py() or 0
    n_no_hadm = pc.sum(no_hadm).as_py() or 0
    n3 = n_wanted - n_error - n_no_hadm
    if n3 != n0:  # one copy at most
        tab = tab.filter(keep)
    counts["dropped_other_itemid_after_source"] += n0 - n_wanted
    counts["dropped_error"] += n_error
    counts["dropped_no_hadm_id"] += n_no_hadm
    counts["kept"] += n3
    out = tab.drop_columns(["error"]).add_column(
        0, pa.field("table", pa.string()), pa.repeat(pa.scalar(table, pa.string()), n3)
    )
    return out.select(tables.EVENT_SCHEMA.names).cast(tables.EVENT_SCHEMA)


# --------------------------------------------------------------------------- driver


def _check_params(itemids: Iterable[int], event_buckets: int, chunk_rows: int) -> pa.Array:
    raw = list(set(itemids))
    if not raw or not all(isinstance(i, int | np.integer) and not isinstance(i, bool) for i in raw):
        raise ConfigError(
            "itemids (the item ids of the series variables): expected a non-empty set of "
            f"integers, got {raw[:10]!r}"
        )
    ids = sorted(int(i) for i in raw)
    if not isinstance(event_buckets, int) or not 1 <= event_buckets <= 1024:
        raise ConfigError(
            "config parameter 'source/event_buckets': expected an integer in [1, 1024], "
            f"got {event_buckets!r}"
        )
    if not isinstance(chunk_rows, int) or chunk_rows < 1:
        raise ConfigError(
            f"config parameter 'source/chunk_rows': expected a positive integer, got {chunk_rows!r}"
        )
    return pa.array(np.asarray(ids, dtype=np.int64))


def _check_empty_tables(empty_tables: Iterable[str]) -> frozenset[str]:
    names = frozenset(str(t).lower() for t in empty_tables)
    unknown = sorted(names - set(EVENT_ORDER))
    if unknown:
        raise ConfigError(
            f"config parameter 'source/empty_tables': unknown event table(s) {unknown}; "
            f"expected some of {list(EVENT_ORDER)}"
        )
    return names


def _extract_events(
    reader: Reader,
    name: str,
    ids: pa.Array,
    chunk_rows: int,
    spool: BucketSpool,
) -> dict[str, Any]:
    """Stream one event table into the spool; return its counts."""
    counts = dict.fromkeys(
        ("dropped_other_itemid_after_source", "dropped_error", "dropped_no_hadm_id", "kept"), 0
    )
    stats: dict[str, Any] = {}
    received = 0
    progress = Progress(f"{name}", None, log, every_s=5.0, unit="rows")
    source = repr(reader)
    for batch in read_ahead(reader.iter_events(name, ids.to_pylist(), chunk_rows, stats=stats)):
        tab = normalise_batch(batch, source, name)
        received += tab.num_rows
        spool.add(filter_events(tab, name, ids, counts))
        read_now = stats.get("rows_read") or received
        progress.update(read_now - progress.done)
    read_total = stats.get("rows_read", received)
    progress.update((read_total or received) - progress.done)
    progress.close()
    source_other = stats.get("dropped_other_itemid")
    other = (
        None if source_other is None else source_other + counts["dropped_other_itemid_after_source"]
    )
    return {
        "rows_read": read_total,
        "rows_matching_itemids": received - counts["dropped_other_itemid_after_source"],
        "dropped_other_itemid": other,
        "dropped_error": counts["dropped_error"],
        "dropped_no_hadm_id": counts["dropped_no_hadm_id"],
        "kept": counts["kept"],
        "itemid_filter": stats.get("itemid_filter", "reader"),
    }


def extract_raw(
    reader: Reader,
    out_dir: str | os.PathLike,
    itemids: set[int],
    event_buckets: int,
    chunk_rows: int,
    empty_tables: Iterable[str] = (),
) -> dict:
    """Extract the raw artefacts of ``reader`` into ``out_dir`` (see module docstring).

    Parameters
    ----------
    reader:
        A ``CsvSource`` or ``PostgresSource`` (anything with ``read_table`` / ``iter_events``).
    out_dir:
        The ``results/private/raw`` directory; replaced atomically on success.
    itemids:
        Configured item ids (CHARTEVENTS and LABEVENTS ids together).
    event_buckets:
        Number of ``events/part-NNN.parquet`` files (bucket = hadm_id % event_buckets).
    chunk_rows:
        Rows per streamed chunk (memory knob).
    empty_tables:
        Event tables (``chartevents``, ``labevents``) that may hold no row of the configured
        item ids; any other event table without one is an :class:`InputDataError`.

    Returns the counts written to ``extract.json``: per table rows read / kept / dropped.
    ``rows_read`` and ``dropped_other_itemid`` are null when the source filtered item ids
    itself (PostgreSQL: the database reads only the matching partitions); ``kept`` counts the
    rows written, after ``dropped_duplicate`` exact duplicates.
    """
    ids = _check_params(itemids, event_buckets, chunk_rows)
    allowed_empty = _check_empty_tables(empty_tables)
    t0 = time.monotonic()
    summary: dict[str, Any] = {"event_buckets": event_buckets, "itemids": len(ids), "tables": {}}
    with atomic.atomic_dir(out_dir) as tmp:
        for name in SMALL_ORDER:
            table = read_small_table(reader, name)
            atomic.write_table(table, tmp / f"{name}.parquet")
            summary["tables"][name] = {"rows": table.num_rows}
            if name == "admissions":
                admissions_hadm = table.column("hadm_id").to_numpy()
            log.info(f"{name}: {table.num_rows:,} rows")

        spool_dir = tmp / ".spool"
        spool = BucketSpool(
            spool_dir,
            event_buckets,
            flush_rows=max(chunk_rows, 100_000),
            bounds=spool_bounds(admissions_hadm, event_buckets, SPOOL_ADMISSIONS),
        )
        try:
            for name in EVENT_ORDER:
                counts = _extract_events(reader, name, ids, chunk_rows, spool)
                if counts["rows_matching_itemids"] == 0 and name not in allowed_empty:
                    raise InputDataError(
                        f"{reader!r}: table {name}: no row with a configured item id (the table "
                        "is empty or holds none of them); expected the events of the series "
                        "variables. If the table is intentionally absent, list it in "
                        "source.empty_tables"
                    )
                summary["tables"][name] = counts
            spool.close()
            (tmp / "events").mkdir()
            duplicates = write_parts(spool, tmp / "events", SORT_ROWS, pa.cpu_count())
            for name in EVENT_ORDER:
                n = duplicates.get(name, 0)
                summary["tables"][name]["dropped_duplicate"] = n
                summary["tables"][name]["kept"] -= n
                if n:
                    log.warning(f"{name}: {n:,} exact duplicate rows dropped (counted)")
        finally:
            spool.discard()
            shutil.rmtree(spool_dir, ignore_errors=True)
        atomic.write_json(summary, tmp / "extract.json")
    kept = sum(summary["tables"][n]["kept"] for n in EVENT_ORDER)
    log.info(f"extraction done: {kept:,} event rows kept in {time.monotonic() - t0:.1f}s")
    return summary
