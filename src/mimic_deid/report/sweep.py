"""The sweep summary: one row per (dk, fk, heuristic, method) with what it cost and protected."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from mimic_deid.deid.methods import REGISTRY
from mimic_deid.evaluate.pairing import pairs_of, release_name
from mimic_deid.evaluate.utility import SETTINGS as UTILITY_SETTINGS
from mimic_deid.report.shaping import utility_keys

__all__ = [
    "OVERVIEW_COLUMNS",
    "auc_change_negative_pct",
    "sweep_overview",
    "sweep_row",
    "sweep_table",
    "utility_columns",
]


def _pct(fraction: float | None) -> float:
    return float("nan") if fraction is None else 100.0 * float(fraction)


def _disagreement_stats(per_series: pd.DataFrame, prefix: str) -> dict[str, float]:
    first = per_series["first_disagreement"].to_numpy(dtype=np.float64)
    auc = per_series["auc"].to_numpy(dtype=np.float64)
    defined = first[~np.isnan(first)]
    return {
        f"{prefix}auc_median": float(np.nanmedian(auc)) if np.isfinite(auc).any() else np.nan,
        f"{prefix}first_disagreement_median": float(np.median(defined)) if defined.size else np.nan,
        f"{prefix}exact_reconstruction_pct": float(100.0 * np.mean(defined == 0))
        if defined.size
        else np.nan,
    }


def _class_min_auc(per_series: pd.DataFrame, prefix: str) -> dict[str, float]:
    """Algorithm 2's return value per class (the smallest Δ-AUC), summarised over classes."""
    if not {"group", "class_length"} <= set(per_series.columns):
        return {f"{prefix}auc_class_min_lowest": np.nan, f"{prefix}auc_class_min_median": np.nan}
    mins = per_series.groupby(["group", "class_length"], sort=True)["auc"].min().dropna()
    return {
        f"{prefix}auc_class_min_lowest": float(mins.min()) if len(mins) else np.nan,
        f"{prefix}auc_class_min_median": float(mins.median()) if len(mins) else np.nan,
    }


def auc_change_negative_pct(release: pd.DataFrame, baseline: pd.DataFrame) -> float:
    """Percent of series whose Δ-AUC is lower on the release than on the original data.

    The baseline has no key; its rows and the release's follow the same duration classes and,
    within a class, the same key order (both come from ``class_arrays`` of one
    ``duration.parquet``), which is checked through the (group, class_length) columns. NaN
    when they do not line up (or lack those columns) or no series has both values.
    """
    cols = ["group", "class_length"]
    if not (set(cols) <= set(release.columns) and set(cols) <= set(baseline.columns)):
        return float("nan")
    if len(release) != len(baseline) or not release[cols].reset_index(drop=True).equals(
        baseline[cols].reset_index(drop=True)
    ):
        return float("nan")
    change = release["auc"].to_numpy(dtype=np.float64) - baseline["auc"].to_numpy(dtype=np.float64)
    defined = change[~np.isnan(change)]
    return float(100.0 * np.mean(defined < 0)) if defined.size else float("nan")


