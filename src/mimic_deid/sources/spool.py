"""The extraction's bucket spool: filtered event batches spooled to temporary Arrow IPC files
while the source streams (one file per bucket and ``hadm_id`` range, :func:`spool_bounds`),
then each file loaded, sorted by :data:`~mimic_deid.sources.tables.EVENT_SORT_KEYS`, its exact
duplicate rows dropped and counted, and written as row groups of its part
(:func:`write_parts`). The driver is :func:`mimic_deid.sources.extract.extract_raw`."""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mimic_deid.core import atomic
from mimic_deid.core.errors import ConfigError
from mimic_deid.core.logs import Progress, get_logger
from mimic_deid.sources import tables

__all__ = [
    "BucketSpool",
    "SORT_ROWS",
    "SPOOL_ADMISSIONS",
    "SPOOL_COMPRESSION",
    "allow_open_files",
    "hadm_ranges",
    "sort_unique_events",
    "sorted_file",
    "spool_bounds",
    "write_parts",
]

log = get_logger(__name__)

SPOOL_COMPRESSION = "lz4"
#: Admissions per bucket in one spool file (a ``hadm_id`` range, :func:`spool_bounds`): the
#: unit sorted at once, ~180,000 event rows on the synthetic data, so the memory of the final
#: stage is the same whatever the number of admissions.
SPOOL_ADMISSIONS = 128
#: Most rows sorted at once (~250 bytes each while sorting): a spool file larger than this (a
#: range of unusually long admissions) is sorted in ``hadm_id`` sub-ranges, each re-reading the
#: file (benchmarks/README.md, "Extraction chain": re-reading a whole bucket per range made
#: ``extract`` 1.7x slower, hence ranges fixed while spooling).
SORT_ROWS = 1_000_000


# --------------------------------------------------------------------------- bucket spool


def spool_bounds(hadm_id: np.ndarray, buckets: int, per_file: int) -> np.ndarray:
    """The ``hadm_id`` values that start a new spool range: every ``buckets * per_file``-th of
    the sorted distinct ``hadm_id`` (int64 (n,), e.g. ADMISSIONS), after the first.

    Buckets take ``hadm_id % buckets``, so a range holds about ``per_file`` admissions of each
    bucket. Depends only on the admissions, so every source and chunk size gives the same
    ranges (hence the same part files).
    """
    values = np.unique(np.asarray(hadm_id, dtype=np.int64))
    return values[buckets * per_file :: buckets * per_file]


