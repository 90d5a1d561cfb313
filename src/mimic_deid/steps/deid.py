"""De-identification steps: duration classes, Mondrian targets, optimisation, release, check."""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd

from mimic_deid.atomic import write_json, write_parquet
from mimic_deid.config import parse_optimizer_label
from mimic_deid.deid.classes import (
    KEY,
    ClassArray,
    class_frame,
    dims_of,
    iter_class_arrays,
    trim_to_classes,
)
from mimic_deid.deid.duration import assign_duration_classes_grouped, duration_summary
from mimic_deid.deid.features import FeatureSpec, compute_features, feature_spec
from mimic_deid.errors import ConfigError
from mimic_deid.logs import Progress, get_logger

logger = get_logger(__name__)


def class_rng(seed: int, *parts: str | int) -> np.random.Generator:
    """A generator seeded by the master seed and a stable description of the work unit."""
    words = [int(seed)] + [zlib.crc32(p.encode()) if isinstance(p, str) else int(p) for p in parts]
    return np.random.default_rng(words)


def duration_step(
    meta_path: str, dk: int, group_by_split: bool, classes_out: str, summary_out: str
) -> None:
    """Assign every series of a release to a duration class of at least ``dk`` series."""
    meta = pd.read_parquet(meta_path).sort_values(KEY, kind="stable")
    lengths = meta["length"].to_numpy(dtype=np.int64)
    groups = meta["split"].to_numpy() if group_by_split else np.full(len(meta), "all")
    class_lengths = assign_duration_classes_grouped(lengths, groups, dk)
    classes = pd.DataFrame(
        {
            KEY: meta[KEY].to_numpy(dtype=np.int64),
            "group": groups.astype(str),
            "split": meta["split"].astype(str).to_numpy(),
            "length": lengths.astype(np.int32),
            "class_length": class_lengths.astype(np.int32),
        }
    )
    summary = {
        "dk": dk,
        "group_by_split": group_by_split,
        **duration_summary(lengths, class_lengths),
    }
    summary["groups"] = {
        str(g): duration_summary(lengths[groups == g], class_lengths[groups == g])
        for g in sorted(set(groups.tolist()))
    }
    logger.info(
        "dk=%d: %d series, %d moved, %d suppressed, %d classes",
        dk,
        summary["series_in"],
        summary["moved"],
        summary["suppressed"],
        summary["classes"],
    )
    write_parquet(classes, classes_out)
    write_json(summary, summary_out)


def load_classes(series_path: str, classes_path: str) -> tuple[pd.DataFrame, list[str]]:
    """The series trimmed to their duration classes, and the dimension names."""
    series = pd.read_parquet(series_path)
    dims = dims_of(series)
    return trim_to_classes(series, pd.read_parquet(classes_path)), dims


def mondrian_step(
    series_path: str,
    classes_path: str,
    features: dict[str, list[str]],
    fk: int,
    heuristic: str,
    targets_out: str,
    summary_out: str,
) -> None:
    """Mondrian equivalence classes and class-mean feature targets, per duration class."""
    from mimic_deid.deid.mondrian import class_targets, mondrian_partition

    trimmed, dims = load_classes(series_path, classes_path)
    spec = feature_spec(features, dims)
    frames, sizes = [], []
    offset = 0
    classes = list(iter_class_arrays(trimmed, dims))  # views of one array: no copy
    progress = Progress("mondrian duration classes", len(classes), logger)
    for cls in classes:
        n = len(cls.keys)
        if n < fk:
            raise ConfigError(
                f"parameter fk={fk} is larger than duration class of length {cls.length} h "
                f"(group {cls.group}) with {n} series; use fk <= dk"
            )
        F = compute_features(cls.X, spec)
        labels = mondrian_partition(F, fk, heuristic, X=cls.X if heuristic == "diversity" else None)
        T = class_targets(F, labels)
        frame = pd.DataFrame(
            {
                KEY: cls.keys,
                "group": cls.group,
                "class_length": np.int32(cls.length),
                "eq_class": labels.astype(np.int64) + offset,
            }
        )
        for j, name in enumerate(spec.names):
            frame[f"orig_{name}"] = F[:, j]
            frame[f"target_{name}"] = T[:, j]
        frames.append(frame)
        sizes.append(np.bincount(labels))
        offset += int(labels.max()) + 1
        progress.update()
    progress.close()
    targets = pd.concat(frames, ignore_index=True)
    all_sizes = np.concatenate(sizes) if sizes else np.zeros(0, dtype=np.int64)
    summary = {
        "fk": fk,
        "heuristic": heuristic,
        "features": list(spec.names),
        "duration_classes": len(frames),
        "equivalence_classes": int(all_sizes.size),
        "smallest_equivalence_class": int(all_sizes.min()) if all_sizes.size else 0,
        "mean_equivalence_class": float(all_sizes.mean()) if all_sizes.size else 0.0,
    }
    logger.info("fk=%d %s: %d equivalence classes", fk, heuristic, summary["equivalence_classes"])
    write_parquet(targets, targets_out)
    write_json(summary, summary_out)


