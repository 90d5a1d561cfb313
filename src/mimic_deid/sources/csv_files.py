"""The MIMIC-III CSV(.gz) files of a source folder: which file holds a table (``.csv`` or
``.csv.gz``, in the folder or one below it), opening it (gzip detected by its magic bytes) and
reading its header, with the decompression errors named by file. The parsing is in
:mod:`mimic_deid.sources.csv_source`."""

from __future__ import annotations

import contextlib
import csv
import os
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa

from mimic_deid.core.errors import InputDataError
from mimic_deid.sources import tables

__all__ = [
    "check_delimiter",
    "decompress_error",
    "find_table_file",
    "folders_holding",
    "gzip_damage",
    "is_decompress_error",
    "is_gzip",
    "map_columns",
    "missing_table_files",
    "open_input",
    "open_table_stream",
    "read_head",
    "table_files",
]

GZIP_MAGIC = b"\x1f\x8b"
MAX_HEADER_BYTES = 1 << 20
SAMPLE_BYTES = 1 << 18
DEFAULT_ROW_BYTES = 150


# --------------------------------------------------------------------------- file discovery


def find_table_file(directory: str | os.PathLike, stem: str) -> Path:
    """Return ``STEM.csv.gz`` or ``STEM.csv`` in ``directory`` (name case ignored).

    Raises ``InputDataError`` naming the names looked for and the directory, or naming every
    copy when the table is given more than once (``STEM.csv`` beside ``STEM.csv.gz``, or
    names that differ only in case, e.g. ``ADMISSIONS.csv.gz`` and ``admissions.csv.gz``):
    which one is meant is not known.
    """
    folder = Path(directory)
    found = _copies(_entries(folder, stem), stem)
    if len(found) > 1:
        count = "twice" if len(found) == 2 else f"{len(found)} times"
        names = ", ".join(p.name for p in found[:-1]) + f" and {found[-1].name}"
        which = "the two files" if len(found) == 2 else f"the {len(found)} files"
        raise InputDataError(
            f"{folder}: table {stem} is given {count}, as {names}; keep one of {which} "
            "(they may differ, and only one would be read)"
        )
    if found:
        return found[0]
    raise InputDataError(
        f"{folder}: MIMIC-III table file not found: looked for {' or '.join(_names(stem))} "
        "in this directory (file name case ignored)"
    )


def _names(stem: str) -> list[str]:
    """The file names a table may have, in the order they are preferred."""
    return [f"{stem}.csv.gz", f"{stem}.csv"]


def _copies(entries: dict[str, list[Path]], stem: str) -> list[Path]:
    """Every file of ``entries`` that holds table ``stem`` (name case ignored)."""
    return [p for name in _names(stem) for p in entries.get(name.lower(), [])]


def _entries(folder: Path, stem: str) -> dict[str, list[Path]]:
    """The files of ``folder`` by lower-case name (names differing only in case share an
    entry, sorted); ``InputDataError`` if ``folder`` is no directory."""
    if not folder.is_dir():
        raise InputDataError(
            f"CSV source directory {folder} does not exist or is not a directory "
            f"(config parameter 'source/csv/path'; expected the MIMIC-III v1.4 files, e.g. "
            f"{stem}.csv.gz)"
        )
    entries: dict[str, list[Path]] = {}
    for p in sorted(folder.iterdir()):
        if p.is_file():
            entries.setdefault(p.name.lower(), []).append(p)
    return entries


def missing_table_files(directory: str | os.PathLike, stems: Iterable[str]) -> list[str]:
    """The table file stems of ``stems`` that have no file in ``directory``.

    A table is present when :func:`find_table_file` would find it (``STEM.csv.gz`` or
    ``STEM.csv``, name case ignored). Raises ``InputDataError`` naming ``directory`` when it
    is not a directory.
    """
    stems = list(stems)
    entries = _entries(Path(directory), stems[0] if stems else "ADMISSIONS")
    return [s for s in stems if not _copies(entries, s)]


def folders_holding(directory: str | os.PathLike, stems: Iterable[str]) -> list[Path]:
    """The subfolders of ``directory`` (two levels down at most, sorted) that hold a file of
    one of the tables ``stems``: where a copy unpacked into a folder of its own lies."""
    stems = list(stems)
    found = []
    for depth in ("*", "*/*"):
        for sub in sorted(Path(directory).glob(depth)):
            if sub.is_dir() and not sub.is_symlink():
                with contextlib.suppress(OSError):
                    entries = {p.name.lower() for p in sub.iterdir()}
                    if any(n.lower() in entries for s in stems for n in _names(s)):
                        found.append(sub)
    return found


def table_files(
    directory: str | os.PathLike, specs: Iterable[tables.TableSpec] | None = None
) -> list[Path]:
    """The MIMIC-III files in ``directory`` that the extraction reads (those present).

    The workflow declares them as inputs of the extraction, so replacing a table re-runs it;
    a missing table is reported by the extraction itself, naming the file it expected.
    ``specs`` chooses other tables (default: every table but :data:`tables.CODE_TABLES` and
    :data:`tables.SEQUENCE_TABLES`, which the ``codes`` and ``sequences`` stages read).
    """
    if specs is None:
        own = {**tables.CODE_TABLES, **tables.SEQUENCE_TABLES}
        specs = [s for s in tables.ALL_TABLES.values() if s.name not in own]
    found = []
    for spec in specs:
        with contextlib.suppress(InputDataError):
            found.append(find_table_file(directory, spec.name.upper()))
    return found


