"""Linkage (re-identification) attack on one duration class (seed §5.3 and §7.2; conventions of mimic_deid.evaluate.disagreement).

Threat model. The attacker knows the duration class of a target (so the attack runs per
class) and the target's ORIGINAL features up to a relative estimation error ``e``: it holds
``f * (1 + e * z)`` with ``z ~ N(0, 1)`` independent per (target, feature); null features stay
null. It links the target to the released series whose released features are nearest to its
knowledge (masked Euclidean distance over features non-null in both; by default every feature
is divided by its class-wide std over the original values so that no feature dominates by
variance). The attack succeeds at top-k if the target is among the k nearest.

Ties. Distances within ``TIE_TOL`` (1e-9) of each other are ties, and ties are shared: a target
with ``b`` candidates strictly nearer and ``t`` candidates tied with it (itself included) counts
``clip((k - b) / t, 0, 1)`` successes at top-k, i.e. the expected success of an attacker who
breaks ties uniformly at random. This is deterministic and independent of the row order; in a
release whose classes of >= k series share identical released features, top-1 <= 1/k. A target
whose own released series has no feature comparable with its knowledge is never found.

Reconstruction error. The linked (top-1) series is the nearest one; on a tie, the error is
averaged over the tied nearest candidates (again the expectation under random tie-breaking).
Per target it is ``d_S(original target, linked released series) / sqrt(c)``, where ``c`` is the
number of (record, dimension) values non-null in both: the root-mean-square difference per
compared value, in the series' own units (mmHg, bpm, ... mixed across dimensions; series are
never standardised here). Targets with no compared value are left out of the mean.

The same random draws ``z`` are used for every ``e`` (common random numbers), so rates change
smoothly with ``e`` and the result is deterministic for a given ``rng`` seed.

Targets. Every series of a class is a candidate, but a class of more than ``max_targets``
series (config ``evaluate/max_targets``, :data:`MAX_TARGETS`) is attacked through a random
sample of that many targets (:func:`sample_targets`), so an attack costs
``O(max_targets * n)`` and grows linearly with the class (the ``ihm48`` release's training
class of 48 h holds 11,000 series at full MIMIC-III size). Over several classes
(:func:`aggregate_linkage`) each class's rate then counts with the weight of its ``n`` series,
not of its targets, and the interval is that of the targets attacked.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.evaluate.disagreement import TIE_TOL

RECONSTRUCTION_UNIT = (
    "root-mean-square difference per compared (record, dimension) value between the original "
    "target and the linked released series, in the series' own units"
)
#: Targets attacked per class at most (config ``evaluate/max_targets``; a random sample above).
MAX_TARGETS = 1000

TIE_RULE = (
    "distances within 1e-9 are ties; ties are shared (expected success under uniform random "
    "tie-breaking)"
)


def sample_targets(n: int, max_targets: int, rng: np.random.Generator) -> np.ndarray:
    """The series of a class of ``n`` that an attack targets, in ascending order.

    Every series when ``n <= max_targets`` (``rng`` is then not used); else a simple random
    sample of ``max_targets`` of them without replacement, drawn from ``rng``.

    Returns
    -------
    ndarray of int64, shape (min(n, max_targets),)
    """
    if max_targets < 1:
        raise ConfigError(
            f"attack targets (evaluate/max_targets) must be at least 1, got {max_targets}"
        )
    if n <= max_targets:
        return np.arange(n, dtype=np.int64)
    return np.sort(rng.choice(n, size=max_targets, replace=False)).astype(np.int64)


def score_rows(d_f: np.ndarray, rms: np.ndarray, own: np.ndarray, top: tuple[int, ...]) -> dict:
    """Per-target parts of the score of a block of targets.

    Parameters
    ----------
    d_f : ndarray, shape (b, n)
        Feature distances of ``b`` targets (with the attacker's knowledge) to every released
        series; target ``i`` of the block is released series ``own[i]``.
    rms : ndarray, shape (b, n)
        Per-value RMS series distances of the same pairs (module docstring).
    own : ndarray of int, shape (b,)
        The class index of each target (the column of its own released series).
    top : tuple of int

    Returns
    -------
    dict
        ``reachable`` (bool, (b,)), ``succ{k}`` (expected success at top-k, (b,)) and
        ``reconstruction`` (per-target error, NaN where undefined, (b,)); combined over blocks
        by :func:`finish_score`.
    """
    b = d_f.shape[0]
    true = d_f[np.arange(b), own][:, None]  # the distance to the target's own series
    reachable = ~np.isnan(true[:, 0])
    better = (d_f < true - TIE_TOL).sum(axis=1)
    tied = (np.abs(d_f - true) <= TIE_TOL).sum(axis=1)
    out: dict[str, np.ndarray] = {"reachable": reachable}
    for k in top:
        with np.errstate(invalid="ignore", divide="ignore"):
            out[f"succ{k}"] = np.clip((k - better) / np.maximum(tied, 1), 0.0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        nearest = np.nanmin(d_f, axis=1)[:, None]
        cand = np.abs(d_f - nearest) <= TIE_TOL
        out["reconstruction"] = np.nanmean(np.where(cand, rms, np.nan), axis=1)
    return out


def finish_score(blocks: list[dict], e: float, top: tuple[int, ...]) -> dict[str, Any]:
    """One ``by_error`` entry of an attack from the :func:`score_rows` of every
    block of targets, in order (the totals are summed over the whole class at once, so the
    result does not depend on the blocking)."""
    parts = {key: np.concatenate([b[key] for b in blocks]) for key in blocks[0]}
    reachable = parts["reachable"]
    n = int(reachable.shape[0])
    out: dict[str, Any] = {"error": e, "n_targets": n, "unreachable": int((~reachable).sum())}
    for k in top:
        hits = float(np.where(reachable, parts[f"succ{k}"], 0.0).sum())
        out[f"top{k}"] = hits / n if n else float("nan")
        out[f"top{k}_hits"] = hits
    per_target = parts["reconstruction"]
    ok = ~np.isnan(per_target)
    total = float(per_target[ok].sum())
    out["reconstruction_sum"] = total
    out["reconstruction_n"] = int(ok.sum())
    out["reconstruction_error"] = total / ok.sum() if ok.any() else float("nan")
    return out


def linkage_header(n: int, standardise: bool, top: tuple[int, ...]) -> dict[str, Any]:
    """The fields of an attack's result besides ``by_error`` (:class:`~mimic_deid.evaluate.evaluators.Linkage`)."""
    return {
        "n": int(n),
        "standardise": bool(standardise),
        "top": list(top),
        "tie_rule": TIE_RULE,
        "reconstruction_unit": RECONSTRUCTION_UNIT,
    }


#: Confidence level of the intervals reported beside attack rates.
CONFIDENCE = 0.95


def rate_interval(hits: float, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval of an attack's success rate ``hits / n``.

    The interval of :func:`scipy.stats.binomtest`'s ``proportion_ci(method="wilson")``, bit
    for bit: Newcombe's (1998) closed form with ``z`` the normal quantile
    (:func:`scipy.special.ndtri`), 0 as the low end at no hit and 1 as the high end at every
    target a hit. Computed here rather than through ``scipy.stats``, whose import costs every
    job that reports a rate and fits no model about 0.4 CPU-s (each release's privacy job, the
    cross-release pairing; benchmarks/README.md, "The Wilson interval without scipy.stats"),
    for the same figures (``tests/deid/test_release_privacy.py`` compares them). The
    expected hits of shared ties (module docstring) are rounded to the nearest whole target
    first.

    Parameters
    ----------
    hits : float
        Successes over the targets (expected successes where ties are shared).
    n : int
        Targets attacked.
    confidence : float
        Coverage of the interval (two-sided).

    Returns
    -------
    (low, high) : tuple of float
        Fractions in [0, 1]; ``(nan, nan)`` when ``n`` is 0.
    """
    if n <= 0:
        return (float("nan"), float("nan"))
    n = int(n)
    k = min(int(round(hits)), n)
    from scipy.special import ndtri  # imported here: the workflow imports this module at start

    p = k / n
    z = ndtri(0.5 + 0.5 * confidence)
    denom = 2 * (n + z**2)
    centre = (2 * n * p + z**2) / denom
    delta = z / denom * math.sqrt(4 * n * p * (1 - p) + z**2)
    low = 0.0 if k == 0 else centre - delta
    high = 1.0 if k == n else centre + delta
    return (float(low), float(high))


def aggregate_linkage(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Combine per-class attack results (same ``errors`` and ``top``) over classes.

    Rates are class rates weighted by class size ``n`` (total expected hits over total targets
    when every series was a target). A class attacked through a sample of its series
    (:func:`sample_targets`) counts its hits scaled by ``n / n_targets``; the interval is then
    the Wilson interval of the rate over the targets actually attacked. The reconstruction
    error is the mean over targets with a defined error, weighted the same way.

    Returns
    -------
    dict
        ``n``, ``classes``, ``top`` and ``by_error`` with the fields of
        :func:`finish_score` (``n_targets``: targets attacked; ``top{k}_hits``: expected
        successes over the ``n`` series).
    """
    if not results:
        return {"n": 0, "classes": 0, "top": [], "by_error": []}
    top = results[0]["top"]
    n_errors = len(results[0]["by_error"])
    for r in results:
        if r["top"] != top or len(r["by_error"]) != n_errors:
            raise InputDataError("aggregate_linkage: results differ in 'top' or 'errors'")
    n = sum(r["n"] for r in results)
    by_error = []
    for i in range(n_errors):
        rows = [r["by_error"][i] for r in results]
        # a sampled class's targets stand for all its series (an int 1 keeps sums exact)
        weights = [
            1 if row["n_targets"] == r["n"] else r["n"] / row["n_targets"]
            for r, row in zip(results, rows, strict=True)
        ]
        n_t = sum(row["n_targets"] for row in rows)
        agg: dict[str, Any] = {
            "error": rows[0]["error"],
            "n_targets": n_t,
            "unreachable": sum(row["unreachable"] for row in rows),
        }
        for k in top:
            hits = sum(row[f"top{k}_hits"] * w for row, w in zip(rows, weights, strict=True))
            agg[f"top{k}"] = hits / n if n else float("nan")
            agg[f"top{k}_hits"] = hits
            agg[f"top{k}_ci"] = list(rate_interval(hits if n_t == n else hits * n_t / n, n_t))
        rec_sum = sum(row["reconstruction_sum"] * w for row, w in zip(rows, weights, strict=True))
        rec_n = sum(row["reconstruction_n"] * w for row, w in zip(rows, weights, strict=True))
        agg["reconstruction_sum"] = rec_sum
        agg["reconstruction_n"] = rec_n
        agg["reconstruction_error"] = rec_sum / rec_n if rec_n else float("nan")
        by_error.append(agg)
    return {"n": n, "classes": len(results), "top": top, "by_error": by_error}


def linkage_summary(per_class: Mapping[str, list[dict]]) -> dict:
    """Class-size-weighted linkage results per side, keyed by the estimation error.

    ``{side: {"<error>": {top1, top1_ci, top5, top5_ci, reconstruction_error, n}},
    "details": {side: ...}}``; ``*_ci`` are 95 % Wilson intervals
    (:func:`rate_interval`).
    """
    out: dict = {"details": {}}
    for side, results in per_class.items():
        agg = aggregate_linkage(results)
        out["details"][side] = agg
        out[side] = {
            f"{row['error']:g}": {
                "top1": row.get("top1"),
                "top1_ci": row.get("top1_ci"),
                "top5": row.get("top5"),
                "top5_ci": row.get("top5_ci"),
                "reconstruction_error": row["reconstruction_error"],
                "n": row["n_targets"],
            }
            for row in agg["by_error"]
        }
    return out
