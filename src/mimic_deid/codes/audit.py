"""Re-identification risk of released diagnosis codes: distinguishability and k-map.

Seed 002 §III.4 and §III.7.1 (Figure 2): for every record of the sample S, ``dis`` is the
number of population records containing it as a multiset; a record with ``dis = 1`` is
unique, and S is k-mapped when every ``dis >= k``. The audit runs on repeated codes (each
record a multiset of codes) and on (ICD, age) trajectories (a multiset of pairs).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from mimic_deid.codes.data import Records, code_records, pair_records, sample_rows
from mimic_deid.codes.index import MultisetIndex
from mimic_deid.core.atomic import atomic_path
from mimic_deid.core.errors import ConfigError
from mimic_deid.core.logs import get_logger

__all__ = ["CDF_POINTS", "dis_summary", "plot_dis_cdf", "plot_dis_cdf_points", "risk_audit"]

log = get_logger(__name__)

#: Distinguishability values at which the JSON reports the CDF.
CDF_POINTS = (1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000)


def dis_summary(dis: np.ndarray, k: int, population: int) -> dict:
    """Aggregate of the sample's distinguishability (no record-level values).

    Returns
    -------
    dict
        ``records``, ``population``, ``unique`` (count, dis = 1), ``unique_percent``,
        ``below_k`` and ``below_k_percent`` (dis < k), ``k_map`` (bool), ``quantiles``
        (q10..q90 of dis), ``cdf`` ({value: percent of records with dis <= value}).
    """
    dis = np.asarray(dis, dtype=np.int64)
    n = dis.size
    pct = (lambda c: 100.0 * c / n) if n else (lambda c: float("nan"))
    qs = np.quantile(dis, [0.1, 0.25, 0.5, 0.75, 0.9]) if n else [float("nan")] * 5
    return {
        "records": int(n),
        "population": int(population),
        "unique": int((dis == 1).sum()),
        "unique_percent": pct(int((dis == 1).sum())),
        "below_k": int((dis < k).sum()),
        "below_k_percent": pct(int((dis < k).sum())),
        "k_map": bool((dis >= k).all()),
        "quantiles": dict(zip(["q10", "q25", "q50", "q75", "q90"], map(float, qs), strict=True)),
        "cdf": {str(v): pct(int((dis <= v).sum())) for v in CDF_POINTS},
    }


def _audit_one(
    records: Records, sample_ids: np.ndarray, k: int, what: str
) -> tuple[dict, np.ndarray]:
    if k > records.sets.n_records:
        raise ConfigError(
            f"config parameter 'codes/k': k = {k} exceeds the population size |P| = "
            f"{records.sets.n_records} {records.unit}s"
        )
    rows = sample_rows(records, sample_ids, what)
    dis = MultisetIndex(records.sets).distinguishability(records.sets.take(rows))
    return dis_summary(dis, k, records.sets.n_records), dis


def risk_audit(
    diag: pd.DataFrame, sample_ids: np.ndarray, unit: str, level: str, k: int
) -> tuple[dict, dict[str, np.ndarray]]:
    """Distinguishability of the sample for repeated codes and for (ICD, age) trajectories.

    Parameters
    ----------
    diag : DataFrame
        Diagnoses with ages (:func:`mimic_deid.codes.data.diagnoses_with_ages`): the
        population P.
    sample_ids : ndarray of int64
        SUBJECT_IDs or HADM_IDs (per ``unit``) of the released cohort.
    unit : {"subject", "admission"}
    level : {"category", "full"}
    k : int
        The k of the k-map check.

    Returns
    -------
    dict
        ``{"unit", "level", "k", "codes": dis_summary, "trajectories": dis_summary}``.
    dict of str to ndarray
        The sample's dis values per kind (for the figure; private).
    """
    codes, dis_c = _audit_one(code_records(diag, unit, level), sample_ids, k, "risk audit")
    pairs, dis_p = _audit_one(pair_records(diag, unit, level), sample_ids, k, "risk audit")
    log.info(
        "risk audit: %d sample %ss; unique by codes %.1f %%, by (ICD, age) %.1f %%",
        codes["records"], unit, codes["unique_percent"], pairs["unique_percent"],
    )  # fmt: skip
    summary = {"unit": unit, "level": level, "k": int(k), "codes": codes, "trajectories": pairs}
    return summary, {"codes": dis_c, "trajectories": dis_p}


LABELS = {"codes": "repeated codes", "trajectories": "(ICD, age) trajectories"}


def plot_dis_cdf(dis: dict[str, np.ndarray], k: int, out_path: str | os.PathLike) -> None:
    """Seed Figure 2: percent of sample records with distinguishability <= x (log x axis).

    Parameters
    ----------
    dis : dict of str to ndarray of int
        The sample's dis values per kind (``codes``, ``trajectories``).
    k : int
        Drawn as a dotted vertical line.
    out_path : path
        PNG written atomically.
    """
    curves = {}
    for name, values in dis.items():
        values = np.asarray(values, dtype=np.int64)
        if values.size:
            x, counts = np.unique(values, return_counts=True)
            curves[name] = (x, 100.0 * np.cumsum(counts) / values.size)
    _draw_cdf(curves, k, out_path)


def plot_dis_cdf_points(summary: dict | None, out_path: str | os.PathLike) -> None:
    """The same figure from the CDF points of ``audit.json`` (public aggregates only)."""
    curves = {}
    for name in LABELS:
        cdf = (summary or {}).get(name, {}).get("cdf", {})
        if cdf:
            x = np.array(sorted(int(v) for v in cdf))
            curves[name] = (x, np.array([cdf[str(v)] for v in x], dtype=np.float64))
    _draw_cdf(curves, (summary or {}).get("k"), out_path)


def _draw_cdf(curves: dict, k: int | None, out_path: str | os.PathLike) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 4.5))
    for name, (x, y) in curves.items():
        ax.step(np.maximum(x, 1), y, where="post", label=LABELS.get(name, name))
    if not curves:
        ax.text(
            0.5, 0.5, "no diagnosis-code audit in this run", ha="center", transform=ax.transAxes
        )
    if k is not None:
        ax.axvline(k, color="grey", linestyle=":", label=f"k = {k}")
    ax.set_xscale("log")
    ax.set_xlabel("distinguishability (population records matching, log scale)")
    ax.set_ylabel("sample records with dis ≤ x (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Distinguishability of the released cohort's diagnoses")
    if curves:
        ax.legend(loc="lower right")
    fig.tight_layout()
    with atomic_path(out_path, suffix=".png") as tmp:
        fig.savefig(tmp, format="png", dpi=120, metadata={"Software": None})
    plt.close(fig)
