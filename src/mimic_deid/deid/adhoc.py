"""Ad-hoc constraint optimisation for mean/variance/min/max targets (seed §5.5).

Each feature dimension of every series is moved towards its targets by repeating, for a fixed
number of iterations:

1. **clip** the records to ``[target min, target max]``;
2. **stretch**: if the series' minimum is above the target minimum, its minimum record is set
   to the target minimum; likewise the maximum record is raised to the target maximum (only for
   dimensions with >= 2 non-null records, so that one record is not pulled both ways);
3. **shift** every record by ``target mean - mean``;
4. **noise and rescale**: add Gaussian noise of sd ``noise_sd`` (so that a constant series
   gets a spread to stretch), then rescale the deviations from the mean by
   ``sqrt(target var) / sd`` and put the mean back on the target mean.

A step whose target is null for the series is skipped (e.g. height and weight carry only a mean
target, so only the shift applies). Because step 4 comes last, the mean and variance targets
are met to rounding error for every dimension with >= 2 non-null records (and with a non-zero
spread after the noise); min and max are met approximately. Dimensions of a series with a
single record can only meet the mean.

Everything is vectorised over the series of the class: the loops are over iterations and
feature dimensions only. Null records stay null, non-feature dimensions are not touched.
"""

from __future__ import annotations

import numpy as np

from mimic_deid.core.errors import ConfigError
from mimic_deid.core.logs import get_logger
from mimic_deid.core.seeding import derive_rng
from mimic_deid.deid.features import FeatureSpec
from mimic_deid.deid.optimise import OptimiseResult, check_inputs, evaluate

log = get_logger(__name__)


def _dim_targets(targets: np.ndarray, spec: FeatureSpec, dim: int) -> dict[str, np.ndarray]:
    """Targets ``{stat: (n,)}`` of one dimension (NaN where absent; last column wins)."""
    n = targets.shape[0]
    out = {s: np.full(n, np.nan) for s in ("mean", "var", "min", "max")}
    for j in np.flatnonzero(spec.dims == dim).tolist():
        out[spec.stats[j]] = targets[:, j]
    return out


def _masked_mean(x: np.ndarray, valid: np.ndarray, cnt: np.ndarray) -> np.ndarray:
    """Mean over axis 1 of the valid entries of ``x`` (n, L); 0 where ``cnt == 0``."""
    return np.where(valid, x, 0.0).sum(axis=1) / np.maximum(cnt, 1)


