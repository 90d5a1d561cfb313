"""Series representations and losses of (k,P)-anonymity (seed 001 §3.1, §3.4).

Value attributes are kept as raw series; patterns are SAX words:

- **PAA** (:func:`paa`): a series of length ``n`` becomes ``m`` segment means (seed §3.1.1).
  When ``m`` does not divide ``n`` a record straddling two segments contributes to both in
  proportion to its overlap (Lin et al.'s fractional PAA); for ``m | n`` this is exactly the
  seed's segment mean.
- **z-normalisation** (:func:`znormalise`): each PAA vector is shifted to mean 0 and scaled to
  sd 1 (``ddof=0``); the seed normalises the PAA vector, not the raw series. A vector whose sd
  is below :data:`FLAT_SD` becomes all zeros (a flat series has no shape to normalise).
- **SAX** (:func:`sax_codes`): each z-normalised value gets the symbol of the equiprobable
  N(0, 1) interval it falls in; breakpoints ``beta_i = Phi^-1(i / level)`` (seed eq. 3.1).
  Symbols are integer codes ``0 .. level-1`` (``a`` = 0); :func:`words` spells them.
- **MINDIST** cells (:func:`lookup_table`, seed eq. 3.3); the distance itself is not needed
  by the release methods (``tests/sax_reference.py``: ``mindist``, with Lin et al.'s square).
- **IVL** (:func:`ivl`): the instant value loss of an envelope (seed eq. 3.4); its mean over
  the k-groups (TIVL, eq. 3.5) is taken of the published envelopes by
  ``deid.kapra.method.kp_summary``. TPL (eqs. 3.6-3.7) and the symbols' midpoints are the
  tests' (``tests/sax_reference.py``).

The inverse normal CDF is the standard library's :class:`statistics.NormalDist` (no SciPy at
run time). Every function is vectorised over series.
"""

from __future__ import annotations

from functools import lru_cache
from statistics import NormalDist

import numpy as np

from mimic_deid.core.errors import ConfigError

__all__ = [
    "FLAT_SD",
    "MAX_LEVEL",
    "MIN_LEVEL",
    "breakpoints",
    "group_envelopes",
    "ivl",
    "lookup_table",
    "paa",
    "sax_codes",
    "words",
    "znormalise",
]

#: Alphabet sizes a configured SAX level may take (one Latin letter per symbol).
MIN_LEVEL, MAX_LEVEL = 2, 26
#: A PAA vector with a smaller standard deviation is flat: z-normalised to zeros.
FLAT_SD = 1e-8

_STD_NORMAL = NormalDist()


def _check_level(level: int, lowest: int = 1) -> int:
    if isinstance(level, bool) or not isinstance(level, int | np.integer):
        raise ConfigError(f"SAX level must be an integer in [{lowest}, {MAX_LEVEL}], got {level!r}")
    if not lowest <= int(level) <= MAX_LEVEL:
        raise ConfigError(f"SAX level must be in [{lowest}, {MAX_LEVEL}], got {int(level)}")
    return int(level)


@lru_cache(maxsize=64)
def _breakpoints(level: int) -> tuple[float, ...]:
    return tuple(_STD_NORMAL.inv_cdf(i / level) for i in range(1, level))


def breakpoints(level: int) -> np.ndarray:
    """Equiprobable N(0, 1) breakpoints of alphabet size ``level`` (seed eq. 3.1).

    Returns
    -------
    ndarray of float64, shape (level - 1,)
        ``Phi^-1(i / level)`` for ``i = 1 .. level-1``, increasing; empty for level 1.
    """
    return np.array(_breakpoints(_check_level(level)), dtype=np.float64)


def lookup_table(level: int) -> np.ndarray:
    """MINDIST cell distances between symbols of alphabet size ``level`` (seed eq. 3.3).

    Returns
    -------
    ndarray of float64, shape (level, level)
        0 for equal or adjacent symbols, otherwise ``beta_{max(r,c)-1} - beta_{min(r,c)}``
        (1-based symbols as in the seed).
    """
    beta = breakpoints(level)
    if level < 3:  # no two symbols are more than one apart
        return np.zeros((level, level))
    r = np.arange(level)[:, None]
    c = np.arange(level)[None, :]
    hi = np.maximum(r, c)
    lo = np.minimum(r, c)
    far = np.abs(r - c) > 1
    # 0-based codes: beta index max-1 and min (the seed's beta_{max-1} - beta_{min}, 1-based)
    return np.where(far, beta[np.clip(hi - 1, 0, None)] - beta[np.clip(lo, None, level - 2)], 0.0)


