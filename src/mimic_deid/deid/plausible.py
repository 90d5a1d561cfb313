"""Plausible released values: the one projection every release method's output goes through.

A release method changes the values of a series to meet its targets (or its groups' envelopes)
and knows nothing of physiology: an additive search can release a negative oxygen fraction, a
Glasgow coma scale of 15.7 or a height that changes from hour to hour, which tells any reader
at a glance that and how the data were altered. Every variable of ``config/variables.yaml``
states what a plausible value is (:class:`~mimic_deid.pipeline.variables.Variable`): its valid
range (the cleaning's range), for a discrete variable its value set, and whether it is static
(one value per stay). :func:`project` maps a class's series onto these values, in this order:

1. **static**: every observed hour of a static variable takes the series' mean over its
   observed hours (a mean feature is kept exactly; variance 0, minimum = maximum = mean);
2. **range**: every value is clipped to ``[low, high]``;
3. **value set**: every value of a discrete variable becomes the nearest member of its value
   set, ties to the lower member.

Null records stay null, and a value that is already plausible is unchanged (a constant static
series keeps its value bit for bit), so projecting twice changes nothing. It is applied by the generic method driver,
:func:`mimic_deid.deid.methods.apply_method`, to every method's output (a new method gets it
without a line of its own), and once more by the release
(:func:`mimic_deid.deid.release.pseudonymous_release`) after the missing hours are filled,
where it only moves the class means that fill a never-observed discrete variable. Claim 16 of
:mod:`mimic_deid.deid.check` verifies the published release. The projection is a function of
each series alone (elementwise but for the static mean): deterministic, and two series that
publish the same values before it publish the same values after it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.pipeline.variables import Variable

__all__ = ["PlausibleValues", "project", "project_variable", "snap"]


@dataclass(frozen=True)
class PlausibleValues:
    """What a plausible value is, per released dimension (``config/variables.yaml``).

    Attributes
    ----------
    dims : tuple of str
        The dimensions, in the order of the arrays projected.
    low, high : tuple of float
        The valid range of each dimension, inclusive.
    values : tuple of (tuple of float or None)
        The sorted value set of each discrete dimension; None for a continuous one.
    static : tuple of bool
        Whether each dimension is constant within a series.
    """

    dims: tuple[str, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    values: tuple[tuple[float, ...] | None, ...]
    static: tuple[bool, ...]

    @classmethod
    def from_variables(cls, variables: Iterable[Variable], dims: Sequence[str]) -> PlausibleValues:
        """The plausible values of ``dims``, read from their variables.

        Raises
        ------
        ConfigError
            A dimension is not a variable of the variables file.
        """
        by_name = {v.name: v for v in variables}
        missing = [d for d in dims if d not in by_name]
        if missing:
            raise ConfigError(
                f"plausible values: no variable {missing} in the variables file (config "
                "'variables'); expected every released dimension to be one"
            )
        chosen = [by_name[d] for d in dims]
        return cls(
            dims=tuple(dims),
            low=tuple(v.valid_range[0] for v in chosen),
            high=tuple(v.valid_range[1] for v in chosen),
            values=tuple(v.values for v in chosen),
            static=tuple(v.static for v in chosen),
        )

    def select(self, dims: Sequence[str]) -> PlausibleValues:
        """The same values for ``dims`` only, in that order (ConfigError for an unknown one)."""
        missing = [d for d in dims if d not in self.dims]
        if missing:
            raise ConfigError(
                f"plausible values: no valid range for {missing}; expected dimensions of "
                f"{list(self.dims)}"
            )
        at = [self.dims.index(d) for d in dims]
        return PlausibleValues(
            dims=tuple(dims),
            low=tuple(self.low[i] for i in at),
            high=tuple(self.high[i] for i in at),
            values=tuple(self.values[i] for i in at),
            static=tuple(self.static[i] for i in at),
        )

    def index(self, dim: str) -> int:
        """Position of ``dim`` (ConfigError naming it when it is not one of :attr:`dims`)."""
        if dim not in self.dims:
            raise ConfigError(f"plausible values: no valid range for '{dim}'")
        return self.dims.index(dim)


def snap(x: np.ndarray, values: Sequence[float]) -> np.ndarray:
    """Every value of ``x`` replaced by the nearest member of ``values`` (ties to the lower).

    Parameters
    ----------
    x : ndarray of float64, any shape
        NaN = null, kept.
    values : sequence of float
        The value set, sorted ascending, non-empty.

    Returns
    -------
    ndarray of float64, the shape of ``x``
        Members of ``values`` (bit-identical to them) or NaN.
    """
    x = np.asarray(x, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if v.size == 1:
        return np.where(np.isnan(x), np.nan, v[0])
    i = np.clip(np.searchsorted(v, x), 1, v.size - 1)
    below, above = v[i - 1], v[i]
    with np.errstate(invalid="ignore"):
        out = np.where(x - below <= above - x, below, above)
    return np.where(np.isnan(x), np.nan, out)


def project_variable(x: np.ndarray, plausible: PlausibleValues, dim: str) -> np.ndarray:
    """The series of one variable projected onto its plausible values (module docstring).

    Parameters
    ----------
    x : ndarray of float64, shape (n, L)
        One variable of ``n`` series of ``L`` hours, NaN = null.
    plausible : PlausibleValues
    dim : str
        The variable.

    Returns
    -------
    ndarray of float64, shape (n, L)
        Null where ``x`` is null.
    """
    # contiguous rows: a series' mean is summed in one order wherever its array comes from
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise InputDataError(f"variable '{dim}': expected an (n, L) array, got shape {x.shape}")
    d = plausible.index(dim)
    out = x
    if plausible.static[d] and x.shape[1]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=RuntimeWarning)  # a never-observed series
            low, high = np.nanmin(x, axis=1), np.nanmax(x, axis=1)
            # a constant series keeps its value exactly (a mean of equal values can be an
            # ulp away from them), so that projecting twice changes nothing
            level = np.where(low == high, low, np.nanmean(x, axis=1))
        out = np.where(np.isnan(x), np.nan, level[:, None])
    out = np.clip(out, plausible.low[d], plausible.high[d])
    if plausible.values[d] is not None:
        out = snap(out, plausible.values[d])
    return out


def project(X: np.ndarray, plausible: PlausibleValues) -> np.ndarray:
    """A class's series projected onto their plausible values (module docstring).

    Parameters
    ----------
    X : ndarray of float64, shape (n, L, D)
        The series, dimensions in the order of ``plausible.dims``, NaN = null.
    plausible : PlausibleValues

    Returns
    -------
    ndarray of float64, shape (n, L, D)
        A new array: every value in its range and value set, every static dimension constant
        within each series; null exactly where ``X`` is null.

    Raises
    ------
    InputDataError
        ``X`` is not 3-D or its number of dimensions differs from ``plausible.dims``.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 3 or X.shape[2] != len(plausible.dims):
        raise InputDataError(
            f"series X must be an (n, length, {len(plausible.dims)}) array (one dimension per "
            f"variable of {list(plausible.dims)}), got shape {X.shape}"
        )
    out = np.empty(X.shape, dtype=np.float64)  # C order, whatever the method's layout
    for d, dim in enumerate(plausible.dims):
        out[:, :, d] = project_variable(X[:, :, d], plausible, dim)
    return out
