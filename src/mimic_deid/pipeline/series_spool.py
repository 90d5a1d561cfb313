"""The long table of one release's hourly series, spooled to disk while the series job reads
the event parts (:class:`ReleaseSeries`), and written to one Parquet file row group by row
group in bounded memory. The chain that fills it is
:func:`mimic_deid.pipeline.series.build_releases`."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mimic_deid.core import atomic
from mimic_deid.core.memory import release_memory
from mimic_deid.core.threads import read_ahead

__all__ = ["ROW_GROUP_ROWS", "SPOOL_BATCH_ROWS", "ReleaseSeries", "empty_long"]


def empty_long(dims: list[str]) -> pd.DataFrame:
    data = {"icustay_id": np.array([], dtype=np.int64), "hour": np.array([], dtype=np.int32)}
    data.update({d: np.array([], dtype=np.float64) for d in dims})
    return pd.DataFrame(data)


#: Rows per Parquet row group of a written series table (~18 MB in memory with 16 float64
#: dimensions): the writer holds one group, so the series job's memory stops growing with the
#: release above this size (pyarrow's default, 1,048,576 rows, held ~147 MB).
ROW_GROUP_ROWS = 131_072
#: Rows per record batch of a spooled piece (the unit read back when writing).
SPOOL_BATCH_ROWS = 65_536


class ReleaseSeries:
    """The hourly series of one release, spooled piece by piece to an Arrow IPC file.

    Each piece (the series of some stays, sorted by (icustay_id, hour)) is appended to the
    object's spool file in ``folder`` when added, as record batches of at most
    :data:`SPOOL_BATCH_ROWS` rows; only an index of (icustay_id, file, first row, length) per
    stay and the first row of every batch stay in memory. :meth:`close` ends the file;
    :meth:`extend` takes over the closed files of another object (e.g. one event part's,
    spooled by a worker process). :meth:`write` streams the release to Parquet sorted by
    (icustay_id, hour) holding about one row group, so memory does not grow with the release.

    Parameters
    ----------
    folder : a private directory for the spool files (removed by the caller).
    name : the spool file names' prefix (unique per object in ``folder``).
    dims : the series dimensions, in column order.
    """

    def __init__(self, folder: Path, name: str, dims: list[str]) -> None:
        self.folder, self.name, self.dims = Path(folder), name, list(dims)
        self.schema = pa.Schema.from_pandas(empty_long(self.dims), preserve_index=False)
        self.files: list[Path] = []
        self._index: list[tuple[np.ndarray, ...]] = []
        #: per file: the first row of each record batch, then the file's number of rows
        self._batch_starts: list[np.ndarray] = []
        self._sink: pa.NativeFile | None = None
        self._writer: pa.ipc.RecordBatchFileWriter | None = None
        self._starts: list[int] = [0]  # of the open file

    def add(self, piece: pd.DataFrame) -> None:
        """Spool one piece (the :func:`_resample` table of some stays)."""
        if piece.empty:
            return
        if self._writer is None:
            path = self.folder / f"{self.name}-{len(self.files):05d}.arrow"
            self._sink = pa.OSFile(str(path), "wb")
            self._writer = pa.ipc.new_file(self._sink, self.schema)
            self.files.append(path)
            self._starts = [0]
        ids, first, length = np.unique(
            piece["icustay_id"].to_numpy(dtype=np.int64), return_index=True, return_counts=True
        )
        file = np.full(len(ids), len(self.files) - 1)
        self._index.append((ids, file, first + self._starts[-1], length))
        table = pa.Table.from_pandas(piece, schema=self.schema, preserve_index=False)
        for batch in table.to_batches(max_chunksize=SPOOL_BATCH_ROWS):
            self._writer.write_batch(batch)
            self._starts.append(self._starts[-1] + batch.num_rows)

    def close(self) -> None:
        """Close the spool file being written (idempotent)."""
        if self._writer is None:
            return
        self._writer.close()
        self._sink.close()
        self._writer = self._sink = None
        self._batch_starts.append(np.asarray(self._starts, dtype=np.int64))

    def extend(self, other: ReleaseSeries) -> None:
        """Take over the spool files of ``other`` (closed; in the same folder) after this
        release's own."""
        if other._writer is not None:
            raise ValueError("ReleaseSeries.extend: close the other release's spool first")
        self.close()
        for ids, file, first, length in other._index:
            self._index.append((ids, file + len(self.files), first, length))
        self.files.extend(other.files)
        self._batch_starts.extend(other._batch_starts)

    def stays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(icustay_id sorted, spool file, first row in the file, length) of every series."""
        if not self._index:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty, empty
        ids, file, first, length = (np.concatenate(c) for c in zip(*self._index, strict=True))
        order = np.argsort(ids, kind="stable")
        return ids[order], file[order], first[order], length[order]

    @property
    def rows(self) -> int:
        return int(sum(int(i[3].sum()) for i in self._index))

    def frame(self) -> pd.DataFrame:
        """The whole release as one DataFrame sorted by (icustay_id, hour) (small releases)."""
        tables = list(self.row_groups(ROW_GROUP_ROWS))
        if not tables:
            return empty_long(self.dims)
        return pa.concat_tables(tables).to_pandas()

    def _column_runs(
        self, k: int, field: int, runs: list[tuple[int, int]], stack: contextlib.ExitStack
    ) -> list[pa.Array]:
        """Rows ``[lo, hi)`` of column ``field`` of spool file ``k``, for each run in ``runs``,
        as array chunks: zero-copy views of the memory-mapped file (valid until ``stack``
        closes; other columns unread)."""
        source = stack.enter_context(pa.memory_map(str(self.files[k])))
        reader = pa.ipc.open_file(source, options=pa.ipc.IpcReadOptions(included_fields=[field]))
        starts = self._batch_starts[k]
        chunks: list[pa.Array] = []
        for lo, hi in runs:
            b0 = int(np.searchsorted(starts, lo, side="right")) - 1
            b1 = int(np.searchsorted(starts, hi - 1, side="right")) - 1
            column = pa.chunked_array(
                [reader.get_batch(b).column(0) for b in range(b0, b1 + 1)],
                type=self.schema.field(field).type,
            )
            chunks.extend(column.slice(lo - int(starts[b0]), hi - lo).chunks)
        return chunks

    def row_groups(self, rows: int) -> Iterator[pa.Table]:
        """The release in (icustay_id, hour) order, as tables of ``rows`` rows (the last one
        shorter), each a single contiguous chunk per column.

        Built column by column from the spool files: memory holds the table being built plus
        one column of its rows being gathered, whatever the size of the release.
        """
        self.close()
        ids, file, first, length = self.stays()
        ends = np.cumsum(length)
        starts = ends - length
        total = int(ends[-1]) if len(ends) else 0
        for g0 in range(0, total, rows):
            g1 = min(g0 + rows, total)
            i = int(np.searchsorted(ends, g0, side="right"))
            j = int(np.searchsorted(starts, g1, side="left"))
            # rows [a, b) of each stay i..j-1 fall into this table (the first and last stays
            # may be cut); in its file they are rows [lo, hi) = [first + a, first + b)
            a = np.maximum(g0 - starts[i:j], 0)
            b = np.minimum(g1 - starts[i:j], length[i:j])
            f, lo, hi = file[i:j], first[i:j] + a, first[i:j] + b
            # runs: the stays' row ranges in file order, adjacent ranges of a file merged (a
            # piece's stays of an id range are adjacent in it)
            order = np.lexsort((lo, f))
            f_s, lo_s, hi_s = f[order], lo[order], hi[order]
            new_run = np.ones(len(order), dtype=bool)
            new_run[1:] = (f_s[1:] != f_s[:-1]) | (lo_s[1:] != hi_s[:-1])
            run_of = np.cumsum(new_run) - 1
            heads = np.flatnonzero(new_run)
            run_file, run_lo = f_s[heads], lo_s[heads]
            run_hi = np.maximum.reduceat(hi_s, heads)
            run_size = run_hi - run_lo
            run_at = np.cumsum(run_size) - run_size  # where each run starts once concatenated
            # positions, in the concatenated runs, of the rows in id order
            at = np.empty(len(order), dtype=np.int64)
            at[order] = run_at[run_of] + (lo_s - run_lo[run_of])
            n = b - a
            take = pa.array(np.repeat(at - (np.cumsum(n) - n), n) + np.arange(int(n.sum())))
            by_file = [
                (int(k), [(int(x), int(y)) for x, y in zip(run_lo[m], run_hi[m], strict=True)])
                for k in np.unique(run_file)
                for m in [run_file == k]
            ]
            columns = []
            for field in range(len(self.schema)):
                # one column at a time: the files are mapped only while it is gathered, so
                # memory holds the table being built plus about one column
                with contextlib.ExitStack() as stack:
                    chunks = [
                        c for k, runs in by_file for c in self._column_runs(k, field, runs, stack)
                    ]
                    columns.append(pa.concat_arrays(chunks).take(take))
                    del chunks
            yield pa.Table.from_arrays(columns, schema=self.schema)

    def write(self, path: str | os.PathLike) -> None:
        """Write the release to Parquet atomically, sorted by (icustay_id, hour), streamed in
        row groups of :data:`ROW_GROUP_ROWS`: the next row group is gathered
        (:meth:`row_groups`) in a second thread while one is encoded and compressed, so memory
        holds about two row groups."""
        with (
            atomic.atomic_path(path, ".parquet") as tmp,
            pq.ParquetWriter(tmp, self.schema, compression=atomic.PARQUET_COMPRESSION) as writer,
        ):
            for table in read_ahead(self.row_groups(ROW_GROUP_ROWS)):
                writer.write_table(table)
                del table
                release_memory()


#: The columns of an event part that the series stage reads.
