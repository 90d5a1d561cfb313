"""The sequences stage's entry points: config, source tables, one release and the sweep
(seed 004 §3-5).

:func:`check_sequences_config` runs at start-up, :func:`read_source_table` is the extraction
rule's read of TRANSFERS or CPTEVENTS, :func:`release_settings` the :class:`Settings` of the
config section.

:func:`fit_release` splits the log into sections, clusters them with MinHash LSH, fits the STE
and the CTE, anonymises their counts with the configured mechanism, generates a synthetic
dataset and measures it. :func:`run_sweep` repeats that over a grid (mechanism x eps x |H| x
w x repetition), reusing the clustering of each (|H|, w); :func:`friedman_tests` compares the
LSH settings.
"""

from __future__ import annotations

import math
import time as _time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError, ReleaseCheckError, require_choice
from mimic_deid.core.logs import Progress, get_logger
from mimic_deid.core.numbers import percent
from mimic_deid.core.seeding import derive_rng
from mimic_deid.core.stage import Stage, Target
from mimic_deid.pipeline.variables import load_variables, series_variables
from mimic_deid.sequences.events import EventLog, check_log, cpt_events, transfer_events
from mimic_deid.sequences.generate import generate
from mimic_deid.sequences.lsh import cluster_signatures, signatures
from mimic_deid.sequences.metrics import dataset_similarity, top_bigram_intersection
from mimic_deid.sequences.model import CTE_LEVELS, STE_LEVELS, Ensemble, factor_values, fit_ensemble
from mimic_deid.sequences.privacy import MECHANISMS, Budget, anonymise, check_epsilon, components
from mimic_deid.sequences.split import histogram_gap, split_sections, transition_times
from mimic_deid.sources.extract import EXTRACTION_TABLES
from mimic_deid.sources.tables import SEQUENCE_TABLES

log = get_logger(__name__)

__all__ = [
    "REPORT_INPUTS",
    "STAGE",
    "TARGETS",
    "Clustering",
    "Settings",
    "check_sequences_config",
    "cluster_log",
    "fit_models",
    "fit_release",
    "friedman_tests",
    "read_source_table",
    "release_settings",
    "run_sweep",
]

STE_FACTORS = ("weekday", "hour", "duration")
#: The STE factors under ``laplace``: a section's duration depends on its last record, so
#: removing that record could move every transition of the section between duration models
#: (no bounded sensitivity); weekday and hour are read at each record's own time.
STE_FACTORS_DP = ("weekday", "hour")
CTE_FACTORS = ("weekday", "month", "year")


@dataclass(frozen=True)
class Settings:
    """Parameters of one release (config ``sequences``; see config/README.md).

    Attributes
    ----------
    mechanism : {"seed_ratio", "laplace"}
        The seed's ratio test (§3.5, not eps-DP) or discrete Laplace counts.
    epsilon : float
        > 0; ``inf`` switches the test / noise off.
    hashes, shingles : int
        |H| and w of the MinHash signatures (§2.2).
    cluster_fraction, lsh_threshold : float
        Clusters per section (seed: 0.15); Jaccard threshold of the LSH candidate index.
    gap_hours : float or None
        Splitting gap in hours (seed: 16,800); None reads it off the histogram of the first
        ``histogram_sample`` transition times (``histogram_bins`` bins, ``drop_fraction``).
    sampler : {"seeded", "opendp"}
        Noise sampler of ``laplace``.
    metric_sample : int
        Generated objects scored by the Definition 4 similarity.
    """

    mechanism: str = "seed_ratio"
    epsilon: float = 0.35
    hashes: int = 100
    shingles: int = 1
    cluster_fraction: float = 0.15
    lsh_threshold: float = 0.5
    gap_hours: float | None = None  # None: from the histogram
    histogram_bins: int = 50
    histogram_sample: int = 25_000
    drop_fraction: float = 0.01
    sampler: str = "seeded"
    metric_sample: int = 1000

    def __post_init__(self) -> None:
        require_choice(self.mechanism, MECHANISMS, "sequences: mechanism")
        check_epsilon(self.epsilon)


