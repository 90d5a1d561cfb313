"""Series features the attacker is assumed to know (seed 5.1): mean, variance, min, max.

A feature of a dimension with no non-null record is NaN ("null"); nulls never form or join an
equivalence class. Variance is the population variance (``ddof=0``): a dimension observed
once has variance 0 rather than an undefined value, which keeps short series usable.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from mimic_deid.errors import ConfigError

STATS = ("mean", "var", "min", "max")


@dataclass(frozen=True)
class FeatureSpec:
    """Which statistic of which dimension each feature column is.

    Attributes
    ----------
    dims : ndarray of int, shape (n_features,)
        Index of the series dimension of each feature.
    stats : tuple of str, length n_features
        Statistic of each feature, one of ``STATS``.
    names : tuple of str
        ``"<variable>_<stat>"`` for each feature.
    """

    dims: np.ndarray
    stats: tuple[str, ...]
    names: tuple[str, ...]

    @property
    def n_features(self) -> int:
        return len(self.stats)

    @property
    def feature_dims(self) -> np.ndarray:
        """Sorted unique dimensions that carry at least one feature."""
        return np.unique(self.dims)


def feature_spec(features: dict[str, list[str]], dim_names: list[str]) -> FeatureSpec:
    """Build a spec from ``{variable: [stat, ...]}`` and the ordered series dimension names."""
    dims, stats, names = [], [], []
    for var, var_stats in features.items():
        if var not in dim_names:
            raise ConfigError(
                f"config parameter 'deid/features': variable '{var}' is not a series "
                f"dimension; expected one of {dim_names}"
            )
        for stat in var_stats:
            if stat not in STATS:
                raise ConfigError(
                    f"config parameter 'deid/features/{var}': unknown statistic '{stat}', "
                    f"expected one of {STATS}"
                )
            dims.append(dim_names.index(var))
            stats.append(stat)
            names.append(f"{var}_{stat}")
    return FeatureSpec(np.asarray(dims, dtype=np.int64), tuple(stats), tuple(names))


def dimension_stats(values: np.ndarray) -> dict[str, np.ndarray]:
    """Mean, variance, min, max over axis 1 of ``values`` (n, length), ignoring NaN.

    Rows with no non-NaN value give NaN for every statistic.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        return {
            "mean": np.nanmean(values, axis=1),
            "var": np.nanvar(values, axis=1),
            "min": np.nanmin(values, axis=1),
            "max": np.nanmax(values, axis=1),
        }


def compute_features(X: np.ndarray, spec: FeatureSpec) -> np.ndarray:
    """Features of every series.

    Parameters
    ----------
    X : ndarray, shape (n_series, length, n_dims)
        Series with NaN for null records.
    spec : FeatureSpec

    Returns
    -------
    ndarray, shape (n_series, n_features)
        NaN where the dimension is entirely null.
    """
    out = np.empty((X.shape[0], spec.n_features), dtype=np.float64)
    cache: dict[int, dict[str, np.ndarray]] = {}
    for j, (dim, stat) in enumerate(zip(spec.dims.tolist(), spec.stats, strict=True)):
        if dim not in cache:
            cache[dim] = dimension_stats(X[:, :, dim])
        out[:, j] = cache[dim][stat]
    return out
