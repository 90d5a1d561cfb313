"""Series features the attacker is assumed to know (seed §5.1): mean, variance, min, max.

A feature of a dimension with no non-null record is NaN ("null"); nulls never form or join an
equivalence class. Variance is the population variance (``ddof=0``): a dimension observed
once has variance 0 rather than an undefined value, which keeps short series usable.

Beyond the seed, a *strong* attacker also knows ``count``, the number of observed (non-null)
hours of a dimension (:data:`ATTACKER_STATS`); it is an attacker feature only, as no release
method can meet a count target (null records are never changed).

Which variables a release publishes (``release.variables`` in the config):

- ``features``: only the variables with at least one feature in ``deid.features``; every
  other variable is withheld;
- ``all``: every series variable, each protected: a variable without configured features
  gets all four (:func:`protected_features`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from mimic_deid.core.errors import ConfigError

__all__ = [
    "ATTACKER_STATS",
    "RELEASE_VARIABLES",
    "STATS",
    "FeatureSpec",
    "attacker_features",
    "compute_features",
    "dimension_stats",
    "feature_spec",
    "protected_features",
    "released_variables",
]

STATS = ("mean", "var", "min", "max")
ATTACKER_STATS = (*STATS, "count")
RELEASE_VARIABLES = ("features", "all")


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


def feature_spec(
    features: dict[str, list[str]], dim_names: list[str], allowed: tuple[str, ...] = STATS
) -> FeatureSpec:
    """Build a spec from ``{variable: [stat, ...]}`` and the ordered series dimension names.

    ``allowed`` are the statistics accepted (:data:`STATS` for release methods,
    :data:`ATTACKER_STATS` for an attacker's knowledge).
    """
    dims, stats, names = [], [], []
    for var, var_stats in features.items():
        if var not in dim_names:
            raise ConfigError(
                f"config parameter 'deid/features': variable '{var}' is not a series "
                f"dimension; expected one of {dim_names}"
            )
        for stat in var_stats:
            if stat not in allowed:
                raise ConfigError(
                    f"config parameter 'deid/features/{var}': unknown statistic '{stat}', "
                    f"expected one of {allowed}"
                )
            dims.append(dim_names.index(var))
            stats.append(stat)
            names.append(f"{var}_{stat}")
    return FeatureSpec(np.asarray(dims, dtype=np.int64), tuple(stats), tuple(names))


def dimension_stats(values: np.ndarray) -> dict[str, np.ndarray]:
    """Mean, variance, min, max and count over axis 1 of ``values`` (n, length), ignoring NaN.

    Rows with no non-NaN value give NaN for every statistic but ``count`` (0).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        return {
            "mean": np.nanmean(values, axis=1),
            "var": np.nanvar(values, axis=1),
            "min": np.nanmin(values, axis=1),
            "max": np.nanmax(values, axis=1),
            "count": np.sum(~np.isnan(values), axis=1).astype(np.float64),
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


def protected_features(
    features: dict[str, list[str]], dim_names: list[str], release_variables: str
) -> dict[str, list[str]]:
    """The features that de-identification protects under ``release.variables``.

    Parameters
    ----------
    features : dict of variable to list of str
        Config ``deid.features``.
    dim_names : list of str
        The series variables, in dimension order.
    release_variables : {"features", "all"}

    Returns
    -------
    dict of variable to list of str
        ``features`` itself, or (``all``) every series variable in dimension order with its
        configured statistics, all of :data:`STATS` for a variable not configured.
    """
    if release_variables not in RELEASE_VARIABLES:
        raise ConfigError(
            f"config parameter 'release/variables': expected one of {RELEASE_VARIABLES}, "
            f"got {release_variables!r}"
        )
    if release_variables == "features":
        return {var: list(stats) for var, stats in features.items()}
    return {var: list(features.get(var, STATS)) for var in dim_names}


def released_variables(features: dict[str, list[str]], dim_names: list[str]) -> list[str]:
    """The variables a release publishes: those with a protected feature, in dimension order."""
    return [d for d in dim_names if d in features]


def attacker_features(variables: list[str]) -> dict[str, list[str]]:
    """The strong attacker's knowledge: every statistic of :data:`ATTACKER_STATS` of every
    released variable."""
    return {var: list(ATTACKER_STATS) for var in variables}