def allow_open_files(n: int) -> None:
    """Let this process keep ``n`` spool files open at once (plus a margin of 256): raise its
    soft limit on open files up to the hard limit, or stop with a :class:`ConfigError` when
    even that is too low."""
    import resource

    want = n + 256
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= want:
        return
    if hard != resource.RLIM_INFINITY and hard < want:
        raise ConfigError(
            f"the extraction spools events to {n} files at once (config parameter "
            f"'source/event_buckets' x hadm_id ranges of {SPOOL_ADMISSIONS} admissions each), "
            f"but this process may open at most {hard} files; lower source/event_buckets or "
            "raise the limit (ulimit -n)"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


class BucketSpool:
    """Temporary Arrow IPC files per bucket and ``hadm_id`` range; buffers rows and flushes
    them as record batches.

    File ``(b, r)`` holds the rows with ``hadm_id % buckets == b`` and ``hadm_id`` in range
    ``r`` (``bounds[r - 1] <= hadm_id < bounds[r]``), so a bucket's sorted rows are its files'
    sorted rows one range after the other. Arrow IPC (LZ4-compressed buffers) rather than
    Parquet: the spool is written once and read once, so the cheapest encoding wins (no
    dictionary or page encoding, no statistics). Memory: at most ``flush_rows`` buffered rows in
    total, plus as many being written by the writing thread (plus one batch per writer).

    Parameters
    ----------
    folder : the private directory of the spool files.
    buckets : the number of buckets (part files).
    flush_rows : rows buffered before they are written.
    bounds : int64 (R - 1,), sorted: the ``hadm_id`` values starting ranges 1 .. R - 1
        (:func:`spool_bounds`); empty: one range.
    """

    def __init__(
        self, folder: Path, buckets: int, flush_rows: int, bounds: np.ndarray | None = None
    ) -> None:
        self.folder = folder
        self.buckets = buckets
        self.flush_rows = flush_rows
        self.bounds = np.zeros(0, dtype=np.int64) if bounds is None else np.asarray(bounds)
        self.ranges = len(self.bounds) + 1
        n_files = buckets * self.ranges
        allow_open_files(n_files)
        self.buffers: list[list[pa.Table]] = [[] for _ in range(n_files)]
        self.buffered = 0
        self.rows = np.zeros(n_files, dtype=np.int64)
        self.writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}
        # the buffered rows are written in a second thread while the next ones are buffered
        self._flusher = ThreadPoolExecutor(max_workers=1)
        self._flushing: Future | None = None
        folder.mkdir(parents=True, exist_ok=True)

    def files(self, b: int) -> range:
        """The spool files of bucket ``b``, in ``hadm_id`` order."""
        return range(b * self.ranges, (b + 1) * self.ranges)

    def path(self, f: int) -> Path:
        return self.folder / f"spool-{f:06d}.arrow"

    def add(self, tab: pa.Table) -> None:
        """Split ``tab`` (EVENT_SCHEMA, hadm_id non-null) by spool file and buffer it."""
        if not tab.num_rows:
            return
        if len(self.buffers) == 1:
            self.buffers[0].append(tab)
            self.rows[0] += tab.num_rows
            sizes = np.array([])
        else:
            hadm = tab.column("hadm_id").to_numpy()
            key = np.remainder(hadm, self.buckets) * self.ranges
            if len(self.bounds):
                key += np.searchsorted(self.bounds, hadm, side="right")
            # as uint16 NumPy's stable sort is a radix sort (6x faster than on int64)
            small = len(self.buffers) <= 1 << 16
            order = np.argsort(key.astype(np.uint16) if small else key, kind="stable")
            sizes = np.bincount(key, minlength=len(self.buffers))
            grouped = tab.take(pa.array(order))
            self.rows += sizes
        start = 0
        for f in np.flatnonzero(sizes):
            n = int(sizes[f])
            self.buffers[f].append(grouped.slice(start, n))
            start += n
        self.buffered += tab.num_rows
        if self.buffered >= self.flush_rows:
            self.flush()

    def flush(self) -> None:
        """Hand the buffered rows to the writing thread (after the previous flush is written,
        so memory holds at most two flushes' rows) and start buffering anew."""
        work = [(f, parts) for f, parts in enumerate(self.buffers) if parts]
        self.buffers = [[] for _ in self.buffers]
        self.buffered = 0
        self._wait()
        if work:
            self._flushing = self._flusher.submit(self._write, work)

    def _write(self, work: list[tuple[int, list[pa.Table]]]) -> None:
        for f, parts in work:
            if f not in self.writers:
                self.writers[f] = pa.ipc.new_file(
                    self.path(f),
                    tables.EVENT_SCHEMA,
                    options=pa.ipc.IpcWriteOptions(compression=SPOOL_COMPRESSION),
                )
            self.writers[f].write_table(pa.concat_tables(parts))

    def _wait(self) -> None:
        """Wait for the flush being written; its error, if any, is raised here."""
        flushing, self._flushing = self._flushing, None
        if flushing is not None:
            flushing.result()

    def close(self) -> None:
        """Flush the buffers and close the spool files (they stay readable)."""
        self.flush()
        self._wait()
        for writer in self.writers.values():
            writer.close()
        self.writers.clear()
        self._flusher.shutdown()

    def discard(self) -> None:
        """Drop the buffers and close the files without writing (after a failure); idempotent."""
        self.buffers = [[] for _ in self.buffers]
        self.buffered = 0
        with contextlib.suppress(Exception):  # the original error is what the user sees
            self._wait()
        self._flusher.shutdown()
        for writer in self.writers.values():
            with contextlib.suppress(Exception):
                writer.close()
        self.writers.clear()

    def _batches(self, f: int, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        fields = None
        if columns is not None:
            fields = [tables.EVENT_SCHEMA.get_field_index(c) for c in columns]
        options = pa.ipc.IpcReadOptions(included_fields=fields)
        with pa.memory_map(str(self.path(f))) as source:
            reader = pa.ipc.open_file(source, options=options)
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)

    def read(self, f: int, hadm_range: tuple[int, int] | None = None) -> pa.Table:
        """Rows spooled in file ``f`` (empty table if none), optionally only those with
        ``lo <= hadm_id <= hi`` (one batch at a time, so memory holds the range only)."""
        if not self.path(f).exists():
            return tables.EVENT_SCHEMA.empty_table()
        parts = []
        for batch in self._batches(f):
            if hadm_range is not None:
                hadm = batch.column("hadm_id")
                keep = pc.and_(
                    pc.greater_equal(hadm, hadm_range[0]), pc.less_equal(hadm, hadm_range[1])
                )
                batch = batch.filter(keep)
            parts.append(batch)
        return pa.Table.from_batches(parts, schema=tables.EVENT_SCHEMA)

    def hadm_ids(self, f: int) -> np.ndarray:
        """The ``hadm_id`` of every row spooled in file ``f`` (int64, 8 bytes per row)."""
        if not self.path(f).exists():
            return np.zeros(0, dtype=np.int64)
        cols = [batch.column(0).to_numpy() for batch in self._batches(f, ["hadm_id"])]
        return np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)


