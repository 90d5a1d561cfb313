"""The tabular stage's grids: what each workflow rule computes, as DataFrames and dicts.

Each function runs one experiment of seed 003 chapter 6 on the demographics table and returns
public aggregates only (levels, losses, k, counts, timings; never a row of the table):

- :func:`ola_grid`: OLA over k x max_sup x metric (Fig. 6.1, Table 6.9).
- :func:`inverse_grid`: Inverse OLA over max_loss x max_sup, per QI view (Tables 6.2, 6.3).
- :func:`concealing_grid`: 1/m of Inverse OLA's releases of the demographics, procedures
  known with a model's probabilities (Tables 6.4-6.8).
- :func:`dps_summary`: δ over the (β, ε) grid and the smallest k (§6.2.1).
- :func:`epsilon_la_grid`: ε-safe LA's probability of a good node and expected suppression
  per penalty mode, factor and ε′ (Figs 6.3, 6.4, C.1).
- :func:`release_table`: the OLA release at the configured (k, max_sup, metric).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError
from mimic_deid.core.logs import Progress, get_logger
from mimic_deid.core.seeding import derive_rng
from mimic_deid.core.stage import Stage, artefacts
from mimic_deid.deid.hierarchy import Encoded, encode
from mimic_deid.sources import tables
from mimic_deid.sources.extract import read_small_table
from mimic_deid.tabular.anonymity import check_k, node_classes
from mimic_deid.tabular.concealing import m_concealing
from mimic_deid.tabular.demographics import DEMOGRAPHIC_QIS, demographics, procedure_columns
from mimic_deid.tabular.dps import (
    PENALTY_MODES,
    admissible_pairs,
    node_scores,
    parameter_grid,
    selection_probabilities,
    smallest_k,
)
from mimic_deid.tabular.loss import LossModel
from mimic_deid.tabular.ola import inverse_ola, ola
from mimic_deid.tabular.uniqueness import demographic_uniqueness, procedure_uniqueness

__all__ = [
    "REPORT_INPUTS",
    "STAGE",
    "TARGETS",
    "read_source_tables",
    "NO_ADMISSIBLE_PAIR",
    "SEED_NAMESPACE",
    "demographics_table",
    "uniqueness_report",
    "check_k_values",
    "k_not_computable",
    "check_tabular_config",
    "concealing_grid",
    "dps_summary",
    "epsilon_la_grid",
    "inverse_grid",
    "ola_grid",
    "release_table",
]

log = get_logger(__name__)

#: The first key of every random stream of the stage (``derive_rng(seed, SEED_NAMESPACE, ...)``):
#: its draws never meet another stage's.
SEED_NAMESPACE = "tabular"


#: What the tabular extraction reads through a source's ``read_table``, by output name.
SOURCE_TABLES = {
    "patients": "patients",
    "admissions": "admissions_demographics",
    "procedures": "procedures_icd",
}


def read_source_tables(reader, procedures: bool = True) -> dict[str, pd.DataFrame]:
    """PATIENTS, ADMISSIONS (with the demographic columns) and PROCEDURES_ICD from a source.

    Parameters
    ----------
    reader : CsvSource or PostgresSource
        Anything with ``read_table(name)`` (:func:`mimic_deid.sources.open_source`).
    procedures : bool
        False (``tabular.procedures: 0``): PROCEDURES_ICD is not read (a source may lack it)
        and ``procedures`` is an empty frame with the table's columns.

    Returns
    -------
    dict of str to DataFrame
        ``patients``, ``admissions`` and ``procedures``, typed by their
        :mod:`mimic_deid.sources.tables` specs and sorted by the specs' keys, so that every
        source gives identical frames.
    """
    out = {}
    for key, name in SOURCE_TABLES.items():
        if key == "procedures" and not procedures:
            out[key] = tables.get_small_spec(name).schema.empty_table().to_pandas()
        else:
            out[key] = read_small_table(reader, name).to_pandas()
    return out


def demographics_table(
    patients: pd.DataFrame,
    admissions: pd.DataFrame,
    procedures: pd.DataFrame | None,
    n_procedures: int,
    seed: int,
    **options,
) -> pd.DataFrame:
    """:func:`~mimic_deid.tabular.demographics.demographics` with the stage's year-of-birth
    stream, ``derive_rng(seed, "tabular", "yob")`` (one per run: every table of a run shares
    the draw). ``options``: ``yob_mean``, ``yob_sd``, ``missing``."""
    rng = derive_rng(seed, SEED_NAMESPACE, "yob")
    return demographics(patients, admissions, procedures, n_procedures, rng, **options)


def uniqueness_report(
    table: pd.DataFrame,
    procedures: pd.DataFrame | None,
    draws: int,
    seed: int,
    **options,
) -> dict:
    """Seed 003 §3.1 over ``draws`` year-of-birth draws (``derive_rng(seed, "tabular",
    "uniqueness", r)``) and §3.2 on the procedures (``{}`` when none are read). ``options``:
    ``yob_mean``, ``yob_sd``."""
    return {
        "demographics": demographic_uniqueness(
            table, draws, lambda r: derive_rng(seed, SEED_NAMESPACE, "uniqueness", r), **options
        ),
        "procedures": procedure_uniqueness(procedures) if procedures is not None else {},
    }


def k_not_computable(k: int, n_rows: int, where: str) -> str:
    """Why a grid point of k cannot be computed on a table of ``n_rows`` rows (empty: it can).

    A k above the rows can form no class: the grid records its point as not computable with
    this reason instead of stopping the run (docs/cohort-sizes.md)."""
    if int(k) <= n_rows:
        return ""
    return (
        f"not computable: k = {int(k)} exceeds the {n_rows} rows of the demographics table "
        f"(config parameter '{where}'; the largest k that fits: {n_rows})"
    )


def check_k_values(ks: Sequence[int], n_rows: int, where: str) -> None:
    """``ConfigError`` naming config parameter ``where`` if a k exceeds the table's rows."""
    for k in ks:
        if not 1 <= int(k) <= n_rows:
            raise ConfigError(
                f"config parameter '{where}': k = {k} must lie in [1, {n_rows}] (the rows of the "
                f"demographics table); lower it, or for a cohort of about 100 subjects run with "
                f"--configfile config/presets/demo.yaml (docs/cohort-sizes.md)"
            )


