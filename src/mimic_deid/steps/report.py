"""Report steps: the sweep summary table and the report's figures, tables and index page."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mimic_deid.atomic import atomic_path, read_json, write_text
from mimic_deid.logs import get_logger

logger = get_logger(__name__)

SETTINGS = ("orig/orig", "deid/deid", "orig/deid", "deid/orig")


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


def sweep_row(
    point: dict,
    duration: dict,
    optimiser: dict,
    disagreement: pd.DataFrame,
    baseline: pd.DataFrame,
    linkage: dict,
    utility: pd.DataFrame,
) -> dict:
    """One row of the sweep summary: what a sweep point cost and what it protected."""
    row: dict = {
        "dk": point["dk"],
        "fk": point["fk"],
        "heuristic": point["heuristic"],
        "optimizer": point["opt"],
        "series_moved": duration["moved"],
        "series_suppressed": duration["suppressed"],
        "records_lost_mean": duration["records_lost_mean"],
        "records_lost_pct_mean": duration["records_lost_pct_mean"],
        "unfeasibility_mean": optimiser["unfeasibility_mean"],
        "distortion_mean": optimiser["distortion_mean"],
        "iterations_mean": optimiser["iterations_mean"],
    }
    row.update(_disagreement_stats(baseline, "baseline_"))
    row.update(_disagreement_stats(disagreement, ""))
    for side in ("baseline", "release"):
        for error, stats in sorted(linkage.get(side, {}).items(), key=lambda kv: float(kv[0])):
            tag = f"{float(error) * 100:g}pct"
            row[f"{side}_top1_e{tag}"] = stats["top1"]
            row[f"{side}_top5_e{tag}"] = stats["top5"]
    test = utility[utility["split"] == "test"].set_index("setting")
    for setting in SETTINGS:
        if setting in test.index:
            name = setting.replace("/", "_")
            row[f"test_roc_auc_{name}"] = float(test.loc[setting, "roc_auc"])
            row[f"test_pr_auc_{name}"] = float(test.loc[setting, "pr_auc"])
    return row


def sweep_summary_step(
    points: list[dict], inputs: dict[str, list[str]], csv_out: str, md_out: str
) -> None:
    """Write one row per sweep point (CSV and Markdown)."""
    from mimic_deid.report.tables import to_markdown

    dks = sorted({p["dk"] for p in points}, key=lambda d: [q["dk"] for q in points].index(d))
    by_dk_duration = dict(zip(dks, inputs["duration"], strict=True))
    by_dk_baseline = dict(zip(dks, inputs["baseline"], strict=True))
    rows = []
    for i, point in enumerate(points):
        rows.append(
            sweep_row(
                point,
                read_json(by_dk_duration[point["dk"]]),
                read_json(inputs["optimiser"][i]),
                pd.read_parquet(inputs["disagreement"][i]),
                pd.read_parquet(by_dk_baseline[point["dk"]]),
                read_json(inputs["linkage"][i]),
                pd.read_csv(inputs["utility"][i]),
            )
        )
    table = pd.DataFrame(rows)
    with atomic_path(csv_out, ".csv") as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")
    write_text(to_markdown(table.round(4)), md_out)
    logger.info("sweep summary: %d points", len(table))
