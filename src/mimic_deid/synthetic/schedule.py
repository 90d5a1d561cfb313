"""Irregular measurement times and per-stay choices, vectorised over many stays; the event
tables' row order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from mimic_deid.synthetic.population import MINUTE


def grid(
    rng: np.random.Generator,
    start: np.ndarray,
    end: np.ndarray,
    every: float,
    jitter: float,
    first: float | None = None,
    p_skip: float = 0.0,
    p_extra: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Jittered measurement times within ``[start, end]`` of each interval (seconds).

    Interval ``i`` gets times ``start + offset + k * every + N(0, jitter)`` (offset uniform in
    ``[0, first)``, default ``every``), a share ``p_skip`` of them dropped and a share
    ``p_extra`` doubled by an extra reading 15-45 min later. Times are floored to the minute.
    Returns ``(index, t)``: int64 interval index and float64 times, grouped by interval.
    """
    n = len(start)
    first = every if first is None else first
    offset = rng.uniform(0.0, first, n)
    span = end - start - offset
    counts = np.where(span >= 0, np.floor(span / every).astype(np.int64) + 1, 0)
    total = int(counts.sum())
    idx = np.repeat(np.arange(n, dtype=np.int64), counts)
    k = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    t = start[idx] + offset[idx] + k * every + rng.normal(0.0, jitter, total)
    keep = rng.random(total) >= p_skip
    if p_extra > 0:
        extra = keep & (rng.random(total) < p_extra)
        idx = np.concatenate([idx[keep], idx[extra]])
        t = np.concatenate([t[keep], t[extra] + rng.uniform(15, 45, int(extra.sum())) * MINUTE])
    else:
        idx, t = idx[keep], t[keep]
    t = np.floor(t / MINUTE) * MINUTE
    inside = (t >= np.ceil(start[idx] / MINUTE) * MINUTE) & (t <= end[idx])
    idx, t = idx[inside], t[inside]
    order = np.argsort(idx, kind="stable")
    return idx[order], t[order]


def pick(rng: np.random.Generator, n: int, options: tuple[tuple[int, float], ...]) -> np.ndarray:
    """``n`` draws of the first element of ``options`` with the weights of the second."""
    values = np.array([o[0] for o in options], dtype=np.int64)
    weights = np.array([o[1] for o in options], dtype=float)
    return values[rng.choice(len(values), n, p=weights / weights.sum())]


def sort_rows(columns: Mapping[str, Any], by: tuple[str, ...]) -> dict[str, Any]:
    """``columns`` (equal-length NumPy or Arrow arrays) with their rows sorted by the columns
    ``by``, the first the primary key (a stable ``numpy.lexsort``), in ``columns``' order."""
    order = np.lexsort(tuple(columns[name] for name in reversed(by)))
    taken = pa.array(order)
    return {
        name: values.take(taken) if isinstance(values, pa.Array) else values[order]
        for name, values in columns.items()
    }
