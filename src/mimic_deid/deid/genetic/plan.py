"""The genetic optimiser's driver: a duration class into chunks of problems, the chunks over
worker processes, and the release method's summary.

:func:`plan_genetic` prepares one class (the problems of
:func:`~mimic_deid.deid.genetic.search.split_dimensions`, cut into chunks of about 10^6
child genes that stay within ~1 GB), each chunk with its own generator
(:func:`mimic_deid.core.seeding.spawn_rngs`); :func:`optimise_genetic` runs the chunks
(:func:`~mimic_deid.deid.genetic.search.run_chunk`) on ``threads`` workers and assembles the
class. The algorithm is specified in :mod:`mimic_deid.deid.genetic.search`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError
from mimic_deid.core.logs import Progress, get_logger
from mimic_deid.core.seeding import spawn_rngs
from mimic_deid.core.threads import map_tasks
from mimic_deid.deid.features import FeatureSpec
from mimic_deid.deid.genetic.params import GeneticParams
from mimic_deid.deid.genetic.search import (
    dimension_scales,
    mean_only_targets,
    met_at_start,
    run_chunk,
    split_dimensions,
)
from mimic_deid.deid.optimise import OptimiseResult, check_inputs, evaluate

log = get_logger(__name__)

_CHUNK_ELEMENTS = 1_000_000  # child genes per chunk: ~4 MB float32 arrays, fast in cache
_MEMORY_BUDGET = 1_000_000_000  # bytes
_BYTES_PER_ELEMENT = 4 * 8  # float32 x ~8 live arrays of the children's size


def chunk_size(n: int, n_genes: int, population: int) -> int:
    """Problems per chunk: cache friendly (~1e6 child genes) and within ~1 GB of memory."""
    per_problem = max(1, (population - 1) * max(n_genes, 1))
    by_cache = _CHUNK_ELEMENTS // per_problem
    by_memory = _MEMORY_BUDGET // (_BYTES_PER_ELEMENT * per_problem)
    return int(max(1, min(n, max(by_cache, 8), by_memory)))


def _problem_widths(X: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Genes of each one-dimensional problem: its non-null records, 0 without any target.

    Parameters
    ----------
    X : ndarray of float64, shape (p, L, 1)
        The problems of :func:`~mimic_deid.deid.genetic.search.split_dimensions`.
    targets : ndarray of float64, shape (p, S)

    Returns
    -------
    ndarray of int64, shape (p,)
    """
    constrained = ~np.isnan(targets).all(axis=1)
    return (~np.isnan(X[:, :, 0])).sum(axis=1) * constrained


def _chunk_rows(widths: np.ndarray, population: int, per_chunk: int | None) -> list[np.ndarray]:
    """Problems of each chunk, widest first: chunks of similar width waste little padding.

    Problems are ordered by decreasing width (ties by problem number); a chunk takes the next
    ``per_chunk`` problems, or by default :func:`chunk_size` of its widest problem's width.
    """
    order = np.lexsort((np.arange(len(widths)), -widths))
    rows, start = [], 0
    while start < len(order):
        size = per_chunk or chunk_size(len(order) - start, int(widths[order[start]]), population)
        rows.append(order[start : start + size])
        start += size
    return rows


class _ChunkTask:
    """:func:`run_chunk` on rows ``rows`` of a plan's problem arrays, indexed when called or
    pickled (a worker receives only its chunk)."""

    def __init__(
        self,
        problems: tuple[np.ndarray, np.ndarray, FeatureSpec, np.ndarray, np.ndarray | None],
        rows: np.ndarray,
        params: GeneticParams,
        rng: np.random.Generator,
        callback: Callable | None,
    ) -> None:
        self._problems, self._rows = problems, rows
        self._params, self._rng, self._callback = params, rng, callback

    def _call(self) -> functools.partial:
        Xp, tp, sp, wp, up = self._problems
        r = self._rows
        return functools.partial(
            run_chunk,
            Xp[r],
            tp[r],
            sp,
            wp[r],
            None if up is None else up[r],
            self._params,
            self._rng,
            r,
            self._callback,
        )

    def __call__(self) -> tuple[np.ndarray, np.ndarray]:
        return self._call()()

    def __reduce__(self) -> tuple[Any, ...]:
        call = self._call()
        return (functools.partial, (call.func, *call.args))


