"""Report steps: the sweep summary table and the report's figures, tables and index page."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mimic_deid.atomic import atomic_path, read_json, write_text
from mimic_deid.evaluate.utility import SETTINGS as UTILITY_SETTINGS
from mimic_deid.logs import get_logger

logger = get_logger(__name__)


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
    for setting, train_side, test_side in UTILITY_SETTINGS:
        if setting in test.index:
            name = f"{train_side}_{test_side}"
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


def _closest_class(summary: pd.DataFrame, hours: int) -> int | None:
    """The class length in ``summary`` closest to ``hours`` (the seed shows 30 h and 9 h)."""
    lengths = np.unique(summary["class_length"].to_numpy()) if len(summary) else np.array([])
    if lengths.size == 0:
        return None
    return int(lengths[np.argmin(np.abs(lengths - hours))])


def _dim_features(values: np.ndarray) -> dict[str, float]:
    from mimic_deid.deid.features import dimension_stats

    stats = dimension_stats(values[None, :])
    return {k: float(v[0]) for k, v in stats.items()}


def ga_examples(inputs: dict, features: dict[str, list[str]]) -> list[dict] | None:
    """The highest- and lowest-distortion heart-rate series of the genetic optimiser.

    Returns two dicts (original, perturbed, features) or None when no genetic point ran.
    """
    if "ga_perturbed" not in inputs:
        return None
    from mimic_deid.deid.classes import KEY, trim_to_classes

    per_series = pd.read_parquet(inputs["ga_optimiser"])
    targets = pd.read_parquet(inputs["ga_targets"]).set_index(KEY)
    variable = next((v for v in features if "mean" in features[v] and "var" in features[v]), None)
    if variable is None:
        return None
    stat_cols = [f"target_{variable}_{s}" for s in ("min", "max", "mean", "var")]
    usable = targets[stat_cols].notna().all(axis=1)
    per_series = per_series[per_series[KEY].isin(targets.index[usable])]
    per_series = per_series.sort_values(["distortion", KEY], kind="stable")
    if per_series.empty:
        return None
    chosen = [int(per_series[KEY].iloc[-1]), int(per_series[KEY].iloc[0])]
    series = pd.read_parquet(inputs["ga_series"])
    series = series[series[KEY].isin(chosen)]
    original = trim_to_classes(series, pd.read_parquet(inputs["ga_classes"]))
    perturbed = pd.read_parquet(inputs["ga_perturbed"])
    out = []
    for key in chosen:
        orig = original.loc[original[KEY] == key, variable].to_numpy(dtype=np.float64)
        pert = perturbed.loc[perturbed[KEY] == key, variable].to_numpy(dtype=np.float64)
        target = {
            s: float(targets.loc[key, f"target_{variable}_{s}"])
            for s in ("min", "max", "mean", "var")
        }
        out.append(
            {
                "original": orig,
                "perturbed": pert,
                "variable": variable,
                "features": {
                    "original": _dim_features(orig),
                    "target": target,
                    "achieved": _dim_features(pert),
                },
            }
        )
    return out


def report_step(
    inputs: dict,
    point: dict,
    genetic_point: dict | None,
    features: dict[str, list[str]],
    index_out: str,
    figures_out: list[str],
    tables_out: list[str],
) -> None:
    """Regenerate the seed's figures and tables from this run and write the index page."""
    from pathlib import Path

    from mimic_deid.report import figures as fig
    from mimic_deid.report.html import write_index
    from mimic_deid.report.tables import optimiser_table, trust_settings_table, write_table

    figure = {Path(p).stem: p for p in figures_out}
    table = {Path(p).stem: p for p in tables_out}
    meta = pd.read_parquet(inputs["meta"])
    classes = pd.read_parquet(inputs["classes"]).set_index("icustay_id").loc[meta["icustay_id"]]
    lengths = meta["length"].to_numpy()
    class_lengths = classes["class_length"].to_numpy()
    fig.plot_duration_classes(lengths, class_lengths, figure["duration_classes"])
    fig.plot_records_lost(lengths, class_lengths, figure["records_lost"])

    base_summary = pd.read_parquet(inputs["baseline_summary"])
    summary = pd.read_parquet(inputs["summary"])
    main_class = _closest_class(summary, 30)
    small_class = _closest_class(summary, 9)
    fig.plot_summary_disagreement(
        base_summary, summary, main_class, figure["summary_disagreement_mean"], stats=("mean",)
    )
    fig.plot_summary_disagreement(
        base_summary, summary, small_class, figure["summary_disagreement_min"], stats=("min",)
    )
    fig.plot_summary_disagreement(
        base_summary,
        summary,
        main_class,
        figure["summary_disagreement_normalised"],
        stats=("min", "mean", "max"),
        normalised=True,
    )
    fig.plot_first_disagreement_cdf(
        pd.read_parquet(inputs["baseline_series"]),
        pd.read_parquet(inputs["per_series"]),
        main_class,
        figure["first_disagreement_cdf"],
    )
    fig.plot_linkage(read_json(inputs["linkage"]), figure["linkage"])
    utility = pd.read_csv(inputs["utility"])
    fig.plot_trust_settings(utility, figure["trust_settings"])

    from mimic_deid.variables import load_variables

    units = {v.name: (v.label, v.unit) for v in load_variables(inputs["variables"])}
    examples = ga_examples(inputs, features) or []
    for name, example in zip(
        ("ga_example_high", "ga_example_low"), examples + [None, None], strict=False
    ):
        if example is None:
            fig.plot_ga_example(
                np.array([]), np.array([]), {}, figure[name], "no genetic optimiser run", ""
            )
            continue
        fig.plot_ga_example(
            example["original"],
            example["perturbed"],
            example["features"],
            figure[name],
            *units.get(example["variable"], (example["variable"], "")),
        )

    for kind in ("adhoc", "genetic"):
        key = f"tuning_{kind}"
        data = (
            optimiser_table(pd.read_csv(inputs[key]))
            if key in inputs
            else pd.DataFrame({"note": [f"no {kind} optimiser configured"]})
        )
        write_table(
            data, table[f"optimiser_{kind}"], Path(table[f"optimiser_{kind}"]).with_suffix(".md")
        )
    for split in ("train", "test"):
        path = table[f"trust_settings_{split}"]
        write_table(trust_settings_table(utility, split), path, Path(path).with_suffix(".md"))

    write_index(
        index_out,
        "mimic-deid report",
        _sections(index_out, figure, table, point, main_class, small_class),
    )


