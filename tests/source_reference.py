"""Reference forms of the extraction's sort and de-duplication and of a CSV header read, for
the tests only: the library's one-pass ``sort_unique_events`` must equal sorting then
dropping the exact duplicates."""

from __future__ import annotations

import os

import pyarrow as pa

from mimic_deid.sources import tables
from mimic_deid.sources.csv_files import read_head
from mimic_deid.sources.spool import _count_dropped, _duplicate_rows


def drop_exact_duplicates(tab: pa.Table) -> tuple[pa.Table, dict[str, int]]:
    """Drop rows equal in every column to the previous row of the sorted ``tab``.

    Nulls compare equal to nulls (see :func:`_duplicate_rows`). Returns the table and the
    rows dropped per event table (``table`` column value).
    """
    dup = _duplicate_rows(tab)
    if not dup.any():
        return tab, {}
    dropped = _count_dropped(tab.column("table").filter(pa.array(dup)))
    return tab.filter(pa.array(~dup)), dropped


def sort_events(tab: pa.Table) -> pa.Table:
    """Sort by :data:`tables.EVENT_SORT_KEYS` (nulls last) into one contiguous chunk."""
    if tab.num_rows:
        tab = tab.sort_by([(k, "ascending") for k in tables.EVENT_SORT_KEYS])
    return tab.combine_chunks()


def header_of(path: str | os.PathLike) -> list[str]:
    """The header names of a CSV(.gz) file, as written (for loaders and tests)."""
    names, _ = read_head(path, str(path))
    return names
