"""Genetic constraint optimisation (seed §4.2, fitness variants of §6.2): one chunk's search.

A *problem* is what one population optimises. With ``layout="series_dimension"`` (default)
every (series, feature dimension) pair is its own problem, with its own population, selection,
patience and stop: the features of one dimension depend only on that dimension's records, so
the problems are independent, and this is the layout under which the seed's Table 6.2
figures are reproduced. With ``layout="joint"`` all feature dimensions of a series share one
chromosome and one summed fitness (kept for comparison).

A *chromosome* is an additive perturbation of the non-null records ("genes") of the problem's
feature dimensions; records of a dimension without any non-null target for that series are not
genes and are never changed. Every generation:

1. **elitism**: the fittest chromosome is kept unchanged;
2. **tournament selection**: for each of the other ``population - 1`` slots, ``tournament``
   chromosomes are drawn without replacement and the ``parents`` fittest of them mate;
3. **crossover**: ``parents - 1`` distinct cut points are drawn among the series' genes (so
   that, when the series has enough genes, every parent gives at least one gene); the child
   takes the segments between cuts from the parents in turn (in the order they were drawn);
4. **mutation**: each gene of the child independently (probability ``mutation_prob``) gets
   Gaussian noise of sd ``mutation_sd``.

The initial population is Gaussian with sd ``init_sd`` around 0 (``init="gaussian"``, the
seed's) or around the shift of the dimension that meets its mean target (``init="mean_shift"``:
the "domain knowledge" seed §7.2 suggests, beyond the seed's own algorithm). Fitness (higher
is better), with ``|objective| = sum_g u_g |perturbation_g|`` and
``unfeasibility = sum_j w_j |f_j(x + p) - target_j|``: ``u_g = w_j = 1``, or, when
``normalise_features``, every dimension is measured in units of its class-wide sd ``s_d``
(pooled over the class's non-null records): ``u_g = 1 / s_d``, ``w_j = 1 / s_d`` for a mean,
minimum or maximum and ``1 / s_d^2`` for a variance. Perturbation and feature errors are then
scaled alike, so the NA weight 100 keeps its meaning; the reported metrics stay in the original
units.

- ``annealed`` (eq. 4.2-4.4): ``-|objective| * exp(unfeasibility * sqrt(m))`` at generation
  ``m``; it overflows in floating point for large ``m`` (seed §6.2), so chromosomes are
  ranked by the equivalent key ``-(log|objective| + unfeasibility * sqrt(m))``, which is
  finite for any ``m``;
- ``DF``: as annealed with ``unfeasibility / 100``;
- ``CI``: as annealed with ``m`` capped at 300;
- ``NA``: ``-(100 * unfeasibility + |objective|)``.

A series stops after ``patience`` consecutive generations in which no child beat the elite
(under the current generation's fitness; for ``NA`` this means the best fitness did not
increase), or after ``max_iterations`` generations; its best chromosome is then frozen.

Implementation: all problems of a chunk and all their chromosomes are processed at once, on
problem-major arrays ``(n_problems, population, n_genes)``, so the genes of a chromosome are
contiguous. Genes are *packed*: per feature dimension, the non-null records of each series
are moved to the front (time order kept) and padded to the longest in the chunk; padding
genes are kept at 0. With ``series_dimension`` the problems of a class are cut into chunks in
decreasing order of their number of genes, so a chunk of sparse dimensions (glucose, height,
weight) is padded to its own longest problem, not to the hourly heart rate's. The search runs
in float32 on values centred per series and dimension (the returned series are ``x + p`` in
float64; the reported metrics are recomputed in float64). Random draws come from the chunk's
NumPy generator; the per-gene work (crossover as copies of whole parent segments, mutation,
the per-chromosome sums, minima and maxima, the tournament and its contenders, the
survivors) runs in compiled loops (:mod:`mimic_deid.deid.genetic._kernels`, Numba), one pass
each instead of one NumPy pass per operation. The mutation draws are made inside the
breeding pass, from the chunk's generator itself (Numba runs NumPy's algorithms on its bit
generator), and the mutated genes come from geometric gaps, so their cost is proportional to
the mutated genes; the tournament's contenders and the crossover's cut points are drawn inside
their compiled passes too. Problems that stopped are dropped from the working arrays. Chunks
hold ~10^6 child genes (cache friendly) and stay within ~1 GB of memory.

Chunks are independent: :func:`~mimic_deid.deid.genetic.plan.plan_genetic` gives each its own generator, derived from the
class's generator and the chunk's index (:func:`mimic_deid.core.seeding.spawn_rngs`), so chunks can
run in any order and in any worker process (:func:`~mimic_deid.deid.genetic.plan.optimise_genetic` with ``threads``, or the
chunks of every class of a release as one task list in
:func:`mimic_deid.deid.methods.apply_method`) and the result depends only on the class's
generator and the chunking.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mimic_deid.core.errors import ConfigError
from mimic_deid.core.logs import get_logger
from mimic_deid.deid.features import FeatureSpec, compute_features
from mimic_deid.deid.genetic.params import FITNESS_VARIANTS, GeneticParams
from mimic_deid.deid.optimise import feature_errors


@functools.cache
def _kernels() -> Any:
    """The compiled kernels (:mod:`mimic_deid.deid.genetic._kernels`), imported on first use:
    importing Numba costs ~1 s, which every workflow job importing :mod:`mimic_deid.deid`
    would otherwise pay although only the genetic optimiser's jobs use it."""
    from mimic_deid.deid.genetic import _kernels as kernels

    return kernels


