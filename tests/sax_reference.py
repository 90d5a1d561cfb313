"""SAX measures of seed 001 the library does not need, for the tests only: MINDIST between
SAX words (eq. 3.2), TIVL of k-groups from their series (eq. 3.5; the library takes the IVL of
the envelopes it publishes, ``deid.kapra.method.kp_summary``), the symbols' midpoints and the
total pattern loss (eqs. 3.6-3.7)."""

from __future__ import annotations

import numpy as np

from mimic_deid.deid.sax import _STD_NORMAL, _check_level, group_envelopes, ivl, lookup_table


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