def release_settings(section: Mapping) -> Settings:
    """The :class:`Settings` of config section ``sequences`` (its nested keys flattened)."""
    lsh, split = section["lsh"], section["split"]
    return Settings(
        mechanism=section["mechanism"],
        epsilon=section["epsilon"],
        hashes=lsh["hashes"],
        shingles=lsh["shingles"],
        cluster_fraction=lsh["cluster_fraction"],
        lsh_threshold=lsh["threshold"],
        gap_hours=split["gap_hours"] or None,  # 0: from the histogram
        histogram_bins=split["histogram_bins"],
        histogram_sample=split["histogram_sample"],
        drop_fraction=split["drop_fraction"],
        sampler=section["laplace"]["sampler"],
        metric_sample=section["metric_sample"],
    )


def check_sequences_config(section: Mapping, series_variables: Sequence[str]) -> None:
    """Cross-field checks of config section ``sequences`` at start-up (raises ``ConfigError``).

    The release settings must make a :class:`Settings`, and the ``vitals`` table, when
    selected, needs ``vitals/variable`` to be one of ``series_variables`` (the columns of the
    ``stays`` series it reads).
    """
    release_settings(section)
    variable = section["vitals"]["variable"]
    if "vitals" in section["tables"] and variable not in series_variables:
        raise ConfigError(
            f"config parameter 'sequences/vitals/variable': unknown variable {variable!r}; "
            f"expected one of {sorted(series_variables)}"
        )


#: The source table of each sequence table the extraction reads from the source (``vitals``
#: is read from the ``stays`` series instead), and its reader.
SOURCE_READERS = {"transfers": transfer_events, "cptevents": cpt_events}


def read_source_table(reader, table: str, missing_times: str) -> EventLog:
    """The records <object, time, state> of ``table`` (``transfers`` or ``cptevents``), read
    whole through ``reader`` (a source: ``read_table``); ``missing_times`` as in
    :func:`~mimic_deid.sequences.events.transfer_events`."""
    return SOURCE_READERS[table](reader.read_table(table), missing_times)


@dataclass
class Clustering:
    """Sections and clusters of a log at one (|H|, w).

    Attributes
    ----------
    section : ndarray of int64, shape (n_records,)
        Section id of every record.
    cluster : ndarray of int64, shape (n_sections,)
        Cluster of every section.
    gap_hours : float
        The splitting gap used (``inf``: no split).
    n_clusters : int
    """

    section: np.ndarray
    cluster: np.ndarray
    gap_hours: float
    n_clusters: int


def _offsets(ids: np.ndarray) -> np.ndarray:
    change = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    return np.r_[change, len(ids)].astype(np.int64)


def cluster_log(log_: EventLog, s: Settings) -> Clustering:
    """Split at the gap (§3.3) and cluster the sections (§2.2)."""
    check_log(log_)
    gap = s.gap_hours
    if gap is None:
        gap = histogram_gap(
            transition_times(log_), s.histogram_bins, s.histogram_sample, s.drop_fraction
        )
    section = split_sections(log_, gap)
    sig = signatures(log_.state, _offsets(section), s.hashes, s.shingles)
    cluster = cluster_signatures(sig, s.cluster_fraction, s.lsh_threshold)
    return Clustering(section, cluster, float(gap), int(cluster.max()) + 1)


def fit_models(
    log_: EventLog, c: Clustering, ste_factors: tuple[str, ...] = STE_FACTORS
) -> tuple[Ensemble, Ensemble, pd.DataFrame]:
    """STE over sections (factors ``ste_factors``), CTE over each object's clusters, and the
    day list (§3.6)."""
    sec = c.section
    off = _offsets(sec)
    dur = log_.time[off[1:] - 1] - log_.time[off[:-1]]
    ste = fit_ensemble(
        "STE", sec, log_.state, log_.time, len(log_.states), STE_LEVELS,
        {f: factor_values(f, log_.time, dur[sec]) for f in ste_factors}, dur, c.cluster,
    )  # fmt: skip
    first = off[:-1]
    s_obj = log_.obj[first]
    s_t = log_.time[first]
    n_sec = np.bincount(s_obj).astype(np.float64)
    cte = fit_ensemble(
        "CTE", s_obj, c.cluster, s_t, c.n_clusters, CTE_LEVELS,
        {f: factor_values(f, s_t) for f in CTE_FACTORS}, n_sec,
    )  # fmt: skip
    o_first = _offsets(log_.obj)[:-1]
    day = np.floor(log_.time[o_first] / 24.0).astype(np.int64)
    days = pd.Series(day).value_counts().sort_index()
    return ste, cte, pd.DataFrame({"day": days.index.to_numpy(), "objects": days.to_numpy()})


