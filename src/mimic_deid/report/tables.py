"""Tables of the report: trust settings (seed Tables 6.3/6.4), optimiser (6.1/6.2), sweep.

Every function takes already-loaded objects and returns a ``DataFrame`` ready to print;
``to_markdown`` renders one as a GitHub-style pipe table without extra dependencies and
``write_table`` writes the CSV and Markdown copies atomically. Numbers are printed as
:mod:`mimic_deid.core.numbers` says (rates in percent with one decimal, AUCs with three), the
one place that decides a quantity's format; :func:`round_table` applies it by column kind.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.core.atomic import write_text
from mimic_deid.core.errors import require_columns
from mimic_deid.core.numbers import DECIMALS, NOT_AVAILABLE, auc_ci, percent, percent_cell
from mimic_deid.core.numbers import finite as _finite
from mimic_deid.evaluate.utility import SEED_TRUST_SETTINGS
from mimic_deid.evaluate.utility import SETTINGS as UTILITY_SETTINGS
from mimic_deid.report.shaping import utility_rows

#: Trust settings in the seed's column order: the labels ``evaluate.utility.utility_table``
#: writes in its ``setting`` column (training data / test data), printed as they are.
SETTINGS: tuple[str, ...] = tuple(label for label, _, _ in UTILITY_SETTINGS)
SETTING_LABELS: dict[str, str] = {label: label for label in SETTINGS}
#: Metric column prefix -> printed row label.
METRICS: dict[str, str] = {"roc_auc": "ROC-AUC", "pr_auc": "PR-AUC"}
UTILITY_COLUMNS = ("setting", "split", "roc_auc", "roc_auc_lo", "roc_auc_hi")
#: The data owner's baseline column: orig. / orig. on every series variable.
ALL_VARIABLES = "orig. / orig., all variables"
#: Rows of a trust-settings table per metric: the original side as recorded, gap-filled like
#: the release (``evaluate.utility.cross``), and the seed's figure.
TRUST_ROWS: dict[str, str] = {"shipped": "shipped", "gap_filled": "like-for-like", "seed": "seed"}

OPTIMISER_LABELS: dict[str, str] = {
    "duration": "Duration",
    "series": "Series",
    "unfeasibility": "Avg. cum. unfeasibility",
    "distortion": "Avg. cum. distortion",
    "iterations": "Avg. iterations",
}
ALL_CLASSES = "All classes"


def trust_settings_table(
    utility: pd.DataFrame, split: str, task: str = "mortality"
) -> pd.DataFrame:
    """Seed Table 6.3 (``split="train"``) or 6.4 (``split="test"``), shipped and like-for-like
    beside the seed's figures, with the data owner's baseline in front.

    Parameters
    ----------
    utility : DataFrame
        One row per (task, variables, cross, setting, split) with ``roc_auc``, ``pr_auc`` and
        their ``_lo`` / ``_hi`` bootstrap 95 % bounds
        (:func:`mimic_deid.evaluate.utility.utility_table`; missing key columns completed by
        :func:`mimic_deid.report.shaping.utility_keys`). ``split`` is the evaluated split.
    split : str
        The evaluated split to tabulate.
    task : str
        The prediction task (:data:`mimic_deid.evaluate.utility.TASKS`).

    Returns
    -------
    DataFrame
        Index ``"<metric>, <row>"`` for metric ``ROC-AUC``, ``PR-AUC`` and row
        :data:`TRUST_ROWS` (shipped, like-for-like, seed), named ``"Training / test"``;
        columns :data:`ALL_VARIABLES` (orig. / orig. on every series variable) and the four
        settings labelled as in the seed (``"orig. / orig."`` ...); cells
        ``"0.851 [0.830, 0.872]"`` (:func:`mimic_deid.core.numbers.auc_ci`), the seed's
        ``"0.850"``, or ``"n/a"``. The seed rows are left
        out for a task the seed does not have (every task but mortality).

    Raises
    ------
    InputDataError
        A required column is missing, or a row appears twice.
    """
    rows = utility_rows(utility, split, task)
    by_key = {
        (str(r["variables"]), str(r["cross"]), str(r["setting"])): r for _, r in rows.iterrows()
    }
    columns = [(ALL_VARIABLES, ("all", SETTINGS[0]))] + [
        (SETTING_LABELS[s], ("released", s)) for s in SETTINGS
    ]
    index, cells = [], {label: [] for label, _ in columns}
    for metric, metric_label in METRICS.items():
        seed = SEED_TRUST_SETTINGS.get((split, metric)) if task == "mortality" else None
        for row_key, row_label in TRUST_ROWS.items():
            if row_key == "seed" and seed is None:  # a task the seed does not have
                continue
            index.append(f"{metric_label}, {row_label}")
            for label, (variables, setting) in columns:
                if row_key == "seed":
                    known = seed is not None and variables == "released"
                    value = seed[SETTINGS.index(setting)] if known else None
                    cells[label].append(auc_ci(value))
                    continue
                row = by_key.get((variables, row_key, setting))
                if row is None or metric not in row.index:
                    cells[label].append(NOT_AVAILABLE)
                else:
                    cells[label].append(
                        auc_ci(row[metric], row.get(f"{metric}_lo"), row.get(f"{metric}_hi"))
                    )
    table = pd.DataFrame(cells, index=pd.Index(index, name="Training / test"))
    table.columns.name = None
    return table


def optimiser_table(summary: pd.DataFrame, digits: int = 2) -> pd.DataFrame:
    """Seed Tables 6.1 / 6.2: format an optimiser summary for printing.

    ``summary`` has columns ``duration`` (int, or ``"All classes"``), ``unfeasibility``,
    ``distortion`` and optionally ``iterations``. Rows are sorted by duration with
    ``"All classes"`` last; numbers become strings with ``digits`` decimals. Columns are
    ``Duration``, (``Series``,) ``Avg. cum. unfeasibility``, ``Avg. cum. distortion`` (,
    ``Avg. iterations``).
    """
    require_columns(summary, ["duration", "unfeasibility", "distortion"], "optimiser table")
    cols = [c for c in OPTIMISER_LABELS if c in summary.columns]
    df = summary[cols].copy()
    is_all = df["duration"].astype(str) == ALL_CLASSES
    numeric = pd.to_numeric(df["duration"].where(~is_all), errors="coerce")
    order = np.lexsort((numeric.fillna(np.inf).to_numpy(), is_all.to_numpy()))
    df = df.iloc[order].reset_index(drop=True)
    out = pd.DataFrame(
        {OPTIMISER_LABELS["duration"]: [_format_duration(v) for v in df["duration"]]}
    )
    for c in cols[1:]:
        places = 0 if c == "series" else digits
        out[OPTIMISER_LABELS[c]] = [
            NOT_AVAILABLE if _finite(v) is None else f"{float(v):.{places}f}" for v in df[c]
        ]
    return out


def _format_duration(value: Any) -> str:
    if isinstance(value, Integral):
        return str(int(value))
    if isinstance(value, Real) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _cell(value: Any, float_format: str | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return NOT_AVAILABLE
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, Integral):
        return str(int(value))
    if isinstance(value, Real):
        v = float(value)
        if math.isnan(v):
            return NOT_AVAILABLE
        return _plain_number(v) if float_format is None else float_format.format(v)
    if value is pd.NA or value is pd.NaT:
        return NOT_AVAILABLE
    text = str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _is_number_column(col: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype)


def _use_index(df: pd.DataFrame, index: bool | None) -> bool:
    if index is not None:
        return index
    return not (isinstance(df.index, pd.RangeIndex) and df.index.name is None)


def to_markdown(
    df: pd.DataFrame, index: bool | None = None, float_format: str | None = "{:.2f}"
) -> str:
    """Render ``df`` as a pipe table (GitHub-flavoured Markdown).

    Parameters
    ----------
    index : bool or None
        Include the index as the first column; None (default) includes it unless it is a plain
        unnamed ``RangeIndex``. The index name is its header.
    float_format : str or None
        ``str.format`` pattern for float cells (None: the value as it is, without a
        trailing ``.0``). Missing values print as ``n/a``; ``|`` and newlines in text are
        escaped.

    Numeric columns are right-aligned. Ends with a newline.
    """
    use_index = _use_index(df, index)
    headers = [str(c) for c in df.columns]
    columns = [df.iloc[:, i] for i in range(df.shape[1])]
    rows = [[_cell(v, float_format) for v in col] for col in columns]
    right = [_is_number_column(col) for col in columns]
    if use_index:
        headers = ["" if df.index.name is None else str(df.index.name), *headers]
        rows = [[_cell(v, float_format) for v in df.index], *rows]
        right = [False, *right]
    headers = [_cell(h, float_format) for h in headers]
    n_rows = len(df)
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---:" if r else "---" for r in right) + "|",
    ]
    for i in range(n_rows):
        lines.append("| " + " | ".join(col[i] for col in rows) + " |")
    return "\n".join(lines) + "\n"


def to_csv_text(df: pd.DataFrame, index: bool | None = None) -> str:
    """CSV text of ``df`` (``\\n`` line ends; index included as in ``to_markdown``)."""
    return df.to_csv(index=_use_index(df, index), lineterminator="\n")


#: Decimals a report table shows by column kind (:func:`round_table`) are
#: :data:`mimic_deid.core.numbers.DECIMALS`; a column of values all below 0.001 in magnitude
#: and p-values keep 2 significant digits instead.
PERCENT_MARKERS = ("%", "pct", "percent")
P_VALUE_NAMES = ("p", "p_value", "pvalue", "p-value")


def column_kind(name: Any, values: pd.Series) -> str:
    """The kind of a report-table column, which decides its rounding.

    ``count`` (integer dtype, or floats that are all whole), ``percent`` (name holds ``%``,
    ``pct`` or ``percent``), ``p_value`` (name ``p`` / ``p_value``), ``small`` (every finite
    value below 0.001 in magnitude), ``measure`` (any other number) or ``text``.
    """
    if pd.api.types.is_bool_dtype(values.dtype) or not _is_number_column(values):
        return "text"
    if pd.api.types.is_integer_dtype(values.dtype):
        return "count"
    label = str(name).lower()
    finite = values.to_numpy(dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if label in P_VALUE_NAMES:
        return "p_value"
    if any(m in label for m in PERCENT_MARKERS):
        return "percent"
    if finite.size and np.all(finite == np.round(finite)):
        return "count"
    if finite.size and np.all(np.abs(finite) < 1e-3):
        return "small"
    return "measure"


def _round_measure(values: np.ndarray) -> np.ndarray:
    """3 significant digits of the column's largest value, at most :data:`DECIMALS` places,
    never fewer than 0 (integer parts are kept whole)."""
    finite = np.abs(values[np.isfinite(values)])
    top = float(finite.max()) if finite.size else 0.0
    places = DECIMALS["measure"] if top == 0 else 3 - int(np.floor(np.log10(top))) - 1
    return np.round(values, int(np.clip(places, 0, DECIMALS["measure"])))


def _significant(values: np.ndarray, digits: int = 2) -> np.ndarray:
    return np.array([float(f"{v:.{digits}g}") if np.isfinite(v) else v for v in values])


def _pct_ci(figures: Mapping | None, rate: str) -> str:
    """``"12.3 [10.1, 14.6] %"`` of an attacker's rate (fractions) and its interval."""
    if not figures or figures.get(rate) is None:
        return NOT_AVAILABLE
    low, high = figures.get(f"{rate}_ci") or (None, None)
    return percent_cell(figures[rate], low, high)