def sweep_row(
    point: Mapping,
    duration: Mapping,
    method_summary: Mapping,
    disagreement: pd.DataFrame,
    baseline: pd.DataFrame,
    linkage: Mapping,
    utility: pd.DataFrame,
    utility_cross: str = "shipped",
    checks: Mapping[str, Mapping] | None = None,
    pairing: pd.DataFrame | None = None,
    withhold_refused: bool = False,
) -> dict:
    """One row of the sweep summary.

    Parameters
    ----------
    point : mapping
        dk, fk, heuristic, method (the sweep point's wildcards).
    duration, method_summary, linkage : mapping
        ``duration.json``, ``method.json`` and ``privacy/linkage.json`` of the point.
    disagreement, baseline : DataFrame
        Per-series disagreement of the release and of the original data.
    utility : DataFrame
        ``utility/trust_settings.csv`` of the point's ``ihm48`` release.
    utility_cross : str
        Config ``evaluate.utility.cross`` (:func:`utility_columns`).
    checks : mapping, optional
        Release name (``stays``, ``ihm48``) -> the point's verdict, ``verdict``: its
        ``card.json`` (the workflow: the final verdict, the check's unless a pairing refuses the
        release) or its ``check.json``; a column ``verdict_<release>`` (``certified`` or
        ``refused: <claim and figures>``).
    pairing : DataFrame, optional
        The sweep's ``cross_release.csv``: ``pairing_stays_ihm48_pct`` (the point's ``ihm48``
        series paired with its ``stays`` series) and ``pairing_methods_max_pct`` (the highest
        rate of the point's releases with any release of another point of the sweep).
    withhold_refused : bool, default False
        Leave empty (NaN) every cell computed from a refused release's values (``checks``
        required): a refused ``stays`` release's perturbation and disagreement measures
        (the method's summary, the disagreement of its series), a refused ``ihm48`` release's
        utility (every setting but the owner's ``orig_orig`` baseline). Its verdict, attack
        figures and the duration classes stay: they are its card's (issue 45.3).

    Returns
    -------
    dict
        Column name to value. Rates are percentages in ``_pct`` columns: e.g.
        ``release_top1_pct_err5`` is the seed attacker's top-1 re-identification rate (%) on
        the release when its features are known up to a 5 % relative error; ``strong_`` columns
        are the strong attacker's (every released variable's features and observed-hour
        counts), ``strong_bound_top1_pct`` the bound the release promises it
        (:func:`mimic_deid.evaluate.privacy.linkage_bound`).
    """
    row: dict = {
        "dk": point["dk"],
        "fk": point["fk"],
        "heuristic": point["heuristic"],
        "method": point["method"],
        "series_moved": duration["moved"],
        "series_suppressed": duration["suppressed"],
        "records_lost_mean": duration["records_lost_mean"],
        "records_lost_pct_mean": duration["records_lost_pct_mean"],
    }
    # the cells computed from the stays release's values (withheld when it is refused)
    from_values = {
        "unfeasibility_mean": method_summary["unfeasibility_mean"],
        "distortion_mean": method_summary["distortion_mean"],
        "iterations_mean": method_summary["iterations_mean"],
        **method_summary.get("sweep", {}),  # the method's own columns (its summarise hook)
    }
    row.update(from_values)
    row.update(_disagreement_stats(baseline, "baseline_"))
    row.update(part := _disagreement_stats(disagreement, ""))
    from_values |= part
    row.update(_class_min_auc(baseline, "baseline_"))
    row.update(part := _class_min_auc(disagreement, ""))
    from_values |= part
    row["auc_change_negative_pct"] = auc_change_negative_pct(disagreement, baseline)
    from_values["auc_change_negative_pct"] = row["auc_change_negative_pct"]
    if "auc_alt" in disagreement.columns:  # seed §6.3: the attacker with other features
        alt = disagreement[["auc_alt", "first_disagreement_alt"]].rename(
            columns={"auc_alt": "auc", "first_disagreement_alt": "first_disagreement"}
        )
        row.update(part := _disagreement_stats(alt, "alt_"))
        from_values |= part
    row.update(_linkage_columns(linkage))
    for release, check in (checks or {}).items():
        row[f"verdict_{release}"] = check["verdict"]
    if pairing is not None:
        row.update(_pairing_columns(point, pairing))
    utility_cells = utility_columns(utility, utility_cross)
    row.update(utility_cells)
    if withhold_refused:
        if checks is None:
            raise ValueError("sweep_row: withhold_refused needs the point's checks")
        _withhold(row, checks, list(from_values), list(utility_cells))
    return row


def _withhold(
    row: dict, checks: Mapping[str, Mapping], stays_values: list[str], utility_cells: list[str]
) -> None:
    """Empty, in ``row``, the cells computed from a refused release's values: the ``stays``
    release's perturbation and disagreement, the ``ihm48`` release's utility (every setting
    but the owner's ``orig_orig`` baseline)."""
    withheld = {
        "stays": stays_values,
        "ihm48": [c for c in utility_cells if "orig_orig" not in c and c != "utility_cross"],
    }
    for release, columns in withheld.items():
        if release in checks and str(checks[release]["verdict"]).strip() != "certified":
            row.update(dict.fromkeys(columns, float("nan")))


def _linkage_columns(linkage: Mapping) -> dict[str, object]:
    """Every attacker's top-1 and top-5 rates per error and side (``linkage.json``), and the
    strong attacker's bound and interval."""
    row: dict[str, object] = {}
    attacks = {"": linkage, "strong_": linkage.get("strong", {})}
    if "alternative" in linkage:
        attacks["alt_"] = linkage["alternative"]
    for prefix, attack in attacks.items():
        for side in ("baseline", "release"):
            by_error = sorted(attack.get(side, {}).items(), key=lambda kv: float(kv[0]))
            for error, stats in by_error:
                tag = f"err{float(error) * 100:g}"
                for k in ("top1", "top5"):
                    row[f"{prefix}{side}_{k}_pct_{tag}"] = _pct(stats[k])
    if "bound" in linkage:
        row["strong_bound_top1_pct"] = _pct(linkage["bound"]["top1"])
        row["strong_within_bound"] = bool(linkage["bound"]["within"])
        low, high = linkage["bound"].get("strong_top1_ci", (float("nan"),) * 2)
        row["strong_top1_ci_low_pct"] = _pct(low)
        row["strong_top1_ci_high_pct"] = _pct(high)
    return row