def _release(ste, cte, s: Settings, seed: int, unit: tuple) -> tuple[Ensemble, Ensemble, dict]:
    """Both ensembles released under ``s.mechanism``: for ``laplace`` one budget of
    ``s.epsilon`` split equally over the components of both (sequential composition)."""
    rng = derive_rng(seed, "sequences-noise", *unit)
    if s.mechanism == "laplace" and not math.isinf(s.epsilon):
        budget = Budget(s.epsilon)
        comps = components(ste) + components(cte)
        each = s.epsilon / len(comps)
        r_ste, a = anonymise(ste, "laplace", s.epsilon, rng, budget, each, s.sampler)
        r_cte, b = anonymise(cte, "laplace", s.epsilon, rng, budget, each, s.sampler)
        summary = {
            "rows": a["rows"] + b["rows"],
            "suppressed": a["suppressed"] + b["suppressed"],
            "budget": {"total": budget.total, "spent": budget.used},
            "components": a["components"] + b["components"],
        }
        return r_ste, r_cte, summary
    # seed_ratio, or laplace at eps = inf (no noise): the ratio test at eps releases all
    # counts when eps is infinite
    eps = s.epsilon if s.mechanism == "seed_ratio" else math.inf
    r_ste, a = anonymise(ste, "seed_ratio", eps)
    r_cte, b = anonymise(cte, "seed_ratio", eps)
    return (
        r_ste,
        r_cte,
        {"rows": a["rows"] + b["rows"], "suppressed": a["suppressed"] + b["suppressed"]},
    )


def _mean_support(*ens: Ensemble) -> float:
    counts = np.concatenate(
        [
            getattr(e, t)["count"].to_numpy(np.float64)
            for e in ens
            for t in ("start", "hour", "trans", "neighbour")
        ]
    )
    return float(counts.mean()) if len(counts) else float("nan")


def fit_release(
    log_: EventLog, s: Settings, seed: int, rep: int = 0, clustering: Clustering | None = None
) -> tuple[pd.DataFrame, dict]:
    """One release: generated records and a summary with the seed's four measures.

    Parameters
    ----------
    log_ : EventLog
    s : Settings
    seed : int
        Master seed; noise and generation use ``derive_rng(seed, "sequences-...", table,
        mechanism, eps, |H|, w, rep)``.
    rep : int
        Repetition number.
    clustering : Clustering, optional
        Reused sections and clusters at (s.hashes, s.shingles).

    Returns
    -------
    generated : DataFrame
        object, section, position, cluster, state (label), time (hours since 1970).
    summary : dict
        table, settings, objects/sections/records/states of the source, gap_hours,
        n_clusters, rows, suppressed, suppression_rate, mean_support, similarity,
        top20_intersection, generated objects/records; for ``laplace`` the
        budget and its components.
    """
    started = _time.monotonic()
    c = clustering or cluster_log(log_, s)
    ste, cte, days = fit_models(
        log_, c, STE_FACTORS_DP if s.mechanism == "laplace" else STE_FACTORS
    )
    unit = (log_.table, s.mechanism, repr(float(s.epsilon)), s.hashes, s.shingles, rep)
    r_ste, r_cte, anon = _release(ste, cte, s, seed, unit)
    gen = generate(
        r_ste, r_cte, days, log_.n_objects, derive_rng(seed, "sequences-generate", *unit)
    )
    g_obj = gen["object"].to_numpy()
    g_state = gen["state"].to_numpy()
    sim = dataset_similarity(
        log_.obj, log_.state, g_obj, g_state, s.hashes, s.shingles, s.metric_sample,
        derive_rng(seed, "sequences-metric", *unit),
    )  # fmt: skip
    top = top_bigram_intersection(log_.obj, log_.state, g_obj, g_state, len(log_.states))
    summary = {
        "table": log_.table,
        "mechanism": s.mechanism,
        "epsilon": float(s.epsilon),
        "hashes": s.hashes,
        "shingles": s.shingles,
        "repetition": rep,
        "source_objects": log_.n_objects,
        "source_sections": int(c.section.max()) + 1,
        "source_records": len(log_.obj),
        "states": len(log_.states),
        "gap_hours": c.gap_hours,
        "n_clusters": c.n_clusters,
        "rows": anon["rows"],
        "suppressed": anon["suppressed"],
        "suppression_rate": anon["suppressed"] / max(1, anon["rows"]),
        "mean_support": _mean_support(r_ste, r_cte),
        "similarity": sim,
        "top20_intersection": top,
        "generated_objects": int(gen["object"].nunique()),
        "generated_records": len(gen),
    }
    log.info(
        "%s %s eps=%s |H|=%d w=%d rep=%d: similarity %.3f, suppression %s in %.2f s",
        log_.table, s.mechanism, s.epsilon, s.hashes, s.shingles, rep, sim,
        percent(summary["suppression_rate"]), _time.monotonic() - started,
    )  # fmt: skip
    for k in ("budget", "components"):
        if k in anon:
            summary[k] = anon[k]
    gen = gen.assign(
        state=np.asarray(log_.states, dtype=object)[g_state]
        if len(gen)
        else gen["state"].astype(str)
    )
    return gen, summary


