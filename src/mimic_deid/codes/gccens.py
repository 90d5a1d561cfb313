"""Greedy Code Censoring (GCCens) under k-map, and its utility loss (seed 002 §III.5-III.6).

GCCens (Algorithm 1) first caps every code of every sample record at its cap, then, while a
sample record matches fewer than ``k`` population records (``dis < k``), picks the code whose
current cap is reached by the fewest sample records, removes one instance of it from each of
those records and lowers its cap by one. Ties go to the code listed first (codes sorted).
A code whose cap no record reaches would be picked at no cost (its cap is lowered, no record
changes); such picks are made together. Only the records that changed are re-queried in the
inverted index.

The Censoring Utility Loss (CUL) of a record is the number of code instances the greedy loop
censored divided by the record's size after the caps were applied: the caps are the data
owner's accepted initial censoring (seed §III.5), and with this reading mean CUL grows with
the cap as in seed Table 2. The share removed by the caps themselves is reported apart
(``capped``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from mimic_deid.codes.index import MultisetIndex, Multisets
from mimic_deid.core.errors import ConfigError, MimicDeidError

__all__ = [
    "CensoringResult",
    "InfeasibleCensoringError",
    "cap_vector",
    "cul_statistics",
    "gccens",
]


class InfeasibleCensoringError(MimicDeidError):
    """No censoring reaches k-map: every cap is 0 and a record still matches fewer than k."""


@dataclass(frozen=True)
class CensoringResult:
    """The k-mapped sample Y and what censoring cost.

    Attributes
    ----------
    censored : Multisets
        Y, same records as the sample (entries with count 0 removed).
    cul : ndarray of float64, shape (n_sample,)
        Censoring Utility Loss of each record (0 for a record the caps left empty).
    capped : ndarray of float64, shape (n_sample,)
        Share of each record's codes removed by the caps before the greedy loop.
    dis : ndarray of int64, shape (n_sample,)
        Distinguishability of each record of Y (>= k).
    caps : ndarray of int64, shape (n_items,)
        Final cap of each item.
    iterations : int
        Censoring steps of the greedy loop (picks that removed at least one code instance).
    """

    censored: Multisets
    cul: np.ndarray
    capped: np.ndarray
    dis: np.ndarray
    caps: np.ndarray
    iterations: int


def cap_vector(
    caps: int | str | Mapping[str, int], names: np.ndarray, sample: Multisets, param: str
) -> np.ndarray:
    """Caps per item from a scalar, ``"max"`` (largest count observed in the sample) or a
    mapping code -> cap (codes not listed take the largest count observed).

    Parameters
    ----------
    caps : int, "max" or mapping
    names : ndarray of str, shape (n_items,)
        The code of each item id.
    sample : Multisets
    param : str
        Name of the parameter for messages (e.g. ``config parameter 'codes/gccens/caps'``).

    Returns
    -------
    ndarray of int64, shape (n_items,)
    """
    observed = np.zeros(len(names), dtype=np.int64)
    np.maximum.at(observed, sample.item, sample.count)
    if isinstance(caps, str):
        if caps != "max":
            raise ConfigError(f"{param}: expected a cap >= 0, 'max' or a mapping, got {caps!r}")
        return observed
    if isinstance(caps, Mapping):
        out = observed.copy()
        position = {str(n): i for i, n in enumerate(names)}
        for code, cap in caps.items():
            value = _cap_value(cap, f"{param} for code {code}")
            if str(code) in position:
                out[position[str(code)]] = value
        return out
    return np.full(len(names), _cap_value(caps, param), dtype=np.int64)


def _cap_value(cap: object, param: str) -> int:
    if isinstance(cap, bool) or not isinstance(cap, int | np.integer) or cap < 0:
        raise ConfigError(f"{param}: caps must be integers >= 0, got {cap!r}")
    return int(cap)


def gccens(index: MultisetIndex, sample: Multisets, k: int, caps: np.ndarray) -> CensoringResult:
    """Algorithm 1: a k-mapped version of ``sample`` against the indexed population.

    Parameters
    ----------
    index : MultisetIndex
        Inverted index of the population P.
    sample : Multisets
        The sample S (items numbered as in the population).
    k : int
        Minimum number of population records each released record must match (>= 1).
    caps : ndarray of int64, shape (n_items,)
        Initial cap of every item (see :func:`cap_vector`); item ids of ``sample`` index it.

    Returns
    -------
    CensoringResult

    Raises
    ------
    ConfigError
        ``k < 1`` or a negative cap.
    InfeasibleCensoringError
        ``k`` exceeds the population size (even empty records match only |P| records), or
        every cap reached 0 with a record still below ``k``.
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ConfigError(f"GCCens: k must be an integer >= 1, got {k!r}")
    caps = np.asarray(caps, dtype=np.int64).copy()
    if caps.size and caps.min() < 0:
        raise ConfigError(f"GCCens: caps must be >= 0, got {int(caps.min())}")
    if k > index.n:
        raise InfeasibleCensoringError(
            f"GCCens: k = {k} exceeds the population size |P| = {index.n}: no censoring "
            f"reaches {k}-map (an empty record matches only {index.n} population records)"
        )
    rec, item = sample.record, sample.item
    before = sample.sizes
    count = np.minimum(sample.count, caps[item])  # preprocess: no code above its cap
    after_caps = np.bincount(rec, weights=count, minlength=sample.n_records)
    dis = index.distinguishability(_compact(sample.n_records, rec, item, count))
    iterations = 0
    while (dis < k).any():
        # Picks of codes whose cap no record reaches are free and change no record: make
        # them all at once (each such cap drops to the largest count left in Y).
        largest = np.zeros(caps.size, dtype=np.int64)
        np.maximum.at(largest, item, count)
        caps = np.minimum(caps, largest)
        active = caps > 0
        if not active.any():
            raise InfeasibleCensoringError(
                f"GCCens: every cap is 0 and {int((dis < k).sum())} records still match fewer "
                f"than k = {k} population records"
            )
        at_cap = (count == caps[item]) & (count > 0)
        reach = np.bincount(item[at_cap], minlength=caps.size)
        o = int(np.argmin(np.where(active, reach, np.iinfo(np.int64).max)))
        hit = at_cap & (item == o)
        count[hit] -= 1
        caps[o] -= 1
        iterations += 1
        changed = np.unique(rec[hit])
        if changed.size:
            sub = _compact(sample.n_records, rec, item, count).take(changed)
            dis[changed] = index.distinguishability(sub)
    censored = _compact(sample.n_records, rec, item, count)
    left = np.bincount(rec, weights=count, minlength=sample.n_records)
    cul = np.divide(
        after_caps - left, after_caps, out=np.zeros(sample.n_records), where=after_caps > 0
    )
    capped = np.divide(
        before - after_caps, before, out=np.zeros(sample.n_records), where=before > 0
    )
    return CensoringResult(censored, cul, capped, dis, caps, iterations)


def _compact(n: int, rec: np.ndarray, item: np.ndarray, count: np.ndarray) -> Multisets:
    keep = count > 0
    return Multisets(n, rec[keep], item[keep], count[keep])


def cul_statistics(cul: np.ndarray) -> dict[str, float]:
    """Mean, standard deviation (ddof 0), median and skewness of CUL values (seed Tables 1/2).

    Skewness is the moment coefficient ``m3 / m2**1.5`` (0 when the values do not vary).
    """
    cul = np.asarray(cul, dtype=np.float64)
    if cul.size == 0:
        return {
            "mean": float("nan"),
            "sd": float("nan"),
            "median": float("nan"),
            "skewness": float("nan"),
        }
    centred = cul - cul.mean()
    m2, m3 = np.mean(centred**2), np.mean(centred**3)
    skew = float(m3 / m2**1.5) if m2 > 1e-15 else 0.0
    return {
        "mean": float(cul.mean()),
        "sd": float(np.sqrt(m2)),
        "median": float(np.median(cul)),
        "skewness": skew,
    }