def _pairing_columns(point: Mapping, pairing: pd.DataFrame) -> dict[str, float]:
    names = {release: release_name(release, point) for release in ("stays", "ihm48")}
    own, other = [], []
    for row in pairs_of(pairing, names["stays"]) + pairs_of(pairing, names["ihm48"]):
        (own if row["other"] in names.values() else other).append(100.0 * row["rate"])
    return {
        "pairing_stays_ihm48_pct": max(own) if own else float("nan"),
        "pairing_methods_max_pct": max(other) if other else float("nan"),
    }


def _setting_name(train_side: str, test_side: str, variables: str) -> str:
    """``orig_orig_all``, ``orig_orig_released``; the other settings see the released
    variables only, so their names need no qualifier: ``deid_deid``, ``orig_deid``..."""
    name = f"{train_side}_{test_side}"
    return f"{name}_{variables}" if name == "orig_orig" else name


def utility_columns(utility: pd.DataFrame, cross: str = "shipped") -> dict[str, object]:
    """The sweep summary's test-split utility columns of one point's utility table.

    Parameters
    ----------
    utility : DataFrame
        ``utility/trust_settings.csv`` (:func:`mimic_deid.evaluate.utility.utility_table`;
        missing key columns completed by :func:`~mimic_deid.report.shaping.utility_keys`).
    cross : str
        Config ``evaluate.utility.cross``: the original side the headline columns use.

    Returns
    -------
    dict
        ``utility_cross``; for each metric ``m`` (``roc_auc``, ``pr_auc``) the data owner's
        baseline ``test_m_orig_orig_all``, the headline columns ``test_m_orig_orig_released``,
        ``test_m_deid_deid``, ``test_m_orig_deid``, ``test_m_deid_orig`` (original side
        ``cross``), and both original sides of the settings they change,
        ``test_m_{setting}_shipped`` / ``_gap_filled``. A task other than mortality puts its
        name after the metric (``test_roc_auc_long_stay_deid_deid``). ``delta_roc_auc`` and
        ``delta_roc_auc_all``: the mortality test ROC-AUC of a model trained on the release
        (de-id./orig.) minus that of one trained on the original data on the released
        variables (the cost of the perturbation) or on all variables (the data owner's whole
        cost, withholding included), all scored on original test data.
    """
    test = utility_keys(utility[utility["split"].astype(str) == "test"])
    out: dict[str, object] = {"utility_cross": cross}
    for row in test.itertuples(index=False):
        task = "" if row.task == "mortality" else f"{row.task}_"
        name = _setting_name(row.train_data, row.test_data, row.variables)
        for metric in ("roc_auc", "pr_auc"):
            value = float(getattr(row, metric))
            if row.variables == "all":
                out[f"test_{metric}_{task}{name}"] = value
                continue
            if name != "deid_deid":
                out[f"test_{metric}_{task}{name}_{row.cross}"] = value
            if row.cross == cross:
                out[f"test_{metric}_{task}{name}"] = value
    for delta, variables in (("delta_roc_auc", "released"), ("delta_roc_auc_all", "all")):
        train_orig = f"test_roc_auc_orig_orig_{variables}"
        if {"test_roc_auc_deid_orig", train_orig} <= out.keys():
            out[delta] = out["test_roc_auc_deid_orig"] - out[train_orig]
    return out


def sweep_table(
    points: Sequence[Mapping],
    duration: Mapping[int, Mapping],
    baseline: Mapping[int, pd.DataFrame],
    method_summary: Sequence[Mapping],
    disagreement: Sequence[pd.DataFrame],
    linkage: Sequence[Mapping],
    utility: Sequence[pd.DataFrame],
    utility_cross: str = "shipped",
    checks: Sequence[Mapping[str, Mapping]] | None = None,
    pairing: pd.DataFrame | None = None,
    withhold_refused: bool = False,
) -> pd.DataFrame:
    """:func:`sweep_row` of every sweep point, in sweep order.

    ``duration`` and ``baseline`` are keyed by dk; the other sequences follow ``points``;
    ``utility_cross`` is config ``evaluate.utility.cross``; ``checks`` (one mapping of release
    name to ``check.json`` per point) adds the verdicts; ``withhold_refused`` empties the cells
    computed from a refused release's values (:func:`sweep_row`; the workflow's public
    ``sweep_summary.csv``).
    """
    rows = [
        sweep_row(
            point,
            duration[point["dk"]],
            method_summary[i],
            disagreement[i],
            baseline[point["dk"]],
            linkage[i],
            utility[i],
            utility_cross,
            checks[i] if checks is not None else None,
            pairing,
            withhold_refused,
        )
        for i, point in enumerate(points)
    ]
    return pd.DataFrame(rows)