def paa(x: np.ndarray, size: int) -> np.ndarray:
    """Piecewise aggregate approximation along the last axis (seed §3.1.1).

    Parameters
    ----------
    x : ndarray of float64, shape (..., n)
        Complete series (no NaN).
    size : int
        Number of segments ``m``, ``1 <= m <= n``.

    Returns
    -------
    ndarray of float64, shape (..., m)
        Segment means; a record straddling two segments counts in both by its overlap.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[-1]
    if isinstance(size, bool) or not isinstance(size, int | np.integer) or not 1 <= size <= n:
        raise ConfigError(
            f"PAA size must be an integer in [1, {n}] (the series length), got {size!r}"
        )
    m = int(size)
    if n % m == 0:
        return x.reshape(*x.shape[:-1], m, n // m).mean(axis=-1)
    # each record repeated m times: n*m equal sub-records, regrouped into m runs of n
    return np.repeat(x, m, axis=-1).reshape(*x.shape[:-1], m, n).mean(axis=-1)


def znormalise(p: np.ndarray) -> np.ndarray:
    """Each row shifted to mean 0 and scaled to sd 1 (``ddof=0``); flat rows become 0.

    Parameters
    ----------
    p : ndarray of float64, shape (..., m)

    Returns
    -------
    ndarray of float64, shape (..., m)
    """
    p = np.asarray(p, dtype=np.float64)
    mean = p.mean(axis=-1, keepdims=True)
    sd = p.std(axis=-1, keepdims=True)
    flat = sd < FLAT_SD
    return np.where(flat, 0.0, (p - mean) / np.where(flat, 1.0, sd))


def sax_codes(z: np.ndarray, level: int) -> np.ndarray:
    """SAX symbols (0-based codes) of z-normalised values (seed §3.1.1).

    A value equal to a breakpoint takes the upper symbol. Level 1 maps everything to 0.

    Parameters
    ----------
    z : ndarray of float64, shape (...)
    level : int
        Alphabet size, 1 .. 26.

    Returns
    -------
    ndarray of int64, same shape, values in ``0 .. level-1``
    """
    return np.searchsorted(breakpoints(level), z, side="right").astype(np.int64)


def words(codes: np.ndarray) -> np.ndarray:
    """Spell code rows as strings, ``0 -> 'a'``.

    Parameters
    ----------
    codes : ndarray of int, shape (n, m)

    Returns
    -------
    ndarray of str (object), shape (n,)
    """
    codes = np.asarray(codes, dtype=np.int64)
    if codes.ndim != 2:
        raise ValueError(f"codes must be 2-D (n, m), got shape {codes.shape}")
    letters = np.ascontiguousarray((codes + ord("a")).astype(np.uint8))
    if codes.shape[1] == 0:
        return np.full(codes.shape[0], "", dtype=object)
    return letters.view(f"S{codes.shape[1]}").ravel().astype(str).astype(object)


def ivl(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Instant value loss of envelopes (seed eq. 3.4).

    Parameters
    ----------
    lo, hi : ndarray of float64, shape (..., n)
        Lower and upper envelope at each of ``n`` time steps.

    Returns
    -------
    ndarray of float64, shape (...)
        ``sqrt(sum_i (hi_i - lo_i)^2 / n)``, in the unit of the series.
    """
    w = np.asarray(hi, dtype=np.float64) - np.asarray(lo, dtype=np.float64)
    return np.sqrt(np.mean(w * w, axis=-1))


def group_envelopes(x: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-group lower and upper envelopes.

    Parameters
    ----------
    x : ndarray of float64, shape (n, L)
    labels : ndarray of int, shape (n,)
        Group ids ``0 .. g-1`` (every id present).

    Returns
    -------
    lo, hi : ndarray of float64, shape (g, L)
    """
    labels = np.asarray(labels, dtype=np.int64)
    order = np.argsort(labels, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(labels[order]) != 0])
    xs = np.asarray(x, dtype=np.float64)[order]
    return np.minimum.reduceat(xs, starts, axis=0), np.maximum.reduceat(xs, starts, axis=0)
