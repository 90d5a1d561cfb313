"""Shared result type, input checks and quality metrics of the constraint optimisers.

Both optimisers (``adhoc``, seed §5.5; ``genetic``, seed §4.2/§6.2) look for an additive
perturbation of the feature dimensions of every series of one duration class so that its
features meet the Mondrian targets. They report, per series (seed §6.2):

- **unfeasibility**: sum over the features with a non-null target of
  ``|target - achieved feature|`` (in the features' own units: variance in unit², the others in
  the unit of their dimension);
- **distortion**: sum of ``|perturbation|`` over every record and dimension, divided by the class
  length ``L`` (hours), i.e. mean absolute change per hour summed over dimensions.

The seed's tables average the unfeasibility over series *and dimensions*
(:func:`dimension_unfeasibility` gives the per-dimension sums).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from mimic_deid.core.errors import InputDataError
from mimic_deid.deid.features import FeatureSpec, compute_features


@dataclass(frozen=True)
class OptimiseResult:
    """Output of a constraint optimiser on one duration class.

    Attributes
    ----------
    X : ndarray of float64, shape (n, L, D)
        Perturbed series; NaN exactly where the input is NaN; dimensions without a feature
        are bit-identical to the input.
    unfeasibility : ndarray of float64, shape (n,)
        Per series, ``sum_j |target_j - feature_j(X)|`` over features with non-null target.
    distortion : ndarray of float64, shape (n,)
        Per series, ``sum |X_out - X_in|`` over records and dimensions, divided by ``L``.
    iterations : ndarray of int64, shape (n,)
        Iterations (ad-hoc) or generations (genetic) run for each series.
    detail : dict of str to ndarray, optional
        Extra per-series columns of a method (private ``method.parquet``): arrays of shape
        (n,) or (n, L) (written as lists), e.g. the k-groups and words of
        :mod:`mimic_deid.deid.kapra`; None for the optimisers.
    """

    X: np.ndarray
    unfeasibility: np.ndarray
    distortion: np.ndarray
    iterations: np.ndarray
    detail: Mapping[str, np.ndarray] | None = None


def check_inputs(
    X: np.ndarray, targets: np.ndarray, spec: FeatureSpec
) -> tuple[np.ndarray, np.ndarray]:
    """Validate and convert the common optimiser inputs; return float64 ``(X, targets)``.

    Raises ``InputDataError`` naming the array at fault and the expected shape.
    """
    X = np.asarray(X, dtype=np.float64)
    targets = np.asarray(targets, dtype=np.float64)
    if X.ndim != 3:
        raise InputDataError(f"series X must be a 3-D array (n, length, dims), got {X.shape}")
    n, _, n_dims = X.shape
    if targets.shape != (n, spec.n_features):
        raise InputDataError(
            f"targets must have shape (n_series, n_features) = ({n}, {spec.n_features}), "
            f"got {targets.shape}"
        )
    if spec.n_features and (spec.dims.min() < 0 or spec.dims.max() >= n_dims):
        raise InputDataError(
            f"feature spec refers to dimension {int(spec.dims.max())}, but X has {n_dims} dims"
        )
    if np.isinf(X).any() or np.isinf(targets).any():
        raise InputDataError("series and targets must be finite or NaN (null), found +/-inf")
    return X, targets


def feature_errors(features: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """``|targets - features|`` with 0 where the target (or the achieved feature) is null.

    Parameters
    ----------
    features, targets : ndarray, shape (n, m)

    Returns
    -------
    ndarray of float64, shape (n, m)
    """
    with np.errstate(invalid="ignore"):
        err = np.abs(np.asarray(targets, dtype=np.float64) - features)
    return np.where(np.isnan(err), 0.0, err)


def unfeasibility(features: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per-series unfeasibility: ``sum_j |target_j - feature_j|`` over non-null targets.

    Parameters
    ----------
    features : ndarray, shape (n, m)
        Achieved features (e.g. ``compute_features(X_out, spec)``).
    targets : ndarray, shape (n, m)
        Targets, NaN = unconstrained.

    Returns
    -------
    ndarray of float64, shape (n,)
        A feature whose achieved value is null (all-null dimension) counts 0: nothing can be
        changed there.
    """
    return feature_errors(features, targets).sum(axis=1)


def dimension_unfeasibility(
    features: np.ndarray, targets: np.ndarray, spec: FeatureSpec
) -> np.ndarray:
    """Unfeasibility summed per feature dimension.

    Returns
    -------
    ndarray of float64, shape (n, len(spec.feature_dims))
        Column ``k`` = sum of ``|target - feature|`` over the features of dimension
        ``spec.feature_dims[k]``; NaN where that dimension has no non-null target for the series.
    """
    err = feature_errors(features, targets)
    constrained = ~np.isnan(np.asarray(targets, dtype=np.float64))
    dims = spec.feature_dims
    out = np.empty((err.shape[0], len(dims)), dtype=np.float64)
    for k, d in enumerate(dims.tolist()):
        cols = spec.dims == d
        out[:, k] = np.where(constrained[:, cols].any(axis=1), err[:, cols].sum(axis=1), np.nan)
    return out


def distortion(X_orig: np.ndarray, X_new: np.ndarray) -> np.ndarray:
    """Per-series distortion: ``sum |X_new - X_orig|`` over records and dims, divided by L.

    Parameters
    ----------
    X_orig, X_new : ndarray, shape (n, L, D)
        NaN (null) records count 0.

    Returns
    -------
    ndarray of float64, shape (n,)
        In the (summed) units of the dimensions per hour; 0 for ``L == 0``.
    """
    n, length = X_orig.shape[:2]
    if length == 0 or n == 0:
        return np.zeros(n)
    return np.nansum(np.abs(X_new - X_orig), axis=(1, 2)) / length


def evaluate(
    X_orig: np.ndarray,
    X_new: np.ndarray,
    targets: np.ndarray,
    spec: FeatureSpec,
    iterations: np.ndarray,
) -> OptimiseResult:
    """Assemble an :class:`OptimiseResult`, computing unfeasibility and distortion of ``X_new``."""
    if X_new.shape[1] == 0:  # no records: every feature is null
        feats = np.full((X_new.shape[0], spec.n_features), np.nan)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=RuntimeWarning)
            feats = compute_features(X_new, spec)
    return OptimiseResult(
        X=X_new,
        unfeasibility=unfeasibility(feats, targets),
        distortion=distortion(X_orig, X_new),
        iterations=np.asarray(iterations, dtype=np.int64),
    )