def _duplicate_rows(tab: pa.Table, order: pa.Array | None = None) -> np.ndarray:
    """Mask over the rows of ``tab`` taken in ``order`` (``None``: as they are): True where a
    row equals the previous one in every column (nulls equal to nulls).

    Columns are compared in sort-key order, each only on the row pairs still equal in the
    columns before it (few after the first keys), so the text columns are compared on
    candidate duplicates only, and only one column is taken in ``order`` at a time.
    """
    n = tab.num_rows
    dup = np.zeros(n, dtype=bool)
    if n < 2:
        return dup
    keys = [c for c in tables.EVENT_SORT_KEYS if c in tab.column_names]
    names = keys + [c for c in tab.column_names if c not in keys]
    pairs = None  # indices i of the pairs (i, i + 1) still equal; None = all of them
    for name in names:
        col = tab.column(name)
        if pairs is None:
            col = col if order is None else col.take(order)
            a, b = col.slice(1), col.slice(0, n - 1)
        else:
            rows = pa.array(pairs) if order is None else order.take(pa.array(pairs))
            after = pa.array(pairs + 1) if order is None else order.take(pa.array(pairs + 1))
            a, b = col.take(after), col.take(rows)
        eq = pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False)
        both_null = pc.and_(pc.is_null(a), pc.is_null(b)).to_numpy(zero_copy_only=False)
        same = eq | both_null
        pairs = np.flatnonzero(same) if pairs is None else pairs[same]
        if not len(pairs):
            return dup
    dup[pairs + 1] = True
    return dup


def _count_dropped(table_column: pa.ChunkedArray | pa.Array) -> dict[str, int]:
    names, counts = np.unique(table_column.to_numpy(zero_copy_only=False), return_counts=True)
    return dict(zip(names.tolist(), counts.tolist(), strict=True))


def sort_unique_events(tab: pa.Table) -> tuple[pa.Table, dict[str, int]]:
    """The events sorted by :data:`~mimic_deid.sources.tables.EVENT_SORT_KEYS` without their
    exact duplicate rows, and the rows dropped per table; with one copy of the rows: the sort
    order and the duplicates are found on the unsorted table, and only the rows kept are
    taken, in order, into one contiguous chunk per column."""
    if not tab.num_rows:
        return tab.combine_chunks(), {}
    order = pc.sort_indices(tab, sort_keys=[(k, "ascending") for k in tables.EVENT_SORT_KEYS])
    dup = _duplicate_rows(tab, order)
    dropped = {}
    if dup.any():
        dropped = _count_dropped(tab.column("table").take(order.filter(pa.array(dup))))
        order = order.filter(pa.array(~dup))
    # column by column: a chunked column is concatenated before it is taken, so memory holds
    # the rows read, the rows kept and one column in passing
    columns = [pa.concat_arrays(tab.column(i).take(order).chunks) for i in range(tab.num_columns)]
    return pa.Table.from_arrays(columns, schema=tab.schema), dropped