def is_gzip(path: str | os.PathLike) -> bool:
    """True when the file starts with the gzip magic bytes."""
    with open(path, "rb") as fh:
        return fh.read(2) == GZIP_MAGIC


def open_input(path: str | os.PathLike) -> pa.NativeFile:
    """Open a (possibly gzip-compressed) file as an Arrow input stream."""
    return pa.input_stream(str(path), compression="gzip" if is_gzip(path) else None)


def open_table_stream(path: str | os.PathLike) -> tuple[pa.NativeFile | BinaryIO, bool]:
    """Open a table's file for its one full read: ``(stream, inflated_by_isal)``.

    A gzip file is inflated by ISA-L when python-isal is installed, in a thread of its own
    when Arrow's CPU pool (the job's threads) has more than one thread; otherwise (and for
    plain text) :func:`open_input`.
    """
    if is_gzip(path):
        try:
            from isal import igzip, igzip_threaded
        except ImportError:  # pragma: no cover - python-isal is a dependency
            return open_input(path), False
        if pa.cpu_count() > 1:
            return igzip_threaded.open(path, "rb", threads=1), True
        return igzip.open(path, "rb"), True
    return open_input(path), False


# --------------------------------------------------------------------------- header


def decompress_error(label: str, exc: BaseException) -> InputDataError:
    return InputDataError(
        f"{label}: cannot decompress the gzip file, it is truncated or corrupt ({exc}); "
        "re-download or re-compress it"
    )


def gzip_damage(path: str | os.PathLike) -> BaseException | None:
    """The error met when inflating the gzip file ``path`` to its end, or None if it is intact."""
    try:
        with open_input(path) as stream:
            while stream.read(1 << 20):
                pass
    except (OSError, pa.ArrowInvalid) as exc:
        return exc
    return None


def is_decompress_error(exc: BaseException) -> bool:
    msg = str(exc).lower()
    return any(s in msg for s in ("compressed stream", "zlib", "gzip", "inflate", "decompress"))


def read_head(path: str | os.PathLike, label: str) -> tuple[list[str], int]:
    """Read the header line and estimate the mean row length.

    Returns ``(header names as written, mean bytes per data row)``. Raises ``InputDataError``
    for an empty file, an undecodable gzip, a header that is not UTF-8, or a header that parses
    to a single column containing ``;`` or a tab (wrong delimiter).
    """
    try:
        with open_input(path) as stream:
            buf = b""
            while b"\n" not in buf and len(buf) < MAX_HEADER_BYTES:
                chunk = stream.read(1 << 16)
                if not chunk:
                    break
                buf += chunk
            sample = stream.read(SAMPLE_BYTES)
    except (OSError, pa.ArrowInvalid) as exc:
        raise decompress_error(label, exc) from None
    line, _, rest = buf.partition(b"\n")
    if not line.strip():
        raise InputDataError(f"{label}: empty file, expected a CSV header line")
    try:
        text = line.decode("utf-8-sig").rstrip("\r")
    except UnicodeDecodeError:
        raise InputDataError(f"{label}: the header line is not UTF-8 text") from None
    names = next(csv.reader([text]))
    check_delimiter(names, label)
    body = rest + sample
    n_lines = body.count(b"\n")
    row_bytes = len(body) // n_lines if n_lines else DEFAULT_ROW_BYTES
    return names, max(row_bytes, 16)


def check_delimiter(names: list[str], label: str) -> None:
    """Raise ``InputDataError`` when a header parsed to one column holding ';' or a tab."""
    if len(names) != 1:
        return
    for sep, desc in ((";", "semicolon"), ("\t", "tab"), ("|", "pipe")):
        if sep in names[0]:
            shown = names[0][:60].replace("\t", "\\t")
            raise InputDataError(
                f"{label}: the header parses to a single column '{shown}...': the file looks "
                f"{desc}-separated; expected comma-separated values as in the official MIMIC-III "
                "release"
            )


def map_columns(
    header: list[str], spec: tables.TableSpec, label: str
) -> tuple[list[str], dict[str, str]]:
    """Map a header onto ``spec`` case-insensitively.

    Returns ``(column names to give the parser, {spec column: header name as written})`` for the
    spec columns present. Raises ``InputDataError`` naming a required column that is missing.
    """
    parser_names: list[str] = []
    present: dict[str, str] = {}
    for i, raw in enumerate(header):
        key = raw.strip().lower()
        if not key or key in present:
            key = f"__ignored_{i}"
        else:
            present[key] = raw.strip()
        parser_names.append(key)
    for col in spec.columns:
        if col.required and col.name not in present:
            raise InputDataError(
                f"{label}: missing column '{col.name.upper()}' (case ignored) needed from table "
                f"{spec.file_stem}; the header has {len(header)} columns: "
                f"{', '.join(h.strip() for h in header[:20])}{' ...' if len(header) > 20 else ''}"
            )
    wanted = {c.name for c in spec.columns}
    return parser_names, {k: v for k, v in present.items() if k in wanted}
