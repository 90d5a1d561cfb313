"""Pseudonymous release: pseudonyms, assembly of the public tables and the release check.

Public tables (docs/architecture.md):

- series: ``pseudonym`` (string), ``hour`` (int32, 0-based from the first kept hour), dims;
  sorted by (pseudonym, hour);
- index: ``pseudonym``, ``duration_class`` (int32), ``split`` (string), ``label`` (int8, if
  given); sorted by pseudonym, so row order reveals nothing about the private ids.

:func:`check_release` is the last gate before publication: it raises
:class:`~mimic_deid.errors.ReleaseCheckError` on the first violated privacy invariant.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

from mimic_deid.errors import InputDataError, ReleaseCheckError
from mimic_deid.logs import get_logger

log = get_logger(__name__)

PSEUDONYM_PREFIX = "P"
PSEUDONYM_HEX_DIGITS = 12
FORBIDDEN_COLUMNS = ("subject_id", "hadm_id", "icustay_id", "row_id")
FORBIDDEN_SUBSTRINGS = ("time", "date", "dob", "dod", "age")
_ISO_TIMESTAMP = re.compile(r"^\s*\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?")
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def make_pseudonyms(n: int, rng: np.random.Generator | int) -> np.ndarray:
    """Random, unique, non-sequential pseudonyms ``'P' + 12 hex digits``.

    Parameters
    ----------
    n : int
        Number of pseudonyms.
    rng : numpy.random.Generator or int
        Source of randomness (an int is used as a seed); the same seeded generator gives the
        same pseudonyms.

    Returns
    -------
    ndarray of str, shape (n,)
        Unique pseudonyms; duplicates (probability ~ n^2 / 2^49) are redrawn.
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise ValueError(f"number of pseudonyms must be an integer >= 0, got {n!r}")
    rng = np.random.default_rng(rng) if not isinstance(rng, np.random.Generator) else rng
    width = 1 + PSEUDONYM_HEX_DIGITS

    def draw(count: int) -> np.ndarray:
        chars = np.empty((count, width), dtype=np.uint8)
        chars[:, 0] = ord(PSEUDONYM_PREFIX)
        chars[:, 1:] = _HEX[rng.integers(0, 16, size=(count, PSEUDONYM_HEX_DIGITS))]
        return chars.view(f"S{width}").ravel().astype(f"U{width}")

    out = draw(int(n))
    while True:
        _, first = np.unique(out, return_index=True)
        dup = np.ones(out.size, dtype=bool)
        dup[first] = False
        if not dup.any():
            return out
        out[dup] = draw(int(dup.sum()))


def _require(df: pd.DataFrame, cols: Iterable[str], what: str, exc: type[Exception]) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise exc(f"{what} lacks column(s) {missing}; has {list(df.columns)}")


