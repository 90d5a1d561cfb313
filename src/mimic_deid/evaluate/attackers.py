"""The attacker family: who links a released series to its person, and with what knowledge.

The threat model is in ``docs/threat-model.md``. Every attacker knows a target's duration
class and published demographics (so it attacks within one class, among the series that
publish the target's demographics) and some of the target's ORIGINAL series, exactly. It
links the target to the released series of the class that looks most like what it knows.
A release certified at ``k`` promises that no member links more than ``1 / k`` of the series
(top-1; :func:`mimic_deid.evaluate.privacy.linkage_bound`).

Members (:data:`ATTACKERS`, in this order; one class and one registry line each):

``summary``
    The mean, variance, minimum, maximum and observed hours of every variable
    (:data:`~mimic_deid.deid.features.ATTACKER_STATS`): the project's strong attacker.
``rich``
    Those, plus per variable the least-squares slope over the hours, the first and last
    observed value, the median and quartiles, and the lag-1 autocorrelation.
``raw_hours``
    The values of every variable at :data:`RAW_HOURS` hours of the class, drawn per class
    (the attacker saw the patient at those hours).
``shape``
    The whole original series, compared by shape: every variable of every series (original
    and released) is z-normalised over its own observed hours, which removes the level and
    scale that the Mondrian methods set; distance is the root-mean-square difference per
    value compared.
``values``
    The whole original series, compared by value: root-mean-square difference per compared
    value in the series' own units (the blocked kernel's own distance,
    :meth:`~mimic_deid.evaluate.evaluators.Block.rms`, computed once per block).

The feature members (``summary``, ``rich``, ``raw_hours``) compare by the masked Euclidean
distance over features known in both, every feature divided by its class-wide standard
deviation over the original series (as :class:`~mimic_deid.evaluate.evaluators.Linkage`).
Ties and top-1 are those of :mod:`mimic_deid.evaluate.linkage` (ties shared: ``t`` equally
near candidates count ``1 / t`` if the target's own series is among them), so a class whose
released series are identical in groups of ``k`` holds every member to ``1 / k``.

A new attacker is one subclass of :class:`Attacker` and one line in :data:`ATTACKERS`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mimic_deid.core.errors import ConfigError
from mimic_deid.deid.features import ATTACKER_STATS, dimension_stats
from mimic_deid.evaluate.disagreement import class_std
from mimic_deid.evaluate.distances import feature_distances, series_centre, series_distances

__all__ = [
    "ATTACKERS",
    "RAW_HOURS",
    "Attacker",
    "FeatureAttacker",
    "RawHours",
    "RichStatistics",
    "Shape",
    "SummaryStatistics",
    "Values",
    "check_attackers",
    "rich_statistics",
    "strongest_attacker",
    "znormalise",
]

#: Hours of a class whose values the ``raw_hours`` attacker knows.
RAW_HOURS = 3

#: The per-variable statistics of the ``rich`` attacker beyond :data:`ATTACKER_STATS`.
RICH_STATS = ("slope", "first", "last", "median", "q25", "q75", "lag1")


class Attacker:
    """One member of the family: its knowledge of a target and its distance to a release.

    Subclasses set ``name`` and ``knows`` (one sentence, shown on the card) and implement
    :meth:`prepare` and :meth:`distances`.
    """

    name: str = ""
    knows: str = ""

    def prepare(self, X_o: np.ndarray, X_r: np.ndarray, rng: np.random.Generator) -> Any:
        """What the attack of one class needs, once per class.

        Parameters
        ----------
        X_o, X_r : ndarray, shape (n, L, D)
            Original and released series of the class (NaN = null).
        rng : numpy.random.Generator
            The attacker's random stream for this class.
        """
        raise NotImplementedError

    def distances(self, state: Any, block) -> np.ndarray:
        """Distances of the block's targets (their original series) to every released
        series of the class, shape (b, n); NaN where nothing is comparable.

        ``block`` is a :class:`~mimic_deid.evaluate.evaluators.Block` (its ``rows`` are the
        targets' class indices)."""
        raise NotImplementedError


class FeatureAttacker(Attacker):
    """An attacker who knows a vector of features per series (:meth:`knowledge`)."""

    def knowledge(self, X: np.ndarray, state: Any) -> np.ndarray:
        """Features of every series of ``X`` (n, L, D), shape (n, m), NaN = unknown."""
        raise NotImplementedError

    def setup(self, X_o: np.ndarray, rng: np.random.Generator) -> Any:
        """Per-class settings drawn before the knowledge (none by default)."""
        return None

    def prepare(self, X_o, X_r, rng):
        setup = self.setup(X_o, rng)
        K_o = self.knowledge(X_o, setup)
        K_r = K_o if X_r is X_o else self.knowledge(X_r, setup)
        return K_o, K_r, class_std(K_o, axis=0)

    def distances(self, state, block):
        K_o, K_r, scale = state
        return feature_distances(K_o[block.rows], K_r, scale)


def _stats(X: np.ndarray, stats: Sequence[str]) -> np.ndarray:
    """``stats`` of :func:`~mimic_deid.deid.features.dimension_stats` per dimension, (n, D*s)."""
    parts = []
    for d in range(X.shape[2]):
        values = dimension_stats(X[:, :, d])
        parts += [values[s] for s in stats]
    return np.stack(parts, axis=1) if parts else np.empty((X.shape[0], 0))


def rich_statistics(X: np.ndarray) -> np.ndarray:
    """The :data:`RICH_STATS` of every dimension of every series.

    Parameters
    ----------
    X : ndarray, shape (n, L, D)
        Series, NaN = null record.

    Returns
    -------
    ndarray, shape (n, D * len(RICH_STATS))
        Per dimension, in order: slope per hour (least squares over the observed hours; NaN
        with fewer than 2), first and last observed value, median, 25 % and 75 % quantiles,
        lag-1 autocorrelation (over consecutive observed pairs, about the series mean; NaN
        when the series is constant or has no such pair). NaN where undefined.
    """
    n, L, D = X.shape
    t = np.arange(L, dtype=np.float64)[None, :]
    idx = np.arange(n)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        for d in range(D):
            x = X[:, :, d]
            seen = ~np.isnan(x)
            count = seen.sum(axis=1)
            tm = np.where(seen, t, np.nan)
            tc = tm - np.nanmean(tm, axis=1, keepdims=True)
            xc = x - np.nanmean(x, axis=1, keepdims=True)
            den = np.nansum(tc * tc, axis=1)
            slope = np.where((count >= 2) & (den > 0), np.nansum(tc * xc, axis=1) / den, np.nan)
            any_seen = count > 0
            first = np.where(any_seen, x[idx, np.argmax(seen, axis=1)], np.nan)
            last = np.where(any_seen, x[idx, L - 1 - np.argmax(seen[:, ::-1], axis=1)], np.nan)
            q25, median, q75 = _row_quantiles(x, count, (0.25, 0.5, 0.75))
            num = np.nansum(xc[:, 1:] * xc[:, :-1], axis=1)
            var = np.nansum(xc * xc, axis=1)
            pairs = (seen[:, 1:] & seen[:, :-1]).any(axis=1)
            lag1 = np.where(pairs & (var > 0), num / var, np.nan)
            out += [slope, first, last, median, q25, q75, lag1]
    return np.stack(out, axis=1) if out else np.empty((n, 0))


def _row_quantiles(x: np.ndarray, count: np.ndarray, qs: Sequence[float]) -> list[np.ndarray]:
    """Quantiles of every row of ``x`` (n, L) over its non-null values, with ``count`` of
    them per row: the linear interpolation of :func:`numpy.nanquantile`, from one sort (NaN
    sorts last); NaN for a row with none."""
    ordered = np.sort(x, axis=1)
    rows = np.arange(x.shape[0])
    out = []
    for q in qs:
        pos = q * np.maximum(count - 1, 0)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, np.maximum(count - 1, 0))
        a, b = ordered[rows, lo], ordered[rows, hi]
        out.append(np.where(count > 0, a + (pos - lo) * (b - a), np.nan))
    return out


