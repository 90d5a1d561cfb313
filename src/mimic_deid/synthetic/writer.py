"""MIMIC-III v1.4 CSV.gz writing: table layouts, Arrow conversion helpers, gzip streams.

Format of the official files: upper-case double-quoted header, text values double-quoted,
numbers and timestamps (``YYYY-MM-DD HH:MM:SS``) bare, empty field for null. Arrow's CSV
writer produces exactly this for string / int64 / float64 / timestamp[s] columns. The gzip
stream has mtime 0 and no file name, so equal content gives byte-identical files.
"""

from __future__ import annotations

import gzip
import io
import os
from types import TracebackType

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from mimic_deid.synthetic.reference import read_table

INT, FLT, STR, TS = pa.int64(), pa.float64(), pa.string(), pa.timestamp("s")

_TYPES = {"int": INT, "float": FLT, "string": STR, "timestamp": TS}


def _layouts() -> dict[str, tuple[tuple[str, pa.DataType], ...]]:
    """:data:`LAYOUTS` from ``synthetic/tables/layouts.csv`` (table, column, type per row)."""
    out: dict[str, list[tuple[str, pa.DataType]]] = {}
    for table, column, type_ in read_table("layouts", (str, str, str)):
        out.setdefault(table, []).append((column, _TYPES[type_]))
    return {table: tuple(columns) for table, columns in out.items()}


#: Per table, the official column order and the Arrow type written.
LAYOUTS = _layouts()

GZIP_LEVEL = 1  # speed over size: the event tables dominate the run time


def times(seconds: np.ndarray) -> pa.Array:
    """Seconds since 1970 (float64, NaN = null) as Arrow ``timestamp[s]``."""
    seconds = np.asarray(seconds, dtype=np.float64)
    missing = np.isnan(seconds)
    ints = np.where(missing, 0, seconds).astype(np.int64)
    return pa.array(ints, type=TS, mask=missing if missing.any() else None)


def ints(values: np.ndarray, missing: np.ndarray | None = None) -> pa.Array:
    """int64 Arrow array, null where ``missing``."""
    values = np.asarray(values).astype(np.int64)
    return pa.array(
        values, type=INT, mask=missing if missing is not None and missing.any() else None
    )


def floats(values: np.ndarray) -> pa.Array:
    """float64 Arrow array, NaN -> null (negative zero normalised)."""
    return pa.array(np.asarray(values, dtype=np.float64) + 0.0, type=FLT, from_pandas=True)


def strings(vocabulary: tuple | list, codes: np.ndarray) -> pa.Array:
    """Arrow strings ``vocabulary[codes]`` (a None entry gives null)."""
    return pa.array(list(vocabulary), type=STR).take(pa.array(np.asarray(codes, dtype=np.int64)))


def nulls(n: int, type_: pa.DataType) -> pa.Array:
    return pa.nulls(n, type=type_)


class TableWriter:
    """Append-only gzip CSV stream of one MIMIC-III table; numbers ROW_ID from 1."""

    def __init__(self, directory: str | os.PathLike, name: str) -> None:
        self.name = name
        self.layout = LAYOUTS[name]
        self.schema = pa.schema([pa.field(c, t) for c, t in self.layout])
        self.rows = 0
        self.path = os.path.join(os.fspath(directory), f"{name}.csv.gz")
        self._raw = open(self.path, "wb")
        self._gz = gzip.GzipFile(
            filename="", mode="wb", fileobj=self._raw, compresslevel=GZIP_LEVEL, mtime=0
        )
        header = ",".join(f'"{c}"' for c, _ in self.layout) + "\n"
        self._gz.write(header.encode("ascii"))

    def write(self, columns: dict[str, pa.Array]) -> None:
        """Append rows; ``columns`` holds every column of the layout except ROW_ID."""
        n = len(next(iter(columns.values())))
        if n == 0:
            return
        arrays = [pa.array(np.arange(self.rows + 1, self.rows + n + 1, dtype=np.int64))]
        for col, type_ in self.layout[1:]:
            arr = columns[col]
            if len(arr) != n:
                raise ValueError(f"{self.name}.{col}: {len(arr)} values for {n} rows")
            arrays.append(arr if arr.type == type_ else arr.cast(type_))
        table = pa.Table.from_arrays(arrays, schema=self.schema)
        buf = io.BytesIO()
        pacsv.write_csv(table, buf, pacsv.WriteOptions(include_header=False))
        self._gz.write(buf.getbuffer())
        self.rows += n

    def close(self) -> None:
        self._gz.close()
        self._raw.close()

    def __enter__(self) -> TableWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
