"""Equivalence classes of a generalised table and the vectorised k-anonymity check.

The k-check of seed 003 §4.3.3 counts records per quasi-identifier signature; here a node's
signature is one integer per record (the generalised codes combined in mixed radix), and the
class sizes are one ``np.bincount`` (after a linear-time re-numbering by hashing when the
radix is too large to count densely). A node is k-anonymous within ``max_sup`` percent when the records in classes smaller
than ``k`` number at most ``floor(max_sup / 100 * n)``; those records are the ones suppressed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError
from mimic_deid.deid.hierarchy import Encoded

__all__ = [
    "check_k",
    "check_max_sup",
    "class_keys",
    "class_sizes",
    "k_within",
    "node_classes",
    "suppression_budget",
]

#: Mixed-radix keys up to this many times the row count are counted densely by ``bincount``;
#: larger ones are first re-numbered by hashing (``pandas.factorize``, linear time).
_DENSE_FACTOR = 4
_INT_LIMIT = 1 << 62


def check_k(k: object, n_rows: int, name: str = "k") -> int:
    """``k`` as an int in ``[1, n_rows]``, else ``ConfigError`` naming ``name``."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= max(n_rows, 1):
        raise ConfigError(
            f"parameter '{name}' must be an integer in [1, {n_rows}] (the rows of the table), "
            f"got {k!r}"
        )
    return int(k)


def check_max_sup(max_sup: object, name: str = "max_sup") -> float:
    """``max_sup`` (percent of records) as a float in ``[0, 100]``, else ``ConfigError``."""
    ok = isinstance(max_sup, int | float | np.integer | np.floating) and not isinstance(
        max_sup, bool
    )
    if not ok or not 0.0 <= float(max_sup) <= 100.0:
        raise ConfigError(f"parameter '{name}' must be a percentage in [0, 100], got {max_sup!r}")
    return float(max_sup)


def suppression_budget(n_rows: int, max_sup: float) -> int:
    """Most records that may be suppressed: ``floor(max_sup / 100 * n_rows)``."""
    return int(np.floor(float(max_sup) / 100.0 * n_rows + 1e-9))


def class_keys(codes: np.ndarray, cards: Sequence[int]) -> tuple[np.ndarray, int]:
    """One integer per record identifying its equivalence class.

    Parameters
    ----------
    codes : ndarray of int, shape (n_rows, n_columns)
        Generalised codes; column ``j`` takes values in ``[0, cards[j])``.
    cards : sequence of int
        Number of possible codes per column.

    Returns
    -------
    keys : ndarray of int64, shape (n_rows,)
        Equal exactly for records with equal codes.
    radix : int
        Keys are in ``[0, radix)``.
    """
    n = codes.shape[0]
    keys = np.zeros(n, dtype=np.int64)
    radix = 1
    for j, card in enumerate(cards):
        card = max(int(card), 1)
        if radix * card >= _INT_LIMIT:  # re-number the classes so far densely
            keys, uniques = pd.factorize(keys)
            keys = keys.astype(np.int64)
            radix = max(len(uniques), 1)
        keys = keys * card + codes[:, j]
        radix *= card
    return keys, radix


def class_sizes(codes: np.ndarray, cards: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Equivalence classes of ``codes``.

    Returns
    -------
    inverse : ndarray of int64, shape (n_rows,)
        Class index of every record.
    sizes : ndarray of int64, shape (n_classes,)
        Records per class (every entry >= 1).
    """
    keys, radix = class_keys(codes, cards)
    if radix <= _DENSE_FACTOR * max(len(keys), 1):
        counts = np.bincount(keys, minlength=radix)
        present = np.flatnonzero(counts)
        dense = np.full(radix, -1, dtype=np.int64)
        dense[present] = np.arange(present.size)
        return dense[keys], counts[present].astype(np.int64)
    inverse, _ = pd.factorize(keys)
    inverse = inverse.astype(np.int64)
    return inverse, np.bincount(inverse).astype(np.int64)


def node_classes(enc: Encoded, node: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`class_sizes` of ``enc`` generalised to ``node``."""
    cards = [h.cardinalities[int(lv)] for h, lv in zip(enc.hierarchies, node, strict=True)]
    return class_sizes(enc.generalised(node), cards)


def k_within(sizes: np.ndarray, budget: int) -> int:
    """Largest ``k`` reached by suppressing at most ``budget`` records of classes ``sizes``.

    Suppressing every class smaller than ``k`` costs the sum of their sizes; the result is
    the largest class size ``s`` whose smaller classes cost at most ``budget`` (0 for an
    empty table).
    """
    if sizes.size == 0:
        return 0
    s = np.sort(sizes)
    smaller = np.cumsum(s) - s  # records in classes strictly before position i (ties below)
    uniq, first = np.unique(s, return_index=True)
    cost = smaller[first]  # records in classes strictly smaller than each distinct size
    return int(uniq[cost <= budget].max())