@dataclass
class GeneticPlan:
    """One duration class split into chunks of problems that can be optimised independently.

    Made by :func:`plan_genetic`. ``tasks()[c]`` optimises chunk ``c`` with its own generator
    (``chunk_rngs[c]``); :meth:`assemble` puts the chunks' results together, in chunk order,
    into the class's :class:`~mimic_deid.deid.optimise.OptimiseResult`. The result therefore
    depends on the class's generator and on the chunking only, not on where or in which order
    the chunks ran.

    Attributes
    ----------
    X : ndarray of float64, shape (n, L, D)
    targets : ndarray of float64, shape (n, m)
    spec : FeatureSpec
    params : GeneticParams
    chunk_rows : list of ndarray of int64
        The problems of each chunk (numbered as in :func:`optimise_genetic`'s callback).
    chunk_widths : list of int
        Genes of each chunk's widest problem (the chunk's padded chromosome length).
    chunk_rngs : list of numpy.random.Generator
        One per chunk (:func:`mimic_deid.core.seeding.spawn_rngs` of the class generator).
    """

    X: np.ndarray
    targets: np.ndarray
    spec: FeatureSpec
    params: GeneticParams
    chunk_rows: list[np.ndarray]
    chunk_widths: list[int]
    chunk_rngs: list[np.random.Generator]
    _problems: tuple[np.ndarray, np.ndarray, FeatureSpec, np.ndarray, np.ndarray | None]
    _k: int  # problems per series
    _mean_only: np.ndarray
    _met: np.ndarray  # per series: feature dimensions met before the search (not searched)

    @property
    def n_chunks(self) -> int:
        """Number of chunks."""
        return len(self.chunk_rngs)

    def chunk_sizes(self) -> list[int]:
        """Problems in each chunk."""
        return [len(r) for r in self.chunk_rows]

    def chunk_costs(self) -> list[int]:
        """Expected cost of each chunk: its problems times its padded chromosome length."""
        return [len(r) * max(w, 1) for r, w in zip(self.chunk_rows, self.chunk_widths, strict=True)]

    def tasks(self, callback: Callable | None = None) -> list[Callable[[], Any]]:
        """One picklable call per chunk, returning ``(X_out (problems, L, D'), iterations)``.

        A task takes its chunk's rows of the problem arrays only when it is called or pickled
        (:class:`_ChunkTask`), so the list does not hold a second copy of the class.
        """
        return [
            _ChunkTask(self._problems, rows, self.params, rng, callback)
            for rows, rng in zip(self.chunk_rows, self.chunk_rngs, strict=True)
        ]

    def assemble(self, results: Sequence[tuple[np.ndarray, np.ndarray]]) -> OptimiseResult:
        """The class's result from the chunks' results (in chunk order)."""
        if len(results) != self.n_chunks:
            raise ValueError(f"genetic plan: {len(results)} results for {self.n_chunks} chunks")
        X, spec, k = self.X, self.spec, self._k
        n, length, _ = X.shape
        Xp = self._problems[0]
        out_p = np.empty_like(Xp)  # every problem is in exactly one chunk
        iters_p = np.zeros(Xp.shape[0], dtype=np.int64)
        for rows, (xo, it) in zip(self.chunk_rows, results, strict=True):
            out_p[rows] = xo
            iters_p[rows] = it
        if self.params.layout == "series_dimension":
            out = X.copy()
            if k:
                out[:, :, spec.feature_dims] = out_p.reshape(n, k, length).transpose(0, 2, 1)
            iters = iters_p.reshape(n, k).max(axis=1) if k else np.zeros(n, dtype=np.int64)
        else:
            out, iters = out_p, iters_p
        result = evaluate(X, out, self.targets, spec, iters)
        detail = {"mean_only_dims": self._mean_only, "met_at_start_dims": self._met}
        return dataclasses.replace(result, detail=detail)


