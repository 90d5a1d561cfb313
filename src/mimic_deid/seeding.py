"""The seeding policy: one random generator per unit of work, derived from the master seed.

Every stochastic step (pseudonyms, splits of work into duration classes, optimisers, the
linkage attacker's noise, the tuning draw) asks :func:`derive_rng` for its generator with a
stable description of the work unit, e.g. ``derive_rng(seed, "adhoc-it50-ns0.01", "all", 48)``
for the optimiser on the 48 h class. The stream therefore depends only on the master seed and
the unit, never on which worker process runs it or in which order units are scheduled, so a
run with one or many workers is byte-identical.
"""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["derive_rng"]


def derive_rng(seed: int, *parts: str | int) -> np.random.Generator:
    """A generator seeded by the master ``seed`` and a description of the work unit.

    Parameters
    ----------
    seed : int
        The master seed (config ``seed``), >= 0.
    *parts : str or int
        The work unit, most general first (e.g. method label, group, class length). Strings
        enter through their CRC-32, integers as they are.

    Returns
    -------
    numpy.random.Generator
        ``numpy.random.default_rng([seed, *parts])`` with strings hashed; the same arguments
        always give the same stream.
    """
    words = [int(seed)] + [zlib.crc32(p.encode()) if isinstance(p, str) else int(p) for p in parts]
    return np.random.default_rng(words)
