"""Duration classes by method: the seed's literal Algorithm 3 next to the greedy rule.

Property tests of the invariants both methods share, a literal queue transcription of the
seed's pseudo-code (seed §5.4, Algorithm 3) as the reference for the vectorised version, the
§6.1 claim that Algorithm 3 suppresses nothing when the shortest lengths fill a class, the
uniqueness counts, and the config parameter ``duration/method``.
"""

from __future__ import annotations

import copy
from collections import deque
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mimic_deid.config import validate_config
from mimic_deid.core.errors import ConfigError
from mimic_deid.deid.duration import (
    DURATION_METHODS,
    assign_duration_classes,
    assign_duration_classes_grouped,
    duration_classes,
    duration_summary,
    duration_uniqueness,
)

ROOT = Path(__file__).resolve().parents[2]


def literal_algorithm3(lengths: list[int], k: int) -> list[int]:
    """The seed's pseudo-code line by line: byLength, a FIFO queue, newByLen, drop_rare."""
    by_length: dict[int, list[int]] = {}
    for i, length in enumerate(lengths):
        by_length.setdefault(length, []).append(i)
    new_by_len: dict[int, list[int]] = {}
    queue: deque[int] = deque()
    for length in sorted(by_length, reverse=True):
        queue.extend(by_length[length])
        if len(queue) < k:
            continue
        while queue and len(new_by_len.get(length, [])) < k:
            new_by_len.setdefault(length, []).append(queue.popleft())
    while queue:
        i = queue.popleft()
        new_by_len.setdefault(lengths[i], []).append(i)
    out = [0] * len(lengths)
    for length, members in new_by_len.items():
        if len(members) >= k:  # drop_rare_lengths
            for i in members:
                out[i] = length
    return out


lengths_strategy = st.one_of(
    st.lists(st.integers(1, 8), min_size=1, max_size=80),
    st.lists(st.integers(1, 3000), min_size=1, max_size=80),
    st.lists(st.floats(0, 9).map(lambda e: int(np.exp(e)) + 1), min_size=1, max_size=120),
    st.lists(st.sampled_from([1, 2, 24, 48, 49, 500, 501, 2000]), min_size=1, max_size=60),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lengths=lengths_strategy, k=st.integers(1, 12), method=st.sampled_from(DURATION_METHODS))
def test_invariants_of_both_methods(lengths: list[int], k: int, method: str) -> None:
    arr = np.asarray(lengths, dtype=np.int64)
    if k > arr.size:
        with pytest.warns(UserWarning, match="suppressed"):
            assert np.all(assign_duration_classes(arr, k, method) == 0)
        return
    cls = assign_duration_classes(arr, k, method)
    assert cls.dtype == np.int32 and cls.shape == arr.shape
    released = cls > 0
    _, sizes = np.unique(cls[released], return_counts=True)
    assert np.all(sizes >= k)  # k-anonymous lengths
    assert np.all(cls <= arr)  # only shortened (trimmed from the beginning)
    assert set(cls[released].tolist()) <= set(arr.tolist())  # onto an existing length
    # only the shortest series are ever suppressed
    if (~released).any() and released.any():
        assert arr[~released].max() < cls[released].min()
    # deterministic, and a permutation of the input permutes the output (up to tied lengths)
    assert np.array_equal(assign_duration_classes(arr, k, method), cls)
    summary = duration_summary(arr, cls)
    assert summary["released"] + summary["suppressed"] == arr.size


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lengths=lengths_strategy, k=st.integers(1, 12))
def test_algorithm3_equals_the_literal_queue(lengths: list[int], k: int) -> None:
    if k > len(lengths):
        return
    arr = np.asarray(lengths, dtype=np.int64)
    assert assign_duration_classes(arr, k, "algorithm3").tolist() == literal_algorithm3(lengths, k)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lengths=lengths_strategy, k=st.integers(1, 12), extra=st.integers(0, 5))
