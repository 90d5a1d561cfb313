"""Stream the official MIMIC-III CSV(.gz) files into typed Arrow batches.

The parsing here (:func:`parse_csv_stream`) is shared with the PostgreSQL source, which feeds it
the output of ``COPY (SELECT ...) TO STDOUT WITH CSV HEADER``, so that both sources give exactly
the same Arrow types and values.

CSV conventions handled: ``.csv`` or ``.csv.gz`` (gzip detected by its magic bytes; both
present is an error naming the two files), header case and quoting ignored (the full database has upper-case,
double-quoted headers; the public demo has lower-case ones), an empty field is null (quoted or
not), the literal strings ``NULL``/``NA`` are kept as text.

Inflating: the table streams are inflated with ISA-L (``isal.igzip``, the python-isal
bindings of Intel's ISA-L: a maintained, zlib-compatible inflater that takes about a third
of zlib's CPU on these files), on a thread of its own when the job has more than one
(``igzip_threaded``; the job's threads are Arrow's CPU pool, set by
:func:`mimic_deid.core.threads.limit_threads`), so that Arrow's parsing threads no longer wait
for one zlib inflate (issue 47). Without python-isal, Arrow's own zlib inflate as before. The
bytes, and so the batches' rows, are the same either way. A parallel inflater of one stream
(rapidgzip) was measured and not taken: on two cores it used 2.9x zlib's CPU for the same
bytes (speculative decoding), where ISA-L's one thread uses 0.36x. Errors keep their wording:
a damaged file is inflated again with Arrow's zlib to name the damage as before.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from mimic_deid.core.errors import InputDataError
from mimic_deid.core.logs import get_logger
from mimic_deid.sources import tables
from mimic_deid.sources.csv_files import (
    decompress_error,
    find_table_file,
    folders_holding,
    gzip_damage,
    is_decompress_error,
    is_gzip,
    map_columns,
    missing_table_files,
    open_input,
    open_table_stream,
    read_head,
    table_files,
)

log = get_logger(__name__)

MIN_BLOCK_BYTES = 1 << 16
MAX_BLOCK_BYTES = 1 << 22  # larger blocks: slower (cache) and more read-ahead memory


# --------------------------------------------------------------------------- parsing

_CONVERSION_RE = re.compile(
    r"In CSV column #(?P<col>\d+): (?:Row #(?P<row>\d+): )?CSV conversion error to "
    r"(?P<type>[^:]+):"
)
_TYPE_WORDS = {
    "int64": "an integer",
    "double": "a number",
    "timestamp[s]": "a timestamp 'YYYY-MM-DD HH:MM:SS'",
    "string": "UTF-8 text",
}
_PARSE_RE = re.compile(r"CSV parse error: (?:Row #(?P<row>\d+): )?(?P<what>[^:]*)")
#: Arrow's error when a quoted value holds a line break where a block ends (the fast chunker
#: cuts blocks at the last line break, inside quotes or not).
_OUT_OF_SYNC = "out of sync with chunker"

Reopen = Callable[[], "pa.NativeFile | BinaryIO"]


def _options(
    parser_names: list[str],
    skip_rows: int,
    block_size: int,
    newlines_in_values: bool,
    include: list[str],
    types: dict[str, pa.DataType],
    *,
    use_threads: bool = True,
    invalid_row_handler: Callable | None = None,
) -> tuple[pacsv.ReadOptions, pacsv.ParseOptions, pacsv.ConvertOptions]:
    """The Arrow CSV options of every read of a table (the stream and the error locators)."""
    read_opts = pacsv.ReadOptions(
        column_names=parser_names,
        skip_rows=skip_rows,
        block_size=int(block_size),
        use_threads=use_threads,
    )
    parse_opts = pacsv.ParseOptions(
        delimiter=",", quote_char='"', double_quote=True, escape_char=False,
        newlines_in_values=newlines_in_values, ignore_empty_lines=True,
        invalid_row_handler=invalid_row_handler,
    )  # fmt: skip
    convert_opts = pacsv.ConvertOptions(
        include_columns=include, column_types=types, null_values=[""],
        strings_can_be_null=True, quoted_strings_can_be_null=True, check_utf8=True,
    )  # fmt: skip
    return read_opts, parse_opts, convert_opts


def first_unconvertible(values: pa.Array, type_: pa.DataType) -> int | None:
    """Index of the first of ``values`` (binary, as read) that is not UTF-8 or does not cast to
    ``type_`` (Arrow's parsers, as the CSV reader's), or None when every value does.

    Bisects on prefixes: ``log2(n)`` casts, on the error path only.
    """

    def converts(part: pa.Array) -> bool:
        try:
            part.cast(pa.string()).cast(type_)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return False
        return True

    if converts(values):
        return None
    good, bad = 0, len(values)  # values[:good] convert, values[:bad] do not
    while bad - good > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if converts(values.slice(0, mid)) else (good, mid)
    return bad - 1


def _locate_value(reopen: Reopen, opts: dict, key: str, type_: pa.DataType) -> int | None:
    """The 1-based data row of the first value of column ``key`` that does not convert to
    ``type_``, by reading the column again as raw bytes (None if no value fails so)."""
    read_opts, parse_opts, convert_opts = _options(**opts, include=[key], types={key: pa.binary()})
    offset = 0
    with reopen() as stream:
        for batch in pacsv.open_csv(stream, read_opts, parse_opts, convert_opts):
            bad = first_unconvertible(batch.column(0), type_)
            if bad is not None:
                return offset + bad + 1
            offset += batch.num_rows
    return None


def _locate_malformed(reopen: Reopen, opts: dict) -> int | None:
    """The 1-based data row of the first row with a wrong number of fields, by reading the
    stream again on one thread (Arrow numbers the rows then), or None."""
    rows: list[int] = []

    def handler(row: Any) -> str:
        rows.append(row.number)
        return "error"

    first = opts["parser_names"][0]
    read_opts, parse_opts, convert_opts = _options(
        **opts, include=[first], types={first: pa.binary()}, use_threads=False,
        invalid_row_handler=handler,
    )  # fmt: skip
    with contextlib.suppress(pa.ArrowInvalid), reopen() as stream:
        for _ in pacsv.open_csv(stream, read_opts, parse_opts, convert_opts):
            pass
    return rows[0] - opts["skip_rows"] if rows and rows[0] is not None else None


def _csv_error(
    exc: BaseException,
    label: str,
    shown: dict[str, str],
    opts: dict,
    rows_done: int,
    reopen: Reopen | None,
) -> InputDataError:
    """Translate an Arrow CSV error into a message naming the source, the data row and the
    column; never a value (Arrow's texts quote the cell or the whole row, which may be a
    patient's data, so only their words before the first ':' are kept).

    ``rows_done`` rows were read before the error; with ``reopen`` the stream is read again
    to find the row (error path only), else the message says "after data row <rows_done>".
    """
    msg = str(exc)
    somewhere = f"a data row after row {rows_done}"
    m = _CONVERSION_RE.search(msg)
    if m:
        idx = int(m.group("col"))
        names = opts["parser_names"]
        key = names[idx] if idx < len(names) else f"#{idx}"
        name = shown.get(key, key).upper()
        type_name = m.group("type").strip()
        expected = _TYPE_WORDS.get(type_name, type_name)
        row = None
        if reopen is not None and key in names:
            with contextlib.suppress(pa.ArrowInvalid, OSError, ValueError, TypeError):
                row = _locate_value(reopen, opts, key, pa.type_for_alias(type_name))
        where = f"data row {row}" if row is not None else somewhere
        return InputDataError(
            f"{label}: column '{name}', {where}: the value is not {expected} "
            "(values are never shown in messages)"
        )
    m = _PARSE_RE.search(msg)
    if m:
        row = _locate_malformed(reopen, opts) if reopen is not None else None
        where = f"data row {row}" if row is not None else somewhere
        return InputDataError(
            f"{label}: {where}: malformed CSV: {m.group('what').strip()} "
            "(truncated file or wrong delimiter?)"
        )
    what = msg.splitlines()[0].split(":")[0][:200] if msg else type(exc).__name__
    return InputDataError(f"{label}: {somewhere}: cannot read the CSV data: {what}")


def parse_csv_stream(
    stream: pa.NativeFile | BinaryIO,
    *,
    label: str,
    parser_names: list[str],
    shown: dict[str, str],
    spec: tables.TableSpec,
    block_size: int,
    newlines_in_values: bool = False,
    skip_rows: int = 1,
    reopen: Reopen | None = None,
) -> Iterator[pa.RecordBatch]:
    """Parse a CSV byte stream into batches with ``spec.schema`` (absent optional cols null).

    ``parser_names`` names every column of the stream (lower case); ``shown`` maps the spec
    columns present to the names the user knows (for messages). ``block_size`` is in bytes.
    Only the spec columns present are decoded (UTF-8 checked, typed); other columns are split
    off and never decoded. Raises ``InputDataError`` for decompression, parse and conversion
    errors, naming the data row (1-based, header excluded) and column, never a value.

    ``reopen`` opens the same bytes again from the start. With it, an error is located by a
    second read (error path only), and a quoted value holding a line break where a block ends
    (which the fast chunker of ``newlines_in_values=False`` cannot split) is read correctly:
    the stream is read again from the start with line breaks in values allowed, skipping the
    rows already yielded. Without it, such a value is an error naming the rows read before it.
    """
    include = [c.name for c in spec.columns if c.name in shown]
    types = {c.name: c.type for c in spec.columns if c.name in shown}
    opts = dict(
        parser_names=parser_names,
        skip_rows=skip_rows,
        block_size=block_size,
        newlines_in_values=newlines_in_values,
    )
    done = 0
    try:
        for batch in _read_batches(stream, opts, include, types):
            done += batch.num_rows
            yield _complete(batch, spec)
        return
    except (pa.ArrowInvalid, OSError) as exc:
        if is_decompress_error(exc) and "CSV" not in str(exc):
            raise decompress_error(label, exc) from None
        if reopen is None or newlines_in_values or _OUT_OF_SYNC not in str(exc):
            try:  # locating the row reads the stream again: a corrupt gzip may fail there
                error = _csv_error(exc, label, shown, opts, done, reopen)
            except (pa.ArrowInvalid, OSError) as again:
                if is_decompress_error(again):
                    raise decompress_error(label, again) from None
                raise
            raise error from None
    log.info(
        f"{label}: a quoted value holds a line break where a read block ends; reading the "
        f"file again with line breaks in values allowed, from data row {done + 1}"
    )
    opts["newlines_in_values"] = True
    seen = 0
    try:
        with reopen() as again:
            for batch in _read_batches(again, opts, include, types):
                skip = min(max(done - seen, 0), batch.num_rows)
                seen += batch.num_rows
                if skip < batch.num_rows:
                    yield _complete(batch.slice(skip), spec)
    except (pa.ArrowInvalid, OSError) as exc:
        if is_decompress_error(exc) and "CSV" not in str(exc):
            raise decompress_error(label, exc) from None
        raise _csv_error(exc, label, shown, opts, max(seen, done), reopen) from None


def _read_batches(
    stream: pa.NativeFile | BinaryIO, opts: dict, include: list[str], types: dict
) -> Iterator[pa.RecordBatch]:
    """The typed batches of ``stream`` (the reader is closed when the iteration ends)."""
    reader = pacsv.open_csv(stream, *_options(**opts, include=include, types=types))
    try:
        yield from reader
    finally:
        with contextlib.suppress(Exception):
            reader.close()


def _complete(batch: pa.RecordBatch, spec: tables.TableSpec) -> pa.RecordBatch:
    """Put the spec columns in order, adding absent optional columns as nulls."""
    if batch.schema.names == spec.column_names:
        return batch
    arrays = [
        batch.column(c.name) if c.name in batch.schema.names else pa.nulls(batch.num_rows, c.type)
        for c in spec.columns
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=spec.schema)


def filter_itemids(batch: pa.RecordBatch, itemids: pa.Array) -> pa.RecordBatch:
    """Keep the rows whose ``itemid`` is in ``itemids`` (an int64 Arrow array)."""
    mask = pc.is_in(batch.column("itemid"), value_set=itemids)
    return batch.filter(mask)


def itemid_array(itemids: Iterable[int]) -> pa.Array:
    """Sorted int64 Arrow array of item ids (raises ``TypeError`` for non-integers)."""
    ids = sorted({int(i) for i in itemids})
    return pa.array(np.asarray(ids, dtype=np.int64), type=pa.int64())


def to_pandas(table: pa.Table) -> pd.DataFrame:
    """Arrow -> pandas: int64 columns with nulls become ``Int64``, others keep their type."""
    df = table.to_pandas()
    for field in table.schema:
        if pa.types.is_integer(field.type) and table.column(field.name).null_count:
            df[field.name] = pd.array(table.column(field.name).to_pylist(), dtype="Int64")
    return df


# --------------------------------------------------------------------------- the sources


class SourceReader:
    """What both sources share: the reading half of the reader protocol.

    A source supplies ``_batches(spec, chunk_rows)``, its typed record batches of one table
    (``spec.schema``; ``chunk_rows`` None: the source's own block size), and
    ``_events(spec, itemids, chunk_rows, stats)``, the event rows of the given item ids.
    """

    def _batches(
        self, spec: tables.TableSpec, chunk_rows: int | None
    ) -> Iterator[pa.RecordBatch]:  # pragma: no cover - every source defines it
        raise NotImplementedError

    def _events(
        self, spec: tables.TableSpec, itemids: pa.Array, chunk_rows: int, stats: dict | None
    ) -> Iterator[pa.RecordBatch]:  # pragma: no cover - every source defines it
        raise NotImplementedError

    def read_arrow(self, name: str) -> pa.Table:
        """Read a table of :data:`tables.SMALL_TABLES` whole, as typed Arrow."""
        spec = tables.get_small_spec(name)
        return pa.Table.from_batches(list(self._batches(spec, None)), schema=spec.schema)

    def read_table(self, name: str) -> pd.DataFrame:
        """Read a small table whole: only the needed columns, typed (see ``sources.tables``).

        Integer columns with nulls come back as pandas ``Int64``; timestamps as
        ``datetime64[s]``.
        """
        return to_pandas(self.read_arrow(name))

    def iter_events(
        self,
        table: str,
        itemids: Iterable[int],
        chunk_rows: int,
        stats: dict | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Stream CHARTEVENTS or LABEVENTS, keeping only rows with an itemid in ``itemids``.

        Reads about ``chunk_rows`` rows at a time (memory is bounded by the chunk size, not the
        table) and yields non-empty batches with :data:`tables.SOURCE_EVENT_SCHEMA`. When
        ``stats`` is given, ``stats["rows_read"]`` (rows parsed) and
        ``stats["dropped_other_itemid"]`` are kept up to date while streaming, or None where
        the source does not count them (a database filters the item ids itself).
        """
        spec = tables.get_event_spec(table)
        yield from self._events(spec, itemid_array(itemids), int(chunk_rows), stats)


class CsvSource(SourceReader):
    """A directory of the official MIMIC-III v1.4 CSV or CSV.gz files.

    Implements the reader protocol used by :func:`mimic_deid.sources.extract.extract_raw`:
    ``read_table(name) -> DataFrame`` and ``iter_events(table, itemids, chunk_rows)``.

    Parameters
    ----------
    path:
        The directory holding e.g. ``CHARTEVENTS.csv.gz``.
    newlines_in_values:
        Split blocks with Arrow's quote-aware chunker from the start. Off by default: the fast
        chunker reads a line break inside quotes correctly unless it falls where a block ends,
        and then :func:`parse_csv_stream` reads the file again with this on (measured in
        benchmarks/README.md, "Line breaks in values").
    """

    kind = "csv"

    def __init__(self, path: str | os.PathLike, newlines_in_values: bool = False) -> None:
        self.path = Path(path)
        self.newlines_in_values = newlines_in_values

    def __repr__(self) -> str:
        return f"CsvSource({str(self.path)!r})"

    def describe(self) -> str:
        """The source as messages name it: ``CSV source <directory>``."""
        return f"CSV source {self.path}"

    def missing_tables(self, stems: Iterable[str]) -> list[str]:
        """The table file stems (``"TRANSFERS"``) among ``stems`` without a file here
        (:func:`missing_table_files`)."""
        return missing_table_files(self.path, stems)

    def none_found_advice(self, stems: Iterable[str]) -> str:
        """What to do when the directory holds none of the tables ``stems``: name the
        subfolder(s) that hold them (a copy unpacked into a folder of its own), or say which
        directory config parameter 'source/csv/path' must name."""
        stems = list(stems)
        folders = folders_holding(self.path, stems)
        if folders:
            return (
                f"the tables are in {' and '.join(str(f) for f in folders)}: give that "
                "directory in config parameter 'source/csv/path'"
            )
        return (
            "give the directory that holds the MIMIC-III v1.4 files (e.g. "
            f"{stems[0] if stems else 'ADMISSIONS'}.csv.gz) in config parameter "
            "'source/csv/path'"
        )

    def check_table(self, spec: tables.TableSpec, sample_rows: int = 0) -> None:
        """Refuse, before any job reads it, a table given twice, without a column ``spec``
        reads, or whose first data rows do not parse as ``spec``'s types.

        Reads the header and at least ``sample_rows`` data rows (the first read block;
        nothing when 0), never the whole file.

        Raises
        ------
        InputDataError
            Naming the file(s), the column and what was expected (for a value: its data
            row, never the value): :func:`find_table_file`, :func:`read_head`,
            :func:`map_columns`, :func:`parse_csv_stream`.
        """
        path = find_table_file(self.path, spec.file_stem)
        label = str(path)
        header, _ = read_head(path, label)
        parser_names, shown = map_columns(header, spec, label)
        if sample_rows <= 0:
            return
        try:
            stream = open_input(path)
        except OSError as exc:
            raise InputDataError(f"{label}: cannot open the file: {exc}") from None
        rows = 0
        with stream:
            for batch in parse_csv_stream(
                stream,
                label=label,
                parser_names=parser_names,
                shown=shown,
                spec=spec,
                block_size=MIN_BLOCK_BYTES,
                newlines_in_values=True,
                reopen=lambda: open_input(path),
            ):
                rows += batch.num_rows
                if rows >= sample_rows:
                    break

    def _batches(self, spec: tables.TableSpec, chunk_rows: int | None) -> Iterator[pa.RecordBatch]:
        path = find_table_file(self.path, spec.file_stem)
        label = str(path)
        log.info(f"{spec.file_stem}: reading {path}")
        header, row_bytes = read_head(path, label)
        parser_names, shown = map_columns(header, spec, label)
        block = MAX_BLOCK_BYTES // 4 if chunk_rows is None else chunk_rows * row_bytes
        block = int(min(max(block, MIN_BLOCK_BYTES), MAX_BLOCK_BYTES))
        try:
            stream, by_isal = open_table_stream(path)
        except OSError as exc:
            raise InputDataError(f"{label}: cannot open the file: {exc}") from None
        with stream:
            try:
                yield from parse_csv_stream(
                    stream,
                    label=label,
                    parser_names=parser_names,
                    shown=shown,
                    spec=spec,
                    block_size=block,
                    newlines_in_values=self.newlines_in_values,
                    reopen=lambda: open_input(path),
                )
            except InputDataError as err:
                # Threads parse blocks while the stream is still being inflated: garbage from
                # a damaged gzip can fail as CSV before the inflater reports the damage. ISA-L
                # words the damage its own way: Arrow's zlib inflate names it as ever.
                if is_gzip(path) and (
                    by_isal or not str(err).startswith(f"{label}: cannot decompress")
                ):
                    damage = gzip_damage(path)
                    if damage is not None:
                        raise decompress_error(label, damage) from None
                raise
            except EOFError as exc:  # ISA-L's truncated stream (zlib's is an OSError)
                raise decompress_error(label, gzip_damage(path) or exc) from None

    def _events(
        self, spec: tables.TableSpec, itemids: pa.Array, chunk_rows: int, stats: dict | None
    ) -> Iterator[pa.RecordBatch]:
        if stats is not None:
            stats.update(rows_read=0, dropped_other_itemid=0)
        for batch in self._batches(spec, chunk_rows):
            kept = filter_itemids(batch, itemids)
            if stats is not None:
                stats["rows_read"] += batch.num_rows
                stats["dropped_other_itemid"] += batch.num_rows - kept.num_rows
            if kept.num_rows:
                yield kept


__all__ = [
    "CsvSource",
    "SourceReader",
    "find_table_file",
    "open_table_stream",
    "parse_csv_stream",
    "read_head",
    "table_files",
]
