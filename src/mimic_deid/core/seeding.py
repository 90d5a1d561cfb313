"""The seeding policy: one random generator per unit of work, derived from the master seed.

Every stochastic step (pseudonyms, splits of work into duration classes, optimisers, the
linkage attacker's noise, the tuning draw) asks :func:`derive_rng` for its generator with a
stable description of the work unit, e.g. ``derive_rng(seed, label, "all", 48)`` for a release
method (named by its label) on the 48 h class. The stream therefore depends only on the master seed and
the unit, never on which worker process runs it or in which order units are scheduled, so a
run with one or many workers is byte-identical. A unit split into parts that may run in
different workers (the chunks of series of one duration class) gives each part its own
generator with :func:`spawn_rngs`.

A library that takes an integer seed of its own (scikit-learn's ``random_state``, NumPy's legacy
``RandomState``, a Numba-compiled ``np.random.seed``, datasketch's MinHash permutations) gets it
from :func:`library_seed`, derived from the master seed and the work unit like
:func:`derive_rng`, and always inside that library's range (:data:`LIBRARY_SEED_BOUNDS`): a
secret master seed is 63 bits, more than most libraries accept. These two functions are the
only paths from a seed to a random stream (``tests/core/test_seeding.py`` greps the code for any
other).

The master seed itself comes from :func:`master_seed`: the configured one, the public
:data:`PUBLIC_SEED` for the synthetic source, or, for a real source (CSV, PostgreSQL) without a
configured seed, a secret one drawn once and kept owner-only next to the private artefacts.
"""

from __future__ import annotations

import os
import secrets
import zlib
from pathlib import Path

import numpy as np

from mimic_deid.core.atomic import apply_mode, make_private_dir, write_text
from mimic_deid.core.errors import InputDataError

__all__ = [
    "LIBRARY_SEED_BOUNDS",
    "PUBLIC_SEED",
    "derive_rng",
    "library_seed",
    "master_seed",
    "spawn_rngs",
]

#: The documented public master seed: the synthetic source's when config ``seed`` is null.
PUBLIC_SEED = 2020
#: Upper bound (exclusive) of a drawn secret seed: 63 bits, a non-negative int64.
SECRET_SEED_BOUND = 2**63

#: Upper bound (exclusive) of the integer seed each library accepts, by the name
#: :func:`library_seed` takes: scikit-learn's ``random_state`` and NumPy's legacy
#: ``RandomState`` / ``np.random.seed`` (also what Numba's compiled ``np.random.seed`` takes,
#: an unsigned 32-bit integer) are [0, 2**32); datasketch's ``MinHash(seed=)`` seeds a
#: ``RandomState``.
LIBRARY_SEED_BOUNDS: dict[str, int] = {
    "scikit-learn": 2**32,
    "numpy-legacy": 2**32,
    "numba": 2**32,
    "datasketch": 2**32,
}


def master_seed(
    seed: int | None, source_kind: str, seed_file: str | os.PathLike
) -> tuple[int, str | None]:
    """The master seed of a run, and the one line to tell the user about it (or None).

    Parameters
    ----------
    seed : int or None
        Config ``seed``; an integer is always used as given.
    source_kind : {"synthetic", "csv", "postgres"}
        Config ``source/kind``. With ``seed`` None the synthetic source uses the public
        :data:`PUBLIC_SEED`; a real source (csv, postgres) never does.
    seed_file : path
        Where a real source's secret seed is kept (below ``results/private``, so written
        owner-only, 0600, by :func:`mimic_deid.core.atomic.write_text`). When it exists its seed is
        reused, so a later run of the same results directory keeps its cached artefacts valid;
        otherwise a seed is drawn with :mod:`secrets` (63 bits) and written there.

    Returns
    -------
    seed : int
    note : str or None
        For a real source without a configured seed: one line saying that a secret seed is
        used and where it is kept (never the seed itself); for a real source given the public
        seed: one line warning that the pseudonyms can be recomputed.

    Raises
    ------
    InputDataError
        ``seed_file`` exists but does not hold one non-negative integer.
    """
    if seed is not None:
        if int(seed) == PUBLIC_SEED and source_kind != "synthetic":
            return int(seed), (
                f"mimic-deid: seed: warning: the {source_kind} source runs under the public seed "
                f"{PUBLIC_SEED} given in config parameter 'seed': anyone holding the original data "
                "can recompute the pseudonyms; set 'seed: null' to draw a secret seed"
            )
        return int(seed), None
    if source_kind == "synthetic":
        return PUBLIC_SEED, None
    path = Path(seed_file)
    if path.exists():
        text = path.read_text(encoding="utf-8").strip()
        if not text.isdigit():
            raise InputDataError(
                f"{path}: expected the secret master seed (one non-negative integer) kept by an "
                "earlier run; restore it from a backup, or delete the file to draw a new seed "
                "(every result is then recomputed)"
            )
        apply_mode(path)  # owner-only, even if its mode was widened since
        return int(text), (
            f"mimic-deid: seed: no seed configured for the {source_kind} source: using the secret "
            f"seed kept owner-only in {path} (drawn by an earlier run; never printed)"
        )
    make_private_dir(path.parent)
    drawn = secrets.randbelow(SECRET_SEED_BOUND)
    write_text(f"{drawn}\n", path)
    return drawn, (
        f"mimic-deid: seed: no seed configured for the {source_kind} source: drew a secret seed, "
        f"kept owner-only in {path} and reused by later runs here (never printed; back it up "
        "to reproduce the release)"
    )


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
    return np.random.default_rng(_words(seed, parts))


def _words(seed: int, parts: tuple[str | int, ...]) -> list[int]:
    return [int(seed)] + [zlib.crc32(p.encode()) if isinstance(p, str) else int(p) for p in parts]


def library_seed(seed: int, library: str, *parts: str | int) -> int:
    """The integer seed handed to ``library`` for one work unit, inside the library's range.

    Parameters
    ----------
    seed : int
        The master seed (config ``seed``, or the secret one :func:`master_seed` drew), >= 0;
        any size (a drawn seed has 63 bits).
    library : str
        A key of :data:`LIBRARY_SEED_BOUNDS` (``scikit-learn``, ``numpy-legacy``, ``numba``,
        ``datasketch``).
    *parts : str or int
        The work unit, as for :func:`derive_rng` (e.g. ``"utility", task, side``).

    Returns
    -------
    int
        In ``[0, LIBRARY_SEED_BOUNDS[library])``: the first 64-bit word of the
        ``numpy.random.SeedSequence`` of (``seed``, ``"library-seed"``, ``library``,
        ``*parts``), reduced modulo the bound. The same arguments always give the same seed;
        the seed never leaves the run's private side unless the master seed is public.

    Raises
    ------
    ValueError
        ``library`` is not a key of :data:`LIBRARY_SEED_BOUNDS`, or ``seed`` is negative.
    """
    if library not in LIBRARY_SEED_BOUNDS:
        raise ValueError(
            f"library_seed: unknown library {library!r}; expected one of "
            f"{sorted(LIBRARY_SEED_BOUNDS)}"
        )
    if int(seed) < 0:
        raise ValueError(f"library_seed: the master seed must be >= 0, got {seed}")
    words = _words(seed, ("library-seed", library, *parts))
    word = np.random.SeedSequence(words).generate_state(1, dtype=np.uint64)[0]
    return int(word) % LIBRARY_SEED_BOUNDS[library]


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