def assemble_release(
    series_private: pd.DataFrame,
    duration: pd.DataFrame,
    pseudonyms: pd.DataFrame,
    labels: pd.DataFrame | None = None,
    *,
    dims: list[str] | None = None,
    key_col: str = "icustay_id",
    label_col: str = "mortality",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Replace private ids by pseudonyms and build the public series and index tables.

    Parameters
    ----------
    series_private : DataFrame
        Perturbed, trimmed series: ``key_col``, ``hour``, dims (hour 0 = first kept hour).
    duration : DataFrame
        ``key_col``, ``split``, ``class_length`` (0 = suppressed) for every input series
        (``duration.parquet``).
    pseudonyms : DataFrame
        ``key_col``, ``pseudonym`` for every released series.
    labels : DataFrame, optional
        ``key_col`` and ``label_col`` (e.g. ``meta.parquet``); gives the ``label`` column.
    dims : list of str, optional
        Dimension columns in release order; default: every series column but key and hour.
    key_col, label_col : str

    Returns
    -------
    series_public : DataFrame
        ``pseudonym``, ``hour`` (int32), dims; sorted by (pseudonym, hour).
    index_public : DataFrame
        ``pseudonym``, ``duration_class`` (int32), ``split``, [``label`` (int8)]; sorted by
        pseudonym.

    Raises
    ------
    InputDataError
        A column is missing, a released series has no (or a repeated) pseudonym, a series row
        belongs to no released series, or a label is missing.
    """
    _require(series_private, [key_col, "hour"], "private series table", InputDataError)
    _require(duration, [key_col, "split", "class_length"], "duration table", InputDataError)
    _require(pseudonyms, [key_col, "pseudonym"], "pseudonym table", InputDataError)
    if dims is None:
        dims = [c for c in series_private.columns if c not in (key_col, "hour")]
    _require(series_private, dims, "private series table", InputDataError)

    released = duration.loc[duration["class_length"].to_numpy() > 0, [key_col, "split"]].copy()
    released["duration_class"] = (
        duration.loc[duration["class_length"].to_numpy() > 0, "class_length"]
        .to_numpy()
        .astype(np.int32)
    )
    if released[key_col].duplicated().any():
        raise InputDataError(f"duration table repeats a '{key_col}'")
    if pseudonyms[key_col].duplicated().any() or pseudonyms["pseudonym"].duplicated().any():
        raise InputDataError("pseudonym table repeats a series key or a pseudonym")
    index = released.merge(pseudonyms[[key_col, "pseudonym"]], on=key_col, how="left")
    if index["pseudonym"].isna().any():
        raise InputDataError(
            f"{int(index['pseudonym'].isna().sum())} released series have no pseudonym"
        )
    if labels is not None:
        _require(labels, [key_col, label_col], "label table", InputDataError)
        lab = labels[[key_col, label_col]].drop_duplicates(key_col)
        index = index.merge(lab, on=key_col, how="left")
        if index[label_col].isna().any():
            raise InputDataError(
                f"{int(index[label_col].isna().sum())} released series have no '{label_col}'"
            )
        index["label"] = index.pop(label_col).to_numpy().astype(np.int8)

    row_keys = series_private[key_col].to_numpy()
    known = np.isin(row_keys, index[key_col].to_numpy())
    if not known.all():
        raise InputDataError(
            f"{int((~known).sum())} series rows belong to no released series "
            "(suppressed or unknown); trim the series to the duration classes first"
        )
    pmap = pd.Series(index["pseudonym"].to_numpy(), index=index[key_col].to_numpy())
    series_public = pd.DataFrame(
        {
            "pseudonym": pmap.reindex(row_keys).to_numpy().astype(str),
            "hour": series_private["hour"].to_numpy().astype(np.int32),
        }
    )
    for d in dims:
        series_public[d] = series_private[d].to_numpy(dtype=np.float64)
    series_public = series_public.sort_values(["pseudonym", "hour"], kind="stable")
    series_public = series_public.reset_index(drop=True)

    cols = ["pseudonym", "duration_class", "split"] + (["label"] if labels is not None else [])
    index_public = index[cols].copy()
    index_public["pseudonym"] = index_public["pseudonym"].astype(str)
    index_public["split"] = index_public["split"].astype(str)
    index_public = index_public.sort_values("pseudonym", kind="stable").reset_index(drop=True)
    log.info("release assembled: %d series, %d rows", len(index_public), len(series_public))
    return series_public, index_public


def _identifier_columns(
    df: pd.DataFrame,
    table: str,
    forbidden_columns: Iterable[str],
    forbidden_substrings: Iterable[str],
) -> list[str]:
    """Problems ("table.column: why") with columns that look like ids, times or ages."""
    problems = []
    exact = {c.lower() for c in forbidden_columns}
    for col in df.columns:
        name = str(col).lower()
        if name in exact:
            problems.append(f"{table}.{col}: identifier column")
            continue
        hit = [s for s in forbidden_substrings if s in name]
        if hit:
            problems.append(f"{table}.{col}: name contains '{hit[0]}'")
            continue
        dtype = df[col].dtype
        if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype):
            problems.append(f"{table}.{col}: datetime-typed column")
            continue
        if pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
            values = pd.Series(pd.unique(df[col].dropna())).astype(str)
            if values.str.match(_ISO_TIMESTAMP).any():
                problems.append(f"{table}.{col}: values look like ISO timestamps")
    return problems


def check_release(
    series_public: pd.DataFrame,
    index_public: pd.DataFrame,
    *,
    dk: int,
    fk: int,
    eq_classes: pd.DataFrame,
    n_input: int,
    n_suppressed: int,
    forbidden_columns: Iterable[str] = FORBIDDEN_COLUMNS,
    forbidden_substrings: Iterable[str] = FORBIDDEN_SUBSTRINGS,
) -> dict:
    """Verify the privacy invariants of a release; raise on the first violation.

    Parameters
    ----------
    series_public : DataFrame
        ``pseudonym``, ``hour``, dims.
    index_public : DataFrame
        ``pseudonym``, ``duration_class``, ``split`` (optional; classes are counted within
        (split, duration_class)), [``label``].
    dk, fk : int
        Duration and feature k.
    eq_classes : DataFrame
        One row per released series: ``split`` (optional, as in the index), ``class_length``,
        ``eq_class`` (from the private targets merged with the duration table).
    n_input, n_suppressed : int
        Series entering the de-identification and series suppressed by it.
    forbidden_columns, forbidden_substrings : iterable of str
        Column names (exact, case-insensitive) and name fragments that must not appear.

    Returns
    -------
    dict
        One entry per passed check with its figures.

    Raises
    ------
    ReleaseCheckError
        Checked in this order: required columns; identifier/time/age columns (names, datetime
        dtypes, ISO-timestamp values); pseudonyms repeated in the index or differing between
        series and index; released + suppressed != input; a series whose hours are not exactly
        0..duration_class-1; a duration class under dk; Mondrian classes not covering the
        released series; a Mondrian class under fk.
    """
    _require(series_public, ["pseudonym", "hour"], "release series table", ReleaseCheckError)
    _require(index_public, ["pseudonym", "duration_class"], "release index", ReleaseCheckError)
    _require(eq_classes, ["class_length", "eq_class"], "equivalence-class table", ReleaseCheckError)
    result: dict = {}

    problems = _identifier_columns(
        series_public, "series", forbidden_columns, forbidden_substrings
    ) + _identifier_columns(index_public, "index", forbidden_columns, forbidden_substrings)
    if problems:
        raise ReleaseCheckError(
            "identifier, timestamp or age in the release: " + "; ".join(problems)
        )
    result["no_identifiers"] = {
        "series_columns": [str(c) for c in series_public.columns],
        "index_columns": [str(c) for c in index_public.columns],
    }

    idx_p = index_public["pseudonym"]
    if idx_p.isna().any():
        raise ReleaseCheckError("pseudonyms: the index has a missing pseudonym")
    n_rep = int(idx_p.duplicated().sum())
    if n_rep:
        raise ReleaseCheckError(f"pseudonyms: {n_rep} pseudonym(s) repeated in the index")
    ser_set = set(pd.unique(series_public["pseudonym"].dropna()))
    idx_set = set(idx_p)
    if ser_set != idx_set or series_public["pseudonym"].isna().any():
        raise ReleaseCheckError(
            "pseudonyms differ between series and index: "
            f"{len(ser_set - idx_set)} only in series, {len(idx_set - ser_set)} only in index"
            + (", missing pseudonyms in series" if series_public["pseudonym"].isna().any() else "")
        )
    result["pseudonyms"] = {"unique": len(idx_set)}

    n_released = len(index_public)
    if n_released + int(n_suppressed) != int(n_input):
        raise ReleaseCheckError(
            f"series lost uncounted: released {n_released} + suppressed {int(n_suppressed)} "
            f"!= input {int(n_input)}"
        )
    result["series_accounted"] = {
        "input": int(n_input),
        "released": n_released,
        "suppressed": int(n_suppressed),
    }

    dur = index_public.set_index("pseudonym")["duration_class"]
    rows = series_public[["pseudonym", "hour"]]
    hours = rows["hour"].to_numpy(dtype=np.int64)
    cls = dur.reindex(rows["pseudonym"]).to_numpy(dtype=np.int64)
    out_of_range = (hours < 0) | (hours >= cls)
    per_series = rows.groupby("pseudonym", sort=True).size()
    expected = dur.reindex(per_series.index).to_numpy(dtype=np.int64)
    wrong = per_series.to_numpy() != expected
    dup_rows = rows.duplicated(keep=False).to_numpy()
    dup_hours = bool(dup_rows.any())
    if out_of_range.any() or wrong.any() or dup_hours:
        bad = set(per_series.index[wrong]) | set(rows.loc[out_of_range | dup_rows, "pseudonym"])
        raise ReleaseCheckError(
            "hours: series whose hours are not exactly 0..duration_class-1 "
            f"(wrong number of hours: {int(wrong.sum())}, hour outside the class: "
            f"{int(out_of_range.sum())} rows, repeated hours: {dup_hours}; "
            f"{len(bad)} series affected)"
        )
    result["hours_match_class"] = {"series": n_released, "rows": len(rows)}

    has_split = "split" in index_public.columns
    by = ["split", "duration_class"] if has_split else ["duration_class"]
    sizes = index_public.groupby(by, sort=True).size()
    if len(sizes) and sizes.min() < dk:
        small = sizes[sizes < dk]
        where = ", ".join(f"{key}: {int(v)}" for key, v in list(small.items())[:5])
        raise ReleaseCheckError(
            f"duration class under dk={dk}: {len(small)} class(es) with fewer series "
            f"(({', '.join(by)}): size: {where})"
        )
    result["duration_classes"] = {
        "dk": int(dk),
        "classes": len(sizes),
        "smallest": int(sizes.min()) if len(sizes) else None,
    }

    if has_split and "split" not in eq_classes.columns:
        raise ReleaseCheckError(
            "equivalence-class table lacks column 'split' (the index is split per split)"
        )
    eq_by = ["split", "class_length"] if has_split else ["class_length"]

    def counts(df: pd.DataFrame, cols: list[str]) -> dict[tuple, int]:
        keys = [df[c].astype(str) if c == "split" else df[c].astype(np.int64) for c in cols]
        return {
            tuple(key if isinstance(key, tuple) else (key,)): int(v)
            for key, v in df.groupby(keys, sort=True).size().items()
        }

    if counts(eq_classes, eq_by) != counts(index_public, by):
        raise ReleaseCheckError(
            "equivalence classes do not cover the released series: "
            f"{len(eq_classes)} rows for {n_released} released series, or the per-"
            "duration-class counts differ"
        )
    if "pseudonym" in eq_classes.columns:
        eq_cls = eq_classes.set_index("pseudonym")["class_length"]
        same = eq_cls.index.is_unique and set(eq_cls.index) == idx_set
        if same:
            same = bool(
                np.array_equal(
                    eq_cls.reindex(dur.index).to_numpy(dtype=np.int64),
                    dur.to_numpy(dtype=np.int64),
                )
            )
        if not same:
            raise ReleaseCheckError(
                "equivalence classes do not cover the released series: pseudonyms or class "
                "lengths of the equivalence-class table differ from the index"
            )
    eq_sizes = eq_classes.groupby(eq_by + ["eq_class"], sort=True).size()
    if len(eq_sizes) and eq_sizes.min() < fk:
        small = eq_sizes[eq_sizes < fk]
        raise ReleaseCheckError(
            f"Mondrian equivalence class under fk={fk}: {len(small)} class(es), smallest "
            f"{int(small.min())} members"
        )
    result["equivalence_classes"] = {
        "fk": int(fk),
        "classes": len(eq_sizes),
        "smallest": int(eq_sizes.min()) if len(eq_sizes) else None,
    }
    log.info("release check passed: %d series, %d rows", n_released, len(rows))
    return result
