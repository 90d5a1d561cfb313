"""Train / validation / test splits grouped by subject.

Each subject gets a uniform number in [0, 1) from a hash (SplitMix64) of ``(seed, subject_id)``
and lands in the split whose cumulative-fraction interval contains it. The split of a subject
therefore depends only on the seed and its own id: all its stays share a split, runs are
deterministic, and the ``stays`` and ``ihm48`` releases agree on every shared subject.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError, InputDataError

SPLITS = ("train", "validation", "test")
_MASK64 = (1 << 64) - 1


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser on a uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def subject_uniforms(subject_ids: np.ndarray, seed: int) -> np.ndarray:
    """A uniform number in [0, 1) per subject, a pure function of ``(seed, subject_id)``."""
    ids = np.asarray(subject_ids, dtype=np.int64).astype(np.uint64)
    seed_hash = _splitmix64(np.array([int(seed) & _MASK64], dtype=np.uint64))[0]
    h = _splitmix64(_splitmix64(ids ^ seed_hash))
    return (h >> np.uint64(11)).astype(np.float64) * 2.0**-53


def check_fractions(fractions: dict[str, float]) -> np.ndarray:
    """Validate ``fractions`` (keys train/validation/test, >= 0, sum 1); return them in order."""
    if set(fractions) != set(SPLITS):
        raise ConfigError(
            f"config parameter 'series/split': expected fractions for exactly {list(SPLITS)}, got {sorted(fractions)}"
        )
    values = np.array([float(fractions[s]) for s in SPLITS])
    if (values < 0).any() or not math.isclose(values.sum(), 1.0, abs_tol=1e-6):
        raise ConfigError(
            f"config parameter 'series/split': fractions must be >= 0 and sum to 1, got {dict(zip(SPLITS, values.tolist(), strict=True))}"
        )
    return values


def assign_splits(subject_ids: np.ndarray, fractions: dict[str, float], seed: int) -> np.ndarray:
    """Split name per element of ``subject_ids``.

    Args:
        subject_ids: int array ``(n,)`` (repeats allowed: one entry per stay).
        fractions: ``{"train": 0.70, "validation": 0.15, "test": 0.15}``.
        seed: integer seed.

    Returns:
        Object array ``(n,)`` of "train" / "validation" / "test"; equal subject ids get equal
        splits, and a subject's split does not depend on the other subjects.
    """
    cuts = np.cumsum(check_fractions(fractions))[:-1]
    u = subject_uniforms(subject_ids, seed)
    index = np.searchsorted(cuts, u, side="right")
    return np.asarray(SPLITS, dtype=object)[index]


def add_splits(meta: pd.DataFrame, fractions: dict[str, float], seed: int) -> pd.DataFrame:
    """Return ``meta`` with a ``split`` column (str) from its ``subject_id`` column."""
    if "subject_id" not in meta.columns:
        raise InputDataError("add_splits: table 'meta' has no column 'subject_id'")
    splits = assign_splits(meta["subject_id"].to_numpy(dtype=np.int64), fractions, seed)
    return meta.assign(split=pd.Series(splits, index=meta.index, dtype="str"))