def _levels(columns: Sequence[str], node: Sequence[int]) -> dict[str, int]:
    return {f"level_{c}": int(x) for c, x in zip(columns, node, strict=True)}


def ola_grid(
    table: pd.DataFrame,
    hierarchies: Mapping,
    qis: Sequence[str],
    ks: Sequence[int],
    max_sups: Sequence[float],
    metrics: Sequence[str],
) -> pd.DataFrame:
    """OLA at every (k, max_sup, metric); one row each, the k-minimal set fresh per call.

    Returns
    -------
    DataFrame
        ``k``, ``max_sup``, ``metric``, ``loss``, ``loss_normalised``, ``suppressed``,
        ``suppressed_percent``, ``k_minimal`` (set size), ``checked``, ``lattice_size`` and
        ``level_<qi>`` per quasi-identifier, ``not_computable`` (empty, or why the point has no
        figures: a k above the table's rows, :func:`k_not_computable`). Timings go to the log
        only, so that the table is byte-identical between runs.
    """
    enc = encode(table, qis, hierarchies, "demographics table")
    check_k_values([k for k in ks if int(k) < 1], enc.n_rows, "tabular/ola/k")
    losses = LossModel(enc)
    rows = []
    seconds = 0.0
    progress = Progress("OLA grid", len(ks) * len(max_sups) * len(metrics), log, unit="runs")
    for k in ks:
        for sup in max_sups:
            for metric in metrics:
                if reason := k_not_computable(k, enc.n_rows, "tabular/ola/k"):
                    rows.append({"k": int(k), "max_sup": float(sup), "metric": metric,
                                 "not_computable": reason})  # fmt: skip
                    progress.update(1)
                    continue
                r = ola(enc, int(k), float(sup), metric, losses)
                seconds += r.seconds
                rows.append(
                    {
                        "k": int(k),
                        "max_sup": float(sup),
                        "metric": metric,
                        "loss": r.loss,
                        "loss_normalised": r.loss_normalised,
                        "suppressed": r.suppressed,
                        "suppressed_percent": 100.0 * r.suppressed / enc.n_rows,
                        "k_minimal": len(r.k_minimal),
                        "checked": r.checked,
                        "lattice_size": r.lattice_size,
                        **_levels(qis, r.node),
                        "not_computable": "",
                    }
                )
                progress.update(1)
    progress.close()
    for reason in dict.fromkeys(r["not_computable"] for r in rows if r["not_computable"]):
        log.warning("OLA grid: %s", reason)
    checked = sum(r.get("checked", 0) for r in rows)
    log.info(
        "OLA grid: %d nodes checked in %.1f s (%.2f ms per checked node, search included)",
        checked, seconds, 1000 * seconds / max(checked, 1),
    )  # fmt: skip
    columns = ["k", "max_sup", "metric", "loss", "loss_normalised", "suppressed",
               "suppressed_percent", "k_minimal", "checked", "lattice_size",
               *_levels(qis, [0] * len(qis)), "not_computable"]  # fmt: skip
    counts = ["suppressed", "k_minimal", "checked", "lattice_size", *_levels(qis, [0] * len(qis))]
    # a point not computed has no count: nullable integers keep the others' printed form
    return pd.DataFrame(rows, columns=columns).astype(dict.fromkeys(counts, "Int64"))