def class_targets_array(targets: pd.DataFrame, cls: ClassArray, spec: FeatureSpec) -> np.ndarray:
    """The target matrix (n, m) of a class, rows in ``cls.keys`` order."""
    sub = targets.set_index(KEY).loc[cls.keys]
    return sub[[f"target_{name}" for name in spec.names]].to_numpy(dtype=np.float64)


def run_optimiser(
    optimizer: str, X: np.ndarray, T: np.ndarray, spec: FeatureSpec, rng: np.random.Generator
):
    """Run the optimiser named by label ``optimizer`` on one class; return its result."""
    name, params = parse_optimizer_label(optimizer)
    if name == "adhoc":
        from mimic_deid.deid.adhoc import optimise_adhoc

        return optimise_adhoc(
            X, T, spec, iterations=params["iterations"], noise_sd=params["noise_sd"], rng=rng
        )
    from mimic_deid.deid.genetic import GeneticParams, optimise_genetic

    return optimise_genetic(X, T, spec, GeneticParams.from_dict(params), rng=rng)


def _optimise_class(
    optimizer: str, X: np.ndarray, T: np.ndarray, spec: FeatureSpec, seed: int, group: str, L: int
):
    """One class's optimisation (a module-level function so worker processes can run it)."""
    return run_optimiser(optimizer, X, T, spec, class_rng(seed, optimizer, group, L))


def optimise_step(
    series_path: str,
    classes_path: str,
    targets_path: str,
    features: dict[str, list[str]],
    optimizer: str,
    seed: int,
    perturbed_out: str,
    per_series_out: str,
    summary_out: str,
    threads: int = 1,
) -> None:
    """Perturb every released series towards its Mondrian targets.

    Classes are independent and each has its own generator seeded from the master seed and
    the class, so running them in ``threads`` worker processes gives byte-identical output.
    """
    from concurrent.futures import ProcessPoolExecutor

    trimmed, dims = load_classes(series_path, classes_path)
    spec = feature_spec(features, dims)
    targets = pd.read_parquet(targets_path)
    classes = list(iter_class_arrays(trimmed, dims))
    progress = Progress(f"optimiser {optimizer}", len(classes), logger)
    jobs = [
        (
            optimizer,
            cls.X,
            class_targets_array(targets, cls, spec),
            spec,
            seed,
            cls.group,
            cls.length,
        )
        for cls in classes
    ]
    if threads > 1 and len(classes) > 1:
        # Largest classes first so the workers finish together; results keep class order.
        cost = [cls.X.shape[0] * cls.X.shape[1] for cls in classes]
        order = sorted(range(len(classes)), key=lambda i: -cost[i])
        results: list = [None] * len(classes)
        with ProcessPoolExecutor(max_workers=threads) as pool:
            futures = {i: pool.submit(_optimise_class, *jobs[i]) for i in order}
            for i in order:
                results[i] = futures[i].result()
                progress.update()
    else:
        results = []
        for job in jobs:
            results.append(_optimise_class(*job))
            progress.update()
    progress.close()

    perturbed, rows, per_class = [], [], []
    for cls, result in zip(classes, results, strict=True):
        perturbed.append(class_frame(cls, result.X, dims))
        rows.append(
            pd.DataFrame(
                {
                    KEY: cls.keys,
                    "group": cls.group,
                    "class_length": np.int32(cls.length),
                    "unfeasibility": result.unfeasibility,
                    "distortion": result.distortion,
                    "iterations": result.iterations,
                }
            )
        )
        per_class.append(
            {
                "group": cls.group,
                "class_length": cls.length,
                "series": len(cls.keys),
                "unfeasibility_mean": float(np.nanmean(result.unfeasibility)),
                "distortion_mean": float(np.nanmean(result.distortion)),
                "iterations_mean": float(np.mean(result.iterations)),
            }
        )
    per_series = pd.concat(rows, ignore_index=True)
    summary = {
        "optimizer": optimizer,
        "series": len(per_series),
        "unfeasibility_mean": float(per_series["unfeasibility"].mean()),
        "unfeasibility_sd": float(per_series["unfeasibility"].std(ddof=0)),
        "distortion_mean": float(per_series["distortion"].mean()),
        "distortion_sd": float(per_series["distortion"].std(ddof=0)),
        "iterations_mean": float(per_series["iterations"].mean()),
        "classes": per_class,
    }
    logger.info(
        "%s: unfeasibility %.3f, distortion %.3f per record",
        optimizer,
        summary["unfeasibility_mean"],
        summary["distortion_mean"],
    )
    write_parquet(pd.concat(perturbed, ignore_index=True), perturbed_out)
    write_parquet(per_series, per_series_out)
    write_json(summary, summary_out)


