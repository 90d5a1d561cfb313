"""The seed 004 measures the library does not need, for the tests only."""

from __future__ import annotations

import numpy as np


def lsh_similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Eq. 2: share of equal entries of signatures ``a`` (..., H) and ``b`` (..., H)."""
    return (a == b).mean(axis=-1)