def _procedure_info(columns: Sequence[str], node: Sequence[int], enc: Encoded) -> str:
    """How much of the procedures a node keeps (seed Table 6.3's last column)."""
    words = []
    for c, level, h in zip(columns, node, enc.hierarchies, strict=True):
        if c.startswith("proc_"):
            kept = ("full code", "first digit", "suppressed")[min(int(level), 2)]
            words.append(f"{c}: {kept if level < h.height else 'suppressed'}")
    return "; ".join(words)


def inverse_grid(
    table: pd.DataFrame,
    hierarchies: Mapping,
    views: Mapping[str, Sequence[str]],
    max_losses: Sequence[float],
    max_sups: Sequence[float],
) -> pd.DataFrame:
    """Inverse OLA with Prec at every (view, max_loss, max_sup) (seed Tables 6.2, 6.3).

    Parameters
    ----------
    views : mapping of str to sequence of str
        Named sets of quasi-identifiers (e.g. ``all``: demographics and procedures;
        ``reduced``: year of birth, gender and procedures).
    """
    rows = []
    progress = Progress(
        "Inverse OLA grid", len(views) * len(max_losses) * len(max_sups), log, unit="runs"
    )
    for view, qis in views.items():
        enc = encode(table, qis, hierarchies, "demographics table")
        losses = LossModel(enc)
        for loss in max_losses:
            for sup in max_sups:
                r = inverse_ola(enc, float(loss), float(sup), "prec", losses)
                progress.update(1)
                rows.append(
                    {
                        "view": view,
                        "max_loss": float(loss),
                        "max_sup": float(sup),
                        "k": r.k,
                        "loss_normalised": r.loss_normalised,
                        "suppressed_percent": 100.0 * r.suppressed / enc.n_rows,
                        "procedures": _procedure_info(qis, r.node, enc),
                        "node": "-".join(str(x) for x in r.node),
                        "checked": r.checked,
                        "lattice_size": r.lattice_size,
                        "rows": enc.n_rows,
                    }
                )
    progress.close()
    return pd.DataFrame(rows)