def hadm_ranges(hadm: np.ndarray, max_rows: int) -> list[tuple[int, int]]:
    """Cut the sorted distinct ``hadm`` values into consecutive inclusive ``(lo, hi)`` ranges
    holding at most ``max_rows`` rows each (a single admission larger than that gets its own
    range). Depends only on the data, so every source gives the same ranges.
    """
    values, counts = np.unique(hadm, return_counts=True)
    ranges: list[tuple[int, int]] = []
    start, rows = 0, 0
    for i, n in enumerate(counts.tolist()):
        if rows and rows + n > max_rows:
            ranges.append((int(values[start]), int(values[i - 1])))
            start, rows = i, 0
        rows += n
    if len(values):
        ranges.append((int(values[start]), int(values[-1])))
    return ranges


def sorted_file(spool: BucketSpool, f: int, sort_rows: int) -> tuple[list[pa.Table], dict]:
    """The rows of spool file ``f`` sorted and without exact duplicates, as tables in order
    (one, or one per ``hadm_id`` sub-range when the file holds over ``sort_rows`` rows: the sort
    key starts with ``hadm_id``, so duplicates never straddle two sub-ranges), and the rows
    dropped per event table."""
    ranges = [None] if spool.rows[f] <= sort_rows else hadm_ranges(spool.hadm_ids(f), sort_rows)
    out, dropped = [], {}
    for hadm_range in ranges:
        tab, d = sort_unique_events(spool.read(f, hadm_range))
        out.append(tab)
        for name, n in d.items():
            dropped[name] = dropped.get(name, 0) + n
    return out, dropped


def write_parts(
    spool: BucketSpool, folder: Path, sort_rows: int, workers: int = 1
) -> dict[str, int]:
    """Write every bucket of the closed ``spool`` to ``folder/part-NNN.parquet``, sorted and
    without exact duplicates, each spool file a row group (or several, :func:`sorted_file`).

    ``workers`` threads sort files ahead of the writer (Arrow's kernels release the GIL); the
    parts are written in order, one at a time, so the files are the same whatever ``workers``
    is, and memory holds at most ``workers + 1`` sorted files. Returns the duplicate rows
    dropped per event table. Spool files are removed once written.
    """
    duplicates: dict[str, int] = {}
    files = (f for b in range(spool.buckets) for f in spool.files(b) if spool.rows[f])
    progress = Progress("sorting parts", int(spool.rows.sum()), log, every_s=5.0, unit="rows")
    with ThreadPoolExecutor(max_workers=max(workers, 1)) as pool:
        pending: deque = deque()

        def submit() -> None:
            f = next(files, None)
            if f is not None:
                pending.append((f, pool.submit(sorted_file, spool, f, sort_rows)))

        for _ in range(max(workers, 1) + 1):
            submit()
        for b in range(spool.buckets):
            dest = folder / f"part-{b:03d}.parquet"
            with (
                atomic.atomic_path(dest, ".parquet") as tmp,
                pq.ParquetWriter(
                    tmp, tables.EVENT_SCHEMA, compression=atomic.PARQUET_COMPRESSION
                ) as writer,
            ):
                while pending and pending[0][0] in spool.files(b):
                    f, future = pending.popleft()
                    tabs, dropped = future.result()
                    submit()
                    for tab in tabs:
                        writer.write_table(tab)
                    progress.update(int(spool.rows[f]))
                    for name, n in dropped.items():
                        duplicates[name] = duplicates.get(name, 0) + n
                    del tabs
                    spool.path(f).unlink(missing_ok=True)
    progress.close()
    return duplicates