def _optimise_dimension(
    x: np.ndarray,
    t: dict[str, np.ndarray],
    iterations: int,
    noise_sd: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Run the ad-hoc iterations on one dimension ``x`` (n, L) with NaN nulls; returns a copy."""
    x = x.copy()
    length = x.shape[1]
    valid = ~np.isnan(x)
    cnt = valid.sum(axis=1)
    has = {s: ~np.isnan(v) & (cnt > 0) for s, v in t.items()}
    lo = np.where(has["min"], t["min"], -np.inf)[:, None]
    hi = np.where(has["max"], t["max"], np.inf)[:, None]
    stretch_min = np.flatnonzero(has["min"] & (cnt >= 2))
    stretch_max = np.flatnonzero(has["max"] & (cnt >= 2))
    shift = np.flatnonzero(has["mean"])
    scale = np.flatnonzero(has["var"])
    tsd = np.sqrt(np.maximum(t["var"][scale], 0.0))
    tmean_scale = t["mean"][scale]
    # Reversed column index: argmax on the reversed array picks the *last* maximal record, so
    # a constant series gets distinct min and max records.
    rev = length - 1
    for _ in range(iterations):
        # 1. clip (NaN stays NaN in np.clip)
        np.clip(x, lo, hi, out=x)
        # 2. stretch the extremes to the targets when they fall short
        if stretch_min.size:
            xs = x[stretch_min]
            arg = np.argmin(np.where(np.isnan(xs), np.inf, xs), axis=1)
            cur = xs[np.arange(len(stretch_min)), arg]
            tgt = t["min"][stretch_min]
            sel = cur > tgt
            x[stretch_min[sel], arg[sel]] = tgt[sel]
        if stretch_max.size:
            xs = x[stretch_max]
            arg = rev - np.argmax(np.where(np.isnan(xs), -np.inf, xs)[:, ::-1], axis=1)
            cur = xs[np.arange(len(stretch_max)), arg]
            tgt = t["max"][stretch_max]
            sel = cur < tgt
            x[stretch_max[sel], arg[sel]] = tgt[sel]
        # 3. shift to the target mean
        if shift.size:
            xs = x[shift]
            mean = _masked_mean(xs, valid[shift], cnt[shift])
            x[shift] = xs + (t["mean"][shift] - mean)[:, None]
        # 4. noise, then rescale the deviations to the target sd (and re-centre on the target)
        if scale.size:
            xs = x[scale]
            vs = valid[scale]
            if noise_sd > 0:
                xs = xs + noise_sd * rng.standard_normal(xs.shape)
            mean = _masked_mean(xs, vs, cnt[scale])
            dev = xs - mean[:, None]
            sd = np.sqrt(_masked_mean(dev * dev, vs, cnt[scale]))
            factor = np.where(sd > 0, tsd / np.where(sd > 0, sd, 1.0), 1.0)
            centre = np.where(np.isnan(tmean_scale), mean, tmean_scale)
            x[scale] = centre[:, None] + dev * factor[:, None]
    return x


def optimise_adhoc(
    X: np.ndarray,
    targets: np.ndarray,
    spec: FeatureSpec,
    iterations: int = 50,
    noise_sd: float = 0.01,
    rng: np.random.Generator | None = None,
) -> OptimiseResult:
    """Perturb the feature dimensions of one duration class towards the Mondrian targets.

    Parameters
    ----------
    X : ndarray of float64, shape (n, L, D)
        Series of one duration class, NaN = null.
    targets : ndarray of float64, shape (n, m)
        Feature targets in ``spec`` column order, NaN = unconstrained.
    spec : FeatureSpec
        Which statistic (mean, var (ddof=0), min, max) of which dimension each column is.
    iterations : int
        Rounds of clip / stretch / shift / noise-and-rescale (seed: 50).
    noise_sd : float
        Sd of the Gaussian noise of step 4, in the unit of each dimension (>= 0).
    rng : numpy.random.Generator
        Source of the noise (required when ``noise_sd > 0``).

    Returns
    -------
    OptimiseResult
        ``iterations`` is the same for every series.
    """
    if isinstance(iterations, bool) or not isinstance(iterations, int | np.integer):
        raise ConfigError(f"ad-hoc 'iterations' must be an integer >= 1, got {iterations!r}")
    if iterations < 1:
        raise ConfigError(f"ad-hoc 'iterations' must be >= 1, got {iterations}")
    if not np.isfinite(noise_sd) or noise_sd < 0:
        raise ConfigError(f"ad-hoc 'noise_sd' must be a finite number >= 0, got {noise_sd!r}")
    if rng is None:
        if noise_sd > 0:
            raise ConfigError("ad-hoc optimiser needs a numpy Generator 'rng' when noise_sd > 0")
        rng = derive_rng(0)  # never drawn from: noise_sd is 0
    X, targets = check_inputs(X, targets, spec)
    out = X.copy()
    for d in spec.feature_dims.tolist():
        t = _dim_targets(targets, spec, d)
        out[:, :, d] = _optimise_dimension(X[:, :, d], t, int(iterations), float(noise_sd), rng)
    log.debug("ad-hoc: %d series x %d iterations", X.shape[0], iterations)
    return evaluate(X, out, targets, spec, np.full(X.shape[0], int(iterations), dtype=np.int64))