def concealing_grid(
    tables: Mapping[str, pd.DataFrame],
    hierarchies: Mapping,
    models: Mapping[str, Sequence[float]],
    max_losses: Sequence[float],
    max_sups: Sequence[float],
) -> pd.DataFrame:
    """1/m of Inverse OLA's demographic releases, procedures known with each model's law.

    Parameters
    ----------
    tables : mapping of int to DataFrame
        Demographics tables by number of procedures (``3``, ``5``, ...).
    models : mapping of str to sequence of float
        Per model, the probability that each of the first procedures is known; the number
        of probabilities picks the table.

    Returns
    -------
    DataFrame
        ``model``, ``procedures``, ``rows``, ``max_loss``, ``max_sup``, ``k`` and ``inverse_m``.
    """
    qis = list(DEMOGRAPHIC_QIS)
    rows = []
    progress = Progress(
        "m-concealing grid", len(models) * len(max_losses) * len(max_sups), log, unit="runs"
    )
    for model, probs in models.items():
        table = tables[len(probs)]
        procs = procedure_columns(len(probs))
        enc = encode(table, qis, hierarchies, "demographics table")
        losses = LossModel(enc)
        _, sensitive = np.unique(table[procs].to_numpy(dtype=str).ravel(), return_inverse=True)
        sensitive = sensitive.reshape(len(table), len(procs))
        for loss in max_losses:
            for sup in max_sups:
                r = inverse_ola(enc, float(loss), float(sup), "prec", losses)
                inverse, sizes = node_classes(enc, r.node)
                kept = sizes[inverse] >= r.k
                codes = np.column_stack([enc.generalised(r.node)[kept], sensitive[kept]])
                conc = m_concealing(codes, [1.0] * len(qis) + [float(p) for p in probs])
                rows.append(
                    {
                        "model": model,
                        "procedures": len(probs),
                        "rows": enc.n_rows,
                        "max_loss": float(loss),
                        "max_sup": float(sup),
                        "k": r.k,
                        "inverse_m": conc.inverse_m,
                    }
                )
                progress.update(1)
    progress.close()
    columns = ["model", "procedures", "rows", "max_loss", "max_sup", "k", "inverse_m"]
    return pd.DataFrame(rows, columns=columns)  # no model (tabular.procedures: 0): header only


def check_tabular_config(cfg: Mapping) -> None:
    """Cross-field checks of config section ``tabular`` at start-up (raises ``ConfigError``).

    Seed §6.2.1's grid needs at least one (β, ε) pair with ε′ = ε + ln(1 - β) >= 0.
    """
    if not admissible_pairs(cfg["epsilon"]["beta"], cfg["epsilon"]["epsilon"]):
        raise ConfigError(NO_ADMISSIBLE_PAIR)


#: The error of a (β, ε) grid without a pair of ε′ >= 0 (start-up and :func:`dps_summary`).
NO_ADMISSIBLE_PAIR = (
    "config parameter 'tabular/epsilon/beta': no (beta, epsilon) pair leaves epsilon' "
    ">= 0 (epsilon + ln(1 - beta) < 0 everywhere)"
)


def dps_summary(
    betas: Sequence[float],
    epsilons: Sequence[float],
    ks: Sequence[int],
    n_rows: int,
    delta_max: float,
) -> tuple[pd.DataFrame, dict]:
    """Seed §6.2.1: δ per admissible (β, ε) and k, and the smallest k meeting ``delta_max``.

    Returns
    -------
    grid : DataFrame
        :func:`~mimic_deid.tabular.dps.parameter_grid` rows.
    summary : dict
        ``n_rows``, ``delta_max``, ``smallest_k_candidates`` (smallest of ``ks`` meeting it
        everywhere, or None) and ``smallest_k`` (smallest integer k), ``largest_epsilon_prime``.
    """
    grid = pd.DataFrame(parameter_grid(betas, epsilons, ks, n_rows))
    if grid.empty:
        raise ConfigError(NO_ADMISSIBLE_PAIR)
    passing = [int(k) for k in ks if (grid[f"delta_k{k}"] <= delta_max).all()]
    summary = {
        "n_rows": int(n_rows),
        "delta_max": float(delta_max),
        "smallest_k_candidates": min(passing) if passing else None,
        "smallest_k": smallest_k(betas, epsilons, n_rows, delta_max),
        "largest_epsilon_prime": float(grid["epsilon_prime"].max()),
    }
    return grid, summary


