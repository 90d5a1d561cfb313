"""Rows of float arrays compared bit for bit: which rows of a release are the same values.

A microaggregation release (docs/mdav.md) publishes each cluster's hourly mean for every
member, so its series come in groups of identical rows; the checks count them and the
attacks compare each distinct row once. Two rows are *the same* when every value is equal
and NaN sits in the same places: NaN is one bit pattern here and ``-0.0`` the bits of
``0.0``, so equal values give equal bits whatever produced them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["distinct_rows", "value_bits"]


def value_bits(values: np.ndarray) -> np.ndarray:
    """Float64 values as comparable ``uint64`` bits, same shape.

    Parameters
    ----------
    values : ndarray of float64, any shape

    Returns
    -------
    ndarray of uint64, same shape
        Every NaN one pattern and ``-0.0`` as ``0.0``: equal values (NaN equal to NaN) give
        equal bits.
    """
    v = np.where(np.isnan(values), np.nan, np.asarray(values, dtype=np.float64) + 0.0)
    return np.ascontiguousarray(v).view(np.uint64)


def distinct_rows(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct rows of a 2-D float array (:func:`value_bits` equality).

    Parameters
    ----------
    values : ndarray of float64, shape (n, m)

    Returns
    -------
    first : ndarray of int64, shape (u,)
        The first row of each distinct row, in order of first appearance.
    inverse : ndarray of int64, shape (n,)
        Row ``i`` is distinct row ``inverse[i]`` (``values[i]`` equals ``values[first[inverse[i]]]``).
    counts : ndarray of int64, shape (u,)
        How many rows each distinct row stands for.
    """
    bits = value_bits(np.asarray(values, dtype=np.float64))
    if bits.ndim != 2:
        raise ValueError(f"distinct_rows: expected a 2-D array, got shape {bits.shape}")
    n = bits.shape[0]
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    if bits.shape[1] == 0:  # no values: every row is the same (empty) row
        return np.zeros(1, np.int64), np.zeros(n, np.int64), np.full(1, n, np.int64)
    rows = bits.view(np.dtype((np.void, bits.dtype.itemsize * bits.shape[1]))).reshape(n)
    _, index, inverse, counts = np.unique(
        rows, return_index=True, return_inverse=True, return_counts=True
    )
    # renumber the distinct rows by first appearance (np.unique sorts by bytes)
    order = np.argsort(index, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return (
        index[order].astype(np.int64),
        rank[inverse.reshape(-1)].astype(np.int64),
        counts[order].astype(np.int64),
    )