def card_table(cards: Sequence[Mapping]) -> pd.DataFrame:
    """One row per release card (``card.json``, :mod:`mimic_deid.evaluate.card`): the release,
    its method, k and l, each attacker's exact-knowledge top-1 and top-5 re-identification
    rate with its 95 % interval, the bound 1/k and the verdict."""
    if not cards:
        return pd.DataFrame({"note": ["no release card in this run"]})
    rows = []
    for card in cards:
        attackers = card["attackers"]
        bound = card.get("bound") or {}
        rows.append(
            {
                "release": card["release"],
                "method": card["point"]["method"],
                "dk": card["dk"],
                "k": card["k"],
                "l": card["l"] if card["l"] is not None else "-",
                "seed top-1": _pct_ci(attackers.get("seed"), "top1"),
                "strong top-1": _pct_ci(attackers.get("strong"), "top1"),
                "strong top-5": _pct_ci(attackers.get("strong"), "top5"),
                "bound 1/k": percent(bound.get("top1")),
                "verdict": card["verdict"],
            }
        )
    return pd.DataFrame(rows)


def cross_release_table(pairing: pd.DataFrame) -> pd.DataFrame:
    """The cross-release pairing (``cross_release.csv``) for reading: the two releases, the
    targets and candidates, the pairing rate with its 95 % interval and chance, in percent."""
    if pairing.empty:
        return pd.DataFrame({"note": ["no two releases of one population in this run"]})
    return pd.DataFrame(
        {
            "release A (targets)": pairing["release_a"],
            "release B (candidates)": pairing["release_b"],
            "targets": pairing["targets"],
            "candidates": pairing["candidates"],
            "paired": [
                percent_cell(r, lo, hi)
                for r, lo, hi in zip(
                    pairing["rate"], pairing["rate_lo"], pairing["rate_hi"], strict=True
                )
            ],
            "chance": [percent(c) for c in pairing["chance"]],
        }
    )