def epsilon_la_grid(
    table: pd.DataFrame,
    hierarchies: Mapping,
    columns: Sequence[str],
    k: int,
    beta: float,
    max_sup: float,
    factors: Sequence[float],
    eps_primes: Sequence[float],
    samples: int,
    seed: int,
    good_prec: float = 0.5,
    good_sup: float = 0.05,
) -> pd.DataFrame:
    """ε-safe LA's output quality per penalty mode, factor and ε′ (seed §6.2.2, §6.2.3).

    For each of ``samples`` β-samples (``derive_rng(seed, "tabular", "epsilon-sample", s)``)
    the node scores are computed once; the
    exponential mechanism's law then gives, exactly rather than by drawing, the probability
    of a *good* node (normalised Prec < ``good_prec`` and suppression < ``good_sup``) and the
    expected suppressed fraction, averaged over the samples. ``mode = "uniform"`` rows are the
    baseline of a node drawn uniformly. Column ``not_computable``: empty, or, for a ``k``
    above the table's rows (:func:`k_not_computable`), the reason on every row, whose figures
    are then NaN and ``samples`` 0.
    """
    enc = encode(table, columns, hierarchies, "demographics table")
    if reason := k_not_computable(k, enc.n_rows, "tabular/epsilon/la_k"):
        log.warning("epsilon-safe LA: %s", reason)
        keys = [("uniform", 0.0, 0.0)] + [
            (mode, float(f), float(ep))
            for mode in PENALTY_MODES
            for f in factors
            for ep in eps_primes
        ]
        return pd.DataFrame(
            [
                {"mode": mode, "penalty": factor, "epsilon_prime": ep, "p_good": np.nan,
                 "expected_suppressed_percent": np.nan, "samples": 0,
                 "lattice_size": int(np.prod(enc.heights + 1)), "not_computable": reason}
                for mode, factor, ep in keys
            ]
        )  # fmt: skip
    k = check_k(k, enc.n_rows, "tabular/epsilon/la/k")
    acc: dict[tuple, list[tuple[float, float]]] = {}
    for s in range(int(samples)):
        mask = derive_rng(seed, SEED_NAMESPACE, "epsilon-sample", s).random(enc.n_rows) < beta
        scores = node_scores(Encoded(enc.columns, enc.codes[mask], enc.hierarchies), k, max_sup)
        good = (scores.prec < good_prec) & (scores.suppressed < good_sup)
        uniform = np.full(len(good), 1.0 / len(good))
        acc.setdefault(("uniform", 0.0, 0.0), []).append(
            (float(uniform[good].sum()), float(uniform @ scores.suppressed))
        )
        for mode in PENALTY_MODES:
            for factor in factors:
                for ep in eps_primes:
                    prob, _ = selection_probabilities(scores, float(factor), mode, float(ep))
                    acc.setdefault((mode, float(factor), float(ep)), []).append(
                        (float(prob[good].sum()), float(prob @ scores.suppressed))
                    )
    rows = [
        {
            "mode": mode,
            "penalty": factor,
            "epsilon_prime": ep,
            "p_good": float(np.mean([v[0] for v in vals])),
            "expected_suppressed_percent": 100.0 * float(np.mean([v[1] for v in vals])),
            "samples": len(vals),
            "lattice_size": int(np.prod(enc.heights + 1)),
            "not_computable": "",
        }
        for (mode, factor, ep), vals in acc.items()
    ]
    return pd.DataFrame(rows)


def release_table(
    table: pd.DataFrame,
    hierarchies: Mapping,
    qis: Sequence[str],
    k: int,
    max_sup: float,
    metric: str,
) -> tuple[pd.DataFrame, dict]:
    """The OLA release: generalised quasi-identifiers of the records kept, and its summary.

    Returns
    -------
    release : DataFrame
        One string column per quasi-identifier, sorted; no identifier.
    summary : dict
        ``k``, ``max_sup``, ``metric``, the node's levels, ``rows_in``, ``rows_released``,
        ``suppressed``, ``smallest_class`` and ``loss_normalised``.
    """
    enc = encode(table, qis, hierarchies, "demographics table")
    check_k_values([k], enc.n_rows, "tabular/release/k")
    r = ola(enc, int(k), float(max_sup), metric)
    inverse, sizes = node_classes(enc, r.node)
    kept = sizes[inverse] >= k
    release = enc.labels(r.node)[kept]
    release = release.sort_values(list(qis), kind="stable").reset_index(drop=True)
    summary = {
        "k": int(k),
        "max_sup": float(max_sup),
        "metric": metric,
        "levels": _levels(qis, r.node),
        "rows_in": enc.n_rows,
        "rows_released": int(kept.sum()),
        "suppressed": int((~kept).sum()),
        "smallest_class": int(sizes[sizes >= k].min()) if kept.any() else 0,
        "loss_normalised": r.loss_normalised,
    }
    return release, summary