def test_algorithm3_suppresses_nothing_when_the_shortest_lengths_fill_a_class(
    lengths: list[int], k: int, extra: int
) -> None:
    # seed §6.1: with enough short series, every series is kept (some shortened)
    shortest = min(lengths)
    arr = np.asarray(lengths + [shortest] * (k + extra), dtype=np.int64)
    cls = assign_duration_classes(arr, k, "algorithm3")
    assert np.all(cls > 0)


def test_algorithm3_hand_example_against_greedy() -> None:
    lengths = np.array([10, 10, 9, 8, 8, 8, 5, 3, 3, 1])
    # queue after 10,10,9: [10,10,9] -> class 9 takes all three; 8: three -> class 8;
    # 5 (one) and 3 (two): queue [5,3,3] -> class 3; 1 alone: back to 1, dropped as rare
    assert assign_duration_classes(lengths, 3, "algorithm3").tolist() == [
        9,
        9,
        9,
        8,
        8,
        8,
        3,
        3,
        3,
        0,
    ]
    # a big class feeds a shorter one: 48 h x 7 and 1 h x 2 with k = 3
    lengths = np.array([48] * 7 + [1] * 2)
    a3 = assign_duration_classes(lengths, 3, "algorithm3")
    greedy = assign_duration_classes(lengths, 3, "greedy")
    assert greedy.tolist() == [48] * 7 + [0, 0]  # greedy suppresses the two short stays
    assert a3.tolist() == [48] * 3 + [1] * 3 + [48] * 1 + [1, 1]  # Algorithm 3 moves 3 instead
    sa3, sg = duration_summary(lengths, a3), duration_summary(lengths, greedy)
    assert (sa3["suppressed"], sa3["moved"], sa3["records_lost"]) == (0, 3, 3 * 47)
    assert (sg["suppressed"], sg["moved"], sg["records_lost"]) == (2, 0, 2)


def test_grouped_and_release_stage_pass_the_method_on() -> None:
    lengths = np.array([48] * 7 + [1] * 2 + [48] * 7 + [1] * 2)
    groups = np.array(["train"] * 9 + ["test"] * 9)
    out = assign_duration_classes_grouped(lengths, groups, 3, "algorithm3")
    assert np.all(out > 0)
    meta = pd.DataFrame(
        {"icustay_id": np.arange(9) + 100, "length": lengths[:9], "split": ["train"] * 9}
    )
    classes, summary = duration_classes(meta, dk=3, group_by_split=False, method="algorithm3")
    assert summary["suppressed"] == 0 and summary["moved"] == 3
    assert classes["class_length"].tolist() == [48] * 3 + [1] * 3 + [48, 1, 1]
    greedy_classes, greedy_summary = duration_classes(meta, dk=3, group_by_split=False)
    assert greedy_summary["suppressed"] == 2


def test_unknown_method_names_the_parameter() -> None:
    with pytest.raises(ConfigError) as err:
        assign_duration_classes(np.array([3, 4]), 1, "fifo")
    assert str(err.value) == (
        "duration method (duration/method) must be one of ['greedy', 'algorithm3'], got 'fifo'"
    )


def test_unknown_method_in_the_config_is_refused(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert validate_config(copy.deepcopy(config), ROOT / "config" / "schema.yaml")["duration"][
        "method"
    ] == ("greedy")
    config["duration"] = {"method": "fifo"}
    with pytest.raises(ConfigError) as err:
        validate_config(config, ROOT / "config" / "schema.yaml")
    assert str(err.value) == (
        "config parameter 'duration/method': 'fifo' is not one of ['greedy', 'algorithm3']"
    )


def test_uniqueness_counts_hour_classes_before_deidentification() -> None:
    lengths = np.array([5] * 6 + [7] * 3 + [9, 11, 12])
    u = duration_uniqueness(lengths)
    assert u == {
        "at_most": 5,
        "unique_series": 3,  # 9, 11, 12
        "small_series": 6,  # + the three of 7 h
        "small_pct": pytest.approx(50.0),
        "small_min_length": 7,
    }
    assert duration_uniqueness(np.array([4] * 6)) == {
        "at_most": 5,
        "unique_series": 0,
        "small_series": 0,
        "small_pct": 0.0,
        "small_min_length": None,
    }