def plan_genetic(
    X: np.ndarray,
    targets: np.ndarray,
    spec: FeatureSpec,
    params: GeneticParams,
    rng: np.random.Generator,
    *,
    chunk_problems: int | None = None,
) -> GeneticPlan:
    """Prepare one duration class for the genetic optimiser and split it into chunks.

    Parameters as :func:`optimise_genetic`; ``chunk_problems``: problems optimised together
    (default from :func:`chunk_size` per chunk; changing it changes the random streams, not
    the algorithm). With the ``series_dimension`` layout the
    problems are ordered by decreasing number of genes before they are cut into chunks
    (:func:`_chunk_rows`), so that a chunk of sparse dimensions (glucose, height, weight) is
    not padded to the length of a dense one; with ``joint`` the chunks are runs of series in
    class order. A problem whose records already meet all its targets
    (:func:`~mimic_deid.deid.genetic.search.met_at_start`) is left unconstrained: it is not
    searched, runs 0 generations and is released unchanged (counted per series as
    ``met_at_start_dims`` in the result's ``detail``). The chunking depends only on the class
    (its null pattern and targets), ``params`` and ``chunk_problems``; the chunk generators
    only on the state of ``rng`` (:func:`mimic_deid.core.seeding.spawn_rngs`).
    """
    if not isinstance(params, GeneticParams):
        raise ConfigError(f"genetic optimiser: params must be GeneticParams, got {type(params)}")
    if chunk_problems is not None and (
        isinstance(chunk_problems, bool)
        or not isinstance(chunk_problems, int | np.integer)
        or chunk_problems < 1
    ):
        raise ConfigError(
            f"genetic optimiser: chunk_problems must be an integer >= 1, got {chunk_problems!r}"
        )
    X, targets = check_inputs(X, targets, spec)
    n, length, _ = X.shape
    weights, unit = dimension_scales(X, spec, bool(params.normalise_features))
    search_targets, mean_only = mean_only_targets(X, targets, spec)
    per_chunk = int(chunk_problems) if chunk_problems else None
    if params.layout == "series_dimension":
        k = len(spec.feature_dims)
        problems = split_dimensions(X, search_targets, spec, weights, unit)
        met = met_at_start(problems[0], problems[1], problems[2])
        problems[1][met] = np.nan  # not searched: released unchanged, 0 generations
        met_dims = met.reshape(n, k).sum(axis=1) if k else np.zeros(n, dtype=np.int64)
        widths = _problem_widths(problems[0], problems[1])
        rows = _chunk_rows(widths, params.population, per_chunk)
        chunk_widths = [int(widths[r].max(initial=0)) for r in rows]
    else:
        k = 1
        met = met_at_start(X, search_targets, spec)
        search_targets[met] = np.nan
        met_dims = met * len(spec.feature_dims)
        problems = (X, search_targets, spec, weights, unit)
        n_genes = len(spec.feature_dims) * length
        size = per_chunk or chunk_size(n, n_genes, params.population)
        rows = [np.arange(s, min(s + size, n)) for s in range(0, n, size)]
        chunk_widths = [n_genes] * len(rows)
    return GeneticPlan(
        X=X,
        targets=targets,
        spec=spec,
        params=params,
        chunk_rows=rows,
        chunk_widths=chunk_widths,
        chunk_rngs=spawn_rngs(rng, len(rows)),
        _problems=problems,
        _k=k,
        _mean_only=mean_only,
        _met=np.asarray(met_dims, dtype=np.int64),
    )


def optimise_genetic(
    X: np.ndarray,
    targets: np.ndarray,
    spec: FeatureSpec,
    params: GeneticParams,
    rng: np.random.Generator,
    *,
    threads: int = 1,
    callback: Callable[[int, np.ndarray, np.ndarray], None] | None = None,
    **plan_options: Any,
) -> OptimiseResult:
    """Perturb the feature dimensions of one duration class with the genetic algorithm.

    Parameters
    ----------
    X, targets, spec
        One duration class (n, L, D), its feature targets (n, m) and their columns, as the
        ad-hoc optimiser takes them (:func:`mimic_deid.deid.adhoc.optimise_adhoc`).
    params : GeneticParams
    rng : numpy.random.Generator
        The only source of randomness: each chunk of problems gets its own generator derived
        from it (:func:`plan_genetic`), so the same generator state, inputs and
        ``chunk_problems`` give the same output whatever ``threads`` is.
    threads : int
        Worker processes that optimise the chunks (>= 1; 1 = in this process).
    callback : callable, optional
        ``callback(m, problems, best_key)`` after every generation ``m`` with the numbers of
        the still-running problems and their best :func:`fitness_key` (diagnostics; needs
        ``threads=1``). A problem is a class row (``joint``), or class row ``i``'s ``a``-th
        feature dimension, numbered ``i * len(spec.feature_dims) + a`` (``series_dimension``).
    **plan_options
        :func:`plan_genetic`'s options: ``chunk_problems`` (problems optimised together;
        default from :func:`chunk_size` per chunk; changing it changes the random streams,
        not the algorithm).

    Returns
    -------
    OptimiseResult
        ``iterations`` = generations run per series (0 for a series without any gene); with
        the ``series_dimension`` layout, the most any of the series' dimensions ran.
    """
    if callback is not None and threads != 1:
        raise ConfigError(
            "genetic optimiser: a callback needs threads=1 (chunks in worker processes cannot "
            f"call back), got threads={threads!r}"
        )
    plan = plan_genetic(X, targets, spec, params, rng, **plan_options)
    n, length = plan.X.shape[:2]
    sizes = plan.chunk_sizes()
    progress = Progress(f"genetic L={length}", sum(sizes), log, unit="problems")
    results = map_tasks(
        plan.tasks(callback),
        threads=threads,
        costs=plan.chunk_costs(),
        on_done=lambda c: progress.update(sizes[c]),
    )
    if n:
        progress.close()
    return plan.assemble(results)


def summarise(per_series: pd.DataFrame) -> dict:
    """The method summary's genetic entry: ``mean_only_dimensions``, the (series, dimension)
    pairs with one record, searched for the mean only (their variance target is unreachable),
    and ``met_at_start_dimensions``, the pairs whose records met every target before the
    search and were released unchanged (:func:`~mimic_deid.deid.genetic.search.met_at_start`).
    A registry hook (:class:`mimic_deid.deid.methods.ReleaseMethod`)."""
    return {
        "mean_only_dimensions": int(per_series["mean_only_dims"].sum()),
        "met_at_start_dimensions": int(per_series["met_at_start_dims"].sum()),
    }