log = get_logger(__name__)

_DTYPE = np.float32  # gene / population arithmetic
_TINY = 1e-300  # floor of |objective| in the log-space annealed key


# --------------------------------------------------------------------------------------------
# fitness


def fitness_key(
    abs_objective: np.ndarray, unfeasibility: np.ndarray, m: int, fitness: str
) -> np.ndarray:
    """Ranking key (higher = fitter) of chromosomes at generation ``m``.

    Monotone in the seed's fitness for every variant; finite for any ``m`` (log space for the
    annealed variants). ``abs_objective = sum |perturbation|``, ``unfeasibility`` as in the
    module docstring; any shape.
    """
    if fitness == "NA":
        return -(100.0 * unfeasibility + abs_objective)
    if fitness not in ("annealed", "DF", "CI"):
        raise ConfigError(f"unknown fitness '{fitness}', expected one of {FITNESS_VARIANTS}")
    inf = unfeasibility / 100.0 if fitness == "DF" else unfeasibility
    mm = min(m, 300) if fitness == "CI" else m
    return -(np.log(np.maximum(abs_objective, _TINY)) + inf * math.sqrt(mm))


# --------------------------------------------------------------------------------------------
# packed, problem-major layout of a chunk of problems
#
# Arrays are (problems, ..., genes): a chromosome's genes, and within them a block of one
# feature dimension, are contiguous, so the compiled kernels copy and reduce whole runs.


@dataclass
class _Block:
    """Genes of one feature dimension: genes ``off:off+width`` of the packed layout."""

    dim: int  # series dimension
    off: int
    width: int
    time: np.ndarray  # (n, width) time index of each gene (0 at padding)
    stats: frozenset[str]


