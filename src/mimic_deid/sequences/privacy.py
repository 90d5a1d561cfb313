"""Anonymising the ensembles' counts: the seed's ratio test and a Laplace mechanism.

``seed_ratio`` (seed 004 §3.5, Eq. 15) keeps a count ``c`` of a group of total ``n`` when
``(c / n) / ((c - 1) / (n - 1)) <= exp(eps)`` (``c = 1`` fails unless ``eps`` is infinite),
suppresses the counts that fail, renormalises the groups over the survivors and tests again
until nothing more is suppressed. The test is deterministic and the surviving counts are
released exactly, so it is **not** eps-differential privacy in Dwork's sense: it is the
published method, kept as a comparator.

``laplace`` adds discrete Laplace noise of scale ``sensitivity / eps_i`` to every cell of
each count component's domain (every model x state [x state] of the ensemble), rounds
negatives to zero (post-processing) and releases the positive cells. The total budget is
split equally over the components (start, hour and transition counts of every support level
of the STE and the CTE); by sequential composition (seed Theorem 1) the counts are
``eps``-DP with respect to adding or removing one record (seed Definition 5), given the
sections and clusters. Neighbour counts are then derived from the released transitions
(post-processing, no budget). A :class:`Budget` refuses any spend beyond the total, and
OpenDP's privacy map of a discrete Laplace measurement with each component's scale and
sensitivity must certify no more than the component's eps (``opendp_eps`` in the summary).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError, ReleaseCheckError
from mimic_deid.sequences.model import Ensemble

__all__ = [
    "MECHANISMS",
    "SAMPLERS",
    "Budget",
    "anonymise",
    "component_sensitivity",
    "components",
    "discrete_laplace",
    "laplace_counts",
    "opendp_scale_epsilon",
    "ratio_suppress",
]

MECHANISMS = ("seed_ratio", "laplace")
SAMPLERS = ("seeded", "opendp")
#: L1 change of one component when one record is added or removed, per model it belongs to:
#: a start moves from one state (hour) to another; an interior record replaces two
#: transitions by one.
SENSITIVITY = {"start": 2, "hour": 2, "trans": 3}
#: Most cells one component may draw (opendp) or release as noise (seeded): memory bound.
MAX_CELLS = 5_000_000


def check_epsilon(eps: float, name: str = "epsilon") -> float:
    """``eps`` as a float if it is > 0 (``inf`` allowed), else ``ConfigError``."""
    try:
        value = float(eps)
    except (TypeError, ValueError):
        value = float("nan")
    if not value > 0:
        raise ConfigError(f"sequences: {name} must be > 0 (inf: no privacy test), got {eps!r}")
    return value


def ratio_suppress(counts: np.ndarray, groups: np.ndarray, eps: float) -> np.ndarray:
    """The seed's ratio test (§3.5), iterated until stable.

    Parameters
    ----------
    counts : ndarray of int64, shape (m,)
        Counts of one statistic (e.g. transitions a -> b of every model).
    groups : ndarray of int64, shape (m,)
        Normalisation group of each count (e.g. the (model, a) pair): frequency = count /
        group total.
    eps : float
        > 0; ``inf`` keeps every count.

    Returns
    -------
    ndarray of bool, shape (m,)
        True where the count survives.
    """
    eps = check_epsilon(eps)
    counts = np.asarray(counts, dtype=np.float64)
    keep = counts > 0
    if math.isinf(eps):
        return keep
    bound = math.exp(eps)
    _, g = np.unique(groups, return_inverse=True)
    while True:
        total = np.bincount(g, weights=np.where(keep, counts, 0.0))[g]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = (counts / total) / ((counts - 1) / (total - 1))
        ratio = np.where((counts == total) & (counts > 1), 1.0, ratio)  # alone in its group
        fail = keep & ~(ratio <= bound)
        if not fail.any():
            return keep
        keep &= ~fail


class Budget:
    """A privacy budget spent by sequential composition (seed Theorem 1).

    Parameters
    ----------
    total : float
        The configured eps, > 0.
    """

    def __init__(self, total: float) -> None:
        self.total = check_epsilon(total, "laplace epsilon")
        self.spent: dict[str, float] = {}

    @property
    def used(self) -> float:
        return float(sum(self.spent.values()))

    def spend(self, name: str, eps: float) -> float:
        """Record ``eps`` for component ``name``; ``ReleaseCheckError`` past the total."""
        eps = check_epsilon(eps, f"epsilon of component '{name}'")
        if name in self.spent:
            raise ReleaseCheckError(f"privacy budget: component '{name}' was already released")
        if self.used + eps > self.total * (1 + 1e-9):
            raise ReleaseCheckError(
                f"privacy budget: component '{name}' asks eps={eps:.6g} but only "
                f"{self.total - self.used:.6g} of the total {self.total:.6g} is left; refusing "
                "to exceed the configured budget"
            )
        self.spent[name] = eps
        return eps


def component_sensitivity(stat: str, level: str, n_factors: int) -> int:
    """L1 sensitivity of component ``stat`` at support ``level``: per-model change x the number
    of models of that level one record belongs to (``n_factors`` for factor levels)."""
    per_model = SENSITIVITY[stat]
    return per_model * (n_factors if "factor" in level else 1)


def discrete_laplace(scale: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """Discrete Laplace noise, P(k) proportional to exp(-|k| / scale): a difference of two
    geometric variables (the distribution OpenDP's ``make_laplace`` samples for integers)."""
    p = -math.expm1(-1.0 / scale)
    return rng.geometric(p, size) - rng.geometric(p, size)


def opendp_scale_epsilon(sensitivity: int, scale: float) -> float:
    """eps that OpenDP's privacy map certifies for a discrete Laplace measurement of ``scale``
    on integer vectors at L1 distance ``sensitivity``."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    meas = dp.m.make_laplace(
        dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=scale
    )
    return float(meas.map(int(sensitivity)))


def _noisy_sparse(
    cells: np.ndarray, counts: np.ndarray, domain: int, scale: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Noisy counts over ``domain`` cells, of which ``cells`` hold ``counts`` (the rest 0).

    Zero cells are handled exactly without enumerating them: each is positive after noise
    with probability q / (1 + q), q = exp(-1 / scale), and a positive value is then 1 +
    Geometric(1 - q) - 1 (memorylessness). Returns (cells, values) of the positive cells.
    """
    noisy = counts + discrete_laplace(scale, len(cells), rng)
    q = math.exp(-1.0 / scale)
    n_zero = domain - len(cells)
    k = int(rng.binomial(n_zero, q / (1 + q))) if n_zero > 0 else 0
    ranks = np.sort(rng.choice(n_zero, size=k, replace=False)) if k else np.zeros(0, np.int64)
    # zero-cell rank -> cell id: skip the occupied cells (sorted)
    occupied = np.sort(cells)
    shift = occupied - np.arange(len(occupied))
    new_cells = ranks + np.searchsorted(shift, ranks, side="right")
    new_vals = rng.geometric(-math.expm1(-1.0 / scale), k)
    out_cells = np.r_[cells, new_cells].astype(np.int64)
    out_vals = np.r_[noisy, new_vals].astype(np.int64)
    pos = out_vals > 0
    return out_cells[pos], out_vals[pos]


def _noisy_dense(
    cells: np.ndarray, counts: np.ndarray, domain: int, scale: float
) -> tuple[np.ndarray, np.ndarray]:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    meas = dp.m.make_laplace(
        dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=scale
    )
    dense = np.zeros(domain, dtype=np.int64)
    dense[cells] = counts
    noisy = np.asarray(meas(dense.tolist()), dtype=np.int64)
    pos = np.flatnonzero(noisy > 0)
    return pos, noisy[pos]


def laplace_counts(
    cells: np.ndarray,
    counts: np.ndarray,
    domain: int,
    sensitivity: int,
    eps: float,
    rng: np.random.Generator,
    sampler: str = "seeded",
    max_cells: int = MAX_CELLS,
    name: str = "counts",
) -> tuple[np.ndarray, np.ndarray, float]:
    """Release one count component with discrete Laplace noise of scale sensitivity / eps.

    Parameters
    ----------
    cells : ndarray of int64, shape (m,)
        Distinct cell ids (0 .. domain - 1) with a positive true count.
    counts : ndarray of int64, shape (m,)
    domain : int
        Number of cells of the component (every model x state [x state]).
    sensitivity : int
    eps : float
        This component's share of the budget.
    rng : numpy.random.Generator
        Noise stream of the ``seeded`` sampler (ignored by ``opendp``).
    sampler : {"seeded", "opendp"}
        ``seeded``: reproducible NumPy draws (exact sparse handling of the zero cells);
        ``opendp``: OpenDP's own sampler on the dense vector (not reproducible).
    max_cells : int
        ``opendp``: most cells drawn; ``seeded``: most empty cells expected to be released
        with noise. Past it a ``ReleaseCheckError`` names the component (the release would
        be noise and would not fit in memory).
    name : str
        The component, for messages.

    Returns
    -------
    cells, values : ndarray of int64
        The released positive cells and their noisy counts.
    scale : float
    """
    scale = sensitivity / eps
    if sampler == "seeded":
        q = math.exp(-1.0 / scale)
        spurious = (domain - len(cells)) * q / (1 + q)
        if spurious > max_cells:
            raise ReleaseCheckError(
                f"sequences.laplace: component '{name}' has {domain:,} cells; at eps={eps:.4g} "
                f"(scale {scale:.4g}) about {spurious:,.0f} empty cells would be released as "
                f"noise (limit {max_cells:,}); raise sequences.epsilon or lower "
                "sequences.lsh.cluster_fraction"
            )
        return (*_noisy_sparse(cells, counts, domain, scale, rng), scale)
    if sampler == "opendp":
        if domain > max_cells:
            raise ReleaseCheckError(
                f"sequences.laplace: sampler 'opendp' draws every cell and component '{name}' "
                f"has {domain:,} > {max_cells:,} cells; use sampler 'seeded'"
            )
        return (*_noisy_dense(cells, counts, domain, scale), scale)
    raise ConfigError(
        f"sequences.laplace: sampler must be one of {list(SAMPLERS)}, got {sampler!r}"
    )


def components(ens: Ensemble) -> list[tuple[str, str]]:
    """(stat, level) of every count component of ``ens`` that the budget pays for."""
    return [(stat, lv) for lv in ens.levels for stat in ("start", "hour", "trans")]


def anonymise(
    ens: Ensemble,
    mechanism: str,
    eps: float,
    rng: np.random.Generator | None = None,
    budget: Budget | None = None,
    eps_each: float | None = None,
    sampler: str = "seeded",
) -> tuple[Ensemble, dict]:
    """Release the counts of ``ens`` under ``mechanism``.

    Returns the ensemble restricted to its released rows (count > 0) and a summary: rows,
    suppressed rows, and for ``laplace`` the scale and eps of each component.
    """
    if mechanism == "seed_ratio":
        eps = check_epsilon(eps)
        out = {}
        groups = {
            "start": ens.start["model"].to_numpy(),
            "hour": ens.hour["model"].to_numpy(),
            "trans": ens.trans["model"].to_numpy() * ens.n_states + ens.trans["a"].to_numpy(),
            "neighbour": ens.neighbour["a"].to_numpy(),
        }
        summary = {"rows": 0, "suppressed": 0}
        for name, g in groups.items():
            table = getattr(ens, name)
            keep = ratio_suppress(table["count"].to_numpy(), g, eps)
            out[name] = table.loc[keep].reset_index(drop=True)
            summary["rows"] += len(table)
            summary["suppressed"] += int((~keep).sum())
        return _restricted(ens, out), summary
    if mechanism == "laplace":
        return _laplace(ens, rng, budget, eps_each, sampler)
    raise ConfigError(f"sequences: mechanism must be one of {list(MECHANISMS)}, got {mechanism!r}")


def _restricted(ens: Ensemble, tables: dict) -> Ensemble:
    """``ens`` with its count tables replaced by the released ones."""
    return replace(ens, **tables)


def _laplace(
    ens: Ensemble,
    rng: np.random.Generator,
    budget: Budget,
    eps_each: float,
    sampler: str,
) -> tuple[Ensemble, dict]:
    """Release every (level, statistic) component of ``ens`` with noise (module docstring).

    Cells are numbered per level: model rank within the level x (state [x state]). Released
    cells that were empty in the data get no time or length statistics (NaN; the generator
    falls back to the ensemble's overall means).
    """
    models = ens.models
    n_models, n_states = len(models), ens.n_states
    nf = len(ens.factors)
    out = {}
    summary = {"rows": 0, "suppressed": 0, "components": []}
    level_of = models["level"].to_numpy()
    released = {}
    for stat in ("start", "hour", "trans"):
        table = getattr(ens, stat)
        width = 24 if stat == "hour" else n_states
        key = "hour" if stat == "hour" else ("state" if stat == "start" else None)
        m = table["model"].to_numpy()
        if stat == "trans":
            cell = (m * n_states + table["a"].to_numpy()) * n_states + table["b"].to_numpy()
            per_model = n_states * n_states
        else:
            cell = m * width + table[key].to_numpy()
            per_model = width
        parts = []
        for lv in ens.levels:
            ids = np.flatnonzero(level_of == lv)
            name = f"{ens.name}/{lv}/{stat}"
            sens = component_sensitivity(stat, lv, nf)
            spent = budget.spend(name, eps_each)
            local = np.full(n_models, -1, dtype=np.int64)
            local[ids] = np.arange(len(ids))
            sel = np.isin(m, ids)
            lc = local[m[sel]] * per_model + (cell[sel] - m[sel] * per_model)
            cells, vals, scale = laplace_counts(
                lc, table["count"].to_numpy()[sel], len(ids) * per_model, sens, spent, rng,
                sampler, name=name,
            )  # fmt: skip
            mod = ids[cells // per_model]
            rest = cells % per_model
            parts.append((mod, rest, vals))
            certified = opendp_scale_epsilon(sens, scale)
            if certified > spent * (1 + 1e-9):
                raise ReleaseCheckError(
                    f"privacy budget: OpenDP certifies eps={certified:.6g} for component "
                    f"'{name}' (sensitivity {sens}, scale {scale:.6g}), more than its "
                    f"{spent:.6g}"
                )
            summary["components"].append(
                {"name": name, "sensitivity": sens, "eps": spent, "scale": scale,
                 "opendp_eps": certified}
            )  # fmt: skip
        mod = np.concatenate([p[0] for p in parts])
        rest = np.concatenate([p[1] for p in parts])
        vals = np.concatenate([p[2] for p in parts])
        rel = pd.DataFrame({"model": mod, "count": vals})
        if stat == "trans":
            rel["a"], rel["b"] = rest // n_states, rest % n_states
            keys = ["model", "a", "b"]
            stats_cols = ["time_mean", "time_sd"]
        else:
            rel[key] = rest
            keys = ["model", key]
            stats_cols = ["length_mean", "length_sd"]
        rel = rel.merge(table[keys + stats_cols], on=keys, how="left").sort_values(
            keys, kind="stable"
        )
        summary["rows"] += len(table)
        summary["suppressed"] += int(len(table) - table.merge(rel[keys], on=keys).shape[0])
        released[stat] = rel.reset_index(drop=True)
    # neighbours from the released 'all' transitions: one or two steps apart (post-processing)
    t = released["trans"]
    t_all = t[level_of[t["model"].to_numpy()] == "all"]
    adj = np.zeros((n_states, n_states))
    np.add.at(adj, (t_all["a"].to_numpy(), t_all["b"].to_numpy()), t_all["count"].to_numpy())
    reach = adj + adj @ adj
    np.fill_diagonal(reach, 0)
    a, b = np.nonzero(reach > 0)
    released["neighbour"] = pd.DataFrame(
        {"a": a, "b": b, "count": np.rint(reach[a, b]).astype(np.int64)}
    )
    out.update(released)
    return _restricted(ens, out), summary
