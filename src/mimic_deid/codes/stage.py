"""The ``codes`` workflow stage as library calls: one function per rule.

Each function takes DataFrames and parameters and returns tables or dicts; the scripts in
``workflow/scripts/codes_*.py`` read the inputs and write the outputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

import numpy as np
import pandas as pd

from mimic_deid.codes.data import (
    code_records,
    codes_at_level,
    diagnoses_with_ages,
    pair_records,
    sample_rows,
)
from mimic_deid.codes.gccens import cap_vector, cul_statistics, gccens
from mimic_deid.codes.hierarchy import AGE_90_PLUS, Hierarchy, age_hierarchy, icd9_hierarchy
from mimic_deid.codes.index import MultisetIndex
from mimic_deid.codes.lda import (
    ALIGNMENTS,
    Trajectories,
    check_k_anonymous,
    check_weights,
    mdav,
)
from mimic_deid.codes.workload import avg_relative_error, query_workload
from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.core.logs import get_logger
from mimic_deid.core.seeding import derive_rng
from mimic_deid.core.stage import Stage, artefacts
from mimic_deid.core.threads import map_tasks
from mimic_deid.sources.extract import EXTRACTION_TABLES, read_small_table
from mimic_deid.sources.tables import CODE_TABLES

__all__ = [
    "GCCENS_TABLE_COLUMNS",
    "REPORT_INPUTS",
    "STAGE",
    "TARGETS",
    "absent_codes",
    "check_codes_config",
    "gccens_runs",
    "gccens_table",
    "lda_table",
    "lda_trajectories",
    "read_source_tables",
    "restrict_codes",
    "sample_ids",
]

log = get_logger(__name__)

#: Columns of :func:`gccens_table` (also those of its empty table when the codes are absent).
GCCENS_TABLE_COLUMNS = (
    "table", "k", "cap", "mean", "sd", "median", "skewness", "modified_percent",
    "capped_percent", "censored_percent", "iterations",
)  # fmt: skip


def check_codes_config(cfg: Mapping) -> None:
    """Cross-field checks of config section ``codes`` (raises ``ConfigError``)."""
    lda = cfg["lda"]
    check_weights(lda["w_icd"], lda["w_age"], "codes/lda/w_icd + codes/lda/w_age")
    age_hierarchy(lda["age_min"], AGE_90_PLUS, lda["age_intervals"])
    for cap in cfg["gccens"]["caps"]:
        if cap != "max" and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
            raise ConfigError(
                f"config parameter 'codes/gccens/caps': caps must be integers >= 0 or 'max', "
                f"got {cap!r}"
            )


def read_source_tables(
    reader, admissions: pd.DataFrame, patients: pd.DataFrame
) -> tuple[pd.DataFrame, dict]:
    """DIAGNOSES_ICD from a source with each admission's age, and its counts.

    Parameters
    ----------
    reader : CsvSource or PostgresSource
        Anything with ``read_table(name)`` (:func:`mimic_deid.sources.open_source`).
    admissions, patients : DataFrame
        The raw extraction's ADMISSIONS and PATIENTS (the ages).

    Returns
    -------
    DataFrame, dict
        :func:`~mimic_deid.codes.data.diagnoses_with_ages` of the typed, key-checked table,
        and its counts with ``dictionary_codes``, the rows of D_ICD_DIAGNOSES (only counted:
        docs/codes.md).
    """
    diagnoses = read_small_table(reader, "diagnoses_icd").to_pandas()
    diag, counts = diagnoses_with_ages(diagnoses, admissions, patients)
    counts["dictionary_codes"] = read_small_table(reader, "d_icd_diagnoses").num_rows
    return diag, counts


def restrict_codes(diag: pd.DataFrame, codes: Sequence[str], level: str) -> pd.DataFrame:
    """The rows whose code (at ``level``) is one of ``codes``; all rows when ``codes`` is empty."""
    if not codes:
        return diag
    keep = codes_at_level(diag["icd9_code"], level).isin([str(c).upper() for c in codes])
    return diag.loc[keep.to_numpy()].reset_index(drop=True)


def absent_codes(
    diag: pd.DataFrame,
    sample: np.ndarray,
    unit: str,
    level: str,
    codes: Sequence[str],
    parameter: str,
    what: str,
) -> str | None:
    """The message when none of the configured ``codes`` occurs in the sample, else None.

    A comparator restricted to codes the sample does not hold has nothing to measure: that is
    a result of the data (reported in the log and as an empty table), not an error. A sample
    without any diagnosis row is left to :func:`~mimic_deid.codes.data.sample_rows`, which
    stops the job.

    Parameters
    ----------
    diag : DataFrame
        Every diagnosis row (not yet restricted to ``codes``).
    sample : ndarray of int64
        The cohort's SUBJECT_IDs or HADM_IDs (``unit``).
    codes : sequence of str
        The configured codes (empty: every code, never absent).
    parameter, what : str
        The config parameter naming the codes (``codes/gccens/codes``) and the method.
    """
    if not len(codes):
        return None
    col = {"subject": "subject_id", "admission": "hadm_id"}[unit]
    in_sample = np.isin(diag[col].to_numpy(np.int64), sample)
    if not in_sample.any():
        return None
    held = codes_at_level(diag.loc[in_sample, "icd9_code"], level)
    if held.isin([str(c).upper() for c in codes]).any():
        return None
    n = len(np.unique(sample))
    return (
        f"{what}: the configured codes {list(codes)} (config parameter '{parameter}') are absent "
        f"from the sample: the {n} cohort {unit}s have diagnosis rows, none with one of these "
        f"codes; {what} is not run and its table is empty"
    )


def sample_ids(cohort: pd.DataFrame, unit: str) -> np.ndarray:
    """SUBJECT_IDs or HADM_IDs of the released cohort (``cohort/stays.parquet``)."""
    col = {"subject": "subject_id", "admission": "hadm_id"}[unit]
    if col not in cohort.columns:
        raise InputDataError(f"cohort stays: missing column '{col}'")
    return np.unique(cohort[col].to_numpy(np.int64))


def gccens_runs(
    ks: Sequence[int], cap: int | str, caps: Sequence[int | str], k_caps: int
) -> list[tuple[str, int, int | str]]:
    """The rows of the GCCens table, ``(table, k, cap)``: seed Table 1 (``"k"``: every k of
    ``ks`` with all caps ``cap``), then Table 2 (``"cap"``: k = ``k_caps``, every cap of
    ``caps``)."""
    return [("k", int(k), cap) for k in ks] + [("cap", int(k_caps), c) for c in caps]


def gccens_table(
    diag: pd.DataFrame,
    sample: np.ndarray,
    unit: str,
    level: str,
    ks: Sequence[int],
    cap: int | str,
    caps: Sequence[int | str],
    k_caps: int,
    per_code: Mapping[str, int],
    codes: Sequence[str] = (),
    parameter: str = "codes/gccens/codes",
) -> pd.DataFrame:
    """CUL statistics of GCCens in the layout of seed Tables 1 and 2.

    ``diag`` is restricted to ``codes`` (at ``level``; empty: all codes) here. When none of
    them occurs in the sample the table is empty (columns :data:`GCCENS_TABLE_COLUMNS`) and
    :func:`absent_codes`'s message is logged as a warning.

    Table 1 (``table = "k"``): every k of ``ks`` with all caps ``cap``; Table 2
    (``table = "cap"``): k = ``k_caps`` with all caps each value of ``caps``. ``per_code``
    overrides the cap of single codes in every run. A cap ``"max"`` is the largest count of
    each code in the sample.

    Returns
    -------
    DataFrame
        table, k, cap (str), mean, sd, median, skewness (of CUL), modified_percent (records
        with at least one code censored by the greedy loop), capped_percent (mean share of a
        record's codes removed by the caps), censored_percent (code instances released less
        than in the sample, caps included), iterations.
    """
    absent = absent_codes(diag, sample, unit, level, codes, parameter, "GCCens")
    if absent:
        log.warning(absent)
        return pd.DataFrame(columns=list(GCCENS_TABLE_COLUMNS))
    records = code_records(restrict_codes(diag, codes, level), unit, level)
    rows = sample_rows(records, sample, "GCCens")
    index = MultisetIndex(records.sets)
    smp = records.sets.take(rows)
    total = smp.count.sum()
    out = []
    runs = gccens_runs(ks, cap, caps, k_caps)
    for table, k, _ in runs:  # the population bounds every k (docs/cohort-sizes.md)
        if k > index.n:
            name = "k" if table == "k" else "k_caps"
            raise ConfigError(
                f"config parameter 'codes/gccens/{name}': k = {k} exceeds the {index.n} "
                "population records (no censoring reaches k-map); lower it to at most "
                f"{index.n}, or for a cohort of about 100 subjects run with --configfile "
                "config/presets/demo.yaml"
            )
    for table, k, c in runs:
        vec = cap_vector(c, records.items, smp, "config parameter 'codes/gccens/caps'")
        if per_code:
            over = cap_vector(
                dict(per_code), records.items, smp, "config parameter 'codes/gccens/per_code'"
            )
            named = np.isin(records.items, [str(x).upper() for x in per_code])
            vec = np.where(named, over, vec)
        res = gccens(index, smp, k, vec)
        stats = cul_statistics(res.cul)
        out.append(
            {
                "table": table,
                "k": k,
                "cap": str(c),
                **stats,
                "modified_percent": 100.0 * float((res.cul > 0).mean()),
                "capped_percent": 100.0 * float(res.capped.mean()),
                "censored_percent": 100.0 * float(1 - res.censored.count.sum() / total),
                "iterations": res.iterations,
            }
        )
        log.info("GCCens k=%d cap=%s: mean CUL %.3f", k, c, stats["mean"])
    return pd.DataFrame(out)


def lda_trajectories(
    diag: pd.DataFrame,
    sample: np.ndarray,
    unit: str,
    level: str,
    age_min: int,
    age_intervals: Sequence[int],
    max_trajectories: int,
    seed: int,
) -> tuple[Trajectories, Hierarchy, Hierarchy, dict]:
    """The sample's (ICD, age) trajectories that LDA clusters, and the two DGHs.

    At most ``max_trajectories`` sample records (a uniform draw from
    ``derive_rng(seed, "codes-lda")`` when the sample is larger).

    Returns
    -------
    Trajectories
        N trajectories of DGH leaves.
    Hierarchy, Hierarchy
        The ICD and age DGHs.
    dict
        ``trajectories`` (N), ``sampled`` (bool), ``mean_length``, ``icd_leaves``,
        ``age_leaves``, ``codes_outside_icd9``.
    """
    records = pair_records(diag, unit, level)
    rows = sample_rows(records, sample, "LDA")
    sampled = rows.size > max_trajectories
    if sampled:
        rng = derive_rng(seed, "codes-lda")
        rows = np.sort(rng.choice(rows, size=max_trajectories, replace=False))
    smp = records.sets.take(rows)
    hicd, outside = icd9_hierarchy(records.items["code"])
    hage = age_hierarchy(age_min, AGE_90_PLUS, age_intervals)
    if (records.items["age"] < age_min).any():
        young = int((records.items["age"][smp.item] < age_min).sum())
        if young:
            raise InputDataError(
                f"LDA: {young} (ICD, age) pairs have an age below codes/lda/age_min = {age_min}"
            )
    # One row per pair occurrence (multiset counts expanded).
    rec = np.repeat(smp.record, smp.count)
    it = np.repeat(smp.item, smp.count)
    icd = np.array([hicd.leaf_of[c] for c in records.items["code"]], dtype=np.int64)[it]
    age = np.array([hage.leaf_of[int(a)] for a in records.items["age"]], dtype=np.int64)[it]
    traj = Trajectories.from_pairs(rec, icd, age, smp.n_records)
    info = {
        "trajectories": len(traj),
        "sampled": bool(sampled),
        "mean_length": float(traj.length.mean()) if len(traj) else 0.0,
        "icd_leaves": hicd.domain,
        "age_leaves": hage.domain,
        "codes_outside_icd9": outside,
    }
    return traj, hicd, hage, info


def _lda_point(traj, k, hicd, hage, w_icd, w_age, alignment, workload):
    """One (alignment, k) point of :func:`lda_table`: the MDAV result, its smallest group and
    its AvgRE (a module-level function, so that worker processes can run it)."""
    res = mdav(traj, k, hicd, hage, w_icd, w_age, alignment)
    return res, check_k_anonymous(res, k), avg_relative_error(workload, res, hicd, hage)


def _lda_row(
    res, smallest: int, are: dict, alignment: str, k: int, workload, max_query_pairs: int
) -> dict:
    """One row of :func:`lda_table`: the losses, AvgRE and groups of one LDA result."""
    by_size = {f"avg_re_{s}": are.get(f"avg_re_{s}") for s in range(1, max_query_pairs + 1)}
    log.info(
        "LDA %s k=%d: ILM %.3f ALM %.3f AvgRE %.3f (%d queries)",
        alignment,
        k,
        res.ilm,
        res.alm,
        are["avg_re"],
        len(workload),
    )
    return {
        "alignment": alignment,
        "k": k,
        "ilm": res.ilm,
        "alm": res.alm,
        "lm": res.ilm + res.alm,
        "avg_re": are["avg_re"],
        **{key: float("nan") if v is None else v for key, v in by_size.items()},
        "queries": len(workload),
        "clusters": len(res.published),
        "smallest_group": smallest,
    }


def lda_table(
    diag: pd.DataFrame,
    sample: np.ndarray,
    unit: str,
    level: str,
    ks: Sequence[int],
    w_icd: float,
    w_age: float,
    age_min: int,
    age_intervals: Sequence[int],
    max_trajectories: int,
    support: float,
    seed: int,
    alignments: Sequence[str] = ALIGNMENTS,
    max_query_pairs: int = 4,
    codes: Sequence[str] = (),
    parameter: str = "codes/lda/codes",
    threads: int = 1,
) -> tuple[pd.DataFrame, dict]:
    """LDA (MDAV with Baseline or A-GS) on the sample's (ICD, age) trajectories.

    Every (alignment, k) point is one task of :func:`~mimic_deid.core.threads.map_tasks` over
    ``threads`` worker processes; a point draws no randomness (the trajectories are sampled
    once, here), so the table is the same whatever ``threads`` is.

    ``diag`` is restricted to ``codes`` (at ``level``; empty: all codes) here. When none of
    them occurs in the sample the table is empty (its columns only), the dict is
    ``{"absent_codes": codes, "note": message}`` and the message (:func:`absent_codes`) is
    logged as a warning.

    The trajectories are those of :func:`lda_trajectories` (at most ``max_trajectories``):
    clustering costs O(N^2 m n') alignment cells. AvgRE is measured on the workload of
    :func:`~mimic_deid.codes.workload.query_workload` (combinations of up to
    ``max_query_pairs`` pairs held by >= ``support`` of the clustered trajectories).

    Returns
    -------
    DataFrame
        alignment, k, ilm, alm, lm (= ilm + alm), avg_re (all queries), avg_re_1 ..
        avg_re_<max_query_pairs> (queries of that many pairs; NaN when there are none),
        queries, clusters, smallest_group.
    dict
        The information of :func:`lda_trajectories` and ``workload``: ``support``,
        ``max_query_pairs``, ``queries`` per size, ``beyond_bound`` (frequent combinations
        of ``max_query_pairs + 1`` pairs the bound leaves out).
    """
    check_weights(w_icd, w_age, "codes/lda/w_icd + codes/lda/w_age")
    absent = absent_codes(diag, sample, unit, level, codes, parameter, "LDA")
    if absent:
        log.warning(absent)
        columns = ["alignment", "k", "ilm", "alm", "lm", "avg_re"]
        columns += [f"avg_re_{s}" for s in range(1, max_query_pairs + 1)]
        columns += ["queries", "clusters", "smallest_group"]
        return pd.DataFrame(columns=columns), {"absent_codes": list(codes), "note": absent}
    diag = restrict_codes(diag, codes, level)
    traj, hicd, hage, info = lda_trajectories(
        diag, sample, unit, level, age_min, age_intervals, max_trajectories, seed
    )
    workload = query_workload(traj, support, max_query_pairs)
    if workload.beyond_bound:
        log.warning(
            "AvgRE workload: %d combinations of %d pairs reach the support but exceed "
            "codes/lda/max_query_pairs = %d and are left out",
            workload.beyond_bound,
            max_query_pairs + 1,
            max_query_pairs,
        )
    points = [(alignment, int(k)) for alignment in alignments for k in ks]
    for _, k in points:
        if k > len(traj):
            raise ConfigError(
                f"config parameter 'codes/lda/k': k = {k} exceeds the {len(traj)} "
                "trajectories clustered"
            )
    tasks = [
        partial(_lda_point, traj, k, hicd, hage, w_icd, w_age, alignment, workload)
        for alignment, k in points
    ]
    out = []
    for (alignment, k), (res, smallest, are) in zip(
        points, map_tasks(tasks, threads=threads), strict=True
    ):
        out.append(_lda_row(res, smallest, are, alignment, k, workload, max_query_pairs))
    info["workload"] = {
        "support": workload.support,
        "max_query_pairs": workload.max_pairs,
        "queries": workload.sizes(),
        "beyond_bound": workload.beyond_bound,
    }
    return pd.DataFrame(out), info


# --------------------------------------------------------------------------- the stage

#: The stage's artefacts (seed 002), relative to the results folders (``workflow/paths.py``
#: adds the roots): private extraction, public aggregates.
PRIVATE_PATHS = {
    "codes_diagnoses": "codes/diagnoses.parquet",
    "codes_extract": "codes/extract.json",
}
PUBLIC_PATHS = {
    "codes_audit": "codes/audit.json",
    "codes_cdf": "codes/dis_cdf.png",
    "codes_gccens": "codes/gccens_cul.csv",
    "codes_lda": "codes/lda.csv",
    "codes_lda_info": "codes/lda.json",
    "codes_check": "codes/check.json",
}
#: The stage's artefacts (``rule all`` and the named target ``codes``).
TARGETS = ("codes_audit", "codes_cdf", "codes_gccens", "codes_lda", "codes_check")
#: The artefacts its report items read (input names = artefact keys).
REPORT_INPUTS = ("codes_audit", "codes_gccens", "codes_lda")


def _tables(config: Mapping) -> tuple[str, ...]:
    # the audit reads the cohort (raw extraction) and the diagnosis tables
    return EXTRACTION_TABLES + tuple(t.upper() for t in CODE_TABLES)


def _check(config: Mapping) -> None:
    check_codes_config(config["codes"])


#: The diagnosis-code stage (seed 002): risk audit, GCCens and LDA; its report items in
#: :mod:`mimic_deid.report.codes`.
STAGE = Stage(name="codes", config_section="codes", tables=_tables, targets=artefacts(TARGETS),
              report_inputs=artefacts(REPORT_INPUTS), report_module="mimic_deid.report.codes",
              check_config=_check, rule_files=("codes.smk",), seed_namespace="codes",
              public_paths=PUBLIC_PATHS, private_paths=PRIVATE_PATHS)  # fmt: skip