# --------------------------------------------------------------------------- the stage

#: The stage's artefacts (seed 003), relative to the results folders (``workflow/paths.py``
#: adds the roots): raw tables and demographics private, grids public.
PRIVATE_PATHS = {
    "tabular_patients": "tabular/raw/patients.parquet",
    "tabular_admissions": "tabular/raw/admissions.parquet",
    "tabular_procedures": "tabular/raw/procedures.parquet",
    "tabular_demographics": "tabular/demographics_p{procedures}.parquet",
    # the OLA release stays owner-only; its claims T1-T4 are public (``tabular_check``)
    "tabular_release": "tabular/release.parquet",
}
PUBLIC_PATHS = {
    "tabular_uniqueness": "tabular/uniqueness.json",
    "tabular_ola": "tabular/ola_grid.csv",
    "tabular_inverse": "tabular/inverse_ola.csv",
    "tabular_concealing": "tabular/concealing.csv",
    "tabular_dps_grid": "tabular/dps_grid.csv",
    "tabular_dps": "tabular/dps.json",
    "tabular_epsilon_la": "tabular/epsilon_la.csv",
    "tabular_release_summary": "tabular/release.json",
    # the OLA release's claims T1-T4 (tabular.check); the release itself stays owner-only
    "tabular_check": "tabular/check.json",
    "tabular_joint_risk": "tabular/joint_risk_stays.csv",
}
#: The stage's own artefacts (the light `tabular` target); the joint risk with the stays'
#: duration classes is built only with the series pipeline (``STAGE.with_stages``).
TARGETS = (
    "tabular_uniqueness",
    "tabular_ola",
    "tabular_inverse",
    "tabular_concealing",
    "tabular_dps_grid",
    "tabular_dps",
    "tabular_epsilon_la",
    "tabular_release_summary",
    "tabular_check",
)
#: Report-rule input name (the artefact key) -> the name its report items read it by.
REPORT_INPUTS: dict[str, str] = {
    "tabular_uniqueness": "uniqueness",
    "tabular_ola": "ola",
    "tabular_inverse": "inverse",
    "tabular_concealing": "concealing",
    "tabular_dps_grid": "dps_grid",
    "tabular_dps": "dps",
    "tabular_epsilon_la": "epsilon_la",
    "tabular_release_summary": "release",
    "tabular_check": "check",
    "tabular_joint_risk": "joint_risk",
}


def _tables(config: Mapping) -> tuple[str, ...]:
    # PROCEDURES_ICD is read only when procedures are joined to the demographics
    procedures = (tables.PROCEDURES_ICD.file_stem,) if config["tabular"]["procedures"] > 0 else ()
    return ("PATIENTS", "ADMISSIONS", *procedures)


def _check(config: Mapping) -> None:
    check_tabular_config(config["tabular"])


#: The tabular stage (seed 003): demographics and procedures, OLA, Inverse OLA, m-concealing,
#: epsilon-safe LA; its report items in :mod:`mimic_deid.report.tabular`.
STAGE = Stage(name="tabular", config_section="tabular", tables=_tables, targets=artefacts(TARGETS),
              report_inputs=artefacts(tuple(REPORT_INPUTS)), report_module="mimic_deid.report.tabular",
              with_stages={"series": (("tabular_joint_risk", {}),)}, check_config=_check,
              rule_files=("tabular.smk",), seed_namespace=SEED_NAMESPACE,
              table_readers=tuple(SOURCE_TABLES.values()), public_paths=PUBLIC_PATHS,
              private_paths=PRIVATE_PATHS)  # fmt: skip
