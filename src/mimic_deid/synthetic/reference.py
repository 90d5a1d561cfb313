"""Reference tables of the synthetic copy, kept as CSV package data in ``synthetic/tables/``.

Long lists of constants (chart items, diagnosis codes, physiology parameters) are data, not
code: each lives in one CSV file with a header row, read once at import. An empty cell reads
as ``None``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from importlib.resources import files


def read_table(name: str, types: Sequence[Callable[[str], object]]) -> tuple[tuple, ...]:
    """The rows of ``synthetic/tables/<name>.csv``, each cell converted by its column's type.

    Parameters
    ----------
    name : str
        File stem in ``synthetic/tables/``.
    types : sequence of callable
        One converter per column (``int``, ``float``, ``str``); an empty cell is ``None``.

    Returns
    -------
    tuple of tuple
        The rows in file order, header left out.

    Raises
    ------
    ValueError
        A row whose number of cells differs from ``len(types)``, naming the file and line.
    """
    text = files("mimic_deid.synthetic").joinpath("tables", f"{name}.csv").read_text("utf-8")
    rows = []
    for line, cells in enumerate(csv.reader(io.StringIO(text)), 1):
        if line == 1 or not cells:
            continue
        if len(cells) != len(types):
            raise ValueError(
                f"synthetic/tables/{name}.csv line {line}: {len(cells)} cells, "
                f"expected {len(types)}"
            )
        rows.append(tuple(None if c == "" else t(c) for t, c in zip(types, cells, strict=True)))
    return tuple(rows)