def znormalise(X: np.ndarray) -> np.ndarray:
    """Every dimension of every series minus its mean over its observed hours, divided by
    its std there (a constant dimension: minus its mean only); nulls stay null. (n, L, D)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        mean = np.nanmean(X, axis=1, keepdims=True)
        std = np.nanstd(X, axis=1, keepdims=True)
    std = np.where(np.isfinite(std) & (std > 0), std, 1.0)
    return (X - mean) / std


def _rms(d: np.ndarray, counts: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return d / np.sqrt(counts)


class SummaryStatistics(FeatureAttacker):
    """The ``summary`` member: the strong attacker's statistics (module docstring)."""

    name = "summary"
    knows = (
        "mean, variance, minimum, maximum and observed hours of every released variable "
        "(the strong attacker)"
    )

    def knowledge(self, X, state):
        return _stats(X, ATTACKER_STATS)


class RichStatistics(SummaryStatistics):
    """The ``rich`` member: the summary member's knowledge plus :func:`rich_statistics`
    (module docstring)."""

    name = "rich"
    knows = (
        "the summary statistics, plus per variable the slope, first and last value, median, "
        "quartiles and lag-1 autocorrelation"
    )

    def knowledge(self, X, state):
        return np.hstack([super().knowledge(X, state), rich_statistics(X)])


