"""Demographics published with the series, private together with them (seed 000 §7.2).

A series release may publish, beside each series' duration class, its demographics (config
``release.demographics``: age and gender by default; also admission type, insurance and
ethnicity, :data:`~mimic_deid.pipeline.cohort.STAY_DEMOGRAPHICS`), each generalised through its
hierarchy of ``config/hierarchies.yaml`` (:mod:`mimic_deid.deid.hierarchy`). An attacker
who knows a patient's exact demographics then looks only at the released series whose
published demographics cover them, so the release must be k-anonymous for demographics and
features *together*.

**Demographic cells.** Within each duration class, the series are split top-down into *cells*
(:func:`demographic_cells`): every class starts as one cell with every demographic at the top
of its hierarchy (suppressed); a cell is specialised one level down in one demographic when
every resulting child holds at least ``k`` series (``k`` = fk) and, in a labelled release,
at least ``ell`` distinct values of every outcome (the ℓ-diversity of the Mondrian split,
:func:`~mimic_deid.deid.mondrian.mondrian_partition`). Among the allowed specialisations the
one with the most children wins (ties: config order); a level that does not split the cell
(one child) is taken for free. The Mondrian partition of the features then runs inside each
cell, and the release methods run cell by cell, so every (duration class x published
demographics x feature class) holds at least fk series, and the strong attacker who also knows
the demographics is still bounded by 1/fk. A cell publishes its own levels (local recoding):
two cells of a class may show age at different levels, but two cells never overlap, since they
part at a split into disjoint children and only specialise inside them.

**Levels never published** (:data:`FLOORS`). Level 0 of ``age`` (the age itself) is never
published; ``ethnicity`` is published as one of its groups at best (its level 1 is a technical
step, the first five letters, that folds MIMIC-III's 41 free-text values before grouping them).
The other demographics are categories and may be published as recorded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError, InputDataError, require_columns
from mimic_deid.deid.classes import KEY
from mimic_deid.deid.hierarchy import Hierarchy, encode, load_hierarchies
from mimic_deid.pipeline.cohort import STAY_DEMOGRAPHICS

__all__ = [
    "FLOORS",
    "DemographicCodes",
    "check_hierarchies",
    "check_release_config",
    "demographic_cells",
    "encode_demographics",
]

#: The lowest hierarchy level at which a demographic may be published (default 0).
FLOORS: dict[str, int] = {"age": 1, "ethnicity": 2}


@dataclass(frozen=True)
class DemographicCodes:
    """The published demographics of a release's stays as hierarchy codes.

    Attributes
    ----------
    columns : tuple of str
        The published demographics, in config order.
    keys : ndarray of int64, shape (n,)
        ``icustay_id`` of every row, ascending.
    codes : ndarray of int64, shape (n, d)
        Level-0 code of each demographic.
    hierarchies : tuple of Hierarchy
        One per column.
    floors : ndarray of int64, shape (d,)
        Lowest publishable level of each column (:data:`FLOORS`).
    """

    columns: tuple[str, ...]
    keys: np.ndarray
    codes: np.ndarray
    hierarchies: tuple[Hierarchy, ...]
    floors: np.ndarray

    def rows(self, keys: np.ndarray) -> np.ndarray:
        """Level-0 codes of the stays ``keys``, shape (len(keys), d); ``InputDataError`` if a
        stay has no demographics."""
        keys = np.asarray(keys, dtype=np.int64)
        at = np.searchsorted(self.keys, keys)
        at = np.minimum(at, max(len(self.keys) - 1, 0))
        if len(keys) and (len(self.keys) == 0 or not np.array_equal(self.keys[at], keys)):
            raise InputDataError(
                "demographics table: some released series have no row; expected one row per "
                f"cohort stay ('{KEY}')"
            )
        return self.codes[at]

    def labels(self, codes: np.ndarray, levels: np.ndarray) -> pd.DataFrame:
        """The published labels of rows with level-0 ``codes`` (m, d) at ``levels`` (m, d)."""
        out = {}
        for j, (col, h) in enumerate(zip(self.columns, self.hierarchies, strict=True)):
            text = np.empty(len(codes), dtype=object)
            for level in np.unique(levels[:, j]) if len(codes) else []:
                rows = levels[:, j] == level
                names = np.asarray(h.labels[int(level)], dtype=object)
                text[rows] = names[h.maps[int(level)][codes[rows, j]]]
            out[col] = text.astype(str)
        return pd.DataFrame(out)

    def publishable(self) -> dict[str, set[str]]:
        """Every label a column may publish: its hierarchy's labels at levels >= its floor."""
        return {
            col: {lab for level in range(int(f), h.height + 1) for lab in h.labels[level]}
            for col, h, f in zip(self.columns, self.hierarchies, self.floors, strict=True)
        }