#: The columns a reader compares across sweep points: (sweep summary column, heading). The
#: full table, with every attacker error and both sides, is the CSV the report links.
OVERVIEW_COLUMNS: tuple[tuple[str, str], ...] = (
    ("method", "method"),
    ("dk", "dk"),
    ("fk", "fk"),
    ("heuristic", "heuristic"),
    ("records_lost_pct_mean", "records lost %"),
    ("unfeasibility_mean", "unfeasibility"),
    ("distortion_mean", "distortion"),
    ("release_top1_pct_err0", "re-id top-1 % (seed attacker)"),
    ("strong_release_top1_pct_err0", "re-id top-1 % (strong attacker)"),
    ("strong_top1_ci_low_pct", "strong top-1 95 % interval, low %"),
    ("strong_top1_ci_high_pct", "strong top-1 95 % interval, high %"),
    ("strong_bound_top1_pct", "promised bound 1/k %"),
    ("verdict_stays", "verdict (stays)"),
    ("verdict_ihm48", "verdict (ihm48)"),
    ("pairing_stays_ihm48_pct", "stays-ihm48 pairing %"),
    ("pairing_methods_max_pct", "pairing with another point's release, max %"),
    # the methods' own columns, each once (two methods may share one)
    *{c: cap for m in REGISTRY.values() for c, cap in (m.sweep_columns or {}).items()}.items(),
    ("test_roc_auc_orig_orig_all", "ROC-AUC orig./orig., all variables"),
    ("test_roc_auc_orig_orig_released", "ROC-AUC orig./orig., released variables"),
    *(
        (f"test_roc_auc_{train}_{test}", f"ROC-AUC {label}")
        for label, train, test in UTILITY_SETTINGS[1:]
    ),
    ("utility_cross", "original side of the cross settings"),
    ("delta_roc_auc", "ΔROC-AUC de-id./orig. against orig./orig., released variables"),
    ("delta_roc_auc_all", "ΔROC-AUC de-id./orig. against orig./orig., all variables"),
    ("test_roc_auc_long_stay_orig_orig_all", "stay > 7 d: ROC-AUC orig./orig., all variables"),
    ("test_roc_auc_long_stay_deid_deid", "stay > 7 d: ROC-AUC de-id. / de-id."),
    ("test_roc_auc_long_stay_deid_orig", "stay > 7 d: ROC-AUC de-id. / orig."),
)


#: Overview columns drawn from the ``stays`` release's values (its perturbation), and from
#: the ``ihm48`` release's (its utility): left empty for a refused release when the overview
#: shows certified releases only (:func:`sweep_overview`).
_STAYS_VALUES = ("unfeasibility_mean", "distortion_mean")
_IHM48_PREFIXES = ("test_roc_auc_", "test_pr_auc_", "delta_roc_auc")


def _certified(verdicts: pd.Series) -> np.ndarray:
    return verdicts.astype(str).str.strip().eq("certified").to_numpy()


def sweep_overview(
    summary: pd.DataFrame, digits: int = 3, certified_only: bool = False
) -> pd.DataFrame:
    """The few columns of the sweep summary a reader compares, rounded for the HTML page.

    Parameters
    ----------
    summary : DataFrame, one row per sweep point
        :func:`sweep_table`'s output (or the CSV it was written to).
    digits : int, default 3
        Significant digits of the numbers shown.
    certified_only : bool, default False
        Leave empty (NaN) the cells drawn from a refused release's values: the perturbation
        measures of a point whose ``stays`` release is refused (``verdict_stays``), the
        utility of a point whose ``ihm48`` release is refused (``verdict_ihm48``). The
        attack figures and verdicts stay: they are the release card's (the public report).

    Returns
    -------
    DataFrame
        The :data:`OVERVIEW_COLUMNS` present in ``summary``, renamed to their headings (the
        ``ΔROC-AUC`` columns come finished from :func:`utility_columns`).
    """
    frame = summary.copy()
    if certified_only:
        method_columns = {c for m in REGISTRY.values() for c in (m.sweep_columns or {})}
        for verdict, columns in (
            ("verdict_stays", [*_STAYS_VALUES, *method_columns]),
            ("verdict_ihm48", [c for c in frame.columns if c.startswith(_IHM48_PREFIXES)]),
        ):
            if verdict in frame.columns:
                refused = ~_certified(frame[verdict])
                for column in (c for c in columns if c in frame.columns):
                    frame[column] = frame[column].where(~refused)
    present = [(c, h) for c, h in OVERVIEW_COLUMNS if c in frame.columns]
    out = frame[[c for c, _ in present]].rename(columns=dict(present))
    numeric = out.select_dtypes("number").columns.difference(["dk", "fk"])
    out[numeric] = out[numeric].map(lambda v: float(f"{v:.{digits}g}") if pd.notna(v) else v)
    return out
