"""The one path from the master seed to a library's seed (issue 44.1)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from mimic_deid.core.seeding import (
    LIBRARY_SEED_BOUNDS,
    SECRET_SEED_BOUND,
    derive_rng,
    library_seed,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("library", sorted(LIBRARY_SEED_BOUNDS))
@pytest.mark.parametrize("seed", [0, 2020, 2**32, SECRET_SEED_BOUND - 1])
def test_library_seed_in_range_and_stable(library, seed):
    value = library_seed(seed, library, "utility", "logreg")
    assert 0 <= value < LIBRARY_SEED_BOUNDS[library]
    assert value == library_seed(seed, library, "utility", "logreg")
    assert value != library_seed(seed, library, "utility", "other")


def test_library_seed_refuses_unknown_library_and_negative_seed():
    with pytest.raises(ValueError) as exc:
        library_seed(1, "torch")
    assert str(exc.value) == (
        "library_seed: unknown library 'torch'; expected one of "
        "['datasketch', 'numba', 'numpy-legacy', 'scikit-learn']"
    )
    with pytest.raises(ValueError) as exc:
        library_seed(-1, "numba")
    assert str(exc.value) == "library_seed: the master seed must be >= 0, got -1"


def test_secret_seed_reaches_scikit_learn_and_numpy_legacy():
    """A 63-bit drawn seed is accepted by the libraries (the crash of issue 44)."""
    from sklearn.linear_model import LogisticRegression

    seed = SECRET_SEED_BOUND - 1
    X = np.arange(20, dtype=float).reshape(10, 2)
    y = np.array([0, 1] * 5)
    LogisticRegression(random_state=library_seed(seed, "scikit-learn")).fit(X, y)
    np.random.RandomState(library_seed(seed, "numpy-legacy")).random()
    with pytest.raises(ValueError):  # what the unreduced seed does
        LogisticRegression(random_state=seed).fit(X, y)


def test_derive_rng_equals_plain_default_rng_of_integer_words():
    """derive_rng(seed, *ints) is default_rng([seed, *ints]): routing the generator's and the
    benchmarks' generators through it changed no stream."""
    assert derive_rng(7, 3).random() == np.random.default_rng([7, 3]).random()
    assert derive_rng(3_000_003).random() == np.random.default_rng(3_000_003).random()


#: Where a seed may reach a random stream: the seeding module, and datasketch's MinHash
#: permutations, seeded by a fixed public constant on purpose (LSH signatures depend on the
#: data only; sequences/lsh.py), checked against the library's range below.
ALLOWED = {"src/mimic_deid/core/seeding.py"}
PATTERNS = (
    r"default_rng\(",
    r"RandomState\(",
    r"np\.random\.seed\(",
    r"random\.seed\(",
    r"random_state\s*=(?!\s*library_seed\(|\s*derive_rng\()",
    r"MinHash\([^)]*seed=(?!MINHASH_SEED)",
)


def test_no_other_path_from_a_seed_to_a_library():
    offenders = []
    for top in ("src", "workflow", "benchmarks"):
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix not in (".py", ".smk") or not path.is_file():
                continue
            rel = str(path.relative_to(ROOT))
            if rel in ALLOWED:
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                code = line.split("#", 1)[0]
                if "``" in code:  # docstring text
                    continue
                offenders += [
                    f"{rel}:{number}: {line.strip()}" for p in PATTERNS if re.search(p, code)
                ]
    assert offenders == []


def test_minhash_seed_in_datasketch_range():
    from mimic_deid.sequences.lsh import MINHASH_SEED

    assert 0 <= MINHASH_SEED < LIBRARY_SEED_BOUNDS["datasketch"]
