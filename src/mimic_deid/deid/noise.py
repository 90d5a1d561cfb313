"""Additive noise on the hourly values: the noise-addition baseline of statistical disclosure
control.

Noise addition (Brand 2002, "Microdata protection through noise addition", LNCS 2316;
Hundepool et al. 2012, *Statistical Disclosure Control*, Wiley) publishes every value plus an
independent random error whose variance is proportional to the variance of its variable:
``z = x + e``, ``e ~ N(0, a * var(X_j))`` for variable ``j`` (uncorrelated noise; Brand's
``a`` is ``scale ** 2`` here). Here a record is one hourly value of one protected variable of
one series. Within one unit a release method runs on (a demographic cell of a duration class,
:func:`mimic_deid.deid.classes.split_cells`):

1. per protected variable ``j`` (the dimensions with feature targets, ``spec.feature_dims``;
   the others are never published), ``sd_j`` is the population sd of the unit's non-null
   values of ``j`` over every series and hour (:func:`unit_sd`; 0 where there are none or all
   are equal, so such a variable is published unchanged);
2. every non-null value of ``j`` becomes ``x + scale * sd_j * e`` with ``e`` a standard normal
   drawn from the unit's own generator (:func:`mimic_deid.core.seeding.derive_rng`; one draw
   per series, hour and variable, in that array order, also where the value is null, so the
   stream does not depend on the nulls); null values stay null.

One number, ``scale``, so serves every variable, whatever its unit. Gaussian rather than
Laplace noise: the literature the method follows is Gaussian (its variance is the only
parameter, means are kept in expectation and variances grow by the known factor
``1 + scale ** 2``, which a user can correct for); Laplace noise earns its place through
differential privacy's guarantee, which would need a bounded contribution of each person and a
privacy budget that this release does not account for, so it would bring heavier tails and no
guarantee.

The method has no bound of its own and promises none by construction: whether an attacker who
knows a target's values still finds its noisy series is measured, by the attacker family of
:mod:`mimic_deid.evaluate.attackers` (claim 14 of :mod:`mimic_deid.deid.check`), and the
release is refused above ``1 / fk`` like every other. The generic driver
(:func:`mimic_deid.deid.methods.apply_method`) then projects every released value onto its
variable's plausible values (:mod:`mimic_deid.deid.plausible`: clipped to the valid range,
snapped to a discrete variable's value set, a static variable's series mean), so large scales
pile values up at the range limits. The Mondrian targets of the point are computed as for
every method but only enter the unfeasibility reported against them.

No maintained Python package adds noise to whole series with this interface (the SDC packages
are R's sdcMicro and Java's), and the method is three NumPy lines, so it is written here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from mimic_deid.core.errors import ConfigError
from mimic_deid.deid.optimise import OptimiseResult, check_inputs, evaluate

__all__ = ["add_noise", "run_noise", "unit_sd"]


def unit_sd(X: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """Population sd of each of ``dims`` over the unit's non-null values.

    Parameters
    ----------
    X : ndarray of float64, shape (n, L, D)
        The unit's series, NaN = null, in the variables' units.
    dims : ndarray of int, shape (d,)

    Returns
    -------
    ndarray of float64, shape (d,)
        In the variables' units; 0 where a dimension has no non-null value (or one value
        throughout).
    """
    x = np.asarray(X, dtype=np.float64)[:, :, np.asarray(dims, dtype=np.int64)]
    valid = ~np.isnan(x)
    count = valid.sum(axis=(0, 1))
    mean = np.where(valid, x, 0.0).sum(axis=(0, 1)) / np.maximum(count, 1)
    dev = np.where(valid, x - mean, 0.0)
    sd = np.sqrt((dev**2).sum(axis=(0, 1)) / np.maximum(count, 1))
    # one value throughout: exactly 0 (the mean's rounding would leave ~1e-17)
    constant = np.where(valid, x, np.inf).min(axis=(0, 1)) >= np.where(valid, x, -np.inf).max(
        axis=(0, 1)
    )
    return np.where(constant, 0.0, sd)


def add_noise(
    X: np.ndarray, dims: np.ndarray, scale: float, rng: np.random.Generator
) -> np.ndarray:
    """``X`` with Gaussian noise of sd ``scale * unit_sd`` added on ``dims`` (module docstring).

    Parameters
    ----------
    X : ndarray of float64, shape (n, L, D)
        NaN = null.
    dims : ndarray of int, shape (d,)
        The dimensions noised; the others are returned bit-identical.
    scale : float
        The noise sd in units of each dimension's sd over the unit (:func:`unit_sd`), > 0.
    rng : numpy.random.Generator
        The unit's generator; ``n * L * d`` standard normals are drawn from it.

    Returns
    -------
    ndarray of float64, shape (n, L, D)
        NaN exactly where ``X`` is NaN.

    Raises
    ------
    ConfigError
        ``scale`` is not a finite number > 0.
    """
    if isinstance(scale, bool) or not isinstance(scale, int | float | np.number):
        raise ConfigError(f"noise: scale must be a number > 0, got {scale!r}")
    if not (np.isfinite(scale) and scale > 0):
        raise ConfigError(f"noise: scale must be a finite number > 0, got {scale!r}")
    X = np.asarray(X, dtype=np.float64)
    out = X.copy()
    dims = np.asarray(dims, dtype=np.int64)
    if dims.size == 0 or X.shape[0] == 0:
        return out
    e = rng.standard_normal((X.shape[0], X.shape[1], dims.size))
    out[:, :, dims] = X[:, :, dims] + e * (float(scale) * unit_sd(X, dims))
    return out


def run_noise(X, targets, spec, params: Mapping[str, Any], rng) -> OptimiseResult:
    """Release method ``noise`` (:mod:`mimic_deid.deid.methods` signature; module docstring).

    ``params``: ``scale`` (:func:`add_noise`). ``rng`` is the unit's generator. The protected
    dimensions (``spec.feature_dims``) are noised; ``iterations`` is 0 (one draw, no search).
    """
    X, targets = check_inputs(X, targets, spec)
    if "scale" not in params:
        raise ConfigError("release method 'noise' needs its scale")
    out = add_noise(X, spec.feature_dims, params["scale"], rng)
    return evaluate(X, out, targets, spec, np.zeros(X.shape[0], dtype=np.int64))