def round_table(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every number rounded for reading, by :func:`column_kind`.

    Counts are whole numbers, percentages get 1 decimal, p-values and columns of values all
    below 0.001 keep 2 significant digits, any other measure 3 significant digits of the
    column's largest value with at most 3 decimals (8.621641516378359 -> 8.62, 0.8512 ->
    0.851, 80183.2 -> 80183). Text columns (already formatted cells such as
    ``"0.85 [0.83, 0.87]"``) and the index are left as they are; missing values stay missing.
    """
    out = df.copy()
    for i, name in enumerate(out.columns):
        col = out.iloc[:, i]
        kind = column_kind(name, col)
        if kind in ("text", "count"):
            if kind == "count" and not pd.api.types.is_integer_dtype(col.dtype):
                whole = col.round()
                if whole.notna().all() and np.isfinite(whole.to_numpy(dtype=float)).all():
                    out.iloc[:, i] = whole.astype(np.int64)
            continue
        values = col.to_numpy(dtype=np.float64)
        if kind == "percent":
            rounded = np.round(values, DECIMALS["percent"])
        elif kind in ("p_value", "small"):
            rounded = _significant(values)
        else:
            rounded = _round_measure(values)
        out.isetitem(i, pd.Series(rounded, index=out.index, name=name))
    return out


def _plain_number(value: float) -> str:
    """A rounded float as written by :func:`write_table`'s Markdown (no trailing ``.0``)."""
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def write_table(
    df: pd.DataFrame,
    csv_path: str | os.PathLike,
    md_path: str | os.PathLike | None = None,
    index: bool | None = None,
    float_format: str | None = None,
) -> None:
    """Write ``df`` as CSV and, if ``md_path`` is given, as Markdown; atomic.

    Both are rounded for reading by :func:`round_table` (the report's tables are read by
    people; the full-precision figures are in the stage's own artefacts, e.g.
    ``duration.json`` and ``sweep_summary.csv``). ``float_format`` formats the Markdown's
    floats; None writes the rounded value as it is (``8.62``, ``1.2e-05``).
    """
    rounded = round_table(df)
    write_text(to_csv_text(rounded, index), csv_path)
    if md_path is not None:
        write_text(to_markdown(rounded, index=index, float_format=float_format), md_path)