def release_step(
    perturbed_path: str,
    classes_path: str,
    meta_path: str,
    seed: int,
    salt: str,
    series_out: str,
    index_out: str,
    pseudonyms_out: str,
) -> None:
    """Replace identifiers with random per-release pseudonyms and write the public release.

    ``salt`` (the release path) makes the pseudonyms of two releases unrelated even with the
    same master seed.
    """
    from mimic_deid.deid.release import assemble_release, make_pseudonyms

    perturbed = pd.read_parquet(perturbed_path).drop(columns=["group", "class_length"])
    classes = pd.read_parquet(classes_path)
    meta = pd.read_parquet(meta_path)
    keys = np.sort(perturbed[KEY].unique())
    pseudonyms = pd.DataFrame(
        {KEY: keys, "pseudonym": make_pseudonyms(len(keys), class_rng(seed, "pseudonyms", salt))}
    )
    series_public, index_public = assemble_release(
        perturbed, classes, pseudonyms, labels=meta[[KEY, "mortality"]], dims=dims_of(perturbed)
    )
    logger.info("release: %d series, %d rows", len(index_public), len(series_public))
    write_parquet(series_public, series_out)
    write_parquet(index_public, index_out)
    write_parquet(pseudonyms, pseudonyms_out)


def check_step(
    series_path: str,
    index_path: str,
    classes_path: str,
    targets_path: str,
    pseudonyms_path: str,
    dk: int,
    fk: int,
    group_by_split: bool,
    check_out: str,
) -> None:
    """Verify every k-anonymity and no-identifier claim of a release; fail the run if not."""
    from mimic_deid.deid.release import check_release

    series_public = pd.read_parquet(series_path)
    index_public = pd.read_parquet(index_path)
    classes = pd.read_parquet(classes_path)
    targets = pd.read_parquet(targets_path)
    pseudonyms = pd.read_parquet(pseudonyms_path)
    eq = targets[[KEY, "group", "class_length", "eq_class"]].merge(pseudonyms, on=KEY)
    # Classes are counted within the de-identification group: the split for a release
    # de-identified per split, the whole release otherwise.
    index_for_check = index_public if group_by_split else index_public.drop(columns=["split"])
    eq_classes = (
        eq.rename(columns={"group": "split"}) if group_by_split else eq.drop(columns=["group"])
    )
    result = check_release(
        series_public,
        index_for_check,
        dk=dk,
        fk=fk,
        eq_classes=eq_classes.drop(columns=[KEY]),
        n_input=len(classes),
        n_suppressed=int((classes["class_length"] == 0).sum()),
    )
    logger.info("release check passed: %s", ", ".join(sorted(result)))
    write_json({"passed": True, "dk": dk, "fk": fk, "checks": result}, check_out)


def tuning_step(
    series_path: str,
    classes_path: str,
    features: dict[str, list[str]],
    optimizer: str,
    seed: int,
    table_out: str,
) -> None:
    """The seed's Tables 6.1/6.2: an optimiser on 20 complete series of 5 duration classes.

    Mondrian (k=5, range heuristic) runs on each whole class with the features of seed 6.2
    (height and weight excluded); the table has one row per class length and "All classes".
    """
    from mimic_deid.atomic import atomic_path
    from mimic_deid.deid.tuning import (
        optimiser_table,
        run_tuning,
        select_tuning_series,
        tuning_spec,
    )

    trimmed, dims = load_classes(series_path, classes_path)
    spec = tuning_spec(feature_spec(features, dims))
    classes = {cls.length: cls.X for cls in iter_class_arrays(trimmed, dims)}
    selection = select_tuning_series(classes, spec, rng=class_rng(seed, "tuning"))

    def optimise(X: np.ndarray, T: np.ndarray, s: FeatureSpec):
        return run_optimiser(optimizer, X, T, s, class_rng(seed, optimizer, "tuning", X.shape[1]))

    table = optimiser_table(run_tuning(selection, optimise), iterations=True)
    with atomic_path(table_out, ".csv") as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")
    logger.info("tuning table for %s: %d class lengths", optimizer, len(table) - 1)