class RawHours(FeatureAttacker):
    """The ``raw_hours`` member: every value at :data:`RAW_HOURS` hours drawn per class from
    its random stream (module docstring)."""

    name = "raw_hours"
    knows = f"the values of every variable at {RAW_HOURS} hours of the class drawn at random"

    def setup(self, X_o, rng):
        L = X_o.shape[1]
        return np.sort(rng.choice(L, size=min(RAW_HOURS, L), replace=False))

    def knowledge(self, X, hours):
        return X[:, hours, :].reshape(X.shape[0], -1)


class Shape(Attacker):
    """The ``shape`` member: the whole series after :func:`znormalise` (module docstring)."""

    name = "shape"
    knows = (
        "the whole original series, compared by shape (each variable z-normalised over its "
        "own hours: level and scale removed)"
    )

    def prepare(self, X_o, X_r, rng):
        Z_o = znormalise(X_o)
        Z_r = Z_o if X_r is X_o else znormalise(X_r)
        # the class-wide centre: a block's rows come out as in the whole matrix
        return Z_o, Z_r, series_centre(Z_o, Z_r)

    def distances(self, state, block):
        Z_o, Z_r, centre = state
        d, counts = series_distances(Z_o[block.rows], Z_r, return_counts=True, centre=centre)
        return _rms(d, counts)


class Values(Attacker):
    """The ``values`` member: the whole series in its own units (module docstring)."""

    name = "values"
    knows = "the whole original series, compared by value (root-mean-square difference)"

    def prepare(self, X_o, X_r, rng):
        return None

    def distances(self, state, block):
        return block.rms("release")  # the kernel's Euclidean distance, shared


#: The attacker family, strongest knowledge last; one line per member.
ATTACKERS: dict[str, Attacker] = {
    a.name: a for a in (SummaryStatistics(), RichStatistics(), RawHours(), Shape(), Values())
}


def check_attackers(names: Sequence[str]) -> list[str]:
    """``names`` as a list if every one is in :data:`ATTACKERS`, else a ConfigError."""
    unknown = [n for n in names if n not in ATTACKERS]
    if unknown:
        raise ConfigError(f"unknown attacker(s) {unknown}, expected some of {list(ATTACKERS)}")
    return list(names)


def strongest_attacker(family: Mapping[str, Mapping], k: int | None = None) -> dict | None:
    """The member with the highest top-1 rate (first in :data:`ATTACKERS` order on a tie).

    Parameters
    ----------
    family : mapping
        ``linkage.json``'s ``family``: name -> :func:`~mimic_deid.evaluate.linkage.linkage_summary`
        with a ``release`` side keyed by error ``"0"``.
    k : int, optional
        The release's k: adds ``bound`` (``1 / k``), ``within`` and ``refused_by`` (every
        member above the bound, in registry order).

    Returns
    -------
    dict or None
        ``name``, ``knows``, ``top1``, ``top1_ci``, ``top5``, ``top5_ci``, ``n`` (None when the
        family is empty).
    """
    rows = {}
    for name, result in family.items():
        side = result["release"]
        row = side[min(side, key=float)]
        rows[name] = row
    if not rows:
        return None
    best = max(rows, key=lambda name: (rows[name]["top1"], -list(rows).index(name)))
    out = {
        "name": best,
        "knows": ATTACKERS[best].knows if best in ATTACKERS else "",
        **{key: rows[best].get(key) for key in ("top1", "top1_ci", "top5", "top5_ci", "n")},
    }
    if k is not None:
        bound = 1.0 / k
        out["bound"] = bound
        out["refused_by"] = [name for name, row in rows.items() if row["top1"] > bound + 1e-12]
        out["within"] = not out["refused_by"]
    return out
