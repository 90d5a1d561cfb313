"""MDAV microaggregation of whole series: every series of a cluster publishes one series.

Microaggregation (statistical disclosure control) replaces each record by the centroid of a
cluster of at least ``k`` similar records, so the published records of a cluster are
identical. MDAV, *Maximum Distance to Average Vector* (Domingo-Ferrer & Mateo-Sanz 2002,
IEEE TKDE 14(1); the fixed-size form of Domingo-Ferrer & Torra 2005, Data Mining and
Knowledge Discovery 11(2)), is its usual heuristic. Here a record is a whole series: within
one unit a release method runs on (a demographic cell of a duration class,
:func:`mimic_deid.deid.classes.split_cells`), every series of ``n`` hours and ``D`` protected
variables is one vector of ``n_hours x D`` standardised values (:func:`standardise`), and
:func:`mdav_partition` clusters them:

1. while at least ``3k`` series are left: take the series furthest from the centroid of
   those left (``r``) and the series furthest from ``r`` (``s``); ``r`` and its ``k - 1``
   nearest form a cluster, then ``s`` and its ``k - 1`` nearest among those still left;
2. with ``2k .. 3k - 1`` left: the series furthest from their centroid and its ``k - 1``
   nearest form a cluster, the others another;
3. fewer than ``2k`` left: they form the last cluster.

Every cluster holds ``k`` series except the last, which holds ``k .. 2k - 1``. Distances are
squared Euclidean; ties go to the first series in key order, so the partition is a function of
the unit alone (no random draw). Each released series is its cluster's hourly mean of the
original values, variable by variable (nulls: the mean of the members observed at that hour,
null where none is; the release's gap filling, :mod:`mimic_deid.deid.missing`, then applies as
for every method). Dimensions that carry no protected feature are left as they are: they are
never published (claim 8 of :mod:`mimic_deid.deid.check`).

In a labelled release (``ihm48``) a cluster publishes one series for all its members, so a
cluster of one outcome discloses it: :func:`diverse_clusters` merges every cluster short of
``ell`` distinct values of some published label into the cluster whose centroid is nearest,
until none is short (the project's rule, as :func:`mimic_deid.deid.kapra.diverse_k_groups`;
clusters may then exceed ``2k - 1``). Swapping members at formation instead was measured and
not adopted (docs/mdav.md, "Outcome-aware cluster formation").

Release method ``mdav-spread`` (issue 49.3) forms the same clusters and publishes, per cluster
and variable, the hourly mean stretched about its own mean over the hours to the members' mean
within-series sd (:func:`spread_means`): an hourly mean of many series is flatter than any of
them, so the window statistics a clinical model reads (minimum, maximum, sd) would shrink. The
members of a cluster still publish one series.

The method's ``k`` is the sweep point's feature k (``fk``): the demographic cells hold at least
``fk`` series, so every unit can be cut into clusters of ``fk``, and the strong attacker's
bound is ``1 / fk`` (claim 14), which a cluster of ``fk`` identical series meets whatever the
attacker knows. The Mondrian targets of the point are computed as for every method but only
enter the unfeasibility reported against them (as for the (k,P) methods).

The loop runs over clusters (``O(n / k)`` rounds of ``O(n)`` vector work), never over pairs
of series. No maintained Python package implements MDAV on whole series with this interface
(the seed-002 trajectory clustering in :mod:`mimic_deid.codes.lda` aligns code trajectories,
a different problem), so it is written here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.core.arrays import distinct_rows
from mimic_deid.core.claims import ClaimInputs
from mimic_deid.core.errors import ConfigError, InputDataError, ReleaseCheckError, require_columns
from mimic_deid.deid.classes import KEY, unit_keys
from mimic_deid.deid.optimise import OptimiseResult, check_inputs, evaluate

__all__ = [
    "check_mdav_clusters",
    "claims",
    "cluster_means",
    "clusters",
    "diverse_clusters",
    "mdav_partition",
    "mdav_summary",
    "run_mdav",
    "run_mdav_spread",
    "spread_means",
    "standardise",
    "summarise",
]


def standardise(X: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """The series of one unit as standardised vectors, the records MDAV clusters.

    Parameters
    ----------
    X : ndarray of float64, shape (n, L, D)
        NaN = null.
    dims : ndarray of int, shape (d,)
        The dimensions clustered (the protected variables).

    Returns
    -------
    ndarray of float64, shape (n, L * d)
        Each dimension minus its mean over the unit's non-null records, divided by their
        population sd (1 where the sd is 0 or undefined); a null record counts 0, the mean.
    """
    x = np.asarray(X, dtype=np.float64)[:, :, np.asarray(dims, dtype=np.int64)]
    valid = ~np.isnan(x)
    count = valid.sum(axis=(0, 1))
    filled = np.where(valid, x, 0.0)
    mean = filled.sum(axis=(0, 1)) / np.maximum(count, 1)
    dev = np.where(valid, x - mean, 0.0)
    sd = np.sqrt((dev**2).sum(axis=(0, 1)) / np.maximum(count, 1))
    sd = np.where(sd > 0, sd, 1.0)
    return (dev / sd).reshape(x.shape[0], -1)


def _sq_dist(Z: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Squared Euclidean distance of every row of ``Z`` to ``z`` (no BLAS: thread-independent)."""
    return ((Z - z) ** 2).sum(axis=1)


