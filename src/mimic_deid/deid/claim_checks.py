"""The privacy claims of a published release, one function per claim (the claims are listed
in :mod:`mimic_deid.deid.check`, which runs them: :func:`~mimic_deid.deid.check.check_release`,
:func:`~mimic_deid.deid.check.check_sweep_point`). Each takes the public tables it needs and
returns its figures, or raises ``ReleaseCheckError`` naming the claim and the breach."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from mimic_deid.core.claims import FORBIDDEN_COLUMNS, FORBIDDEN_SUBSTRINGS, identifier_columns
from mimic_deid.core.errors import ReleaseCheckError, require_columns
from mimic_deid.deid.duration import LABELS
from mimic_deid.deid.plausible import PlausibleValues
from mimic_deid.pipeline.cohort import STAY_DEMOGRAPHICS

__all__ = [
    "check_accounting",
    "check_coverage",
    "check_demographics",
    "check_duration_k",
    "check_feature_k",
    "check_group_outcomes",
    "check_hours",
    "check_missing_withheld",
    "check_no_identifiers",
    "check_outcomes",
    "check_plausible_values",
    "check_pseudonyms",
    "check_released_variables",
]


def check_no_identifiers(
    series_public: pd.DataFrame,
    index_public: pd.DataFrame,
    forbidden_columns: Iterable[str] = FORBIDDEN_COLUMNS,
    forbidden_substrings: Iterable[str] = FORBIDDEN_SUBSTRINGS,
    demographics: Iterable[str] = (),
) -> dict:
    """Claim 1: no identifier, timestamp or age in either public table.

    ``demographics``: the index's published demographic columns, left to claim 15
    (:func:`check_demographics`), which checks their values against their hierarchies.
    """
    demographics = set(demographics)
    problems = identifier_columns(
        series_public, "series", forbidden_columns, forbidden_substrings
    ) + identifier_columns(
        index_public.drop(columns=[c for c in index_public.columns if c in demographics]),
        "index",
        forbidden_columns,
        forbidden_substrings,
    )
    if problems:
        raise ReleaseCheckError(
            "identifier, timestamp or age in the release: " + "; ".join(problems)
        )
    return {
        "series_columns": [str(c) for c in series_public.columns],
        "index_columns": [str(c) for c in index_public.columns],
    }


def check_pseudonyms(series_public: pd.DataFrame, index_public: pd.DataFrame) -> dict:
    """Claim 2: one unique pseudonym per released series, the same in series and index."""
    idx_p = index_public["pseudonym"]
    if idx_p.isna().any():
        raise ReleaseCheckError("pseudonyms: the index has a missing pseudonym")
    n_rep = int(idx_p.duplicated().sum())
    if n_rep:
        raise ReleaseCheckError(f"pseudonyms: {n_rep} pseudonym(s) repeated in the index")
    ser_set = set(pd.unique(series_public["pseudonym"].dropna()))
    idx_set = set(idx_p)
    missing_in_series = bool(series_public["pseudonym"].isna().any())
    if ser_set != idx_set or missing_in_series:
        raise ReleaseCheckError(
            "pseudonyms differ between series and index: "
            f"{len(ser_set - idx_set)} only in series, {len(idx_set - ser_set)} only in index"
            + (", missing pseudonyms in series" if missing_in_series else "")
        )
    return {"unique": len(idx_set)}


def check_accounting(index_public: pd.DataFrame, n_input: int, n_suppressed: int) -> dict:
    """Claim 3: every series that entered de-identification is released or suppressed."""
    n_released = len(index_public)
    if n_released + int(n_suppressed) != int(n_input):
        raise ReleaseCheckError(
            f"series lost uncounted: released {n_released} + suppressed {int(n_suppressed)} "
            f"!= input {int(n_input)}"
        )
    return {"input": int(n_input), "released": n_released, "suppressed": int(n_suppressed)}


def check_hours(series_public: pd.DataFrame, index_public: pd.DataFrame) -> dict:
    """Claim 4: each series has exactly the hours ``0 .. duration_class - 1``, once each."""
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
    return {"series": len(index_public), "rows": len(rows)}


def _size_figures(sizes: pd.Series) -> dict:
    """Number of classes and the smallest class size (None when there is no class)."""
    return {"classes": len(sizes), "smallest": int(sizes.min()) if len(sizes) else None}


def _class_keys(index_public: pd.DataFrame) -> list[str]:
    """Columns that name a published duration class: (split,) duration_class."""
    return ["split", "duration_class"] if "split" in index_public.columns else ["duration_class"]


def check_duration_k(index_public: pd.DataFrame, dk: int) -> dict:
    """Claim 5: every duration class (within its split, if the index has one) has >= dk series."""
    by = _class_keys(index_public)
    sizes = index_public.groupby(by, sort=True).size()
    if len(sizes) and sizes.min() < dk:
        small = sizes[sizes < dk]
        where = ", ".join(f"{key}: {int(v)}" for key, v in list(small.items())[:5])
        raise ReleaseCheckError(
            f"duration class under dk={dk}: {len(small)} class(es) with fewer series "
            f"(({', '.join(by)}): size: {where})"
        )
    return {"dk": int(dk), **_size_figures(sizes)}


def _eq_keys(index_public: pd.DataFrame, eq_classes: pd.DataFrame) -> list[str]:
    has_split = "split" in index_public.columns
    if has_split and "split" not in eq_classes.columns:
        raise ReleaseCheckError(
            "equivalence-class table: missing column 'split'; expected it because the release "
            "index has a 'split' column (equivalence classes are formed within each split)"
        )
    return ["split", "class_length"] if has_split else ["class_length"]


def check_coverage(index_public: pd.DataFrame, eq_classes: pd.DataFrame) -> None:
    """Claim 6: the equivalence classes cover exactly the released series of each class."""
    eq_by = _eq_keys(index_public, eq_classes)

    def counts(df: pd.DataFrame, cols: list[str]) -> dict[tuple, int]:
        keys = [df[c].astype(str) if c == "split" else df[c].astype(np.int64) for c in cols]
        return {
            tuple(key if isinstance(key, tuple) else (key,)): int(v)
            for key, v in df.groupby(keys, sort=True).size().items()
        }

    if counts(eq_classes, eq_by) != counts(index_public, _class_keys(index_public)):
        raise ReleaseCheckError(
            "equivalence classes do not cover the released series: "
            f"{len(eq_classes)} rows for {len(index_public)} released series, or the per-"
            "duration-class counts differ"
        )
    if "pseudonym" in eq_classes.columns:
        dur = index_public.set_index("pseudonym")["duration_class"]
        eq_cls = eq_classes.set_index("pseudonym")["class_length"]
        same = eq_cls.index.is_unique and set(eq_cls.index) == set(dur.index)
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


def check_feature_k(index_public: pd.DataFrame, eq_classes: pd.DataFrame, fk: int) -> dict:
    """Claim 7: every Mondrian equivalence class has at least ``fk`` series."""
    eq_by = _eq_keys(index_public, eq_classes)
    eq_sizes = eq_classes.groupby(eq_by + ["eq_class"], sort=True).size()
    if len(eq_sizes) and eq_sizes.min() < fk:
        small = eq_sizes[eq_sizes < fk]
        raise ReleaseCheckError(
            f"Mondrian equivalence class under fk={fk}: {len(small)} class(es), smallest "
            f"{int(small.min())} members"
        )
    return {"fk": int(fk), **_size_figures(eq_sizes)}


def check_demographics(
    index_public: pd.DataFrame,
    eq_classes: pd.DataFrame,
    publishable: Mapping[str, Iterable[str]],
    fk: int,
) -> dict:
    """Claim 15: published demographics are generalised and k-anonymous with the classes.

    Parameters
    ----------
    index_public : DataFrame
        The release index: ``pseudonym``, (``split``,) ``duration_class`` and the demographic
        columns.
    eq_classes : DataFrame
        ``pseudonym``, (``split``,) ``class_length``, ``eq_class``.
    publishable : mapping of str to iterable of str
        Per published demographic, every label it may show
        (:meth:`~mimic_deid.deid.demographics.DemographicCodes.publishable`).
    fk : int

    Returns
    -------
    dict
        ``columns``, ``cells`` and ``smallest_cell``.
    """
    columns = list(publishable)
    require_columns(index_public, columns, "release index", ReleaseCheckError)
    extra = [c for c in index_public.columns if c in STAY_DEMOGRAPHICS and c not in publishable]
    if extra:
        raise ReleaseCheckError(
            f"demographics: the index publishes {extra}, which the release does not protect "
            f"(release.demographics: {columns})"
        )
    for col in columns:
        bad = ~index_public[col].astype(str).isin(set(publishable[col]))
        if bad.any():
            raise ReleaseCheckError(
                f"demographics: {int(bad.sum())} value(s) of index.{col} are not labels of its "
                "hierarchy at a publishable level (values are never shown)"
            )
    by = _class_keys(index_public) + columns
    sizes = index_public.groupby(by, sort=True).size()
    if len(sizes) and sizes.min() < fk:
        raise ReleaseCheckError(
            f"demographics: {int((sizes < fk).sum())} (duration class x demographics) cell(s) "
            f"under fk={fk}, smallest {int(sizes.min())} series"
        )
    if "pseudonym" in eq_classes.columns and columns:
        eq = eq_classes.merge(index_public[["pseudonym", *columns]], on="pseudonym")
        spread = eq.groupby(_eq_keys(index_public, eq_classes) + ["eq_class"])[columns].nunique()
        mixed = int((spread.max(axis=1) > 1).sum())
        if mixed:
            raise ReleaseCheckError(
                f"demographics: {mixed} Mondrian equivalence class(es) span more than one "
                "demographic cell"
            )
    return {"columns": columns, **_size_figures(sizes)}


def check_released_variables(series_public: pd.DataFrame, variables: Iterable[str]) -> dict:
    """Claim 8: the series publish only protected variables."""
    published = [str(c) for c in series_public.columns if c not in ("pseudonym", "hour")]
    extra = [c for c in published if c not in set(variables)]
    if extra:
        raise ReleaseCheckError(
            f"unprotected variable(s) published: {extra}; only variables whose features are "
            "de-identified may be released (config release/variables)"
        )
    return {"published": published}


def check_missing_withheld(series_public: pd.DataFrame, index_public: pd.DataFrame) -> dict:
    """Claim 9: no missing-hours pattern: per class, a variable is complete or null throughout."""
    variables = [c for c in series_public.columns if c not in ("pseudonym", "hour")]
    by = _class_keys(index_public)
    cls = index_public.set_index("pseudonym")[by].reindex(series_public["pseudonym"])
    nulls = series_public[variables].isna().to_numpy()
    frame = pd.DataFrame(nulls, columns=variables)
    for col in by:
        frame[col] = cls[col].to_numpy()
    share = frame.groupby(by, sort=True)[variables].mean()
    mixed = (share > 0) & (share < 1)
    if mixed.to_numpy().any():
        where = [f"{v} in class {k}" for k, row in mixed.iterrows() for v in variables if row[v]]
        raise ReleaseCheckError(
            f"missing-hours pattern published: {len(where)} (class, variable) pair(s) mix "
            f"observed and null hours, e.g. {', '.join(where[:3])}"
        )
    return {"classes": len(share), "variables": len(variables)}


def _number(x: float) -> str:
    return f"{x:g}"


def check_plausible_values(series_public: pd.DataFrame, plausible: PlausibleValues) -> dict:
    """Claim 16: every published value is plausible (valid range, value set, static).

    Parameters
    ----------
    series_public : DataFrame
        ``pseudonym``, ``hour`` and the published variables (NaN = null, allowed).
    plausible : PlausibleValues
        The valid range, value set and staticness of every published variable
        (``config/variables.yaml``).

    Returns
    -------
    dict
        ``variables`` and ``values`` (non-null values) checked, the ``discrete`` and ``static``
        variables among them.

    Raises
    ------
    ReleaseCheckError
        One message naming every variable at fault and how many of its values (or series)
        are implausible; never a value.
    """
    variables = [str(c) for c in series_public.columns if c not in ("pseudonym", "hour")]
    unknown = [v for v in variables if v not in plausible.dims]
    if unknown:
        raise ReleaseCheckError(
            f"plausible values: published variable(s) {unknown} have no valid range; expected "
            "each to be a variable of the variables file (config 'variables')"
        )
    problems, checked = [], 0
    for var in variables:
        d = plausible.index(var)
        x = series_public[var].to_numpy(dtype=np.float64)
        observed = ~np.isnan(x)
        checked += int(observed.sum())
        faults = []
        low, high = plausible.low[d], plausible.high[d]
        outside = observed & ((x < low) | (x > high))
        if outside.any():
            faults.append(
                f"{int(outside.sum())} value(s) outside its valid range "
                f"[{_number(low)}, {_number(high)}]"
            )
        members = plausible.values[d]
        if members is not None:
            strange = observed & ~outside & ~np.isin(x, np.asarray(members))
            if strange.any():
                faults.append(
                    f"{int(strange.sum())} value(s) in range but not in its value set "
                    f"{{{', '.join(_number(v) for v in members)}}}"
                )
        if plausible.static[d]:
            spread = series_public.groupby("pseudonym", sort=True)[var].agg(["min", "max"])
            changing = int((spread["max"] > spread["min"]).sum())
            if changing:
                faults.append(
                    f"{changing} series whose value changes within the series (a static "
                    "variable publishes one value per series)"
                )
        if faults:
            problems.append(f"'{var}': " + ", ".join(faults))
    if problems:
        raise ReleaseCheckError("plausible values: " + "; ".join(problems))
    return {
        "variables": len(variables),
        "values": checked,
        "discrete": [v for v in variables if plausible.values[plausible.index(v)] is not None],
        "static": [v for v in variables if plausible.static[plausible.index(v)]],
    }


def check_outcomes(index_public: pd.DataFrame, labelled: bool, ell: int) -> dict:
    """Claim 10: labels only where needed, then every label of
    :data:`~mimic_deid.deid.duration.LABELS`, each with >= ``ell`` distinct outcomes per class."""
    public = list(LABELS.values())
    published = [c for c in public if c in index_public.columns]
    if published and not labelled:
        raise ReleaseCheckError(
            f"outcome label: this release must not publish it ({', '.join(published)})"
        )
    if not labelled:
        return {"label": False}
    if missing := [c for c in public if c not in published]:
        raise ReleaseCheckError(
            f"outcome label: this release must publish it ({', '.join(missing)})"
        )
    distinct = index_public.groupby(_class_keys(index_public), sort=True)[public].nunique()
    for column in public:
        poor = distinct[distinct[column] < ell]
        if len(poor):
            raise ReleaseCheckError(
                f"outcome disclosed: {len(poor)} class(es) with fewer than l={ell} distinct "
                f"values of '{column}'"
            )
    return {"label": True, "labels": public, "l": int(ell), "classes": len(distinct)}


def check_group_outcomes(
    index_public: pd.DataFrame, groups: pd.DataFrame, ell: int, what: str
) -> dict:
    """Claim 10, recoverable groups: every group holds >= ``ell`` distinct values of each label.

    Parameters
    ----------
    index_public : DataFrame
        ``pseudonym`` and the label columns of :data:`~mimic_deid.deid.duration.LABELS`.
    groups : DataFrame
        ``pseudonym`` and one column per grouping (e.g. ``eq_class``; ``k_group_<var>``, -1 =
        not grouped); each column's groups are checked on their own.
    ell : int
    what : str
        What the groups are, for the message (``"equivalence class"``, ``"k-group"``).

    Returns
    -------
    dict
        ``l`` and the number of groups checked per grouping column.
    """
    labels = [c for c in LABELS.values() if c in index_public.columns]
    frame = groups.merge(index_public[["pseudonym", *labels]], on="pseudonym", how="inner")
    checked = {}
    for column in [c for c in groups.columns if c != "pseudonym"]:
        grouped = frame[frame[column] >= 0]
        distinct = grouped.groupby(column, sort=True)[labels].nunique()
        for label in labels:
            poor = int((distinct[label] < ell).sum())
            if poor:
                raise ReleaseCheckError(
                    f"outcome disclosed: {poor} {what}(s) ({column}) with fewer than l={ell} "
                    f"distinct values of '{label}'"
                )
        checked[column] = len(distinct)
    return {"l": int(ell), "groups": checked}
