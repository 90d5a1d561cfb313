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
- **MINDIST** (:func:`mindist`): Lin et al.'s lower-bounding distance,
  ``sqrt(n / m) * sqrt(sum_j cell(a_j, b_j)^2)`` with the lookup table of seed eq. 3.3. The
  seed's eq. 3.2 omits the square inside the sum; Lin et al.'s definition (with it) is used.
- **IVL / TIVL** (:func:`ivl`, :func:`tivl`): the instant value loss of an envelope (seed
  eq. 3.4) and its mean over the k-groups (eq. 3.5).
- **TPL** (:func:`tpl`): total pattern loss between original and published words through
  the interval midpoints ``T(S)`` (seed eqs. 3.6-3.7).

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
    "midpoints",
    "mindist",
    "paa",
    "sax_codes",
    "tivl",
    "tpl",
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


def midpoints(level: int) -> np.ndarray:
    """``T(S)`` of every symbol of alphabet size ``level`` (seed eq. 3.6).

    Returns
    -------
    ndarray of float64, shape (level,)
        ``Phi^-1((2 f - 1) / (2 level))`` for ``f = 1 .. level``: the probability midpoint of
        each symbol's interval.
    """
    lv = _check_level(level)
    return np.array([_STD_NORMAL.inv_cdf((2 * f - 1) / (2 * lv)) for f in range(1, lv + 1)])


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


def mindist(a: np.ndarray, b: np.ndarray, level: int, length: int) -> np.ndarray:
    """MINDIST between SAX words (Lin et al.; seed eq. 3.2 with the square restored).

    Parameters
    ----------
    a, b : ndarray of int, broadcastable shapes (..., m)
        0-based codes of alphabet size ``level``.
    level : int
    length : int
        Length ``n`` of the original series.

    Returns
    -------
    ndarray of float64, broadcast shape without the last axis
        ``sqrt(n / m) * sqrt(sum_j cell(a_j, b_j)^2)``.
    """
    table = lookup_table(level)
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    m = np.broadcast_shapes(a.shape, b.shape)[-1]
    cells = table[a, b]
    return np.sqrt(length / m) * np.sqrt(np.sum(cells * cells, axis=-1))


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


def tivl(x: np.ndarray, labels: np.ndarray) -> float:
    """Total instant value loss: mean IVL over the k-groups (seed eq. 3.5).

    Parameters
    ----------
    x : ndarray of float64, shape (n, L)
    labels : ndarray of int, shape (n,)
        k-group ids ``0 .. g-1``.
    """
    lo, hi = group_envelopes(x, labels)
    return float(np.mean(ivl(lo, hi)))


def tpl(
    orig_codes: np.ndarray,
    orig_level: int,
    new_codes: np.ndarray,
    new_levels: np.ndarray | int,
) -> float:
    """Total pattern loss between original and published SAX words (seed eqs. 3.6-3.7).

    ``TPL = (N / m) * sum_i sum_j (T(new_ij) - T(orig_ij))^2``, with ``N`` the number of series
    as the seed defines it for eq. 3.7 and ``T`` the symbol midpoints at each word's own
    alphabet size (KAPRA publishes words of different levels). (The caption of the seed's
    Fig. 4.1 speaks of MINDIST between the words instead; eqs. 3.6-3.7 are what is used here,
    as they also compare words of different levels.)

    Parameters
    ----------
    orig_codes : ndarray of int, shape (N, m)
        Original words at ``orig_level``.
    orig_level : int
    new_codes : ndarray of int, shape (N, m)
        Published words.
    new_levels : int or ndarray of int, shape (N,)
        Alphabet size of each published word.
    """
    orig_codes = np.asarray(orig_codes, dtype=np.int64)
    new_codes = np.asarray(new_codes, dtype=np.int64)
    n, m = orig_codes.shape
    levels = np.broadcast_to(np.asarray(new_levels, dtype=np.int64), (n,))
    t_orig = midpoints(orig_level)[orig_codes]
    t_new = np.empty_like(t_orig)
    for lv in np.unique(levels).tolist():
        rows = levels == lv
        t_new[rows] = midpoints(lv)[new_codes[rows]]
    d = t_new - t_orig
    return float(n / m * np.sum(d * d))