def run_sweep(log_: EventLog, base: Settings, grid: dict, seed: int, logger=None) -> pd.DataFrame:
    """Every grid point: ``grid`` holds lists ``mechanisms``, ``epsilons``, ``hashes``,
    ``shingles`` and an int ``repetitions``. Returns one row per point (the summary's scalar
    fields and ``note``), ordered as the loops; a ``laplace`` point refused for its size
    (``ReleaseCheckError``) keeps its row with the measures empty and the reason in ``note``."""
    from dataclasses import replace

    points = [
        (h, w, m, e, r)
        for h in grid["hashes"]
        for w in grid["shingles"]
        for m in grid["mechanisms"]
        for e in grid["epsilons"]
        for r in range(grid["repetitions"])
    ]
    rows = []
    progress = Progress(f"sequences sweep {log_.table}", len(points), logger or log, unit="points")
    cache: dict[tuple[int, int], Clustering] = {}
    for h, w, m, e, r in points:
        s = replace(base, mechanism=m, epsilon=float(e), hashes=int(h), shingles=int(w))
        if (h, w) not in cache:
            cache[(h, w)] = cluster_log(log_, s)
        try:
            _, summ = fit_release(log_, s, seed, r, cache[(h, w)])
        except ReleaseCheckError as exc:  # the laplace release would be noise: a row says so
            (logger or log).warning("%s", exc)
            summ = {"table": log_.table, "mechanism": m, "epsilon": float(e), "hashes": int(h),
                    "shingles": int(w), "repetition": r, "note": f"refused: {exc}"}  # fmt: skip
        summ.pop("components", None)
        b = summ.pop("budget", None)
        summ["budget_spent"] = b["spent"] if b else float("nan")
        summ.setdefault("note", "")
        rows.append(summ)
        progress.update(1)
    progress.close()
    return pd.DataFrame(rows)


