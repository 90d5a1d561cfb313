"""Subject-grouped, deterministic, release-consistent train/validation/test splits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mimic_deid.core.errors import ConfigError
from mimic_deid.pipeline.split import add_splits, assign_splits

FRACTIONS = {"train": 0.70, "validation": 0.15, "test": 0.15}
SUBJECTS = np.arange(1000, 11000, dtype=np.int64)  # 10,000 subjects


def test_proportions_on_10000_subjects() -> None:
    splits = assign_splits(SUBJECTS, FRACTIONS, seed=2020)
    for name, fraction in FRACTIONS.items():
        assert abs(np.mean(splits == name) - fraction) < 0.02
    assert set(splits) == set(FRACTIONS)


def test_all_stays_of_a_subject_share_a_split() -> None:
    rng = np.random.default_rng(1)
    stays_subjects = rng.choice(SUBJECTS[:500], size=3000)  # ~6 stays per subject
    splits = assign_splits(stays_subjects, FRACTIONS, seed=7)
    per_subject = pd.Series(splits).groupby(stays_subjects).nunique()
    assert (per_subject == 1).all()


def test_deterministic_for_a_seed_and_seed_dependent() -> None:
    a = assign_splits(SUBJECTS, FRACTIONS, seed=3)
    b = assign_splits(SUBJECTS.copy(), dict(reversed(FRACTIONS.items())), seed=3)
    c = assign_splits(SUBJECTS, FRACTIONS, seed=4)
    assert np.array_equal(a, b)
    assert np.mean(a != c) > 0.2


def test_consistent_across_subsets_of_subjects() -> None:
    full = pd.Series(assign_splits(SUBJECTS, FRACTIONS, seed=11), index=SUBJECTS)
    subset = np.random.default_rng(2).choice(SUBJECTS, size=777, replace=False)
    part = assign_splits(subset, FRACTIONS, seed=11)
    assert np.array_equal(part, full.loc[subset].to_numpy())


def test_bad_fractions_raise() -> None:
    with pytest.raises(ConfigError) as info:
        assign_splits(SUBJECTS, {"train": 0.7, "validation": 0.2, "test": 0.2}, seed=1)
    assert str(info.value) == (
        "config parameter 'series/split': fractions must be >= 0 and sum to 1, got {'train': "
        "0.7, 'validation': 0.2, 'test': 0.2}"
    )
    with pytest.raises(ConfigError) as info:
        assign_splits(SUBJECTS, {"train": 0.8, "test": 0.2}, seed=1)
    assert str(info.value) == (
        "config parameter 'series/split': expected fractions for exactly ['train', "
        "'validation', 'test'], got ['test', 'train']"
    )


def test_add_splits_adds_a_string_column() -> None:
    meta = pd.DataFrame({"icustay_id": [1, 2, 3], "subject_id": [5, 5, 6], "length": [3, 4, 5]})
    out = add_splits(meta, FRACTIONS, seed=0)
    assert list(out.columns) == ["icustay_id", "subject_id", "length", "split"]
    assert out["split"].iloc[0] == out["split"].iloc[1]
    assert pd.api.types.is_string_dtype(out["split"])
    assert "split" not in meta.columns