class _Workspace:
    """Reusable scratch arrays, so that the generation loop does not reallocate."""

    def __init__(self) -> None:
        self._bufs: dict[tuple[str, str], np.ndarray] = {}

    def get(self, name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """A contiguous (uninitialised) array of ``shape``, reusing the storage of ``name``."""
        size = math.prod(shape)
        key = (name, np.dtype(dtype).str)
        buf = self._bufs.get(key)
        if buf is None or buf.size < size:
            buf = np.empty(size, dtype=dtype)
            self._bufs[key] = buf
        return buf[:size].reshape(shape)


class _Problem:
    """Per-problem constants of a chunk in the packed problem-major layout.

    Genes of feature dimension ``d`` are the series' non-null records of ``d`` (when ``d`` has a
    non-null target), moved to the front in time order and padded to the chunk's longest.
    ``valid`` (n, G) marks real genes; padding genes stay 0 in every chromosome. Values are
    centred per series and dimension on the original mean (``base``) for accuracy in float32.
    """

    def __init__(
        self,
        X: np.ndarray,
        targets: np.ndarray,
        spec: FeatureSpec,
        weights: np.ndarray,
        unit: np.ndarray | None,
    ) -> None:
        n = X.shape[0]
        constrained = ~np.isnan(targets)
        blocks: list[_Block] = []
        valid_parts, base_parts, cnt_cols, centre_cols, unit_parts = [], [], [], [], []
        off = 0
        for d in spec.feature_dims.tolist():
            cols = np.flatnonzero(spec.dims == d)
            vals = X[:, :, d]
            ok = ~np.isnan(vals) & constrained[:, cols].any(axis=1)[:, None]
            cnt = ok.sum(axis=1)
            width = int(cnt.max()) if n else 0
            if width == 0:
                continue
            order = np.argsort(~ok, axis=1, kind="stable")[:, :width]
            valid = np.arange(width)[None, :] < cnt[:, None]
            packed = np.take_along_axis(vals, order, axis=1)
            centre = np.where(valid, packed, 0.0).sum(axis=1) / np.maximum(cnt, 1)
            base = np.where(valid, packed - centre[:, None], 0.0)
            stats = frozenset(spec.stats[j] for j in cols)
            blocks.append(_Block(d, off, width, np.where(valid, order, 0), stats))
            valid_parts.append(valid)
            base_parts.append(base)
            if unit is not None:
                unit_parts.append(np.where(valid, unit[:, d][:, None], 0.0))
            cnt_cols.append(cnt)
            centre_cols.append(centre)
            off += width
        self.blocks = blocks
        self.n_genes = off
        self.offsets = np.array([b.off for b in blocks] + [off], dtype=np.int64)
        if blocks:
            valid_all = np.concatenate(valid_parts, axis=1)
            base_all = np.concatenate(base_parts, axis=1)
            centre_all = np.stack(centre_cols, axis=0)  # (n_blocks, n)
            self.cnt = np.stack(cnt_cols, axis=0).astype(np.float64)
        else:
            valid_all = np.zeros((n, 0), dtype=bool)
            base_all = np.zeros((n, 0))
            centre_all = np.zeros((0, n))
            self.cnt = np.zeros((0, n))
        self.unit = (  # (n, G) weight of each gene's |perturbation|, or None (all 1)
            np.concatenate(unit_parts, axis=1).astype(_DTYPE) if unit_parts else None
        )
        self.valid = valid_all  # (n, G)
        self.base = base_all.astype(_DTYPE)
        self.base_min = np.where(valid_all, base_all, np.inf).astype(_DTYPE)
        self.base_max = np.where(valid_all, base_all, -np.inf).astype(_DTYPE)
        self.rank = (np.cumsum(valid_all, axis=1) - 1).astype(np.int32)  # (n, G)
        self.n_valid = valid_all.sum(axis=1)  # (n,)
        # feature terms j: statistic of a block, centred target and weight, each (J, n)
        block_of = {b.dim: k for k, b in enumerate(blocks)}
        self.term_cols: dict[tuple[int, str], list[int]] = {}
        tgt_rows, w_rows, term_block, term_stat = [], [], [], []
        for j, (d, stat) in enumerate(zip(spec.dims.tolist(), spec.stats, strict=True)):
            if d not in block_of:
                continue
            k = block_of[d]
            t = targets[:, j]
            usable = ~np.isnan(t) & (self.cnt[k] > 0)
            shift = 0.0 if stat == "var" else centre_all[k]
            self.term_cols.setdefault((k, stat), []).append(len(tgt_rows))
            term_block.append(k)
            term_stat.append(_kernels().STAT_CODES[stat])
            tgt_rows.append(np.where(usable, t - shift, 0.0))
            w_rows.append(np.where(usable, weights[:, j], 0.0))
        self.term_block = np.array(term_block, dtype=np.int64)  # (J,) each term's block
        self.term_stat = np.array(term_stat, dtype=np.int64)  # (J,) and statistic
        self.tgt = np.stack(tgt_rows) if tgt_rows else np.zeros((0, n))
        self.w = np.stack(w_rows) if w_rows else np.zeros((0, n))
        # (n, G) the shift of each gene that meets its dimension's mean target (0 without one):
        # values are centred on the original mean, so the centred target is the shift
        self.mean_shift = np.zeros((n, off), dtype=_DTYPE)
        for k, blk in enumerate(blocks):
            rows = self.term_cols.get((k, "mean"))
            if rows:
                shift = np.where(self.w[rows[0]] > 0, self.tgt[rows[0]], 0.0)
                genes = slice(blk.off, blk.off + blk.width)
                self.mean_shift[:, genes] = self.valid[:, genes] * shift[:, None]

    def take(self, cols: np.ndarray) -> None:
        """Keep only the problems ``cols`` (compaction after some problems stopped)."""
        rows = ["valid", "base", "base_min", "base_max", "rank", "mean_shift", "n_valid"]
        rows += ["unit"] if self.unit is not None else []
        for name in rows:  # (n, ...)
            setattr(self, name, getattr(self, name)[cols])
        for name in ("cnt", "tgt", "w"):  # (J, n)
            setattr(self, name, np.ascontiguousarray(getattr(self, name)[:, cols]))

    def evaluate(self, pop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(|objective|, unfeasibility)`` of chromosomes ``pop`` (n, q, G); each (q, n)."""
        n, q, _ = pop.shape
        abs_obj, infeas = np.empty((q, n)), np.empty((q, n))
        unit = self.unit if self.unit is not None else np.zeros((0, 0), dtype=_DTYPE)
        _kernels().evaluate(
            pop, self.base, self.base_min, self.base_max, unit, self.offsets, self.cnt,
            self.term_block, self.term_stat, self.tgt, self.w, abs_obj, infeas,
        )  # fmt: skip
        return abs_obj, infeas


# --------------------------------------------------------------------------------------------
# the optimiser


def dimension_scales(
    X: np.ndarray, spec: FeatureSpec, normalise: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    """Feature weights ``w`` (n, J) and perturbation units ``u`` (n, D) or None (module docstring).

    Without ``normalise`` every weight is 1. With it, ``s_d`` is the population sd of the
    class's non-null records of dimension ``d`` (1 when that is 0 or undefined): ``u_d = 1 /
    s_d``; ``w_j = 1 / s_d`` (mean, min, max) or ``1 / s_d^2`` (var).
    """
    n, _, D = X.shape
    if not normalise:
        return np.ones((n, spec.n_features)), None
    with np.errstate(invalid="ignore", divide="ignore"):
        valid = ~np.isnan(X)
        cnt = valid.sum(axis=(0, 1))
        mean = np.where(valid, X, 0.0).sum(axis=(0, 1)) / np.maximum(cnt, 1)
        var = np.where(valid, (X - mean) ** 2, 0.0).sum(axis=(0, 1)) / np.maximum(cnt, 1)
    sd = np.sqrt(var)
    sd = np.where((cnt > 0) & (sd > 0), sd, 1.0)  # (D,)
    w = 1.0 / sd[spec.dims]
    return np.broadcast_to(w, (n, spec.n_features)).copy(), np.broadcast_to(1.0 / sd, (n, D)).copy()


def mean_only_targets(
    X: np.ndarray, targets: np.ndarray, spec: FeatureSpec
) -> tuple[np.ndarray, np.ndarray]:
    """Targets the search uses, and per series the dimensions optimised for the mean only.

    A dimension with a single non-null record has variance 0 whatever the perturbation, so its
    variance target is unreachable: the search leaves it unconstrained (NaN) and the reported
    unfeasibility still counts its error. NaN targets stay unconstrained.

    Returns
    -------
    targets : ndarray of float64, shape (n, m)
    mean_only : ndarray of int64, shape (n,)
        Dimensions of each series with one record and a variance target.
    """
    out = targets.copy()
    mean_only = np.zeros(X.shape[0], dtype=np.int64)
    for d in spec.feature_dims.tolist():
        var_cols = [j for j in np.flatnonzero(spec.dims == d) if spec.stats[j] == "var"]
        if not var_cols:
            continue
        single = (~np.isnan(X[:, :, d])).sum(axis=1) == 1
        hit = single & ~np.isnan(targets[:, var_cols]).all(axis=1)
        out[np.ix_(hit, var_cols)] = np.nan
        mean_only += hit
    return out, mean_only


#: Relative tolerance of :func:`met_at_start`: a feature within ``MET_RTOL * max(1, |target|)``
#: of its target meets it. The targets are class means of features, so a series whose feature
#: equals that of every other series of its class can differ from the mean by float rounding.
MET_RTOL = 1e-9


def met_at_start(X: np.ndarray, targets: np.ndarray, spec: FeatureSpec) -> np.ndarray:
    """Problems whose unperturbed records already meet every target they have.

    For such a problem the zero perturbation is the best chromosome under every fitness
    variant: its distortion is 0 and its unfeasibility 0 up to the rounding ``MET_RTOL``
    allows, so no chromosome ranks above it (``NA``: the key is at its maximum; the annealed
    variants: ``|objective|`` at its floor). The search leaves such a problem unconstrained
    (:func:`~mimic_deid.deid.genetic.plan.plan_genetic`): its records are released unchanged
    and it runs 0 generations, where a search from a random population would keep improving
    on noise around 0 until ``max_iterations``. On the shipped data these are mostly the
    (series, variable) pairs a series never observed (:mod:`mimic_deid.deid.missing` fills
    them with the class mean, so a class of such series shares one constant target). Beyond
    the seed's algorithm, like ``init="mean_shift"``.

    Parameters
    ----------
    X : ndarray of float64, shape (n, L, D)
    targets : ndarray of float64, shape (n, m)
        NaN = unconstrained.
    spec : FeatureSpec

    Returns
    -------
    ndarray of bool, shape (n,)
        True where the problem has at least one constrained feature and every constrained
        feature is within ``MET_RTOL * max(1, |target|)`` of its target (a feature of an
        all-null dimension counts as met: nothing there can change).
    """
    constrained = ~np.isnan(targets)
    err = feature_errors(compute_features(X, spec), targets)
    bound = MET_RTOL * np.maximum(1.0, np.abs(np.where(constrained, targets, 0.0)))
    return constrained.any(axis=1) & (err <= bound).all(axis=1)


def split_dimensions(
    X: np.ndarray,
    targets: np.ndarray,
    spec: FeatureSpec,
    weights: np.ndarray,
    unit: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, FeatureSpec, np.ndarray, np.ndarray | None]:
    """The (series, feature dimension) problems as one-dimensional "series".

    Problem ``i * k + a`` is series ``i``'s feature dimension ``spec.feature_dims[a]`` (series
    major, so chunks hold whole series). Its features are that dimension's statistics, in the
    order of their first appearance in ``spec``; statistics the dimension does not have are
    unconstrained (NaN target, weight 0).

    Returns
    -------
    Xv (n*k, L, 1), targets (n*k, S), spec (S features on dimension 0), weights (n*k, S),
    unit (n*k, 1) or None.
    """
    n, L, _ = X.shape
    dims = spec.feature_dims
    k = len(dims)
    stats = tuple(dict.fromkeys(spec.stats))
    tv = np.full((n, k, len(stats)), np.nan)
    wv = np.zeros((n, k, len(stats)))
    for j, (d, st) in enumerate(zip(spec.dims.tolist(), spec.stats, strict=True)):
        a, b = int(np.searchsorted(dims, d)), stats.index(st)
        if np.isnan(tv[:, a, b]).all():
            tv[:, a, b] = targets[:, j]
        wv[:, a, b] += weights[:, j]
    Xv = np.ascontiguousarray(X[:, :, dims].transpose(0, 2, 1)).reshape(n * k, L, 1)
    vspec = FeatureSpec(np.zeros(len(stats), dtype=np.int64), stats, stats)
    uv = None if unit is None else unit[:, dims].reshape(n * k, 1)
    return Xv, tv.reshape(n * k, -1), vspec, wv.reshape(n * k, -1), uv


def _swap(name: str) -> str:
    return "pop1" if name == "pop0" else "pop0"


def run_chunk(
    X: np.ndarray,
    targets: np.ndarray,
    spec: FeatureSpec,
    weights: np.ndarray,
    unit: np.ndarray | None,
    params: GeneticParams,
    rng: np.random.Generator,
    problem_index: np.ndarray,
    callback: Callable[[int, np.ndarray, np.ndarray], None] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Optimise one chunk of problems with its own generator ``rng``.

    Module level, so that worker processes can run it (:meth:`~mimic_deid.deid.genetic.plan.GeneticPlan.tasks`).
    ``problem_index`` numbers the chunk's problems for ``callback``.

    Returns
    -------
    X_out : ndarray of float64, shape (n, L, D)
    iterations : ndarray of int64, shape (n,)
    """
    n = X.shape[0]
    prob = _Problem(X, targets, spec, weights, unit)
    G = prob.n_genes
    P, T, K = params.population, params.tournament, params.parents
    fit = params.fitness
    ws = _Workspace()
    best_out = np.zeros((n, G), dtype=_DTYPE)
    iters_out = np.zeros(n, dtype=np.int64)
    valid0 = prob.valid
    active = np.flatnonzero(prob.n_valid > 0)  # chunk rows still running
    prob.take(active)
    na = len(active)

    pop = ws.get("pop0", (na, P, G), _DTYPE)  # problem-major population
    pop[...] = rng.standard_normal((na, P, G), dtype=_DTYPE)
    pop *= prob.valid[:, None, :]
    pop *= params.init_sd
    if params.init == "mean_shift":
        pop += prob.mean_shift[:, None, :]
    abs_obj, infeas = prob.evaluate(pop)  # (P, na)
    since = np.zeros(na, dtype=np.int64)
    spare = "pop1"
    m = 0
    while na:
        m += 1
        cols = np.arange(na)
        keys = fitness_key(abs_obj, infeas, m, fit)
        best = np.argmax(keys, axis=0)
        elite_key = keys[best, cols]

        # tournament selection: T distinct contenders, the K fittest mate (in draw order),
        # drawn inside the compiled pass
        mates = _kernels().select(keys, T, K, rng)  # (P-1, na, K)

        # crossover: K-1 distinct cut points among the series' genes; then mutation of the
        # valid genes, drawn inside the compiled pass
        cuts = _kernels().cut_points(prob.n_valid, K - 1, P - 1, G, rng)  # (P-1, na, K-1)
        child = ws.get("child", (na, P - 1, G), _DTYPE)
        _kernels().breed(
            pop, mates, cuts, prob.rank, prob.valid, rng,
            params.mutation_prob, params.mutation_sd, child,
        )  # fmt: skip

        c_obj, c_inf = prob.evaluate(child)
        c_keys = fitness_key(c_obj, c_inf, m, fit)
        improved = c_keys.max(axis=0) > elite_key

        # Survivors: the best P of parents and children. Seed 6.2 keeps the slots not taken
        # by new offspring for the best past solutions; a generational replacement (only the
        # elite survives) lost most of the progress each generation and stalled far from the
        # targets. Ties go to parents, then lower slots (a stable sort by decreasing key), so
        # the elite always survives. Only the children that enter are copied, into the slots
        # of the parents they displace (paired in slot order per series), in one compiled pass.
        _kernels().survive(keys, c_keys, pop, child, abs_obj, infeas, c_obj, c_inf)
        since = np.where(improved, 0, since + 1)
        iters_out[active] = m
        if callback is not None:
            callback(m, problem_index[active], np.maximum(elite_key, c_keys.max(axis=0)))

        done = (since >= params.patience) | (m >= params.max_iterations)
        if done.any():
            fin = np.flatnonzero(done)
            pick = np.argmax(fitness_key(abs_obj[:, fin], infeas[:, fin], m, fit), axis=0)
            best_out[active[fin]] = pop[fin, pick]
            keep = np.flatnonzero(~done)
            active = active[keep]
            na = len(keep)
            compact = ws.get(spare, (na, P, G), _DTYPE)
            np.take(pop, keep, axis=0, out=compact, mode="wrap")
            spare = _swap(spare)
            pop = compact
            abs_obj, infeas, since = abs_obj[:, keep], infeas[:, keep], since[keep]
            prob.take(keep)

    return _perturbed(X, prob.blocks, valid0, best_out), iters_out


def _perturbed(X: np.ndarray, blocks, valid: np.ndarray, best: np.ndarray) -> np.ndarray:
    """The series with the best perturbations ``best`` (n, genes) written back into their
    valid genes (float64: x + p), block by block."""
    out = X.copy()
    for blk in blocks:
        r, g = np.nonzero(valid[:, blk.off : blk.off + blk.width])
        t = blk.time[r, g]
        out[r, t, blk.dim] = X[r, t, blk.dim] + best[r, blk.off + g].astype(np.float64)
    return out