def friedman_tests(sweep: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Friedman tests across the LSH settings (|H|, w) (seed §5).

    For each table, mechanism and measure, the blocks are (eps, repetition) and the
    treatments the (|H|, w) settings; needs >= 3 settings and >= 2 complete blocks, else the
    row says why it was not run. Returns table, mechanism, measure, settings, blocks,
    statistic, p_value, significant, note.
    """
    from scipy.stats import friedmanchisquare

    out = []
    for (table, mech), d in sweep.groupby(["table", "mechanism"], sort=True):
        for measure in ("similarity", "top20_intersection", "mean_support", "suppression_rate"):
            wide = d.pivot_table(
                index=["epsilon", "repetition"],
                columns=["hashes", "shingles"],
                values=measure,
                aggfunc="first",
            ).dropna()
            row = {
                "table": table,
                "mechanism": mech,
                "measure": measure,
                "settings": wide.shape[1],
                "blocks": wide.shape[0],
            }
            if wide.shape[1] < 3 or wide.shape[0] < 2:
                row.update(
                    statistic=float("nan"),
                    p_value=float("nan"),
                    significant=False,
                    note="needs >= 3 LSH settings and >= 2 blocks",
                )
            elif np.ptp(wide.to_numpy(), axis=1).max() == 0:
                row.update(
                    statistic=0.0, p_value=1.0, significant=False, note="identical across settings"
                )
            else:
                stat, p = friedmanchisquare(*[wide[c].to_numpy() for c in wide.columns])
                row.update(
                    statistic=float(stat), p_value=float(p), significant=bool(p < alpha), note=""
                )
            out.append(row)
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- the stage

#: The stage's artefacts (seed 004), relative to the results folders (``workflow/paths.py``
#: adds the roots); ``{table}`` is transfers | cptevents | vitals.
PRIVATE_PATHS = {
    "seq_events": "sequences/{table}/events.parquet",
    "seq_generated": "sequences/{table}/generated.parquet",
    "seq_release": "sequences/{table}/staged/release.parquet",
}
PUBLIC_PATHS = {
    # the public sequence release: release.parquet, card.json and the data dictionary when
    # certified, else refused.txt and card.json
    "seq_published": "sequences/{table}/release",
    "seq_summary": "sequences/{table}/summary.json",
    "seq_attack": "sequences/{table}/attack.json",
    "seq_check": "sequences/{table}/check.json",
    # the card of a sequence release (sequences.card), copied into its release/ folder
    "seq_card": "sequences/{table}/card.json",
    "seq_sweep": "sequences/{table}/sweep.csv",
    "seq_friedman": "sequences/{table}/friedman.csv",
}
#: The artefacts of each sequence table (``rule all`` and the named target ``sequences``).
TARGETS = ("seq_published", "seq_summary", "seq_check", "seq_sweep", "seq_friedman")
#: Report-rule input name prefix -> the artefact key its report items read, per table.
REPORT_INPUTS = {
    "sequences_sweep": "seq_sweep",
    "sequences_friedman": "seq_friedman",
    "sequences_attack": "seq_attack",
    "sequences_check": "seq_check",
}


def _tables(config: Mapping) -> tuple[str, ...]:
    chosen = config["sequences"]["tables"]
    own = tuple(t.upper() for t in chosen if t in SEQUENCE_TABLES)
    # the `vitals` table is made of the stays series (the series pipeline's extraction)
    return own + (EXTRACTION_TABLES if "vitals" in chosen else ())


def _targets(config: Mapping) -> tuple[Target, ...]:
    return tuple((key, {"table": t}) for t in config["sequences"]["tables"] for key in TARGETS)


def _report_inputs(config: Mapping, audience: str = "public") -> dict[str, Target]:
    return {
        f"{name}_{t}": (key, {"table": t})
        for t in config["sequences"]["tables"]
        for name, key in REPORT_INPUTS.items()
    }


def _check(config: Mapping) -> None:
    section = config["sequences"]
    names: list[str] = []  # the variables table is read only when `vitals` needs it
    if "vitals" in section["tables"]:
        names = [v.name for v in series_variables(load_variables(config["variables"]))]
    check_sequences_config(section, names)


#: The sequences stage (seed 004): Markov-model synthesis of TRANSFERS, CPTEVENTS and an
#: optional vitals table; its report items in :mod:`mimic_deid.report.sequences`.
STAGE = Stage(name="sequences", config_section="sequences", tables=_tables, targets=_targets,
              report_inputs=_report_inputs, report_module="mimic_deid.report.sequences",
              check_config=_check, rule_files=("sequences.smk",), seed_namespace="sequences",
              public_paths=PUBLIC_PATHS, private_paths=PRIVATE_PATHS)  # fmt: skip
