"""The seeding policy: one random generator per unit of work, derived from the master seed.

Every stochastic step (pseudonyms, splits of work into duration classes, optimisers, the
linkage attacker's noise, the tuning draw) asks :func:`derive_rng` for its generator with a
stable description of the work unit, e.g. ``derive_rng(seed, "adhoc-it50-ns0.01", "all", 48)``
for the optimiser on the 48 h class. The stream therefore depends only on the master seed and
the unit, never on which worker process runs it or in which order units are scheduled, so a
run with one or many workers is byte-identical. A unit split into parts that may run in
different workers (the chunks of series of one duration class) gives each part its own
generator with :func:`spawn_rngs`.
"""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["derive_rng", "spawn_rngs"]


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


def spawn_rngs(rng: np.random.Generator, n: int) -> list[np.random.Generator]:
    """``n`` generators for the parts of one unit of work, derived from the unit's generator.

    One 128-bit key is drawn from ``rng`` (advancing it by four 32-bit words); part ``i``'s
    generator is ``numpy.random.default_rng([*key, i])``. Part ``i``'s stream therefore depends
    only on the state of ``rng`` and on ``i``: not on ``n``, on which worker process runs the
    part, or in which order the parts run.

    Parameters
    ----------
    rng : numpy.random.Generator
        The unit's generator (e.g. from :func:`derive_rng`).
    n : int
        Number of parts, >= 0.

    Returns
    -------
    list of numpy.random.Generator, length n
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise ValueError(f"spawn_rngs: n must be an integer >= 0, got {n!r}")
    key = rng.integers(0, 2**32, size=4, dtype=np.uint64).tolist()
    return [np.random.default_rng([*key, i]) for i in range(int(n))]