def check_hierarchies(columns: Sequence[str], hierarchies: Mapping, source: str = "") -> None:
    """Every published demographic is known and has a hierarchy with a publishable level.

    Run at start-up on the config (:func:`check_release_config`) and again on encoding.
    ``ConfigError`` names the demographic, the hierarchies file (``source``) and what is
    missing.
    """
    unknown = [c for c in columns if c not in STAY_DEMOGRAPHICS]
    if unknown:
        raise ConfigError(
            f"release.demographics: unknown demographic(s) {unknown}; expected a subset of "
            f"{list(STAY_DEMOGRAPHICS)}"
        )
    where = f" in {source}" if source else ""
    for col in columns:
        if col not in hierarchies:
            raise ConfigError(
                f"release.demographics: '{col}' has no hierarchy{where}; the file defines "
                f"{sorted(hierarchies)}"
            )
        if len(hierarchies[col]) < FLOORS.get(col, 0):
            raise ConfigError(
                f"hierarchy '{col}': {len(hierarchies[col])} step(s), but '{col}' is published "
                f"only at level {FLOORS[col]} or above; add a generalisation step"
            )


def check_release_config(release: Mapping) -> None:
    """Start-up check of the config's ``release`` section: its hierarchies file reads and
    covers every published demographic (:func:`check_hierarchies`)."""
    columns = list(release.get("demographics") or [])
    if columns:
        source = str(release["hierarchies"])
        check_hierarchies(columns, load_hierarchies(source), source)


def encode_demographics(
    demographics: pd.DataFrame, columns: Sequence[str], hierarchies: Mapping
) -> DemographicCodes:
    """Encode the stays' demographics ``columns`` against their hierarchies.

    Parameters
    ----------
    demographics : DataFrame
        ``icustay_id`` and the columns (:func:`~mimic_deid.pipeline.cohort.stay_demographics`).
    columns : sequence of str
        The demographics to publish (config ``release.demographics``).
    hierarchies : mapping
        :func:`~mimic_deid.deid.hierarchy.load_hierarchies` output.

    Raises
    ------
    ConfigError
        A column is not a known demographic, or has no hierarchy, or a hierarchy has no level
        at or above its floor.
    InputDataError
        A column is missing, or a value is covered by no step of its hierarchy (the row is
        named, the value never shown).
    """
    check_hierarchies(columns, hierarchies)
    require_columns(demographics, [KEY, *columns], "demographics table")
    table = demographics.sort_values(KEY, kind="stable").reset_index(drop=True)
    enc = encode(table, list(columns), hierarchies, "demographics table")
    floors = np.array([FLOORS.get(c, 0) for c in columns], dtype=np.int64)
    return DemographicCodes(
        tuple(columns), table[KEY].to_numpy(dtype=np.int64), enc.codes, enc.hierarchies, floors
    )


def _diverse(outcomes: np.ndarray | None, members: np.ndarray, ell: int) -> bool:
    if outcomes is None or ell <= 1:
        return True
    y = outcomes[members]
    return all(np.unique(y[:, c]).size >= ell for c in range(y.shape[1]))


def demographic_cells(
    codes: np.ndarray,
    demographics: DemographicCodes,
    k: int,
    outcomes: np.ndarray | None = None,
    ell: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Top-down demographic cells of one duration class (module docstring).

    Parameters
    ----------
    codes : ndarray of int64, shape (n, d)
        Level-0 codes of the class's series (:meth:`DemographicCodes.rows`).
    demographics : DemographicCodes
        Gives the hierarchies and floors.
    k : int
        Minimum series per cell (fk).
    outcomes : ndarray, shape (n, t), optional
        The outcome labels a labelled release publishes.
    ell : int
        Distinct values of every outcome each cell keeps.

    Returns
    -------
    cells : ndarray of int64, shape (n,)
        Cell of each series, numbered 0.. by each cell's first row.
    levels : ndarray of int64, shape (n, d)
        The level each series' demographics are published at (its cell's).

    Notes
    -----
    A class of fewer than ``k`` series stays one cell at the top (nothing published). Cost:
    one ``np.unique`` per (cell, demographic) per level, O(n d log n) per level of the tree.
    """
    codes = np.asarray(codes, dtype=np.int64)
    n, d = codes.shape
    maps = [h.maps for h in demographics.hierarchies]
    top = np.array([h.height for h in demographics.hierarchies], dtype=np.int64)
    floors = demographics.floors
    stack = [(np.arange(n, dtype=np.int64), top.copy())]
    done: list[tuple[np.ndarray, np.ndarray]] = []
    while stack:
        members, level = stack.pop()
        best = None
        for j in range(d):
            while level[j] > floors[j]:
                child = maps[j][level[j] - 1][codes[members, j]]
                values, inverse, counts = np.unique(child, return_inverse=True, return_counts=True)
                if values.size == 1:  # a level that splits nothing is taken for free
                    level[j] -= 1
                    continue
                if counts.min() >= k and all(
                    _diverse(outcomes, members[inverse == c], ell) for c in range(values.size)
                ):
                    if best is None or values.size > best[1]:
                        best = (j, values.size, inverse)
                break
        if best is None:
            done.append((members, level))
            continue
        j, size, inverse = best
        for c in range(size - 1, -1, -1):
            child_level = level.copy()
            child_level[j] -= 1
            stack.append((members[inverse == c], child_level))
    cells = np.zeros(n, dtype=np.int64)
    levels = np.tile(top, (n, 1))
    order = np.argsort([m.min() if m.size else n for m, _ in done], kind="stable")
    for cell, i in enumerate(order):
        members, level = done[i]
        cells[members] = cell
        levels[members] = level
    return cells, levels