def mdav_partition(Z: np.ndarray, k: int) -> tuple[np.ndarray, int]:
    """MDAV clusters of the rows of ``Z`` (module docstring, steps 1-3).

    Parameters
    ----------
    Z : ndarray of float64, shape (n, p)
        One record per row (finite values).
    k : int
        Minimum cluster size, ``2 <= k <= n`` (``n = 0`` gives no cluster).

    Returns
    -------
    labels : ndarray of int64, shape (n,)
        Cluster of each row, ``0 .. g-1`` in the order the clusters were formed; every
        cluster has ``k`` rows except the last, which has ``k .. 2k - 1``.
    rounds : int
        Clusters formed around a furthest record (steps 1 and 2).

    Raises
    ------
    ConfigError
        ``k`` is not an integer >= 2.
    InputDataError
        ``Z`` is not 2-D, holds a NaN or infinity, or has fewer than ``k`` (but some) rows.
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 2:
        raise ConfigError(f"MDAV: k must be an integer >= 2, got {k!r}")
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2:
        raise InputDataError(f"MDAV: records must be a 2-D array (n, p), got shape {Z.shape}")
    if not np.isfinite(Z).all():
        raise InputDataError("MDAV: records must be finite (standardise nulls first)")
    n = Z.shape[0]
    if 0 < n < k:
        raise InputDataError(
            f"MDAV: {n} series in the unit, fewer than k={k}; every cluster needs at least k"
        )
    labels = np.full(n, -1, dtype=np.int64)
    remaining = np.arange(n)
    cluster = rounds = 0

    def take(seed: int) -> None:
        """``seed`` and its k - 1 nearest among the remaining rows become one cluster."""
        nonlocal remaining, cluster
        d = _sq_dist(Z[remaining], Z[seed])
        d[remaining == seed] = -1.0  # the seed itself, even beside an identical record
        members = remaining[np.argsort(d, kind="stable")[:k]]
        labels[members] = cluster
        cluster += 1
        remaining = remaining[labels[remaining] < 0]

    while remaining.size >= 3 * k:
        rest = Z[remaining]
        r = int(remaining[np.argmax(_sq_dist(rest, rest.mean(axis=0)))])
        s = int(remaining[np.argmax(_sq_dist(rest, Z[r]))])
        take(r)
        if labels[s] >= 0:  # only when every record left ties with r's cluster
            s = int(remaining[np.argmax(_sq_dist(Z[remaining], Z[r]))])
        take(s)
        rounds += 2
    if remaining.size >= 2 * k:
        rest = Z[remaining]
        take(int(remaining[np.argmax(_sq_dist(rest, rest.mean(axis=0)))]))
        rounds += 1
    if remaining.size:
        labels[remaining] = cluster
    return labels, rounds


def _dense(labels: np.ndarray) -> np.ndarray:
    return np.unique(labels, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _centroids(Z: np.ndarray, labels: np.ndarray, g: int) -> np.ndarray:
    """Mean row of every cluster, shape (g, p) (sums in row order: deterministic)."""
    order = np.argsort(labels, kind="stable")
    starts = np.searchsorted(labels[order], np.arange(g))
    sums = np.add.reduceat(Z[order], starts, axis=0)
    return sums / np.bincount(labels, minlength=g)[:, None]


def _distinct(labels: np.ndarray, column: np.ndarray, g: int) -> np.ndarray:
    """Distinct values of ``column`` in each of the ``g`` clusters."""
    pairs = np.unique(np.column_stack([labels, _dense(column)]), axis=0)
    return np.bincount(pairs[:, 0], minlength=g)


def diverse_clusters(
    Z: np.ndarray, labels: np.ndarray, outcomes: np.ndarray, ell: int
) -> np.ndarray:
    """Clusters merged until each holds ``ell`` distinct values of every outcome.

    The cluster of lowest id short of ``ell`` values of some outcome joins the cluster whose
    centroid (in ``Z``) is nearest to its own (ties: the lowest id), until none is short or
    one cluster is left. Sizes only grow, so every cluster keeps at least ``k`` series.

    Parameters
    ----------
    Z : ndarray of float64, shape (n, p)
        The records clustered (:func:`standardise`).
    labels : ndarray of int, shape (n,)
    outcomes : ndarray, shape (n, t)
        The published outcome labels of the series.
    ell : int

    Returns
    -------
    ndarray of int64, shape (n,)
        Clusters ``0 .. g'-1``, in the order of their lowest original id.
    """
    labels = _dense(np.asarray(labels, dtype=np.int64))
    outcomes = np.asarray(outcomes).reshape(len(labels), -1)
    while True:
        g = int(labels.max()) + 1 if labels.size else 0
        if g <= 1:
            return labels
        distinct = np.min([_distinct(labels, col, g) for col in outcomes.T], axis=0)
        poor = np.flatnonzero(distinct < ell)
        if poor.size == 0:
            return labels
        centres = _centroids(Z, labels, g)
        cur = int(poor[0])
        d = _sq_dist(centres, centres[cur])
        d[cur] = np.inf
        labels = _dense(np.where(labels == cur, int(np.argmin(d)), labels))


def cluster_means(X: np.ndarray, labels: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """Every series replaced by its cluster's hourly mean on ``dims``.

    Parameters
    ----------
    X : ndarray of float64, shape (n, L, D)
        NaN = null.
    labels : ndarray of int, shape (n,)
        Clusters ``0 .. g-1``.
    dims : ndarray of int
        The dimensions replaced; the others are returned unchanged.

    Returns
    -------
    ndarray of float64, shape (n, L, D)
        On ``dims``, per cluster, hour and dimension the mean of the members' non-null
        values (NaN where no member has one): the members of a cluster hold bit-identical
        values there.
    """
    X = np.asarray(X, dtype=np.float64)
    out = X.copy()
    dims = np.asarray(dims, dtype=np.int64)
    if X.shape[0] == 0 or dims.size == 0:
        return out
    g = int(labels.max()) + 1
    order = np.argsort(labels, kind="stable")
    starts = np.searchsorted(labels[order], np.arange(g))
    x = X[order][:, :, dims]
    valid = ~np.isnan(x)
    sums = np.add.reduceat(np.where(valid, x, 0.0), starts, axis=0)
    counts = np.add.reduceat(valid.astype(np.int64), starts, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / counts, np.nan)
    out[:, :, dims] = means[labels]
    return out


def spread_means(X: np.ndarray, labels: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """Every series replaced by its cluster's hourly mean, stretched to its members' spread.

    An hourly mean of ``m`` series varies less over the hours than its members do (their
    ups and downs partly cancel), so the window statistics a clinical model reads (minimum,
    maximum, sd over the first or last hours) shrink towards the mean. Here, per cluster and
    variable, the mean series ``c(t)`` is stretched about its own mean over the hours
    ``mu``: ``mu + f (c(t) - mu)``, with ``f`` the members' mean within-series sd (population,
    over each member's non-null hours) divided by the sd of ``c`` over its non-null hours, so
    the published series' sd is its members' typical sd. ``f = 1`` where ``c`` is constant or
    no member has an sd. The hourly mean over the cluster, the shape of ``c`` and every
    series' cluster are kept; the published series is still one function of the cluster's
    members, so the members of a cluster hold bit-identical values, as with
    :func:`cluster_means`.

    Parameters
    ----------
    X, labels, dims
        As in :func:`cluster_means`.

    Returns
    -------
    ndarray of float64, shape (n, L, D)
        Null where :func:`cluster_means` is null.
    """
    out = cluster_means(X, labels, dims)
    X = np.asarray(X, dtype=np.float64)
    dims = np.asarray(dims, dtype=np.int64)
    if X.shape[0] == 0 or dims.size == 0:
        return out
    labels = np.asarray(labels, dtype=np.int64)
    g = int(labels.max()) + 1
    order = np.argsort(labels, kind="stable")
    starts = np.searchsorted(labels[order], np.arange(g))
    means = out[order[starts]][:, :, dims]  # (g, L, d): one member of each cluster
    member_sd = _hour_sd(X[:, :, dims])  # (n, d), NaN without a non-null hour
    has = np.isfinite(member_sd)
    total = np.add.reduceat(np.where(has, member_sd, 0.0)[order], starts, axis=0)
    count = np.add.reduceat(has[order].astype(np.int64), starts, axis=0)
    centre = _hour_mean(means)  # (g, d)
    own = _hour_sd(means)
    with np.errstate(invalid="ignore", divide="ignore"):
        factor = np.where((count > 0) & (own > 0), total / np.maximum(count, 1) / own, 1.0)
    spread = centre[:, None, :] + factor[:, None, :] * (means - centre[:, None, :])
    out[:, :, dims] = spread[labels]
    return out


def _hour_mean(x: np.ndarray) -> np.ndarray:
    """Mean over the hours (axis 1) of the non-null values; NaN where none is."""
    valid = ~np.isnan(x)
    count = valid.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, np.where(valid, x, 0.0).sum(axis=1) / count, np.nan)


def _hour_sd(x: np.ndarray) -> np.ndarray:
    """Population sd over the hours (axis 1) of the non-null values; NaN where none is."""
    centre = _hour_mean(x)
    dev = np.where(np.isnan(x), 0.0, x - centre[:, None, :])
    count = (~np.isnan(x)).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, np.sqrt((dev**2).sum(axis=1) / count), np.nan)


def run_mdav(X, targets, spec, params: Mapping[str, Any], rng) -> OptimiseResult:
    """Release method ``mdav`` (:mod:`mimic_deid.deid.methods` signature; module docstring).

    ``params``: ``k`` (the sweep's fk) and, in a labelled release, ``outcomes`` (n, t) and
    ``ell`` (:func:`diverse_clusters`). ``rng`` is not used: MDAV draws nothing. The
    protected dimensions (``spec.feature_dims``) of every series become its cluster's hourly
    mean; ``iterations`` is the unit's number of MDAV rounds. ``detail`` holds per series
    ``cluster`` (int64, numbered within the unit), ``sse`` (squared standardised distance
    to its cluster's centroid) and ``sst`` (to the unit's centroid), whose sums give the
    information loss SSE/SST (:func:`mdav_summary`).
    """
    return _microaggregate(X, targets, spec, params, cluster_means, "mdav")


def run_mdav_spread(X, targets, spec, params: Mapping[str, Any], rng) -> OptimiseResult:
    """Release method ``mdav-spread``: the clusters of :func:`run_mdav`, each publishing its
    hourly mean stretched to its members' spread (:func:`spread_means`); ``params``, ``rng``
    and ``detail`` as :func:`run_mdav`."""
    return _microaggregate(X, targets, spec, params, spread_means, "mdav-spread")


def _microaggregate(X, targets, spec, params, publish, name: str) -> OptimiseResult:
    """MDAV clusters of the unit (ℓ-diverse in a labelled release), each publishing
    ``publish(X, labels, dims)``."""
    X, targets = check_inputs(X, targets, spec)
    if "k" not in params:
        raise ConfigError(f"release method '{name}' needs the feature k (fk) as its k")
    n = X.shape[0]
    dims = spec.feature_dims
    Z = standardise(X, dims)
    labels, rounds = mdav_partition(Z, int(params["k"]))
    if "outcomes" in params and n:
        labels = diverse_clusters(Z, labels, params["outcomes"], int(params["ell"]))
    out = publish(X, labels, dims)
    if n:
        centres = _centroids(Z, labels, int(labels.max()) + 1)
        sse = ((Z - centres[labels]) ** 2).sum(axis=1)
        sst = _sq_dist(Z, Z.mean(axis=0))
    else:
        sse = sst = np.zeros(0)
    result = evaluate(X, out, targets, spec, np.full(n, rounds, dtype=np.int64))
    return dataclasses.replace(result, detail={"cluster": labels, "sse": sse, "sst": sst})


def mdav_summary(per_series: pd.DataFrame) -> dict:
    """Public aggregates of an MDAV release, from its private per-series table.

    Parameters
    ----------
    per_series : DataFrame
        ``method.parquet`` of ``mdav``: group, class_length (, cell), ``cluster``, ``sse``,
        ``sst``.

    Returns
    -------
    dict
        ``clusters`` (over the release), ``smallest_cluster``, ``largest_cluster``,
        ``mean_cluster_size`` (series), and ``sse_sst``: the within-cluster share of the
        standardised sum of squares (0: nothing lost, 1: every series its unit's mean).
    """
    if not len(per_series):
        return {"clusters": 0}
    sizes = per_series.groupby([*unit_keys(per_series), "cluster"], sort=True).size()
    sst = float(per_series["sst"].sum())
    return {
        "clusters": len(sizes),
        "smallest_cluster": int(sizes.min()),
        "largest_cluster": int(sizes.max()),
        "mean_cluster_size": float(sizes.mean()),
        "sse_sst": float(per_series["sse"].sum()) / sst if sst > 0 else 0.0,
    }


def check_mdav_clusters(
    per_series: pd.DataFrame,
    series_public: pd.DataFrame,
    pseudonyms: pd.DataFrame,
    k: int,
) -> dict:
    """Claim 11 of an MDAV release: every published series is one of >= ``k`` identical ones.

    Read from the published values alone: within its unit (duration class and demographic
    cell, whose demographics the index publishes), every series must publish exactly the
    same values, hour by hour and variable by variable (nulls equal), as at least ``k - 1``
    others. The method's own clusters (``cluster``) must each publish one series.

    Parameters
    ----------
    per_series : DataFrame
        The method's ``method.parquet``: icustay_id, group, class_length (, cell), cluster.
    series_public : DataFrame
        ``release/series.parquet`` (pseudonym, hour, published variables).
    pseudonyms : DataFrame
        icustay_id, pseudonym.
    k : int

    Returns
    -------
    dict
        ``k``, ``series``, ``variables``, ``groups`` (distinct published series over the
        units), ``smallest_group`` and ``breach_bound`` (``1 / k``).

    Raises
    ------
    ReleaseCheckError
        A column is missing, a published series is not in the method's table or lacks
        hours, a group of identical series is under ``k``, or a cluster publishes two series.
    """
    keys = unit_keys(per_series)
    require_columns(
        per_series, [KEY, *keys, "cluster"], "method per-series table", ReleaseCheckError
    )
    require_columns(series_public, ["pseudonym", "hour"], "release series table", ReleaseCheckError)
    variables = [c for c in series_public.columns if c not in ("pseudonym", "hour")]
    member = per_series[[KEY, *keys, "cluster"]].merge(pseudonyms, on=KEY)
    rows = series_public.merge(member.drop(columns=[KEY]), on="pseudonym", how="left")
    lost = rows.loc[rows["cluster"].isna(), "pseudonym"].nunique()
    if lost:
        raise ReleaseCheckError(
            f"MDAV clusters: {lost} released series are not in the method's per-series table"
        )
    rows = rows.sort_values([*keys, "pseudonym", "hour"], kind="stable")
    n_series, n_groups, smallest, small, mixed = 0, 0, None, 0, 0
    for unit, part in rows.groupby(keys, sort=True):
        length = int(unit[1])
        m = part["pseudonym"].nunique()
        if len(part) != m * length:
            raise ReleaseCheckError(
                f"MDAV clusters: the unit of the {length} h class (group {unit[0]}) publishes "
                f"{len(part)} rows for {m} series, not {length} hours each"
            )
        values = part[variables].to_numpy(dtype=np.float64).reshape(m, -1)
        _, inverse, counts = distinct_rows(values)
        size = counts[inverse]
        cluster = part["cluster"].to_numpy(dtype=np.int64)[::length]
        pairs = np.unique(np.column_stack([cluster, inverse]), axis=0)
        mixed += int(len(pairs) - np.unique(pairs[:, 0]).size)
        small += int((size < k).sum())
        n_series += m
        n_groups += len(counts)
        low = int(counts.min()) if len(counts) else None
        smallest = low if smallest is None else min(smallest, low)
    if small:
        raise ReleaseCheckError(
            f"MDAV clusters: {small} released series in groups of identical series under "
            f"k={k} within their duration class and demographic cell, smallest {smallest} "
            "series"
        )
    if mixed:
        raise ReleaseCheckError(
            f"MDAV clusters: {mixed} cluster(s) publish more than one series (the release is "
            "not each cluster's hourly mean)"
        )
    return {
        "k": int(k),
        "series": n_series,
        "variables": variables,
        "groups": n_groups,
        "smallest_group": smallest,
        "breach_bound": 1.0 / k,
    }


# --------------------------------------------------------------------------- registry hooks
# What MDAV brings to the release-method contract (:class:`mimic_deid.deid.methods.ReleaseMethod`):
# its summary, claim and recoverable groups; no other module names it.


def summarise(per_series: pd.DataFrame) -> dict:
    """The method summary's ``mdav`` entry (:func:`mdav_summary`)."""
    return {"mdav": mdav_summary(per_series)}


def claims(point: ClaimInputs) -> dict:
    """The method's claim (claim 11 of :mod:`mimic_deid.deid.check`): ``{"mdav_clusters":
    ...}`` (:func:`check_mdav_clusters` with the point's k). ``plausible`` is not needed: the
    projection onto plausible values (:mod:`mimic_deid.deid.plausible`) maps equal series to
    equal series, so the clusters stay identical after it."""
    return {
        "mdav_clusters": check_mdav_clusters(
            point.per_series, point.series_public, point.pseudonyms, point.k
        )
    }


def clusters(per_series: pd.DataFrame) -> pd.DataFrame:
    """The groups a recipient recovers from an MDAV release: each series' cluster (its
    identical series), numbered over the release, with ``icustay_id``."""
    code = per_series.groupby([*unit_keys(per_series), "cluster"], sort=True).ngroup()
    return pd.DataFrame({KEY: per_series[KEY].to_numpy(), "cluster": code.to_numpy()})
