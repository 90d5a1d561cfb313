"""The missing-hours pattern is not published.

Which hours of a variable were measured says much about a stay (when a lab was drawn, when a
device was attached) and no release method changes it: null records stay null. So before a
class is published every released variable is made complete, hour by hour, in a way that
reveals nothing of the pattern:

- a series with some observations of the variable: hours before the first observation take the
  first value, hours after the last take the last value, and hours between two observations
  the last value before them (the hourly grid is already interpolated, so these are rare);
- a series that never observed the variable: every hour takes the class mean of that
  variable (over all values the class publishes), so the class shares it;
- a class in which no series observed the variable keeps it entirely null.

After this, within a duration class a released variable is either complete for every series or
null for every series (checked by :func:`mimic_deid.deid.claim_checks.check_missing_withheld`).
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["fill_missing_hours"]


def _fill_forward(X: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Each null takes the last non-null value before it along axis 1 (leading nulls stay)."""
    L = X.shape[1]
    idx = np.where(valid, np.arange(L)[None, :, None], 0)
    np.maximum.accumulate(idx, axis=1, out=idx)
    out = np.take_along_axis(X, idx, axis=1)
    seen = np.maximum.accumulate(valid, axis=1)
    return np.where(seen, out, np.nan)


def fill_missing_hours(X: np.ndarray) -> np.ndarray:
    """One duration class with its missing-hours pattern withheld (module docstring).

    Parameters
    ----------
    X : ndarray of float64, shape (n, L, D)
        The class's released series, NaN = null.

    Returns
    -------
    ndarray of float64, shape (n, L, D)
        Every (series, dimension) complete, except dimensions null in the whole class.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.size == 0:
        return X.copy()
    valid = ~np.isnan(X)
    out = _fill_forward(X, valid)
    # leading nulls: the first value, i.e. a forward fill of the time-reversed series
    back = _fill_forward(X[:, ::-1], valid[:, ::-1])[:, ::-1]
    out = np.where(np.isnan(out), back, out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        class_mean = np.nanmean(out, axis=(0, 1))  # (D,), NaN where the class has no value
    never = ~valid.any(axis=1)  # (n, D)
    out = np.where(never[:, None, :], class_mean[None, None, :], out)
    return out