def _rel(index_out: str, path: str) -> str:
    import os

    return os.path.relpath(path, os.path.dirname(index_out))


def _sections(index_out, figure, table, point, main_class, small_class) -> list[dict]:
    label = f"dk={point['dk']}, fk={point['fk']}, {point['heuristic']} heuristic, optimiser {point['opt']}"

    def fig_item(name, caption):
        return {"kind": "figure", "path": _rel(index_out, figure[name]), "caption": caption}

    def table_item(name, caption):
        return {"kind": "table", "path": _rel(index_out, table[name]), "caption": caption}

    return [
        {
            "title": "Duration classes",
            "text": f"Release 'stays', {label}.",
            "items": [
                fig_item(
                    "duration_classes",
                    "Length-of-stay classes before and after duration k-classes (seed Fig. 6.1).",
                ),
                fig_item(
                    "records_lost",
                    "Hours trimmed from the start of each series to join a duration class.",
                ),
            ],
        },
        {
            "title": "Constraint optimisation",
            "items": [
                table_item(
                    "optimiser_adhoc", "Ad-hoc optimiser on the tuning series (seed Table 6.1)."
                ),
                table_item(
                    "optimiser_genetic", "Genetic optimiser on the tuning series (seed Table 6.2)."
                ),
                fig_item(
                    "ga_example_high",
                    "Genetic optimiser: the series with the highest distortion (seed Fig. 6.2).",
                ),
                fig_item(
                    "ga_example_low",
                    "Genetic optimiser: the series with the lowest distortion (seed Fig. 6.3).",
                ),
            ],
        },
        {
            "title": "Disagreement",
            "items": [
                fig_item(
                    "summary_disagreement_mean",
                    f"Mean disagreement curve, class of {main_class} h, before and after (seed Fig. 6.4).",
                ),
                fig_item(
                    "summary_disagreement_min",
                    f"Minimum disagreement curve, class of {small_class} h (seed Fig. 6.5).",
                ),
                fig_item(
                    "summary_disagreement_normalised",
                    f"Summary disagreement plot, normalised, class of {main_class} h (seed Fig. 5.4).",
                ),
                fig_item(
                    "first_disagreement_cdf",
                    f"First-disagreement CDF, class of {main_class} h (seed Fig. 6.6).",
                ),
            ],
        },
        {
            "title": "Linkage attack",
            "items": [
                fig_item(
                    "linkage",
                    "Re-identification rate and reconstruction error against the attacker's estimation error.",
                )
            ],
        },
        {
            "title": "Utility: in-hospital mortality",
            "items": [
                fig_item(
                    "trust_settings",
                    "ROC-AUC and PR-AUC with 95 % bootstrap intervals under four trust settings.",
                ),
                table_item("trust_settings_train", "Training set (seed Table 6.3)."),
                table_item("trust_settings_test", "Test set (seed Table 6.4)."),
            ],
        },
        {
            "title": "Sweep",
            "items": [
                {
                    "kind": "table",
                    "path": "sweep_summary.csv",
                    "caption": "One row per sweep point.",
                }
            ],
        },
    ]


def tuning_grid_step(labels: list[str], tables: list[str], summary_out: str) -> None:
    """One row per genetic tuning-grid point: its parameters and "All classes" results.

    Rows are sorted by unfeasibility, then distortion: the seed chose the parameters that
    minimised both (6.2).
    """
    from mimic_deid.config import parse_optimizer_label

    rows = []
    for label, path in zip(labels, tables, strict=True):
        table = pd.read_csv(path)
        overall = table[table["duration"].astype(str) == "All classes"].iloc[0]
        _, params = parse_optimizer_label(label)
        rows.append(
            {
                "optimizer": label,
                **params,
                "unfeasibility": float(overall["unfeasibility"]),
                "distortion": float(overall["distortion"]),
                "iterations": float(overall["iterations"]),
            }
        )
    summary = pd.DataFrame(rows).sort_values(["unfeasibility", "distortion"], kind="stable")
    with atomic_path(summary_out, ".csv") as tmp:
        summary.to_csv(tmp, index=False, float_format="%.6g")
    best = summary.iloc[0]
    logger.info("tuning grid: %d points; best %s", len(summary), best["optimizer"])
