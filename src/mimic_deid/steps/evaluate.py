"""Evaluation steps: disagreement and linkage attack (privacy), mortality utility."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mimic_deid.atomic import write_json, write_parquet
from mimic_deid.deid.classes import KEY, dims_of, iter_class_arrays, trim_to_classes
from mimic_deid.deid.features import compute_features, feature_spec
from mimic_deid.errors import InputDataError
from mimic_deid.logs import Progress, get_logger
from mimic_deid.steps.deid import class_rng, load_classes

logger = get_logger(__name__)


def _disagreement_frames(result, cls_length: int, keys: np.ndarray | None = None):
    from mimic_deid.evaluate.disagreement import summarise_curves

    per_series = pd.DataFrame(
        {
            "class_length": np.int32(cls_length),
            "auc": result.auc,
            "first_threshold": result.first_threshold,
            "first_disagreement": result.first_disagreement,
        }
    )
    if keys is not None:
        per_series.insert(0, "pseudonym", keys)
    summary = summarise_curves(result)
    summary.insert(0, "class_length", np.int32(cls_length))
    return per_series, summary


def privacy_baseline_step(
    series_path: str,
    classes_path: str,
    features: dict[str, list[str]],
    standardise: bool,
    per_series_out: str,
    summary_out: str,
) -> None:
    """Disagreement of the original series against themselves, per duration class.

    The per-series table carries no key: the baseline is compared with releases through
    distributions and class summaries only.
    """
    from mimic_deid.evaluate.disagreement import disagreement

    trimmed, dims = load_classes(series_path, classes_path)
    spec = feature_spec(features, dims)
    per_series, summaries = [], []
    classes = list(iter_class_arrays(trimmed, dims))  # views of one array: no copy
    progress = Progress("baseline disagreement classes", len(classes), logger)
    for cls in classes:
        F = compute_features(cls.X, spec)
        result = disagreement(F, F, cls.X, cls.X, standardise=standardise)
        ps, summ = _disagreement_frames(result, cls.length)
        ps.insert(0, "group", cls.group)
        summ.insert(0, "group", cls.group)
        per_series.append(ps)
        summaries.append(summ)
        progress.update()
    progress.close()
    write_parquet(pd.concat(per_series, ignore_index=True), per_series_out)
    write_parquet(pd.concat(summaries, ignore_index=True), summary_out)


def released_by_key(
    release_series: pd.DataFrame, pseudonyms: pd.DataFrame, classes: pd.DataFrame
) -> pd.DataFrame:
    """The released series keyed back to private ids, laid out like ``trim_to_classes``."""
    released = release_series.merge(pseudonyms, on="pseudonym", how="inner", validate="many_to_one")
    released = released.drop(columns=["pseudonym"]).merge(
        classes[[KEY, "group", "class_length"]], on=KEY, how="inner", validate="many_to_one"
    )
    front = ["group", "class_length", KEY, "hour"]
    released = released[front + [c for c in released.columns if c not in front]]
    return released.sort_values(front, kind="stable").reset_index(drop=True)


def privacy_step(
    series_path: str,
    classes_path: str,
    release_series_path: str,
    pseudonyms_path: str,
    features: dict[str, list[str]],
    standardise: bool,
    linkage_errors: list[float],
    seed: int,
    per_series_out: str,
    summary_out: str,
    linkage_out: str,
) -> None:
    """Disagreement (original vs released) and linkage attack per duration class."""
    from mimic_deid.evaluate.disagreement import disagreement
    from mimic_deid.evaluate.linkage import linkage_attack

    series = pd.read_parquet(series_path)
    classes = pd.read_parquet(classes_path)
    dims = dims_of(series)
    spec = feature_spec(features, dims)
    pseudonyms = pd.read_parquet(pseudonyms_path)
    original = trim_to_classes(series, classes)
    released = released_by_key(pd.read_parquet(release_series_path), pseudonyms, classes)
    to_pseudonym = pseudonyms.set_index(KEY)["pseudonym"]
    per_series, summaries = [], []
    linkage: dict[str, list[dict]] = {"baseline": [], "release": []}
    orig_classes = list(iter_class_arrays(original, dims))  # views of one array: no copy
    progress = Progress("privacy evaluation classes", len(orig_classes), logger)
    for orig, rel in zip(orig_classes, iter_class_arrays(released, dims), strict=True):
        if orig.length != rel.length or not np.array_equal(orig.keys, rel.keys):
            raise InputDataError(
                f"{release_series_path}: the released series of class {orig.group}/"
                f"{orig.length} h do not match the original duration classes"
            )
        F_orig = compute_features(orig.X, spec)
        F_rel = compute_features(rel.X, spec)
        result = disagreement(F_orig, F_rel, orig.X, rel.X, standardise=standardise)
        ps, summ = _disagreement_frames(result, orig.length, to_pseudonym.loc[orig.keys].to_numpy())
        ps.insert(1, "group", orig.group)
        summ.insert(0, "group", orig.group)
        per_series.append(ps)
        summaries.append(summ)
        for side, (F_r, X_r) in {"baseline": (F_orig, orig.X), "release": (F_rel, rel.X)}.items():
            # The same estimation noise for both sides, so before/after are paired.
            rng = class_rng(seed, "linkage", orig.group, orig.length)
            linkage[side].append(
                linkage_attack(F_orig, F_r, orig.X, X_r, errors=tuple(linkage_errors), rng=rng)
            )
        progress.update()
    progress.close()
    write_parquet(pd.concat(per_series, ignore_index=True), per_series_out)
    write_parquet(pd.concat(summaries, ignore_index=True), summary_out)
    write_json(linkage_summary(linkage), linkage_out)


def linkage_summary(per_class: dict[str, list[dict]]) -> dict:
    """Class-size-weighted linkage results per side, keyed by the estimation error.

    ``{side: {"<error>": {top1, top5, reconstruction_error, n}}, "details": {side: ...}}``.
    """
    from mimic_deid.evaluate.linkage import aggregate_linkage

    out: dict = {"details": {}}
    for side, results in per_class.items():
        agg = aggregate_linkage(results)
        out["details"][side] = agg
        out[side] = {
            f"{row['error']:g}": {
                "top1": row.get("top1"),
                "top5": row.get("top5"),
                "reconstruction_error": row["reconstruction_error"],
                "n": row["n_targets"],
            }
            for row in agg["by_error"]
        }
    return out


def utility_step(
    series_path: str,
    meta_path: str,
    release_series_path: str,
    release_index_path: str,
    Cs: list[float],
    n_bootstrap: int,
    seed: int,
    table_out: str,
) -> None:
    """Mortality prediction on original and de-identified ``ihm48`` under four trust settings."""
    from mimic_deid.atomic import atomic_path
    from mimic_deid.evaluate.benchmark_features import datasets_from_long
    from mimic_deid.evaluate.utility import trust_settings

    series = pd.read_parquet(series_path)
    dims = dims_of(series)
    original = datasets_from_long(
        series, pd.read_parquet(meta_path), KEY, dims, label_col="mortality", length_col="length"
    )
    deidentified = datasets_from_long(
        pd.read_parquet(release_series_path),
        pd.read_parquet(release_index_path),
        "pseudonym",
        dims,
        label_col="label",
        length_col="duration_class",
    )
    table = trust_settings(original, deidentified, Cs=Cs, seed=seed, n_bootstrap=n_bootstrap)
    for _, row in table.iterrows():
        logger.info("%s on %s: ROC-AUC %.3f", row["setting"], row["split"], row["roc_auc"])
    with atomic_path(table_out, ".csv") as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")
