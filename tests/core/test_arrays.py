"""Rows compared bit for bit (core.arrays)."""

from __future__ import annotations

import numpy as np

from mimic_deid.core.arrays import distinct_rows, value_bits


def test_equal_values_have_equal_bits_nan_and_signed_zero_included():
    bits = value_bits(np.array([np.nan, -np.nan, 0.0, -0.0, 1.5]))
    assert bits[0] == bits[1] and bits[2] == bits[3] and bits[4] != bits[2]


def test_distinct_rows_in_order_of_first_appearance_with_their_counts():
    values = np.array(
        [[3.0, np.nan], [1.0, 2.0], [3.0, np.nan], [1.0, 2.0], [-0.0, 5.0], [0.0, 5.0], [1.0, 2.5]]
    )
    first, inverse, counts = distinct_rows(values)
    assert first.tolist() == [0, 1, 4, 6]
    assert inverse.tolist() == [0, 1, 0, 1, 2, 2, 3]
    assert counts.tolist() == [2, 2, 2, 1]
    np.testing.assert_array_equal(values[first][inverse], values)


def test_no_rows_and_no_columns():
    first, inverse, counts = distinct_rows(np.zeros((0, 4)))
    assert (first.size, inverse.size, counts.size) == (0, 0, 0)
    first, inverse, counts = distinct_rows(np.zeros((3, 0)))
    assert (first.tolist(), inverse.tolist(), counts.tolist()) == ([0], [0, 0, 0], [3])
