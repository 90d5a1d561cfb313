"""Feature-similarity disagreement curves, Δ-AUC and first disagreement (seed §3.3, §4.3).

Computed per duration class of ``n`` series, with these conventions:

- ``d_F(x, y)``: Euclidean distance between the ORIGINAL features of ``x`` (the attacker's
  knowledge) and the RELEASED features of ``y``, over features non-null in both;
- ``d_S(x, y)``: Euclidean distance between ORIGINAL series ``x`` and RELEASED series ``y``
  over the (record, dimension) values non-null in both;
- for each ``x``, the ``n`` released series (``x``'s own included) are sorted by ``d_F(x, .)``
  (stable, by index on exact ties). Sorted distances whose gap to the previous one is
  <= ``TIE_TOL`` (1e-9) belong to the same increment; the threshold ``t_i`` of an increment is
  its smallest distance. After increment ``i`` the disagreement ``value_i`` is the mean
  ``d_S(x, .)`` over every series included so far whose ``d_S`` is defined (a series with
  undefined ``d_S`` is included but not averaged; ``value_i`` is NaN while no included series
  has a defined ``d_S``). A series with undefined ``d_F`` never enters.
- Δ-AUC = sum_i value_i * (t_{i+1} - t_i), the last increment running to
  ``t_max = max d_F(x, .) + mean d_F(x, .)`` over defined ``d_F``; the range before ``t_1`` is
  ignored; an increment with NaN value adds nothing (so a curve that is NaN throughout has
  Δ-AUC 0). A series with no defined ``d_F`` has NaN Δ-AUC, thresholds and values.
- ``d_S`` is the plain Euclidean distance (not divided by the number of records), in the
  series' own units unless ``standardise`` is set (the privacy driver can divide it by the
  class length, config ``evaluate/series_distance: per_record``, seed §6.3, or replace it by
  dynamic time warping, ``dtw``, seed §4.3).
- by inclusion count ``c = 1..n``: the value of the increment at which the cumulative number
  of included series first reaches ``>= c`` (NaN if it never does); inclusion = ``c / n``.

The pre-release baseline is the same computation with released = original. Everything is
vectorised per class: two n x n distance matrices, a row-wise argsort, tie grouping by
``diff > TIE_TOL`` and cumulative sums, over blocks of rows (no loop over pairs).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mimic_deid.core.errors import InputDataError
from mimic_deid.evaluate.distances import safe_scale

#: Feature distances closer than this (absolute, in feature units) form one increment.
TIE_TOL = 1e-9

#: Values per row block of the n x n work arrays (memory control).
_BLOCK_ELEMENTS = 1_000_000

STATS = ("min", "mean", "max")


@dataclass(frozen=True)
class DisagreementResult:
    """Disagreement of every series of one duration class.

    Attributes
    ----------
    auc : ndarray, shape (n,)
        Δ-AUC (series distance units x feature distance units); NaN if no ``d_F`` defined.
    first_threshold : ndarray, shape (n,)
        ``t_1``, the smallest defined feature distance (feature units).
    first_disagreement : ndarray, shape (n,)
        Disagreement after the first increment (series units); NaN if undefined.
    t_max : ndarray, shape (n,)
        End of the last step: max + mean of the defined ``d_F(x, .)``.
    n_reachable : ndarray of int64, shape (n,)
        Number of released series with defined ``d_F(x, .)`` (the curve's last inclusion).
    curves : ndarray, shape (n, n)
        ``curves[x, c - 1]`` = disagreement value at inclusion count ``c`` (series units).
    thresholds : ndarray, shape (n, n)
        ``thresholds[x, c - 1]`` = threshold of the increment that reaches count ``c``; with
        ``curves`` this gives the step curve against the threshold (seed Fig. 3.1).
    """

    auc: np.ndarray
    first_threshold: np.ndarray
    first_disagreement: np.ndarray
    t_max: np.ndarray
    n_reachable: np.ndarray
    curves: np.ndarray
    thresholds: np.ndarray

    @property
    def n(self) -> int:
        return int(self.auc.shape[0])

    @property
    def inclusion(self) -> np.ndarray:
        """Inclusion fraction ``c / n`` of each column of ``curves``, shape (n,)."""
        return np.arange(1, self.n + 1, dtype=np.float64) / max(self.n, 1)


def class_std(values: np.ndarray, axis: int | tuple[int, ...]) -> np.ndarray:
    """Population std (ddof=0) over non-null values along ``axis``; NaN where all null."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        return np.nanstd(np.asarray(values, dtype=np.float64), axis=axis)


def standardised_class(
    F_o: np.ndarray, X_o: np.ndarray, X_r: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The disagreement's scales with ``standardise`` (seed §4.3): every feature and every
    series dimension divided by its class-wide std over the ORIGINAL non-null values (std 0
    or undefined: unscaled).

    Parameters
    ----------
    F_o : ndarray, shape (n, m)
        Original features.
    X_o, X_r : ndarray, shape (n, L, D)
        Original and released series.

    Returns
    -------
    f_scale : ndarray, shape (m,)
        The features' scale (for :func:`~mimic_deid.evaluate.distances.feature_distances`).
    X_os, X_rs : ndarray, shape (n, L, D)
        The series in std units.
    """
    return class_std(F_o, axis=0), *standardised_series(X_o, X_r)


def standardised_series(X_o: np.ndarray, X_r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The series of :func:`standardised_class`: every dimension of ``X_o`` and ``X_r``
    (n, L, D) divided by its class-wide std over the original non-null values."""
    dim_scale = safe_scale(class_std(X_o, axis=(0, 1)), X_o.shape[2])
    return X_o / dim_scale, X_r / dim_scale


def check_series(X_orig: np.ndarray, X_rel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate and convert one class's original and released series, (n, L, D) each."""
    X_o = np.asarray(X_orig, dtype=np.float64)
    X_r = np.asarray(X_rel, dtype=np.float64)
    if X_o.ndim != 3 or X_o.shape != X_r.shape:
        raise InputDataError(
            f"X_orig and X_rel must both be (n, L, D), got {X_o.shape} and {X_r.shape}"
        )
    return X_o, X_r


def check_class(
    F_orig: np.ndarray, F_rel: np.ndarray, X_orig: np.ndarray, X_rel: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validate and convert one class's arrays: features (n, m) x2, series (n, L, D) x2."""
    F_o = np.asarray(F_orig, dtype=np.float64)
    F_r = np.asarray(F_rel, dtype=np.float64)
    if F_o.ndim != 2 or F_o.shape != F_r.shape:
        raise InputDataError(
            f"F_orig and F_rel must both be (n, m), got {F_o.shape} and {F_r.shape}"
        )
    X_o, X_r = check_series(X_orig, X_rel)
    if X_o.shape[0] != F_o.shape[0]:
        raise InputDataError(f"features have {F_o.shape[0]} rows but series have {X_o.shape[0]}")
    return F_o, F_r, X_o, X_r


def disagreement_from_distances(DF: np.ndarray, DS: np.ndarray) -> DisagreementResult:
    """Disagreement curves from precomputed distance matrices.

    Parameters
    ----------
    DF : ndarray, shape (n, n)
        ``DF[x, y] = d_F(x, y)`` (NaN = undefined), feature units.
    DS : ndarray, shape (n, n)
        ``DS[x, y] = d_S(x, y)`` (NaN = undefined), series units.

    Returns
    -------
    DisagreementResult
    """
    DF = np.asarray(DF, dtype=np.float64)
    DS = np.asarray(DS, dtype=np.float64)
    if DF.ndim != 2 or DF.shape != DS.shape or DF.shape[0] != DF.shape[1]:
        raise InputDataError(f"DF and DS must be equal (n, n) matrices, got {DF.shape}, {DS.shape}")
    n = DF.shape[0]
    auc = np.full(n, np.nan)
    first_t = np.full(n, np.nan)
    first_v = np.full(n, np.nan)
    t_max = np.full(n, np.nan)
    reach = np.zeros(n, dtype=np.int64)
    curves = np.full((n, n), np.nan)
    thresholds = np.full((n, n), np.nan)
    rows = max(1, _BLOCK_ELEMENTS // max(n, 1))
    pos = np.arange(n)
    for s in range(0, n, rows):
        out = _block(DF[s : s + rows], DS[s : s + rows], pos)
        auc[s : s + rows], first_t[s : s + rows], first_v[s : s + rows] = out[:3]
        t_max[s : s + rows], reach[s : s + rows] = out[3:5]
        curves[s : s + rows], thresholds[s : s + rows] = out[5:]
    return DisagreementResult(auc, first_t, first_v, t_max, reach, curves, thresholds)


def _block(df: np.ndarray, ds: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, ...]:
    """Curves of a block of rows; ``df``, ``ds``: (b, n); ``pos`` = arange(n)."""
    b, n = df.shape
    order = np.argsort(df, axis=1, kind="stable")  # NaN (undefined d_F) last
    sd = np.take_along_axis(df, order, axis=1)
    ss = np.take_along_axis(ds, order, axis=1)
    valid = ~np.isnan(sd)
    k = valid.sum(axis=1)  # series that can enter

    # Increment starts and ends among the valid (sorted) positions.
    start = valid.copy()
    if n > 1:
        start[:, 1:] &= ~(np.diff(sd, axis=1) <= TIE_TOL)
    nxt_start = np.ones_like(valid)
    nxt_start[:, :-1] = start[:, 1:] | ~valid[:, 1:]
    end = valid & nxt_start

    # Running mean of the defined d_S; value of an increment = running mean at its end.
    sdef = valid & ~np.isnan(ss)
    cs = np.cumsum(np.where(sdef, ss, 0.0), axis=1)
    cc = np.cumsum(sdef, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        run = np.where(cc > 0, cs / np.maximum(cc, 1), np.nan)

    # Start of the increment containing each position, and its end.
    start_idx = np.maximum.accumulate(np.where(start, pos, 0), axis=1)
    end_idx = np.minimum.accumulate(np.where(end, pos, n - 1)[:, ::-1], axis=1)[:, ::-1]
    t_pos = np.take_along_axis(sd, start_idx, axis=1)  # threshold of the increment at p
    v_pos = np.take_along_axis(run, end_idx, axis=1)  # value of the increment at p
    curves = np.where(valid, v_pos, np.nan)
    thresholds = np.where(valid, t_pos, np.nan)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        t_max = np.nanmax(np.where(valid, sd, np.nan), axis=1) + np.nanmean(
            np.where(valid, sd, np.nan), axis=1
        )
    # Width of each increment, attributed to its end position.
    t_next = np.empty_like(sd)
    t_next[:, :-1] = sd[:, 1:]
    last = pos[None, :] == (k[:, None] - 1)
    t_next = np.where(last, t_max[:, None], t_next)
    width = np.where(end, t_next - t_pos, 0.0)
    contrib = np.where(end & ~np.isnan(run), run * width, 0.0)
    auc = np.where(k > 0, contrib.sum(axis=1), np.nan)

    first_t = np.where(k > 0, sd[:, 0], np.nan)
    first_v = np.where(k > 0, curves[:, 0], np.nan)
    return auc, first_t, first_v, t_max, k, curves, thresholds


def _stat_name(q: float) -> str:
    return f"q{round(q * 100):02d}"


def summarise_curve_matrix(
    curves: np.ndarray,
    n_reachable: np.ndarray,
    quantiles: tuple[float, ...] = (0.1, 0.25, 0.5, 0.75, 0.9),
    column_block: int | None = None,
) -> pd.DataFrame:
    """Summary disagreement curves of one class (seed §5.6, Fig. 5.4 / 6.4 / 6.5) from its curve
    matrix, a block of columns at a time.

    Parameters
    ----------
    curves : ndarray, shape (t, n)
        :attr:`DisagreementResult.curves` (series units) of ``t`` targets of a class of ``n``
        series (``t = n`` unless the targets are a sample,
        :func:`~mimic_deid.evaluate.linkage.sample_targets`); the statistics of an inclusion
        count are over the targets.
    n_reachable : ndarray of int, shape (t,)
        :attr:`DisagreementResult.n_reachable`.
    quantiles : tuple of float
    column_block : int, optional
        Inclusion counts summarised at once (the statistics of a column never depend on the
        others, so the result is the same for every block size; the work arrays are
        ``t x column_block``). None: all at once.

    Returns
    -------
    DataFrame
        As :func:`summarise_curves`.
    """
    t, n = curves.shape
    final = np.full(t, np.nan)
    has = n_reachable > 0
    final[has] = curves[np.nonzero(has)[0], n_reachable[has] - 1]
    names = [*STATS, *(_stat_name(q) for q in quantiles)]
    step = n if column_block is None else max(1, int(column_block))
    values = np.empty((len(names), n))
    normed = np.empty((len(names), n))
    for c in range(0, n, max(step, 1)):
        block = curves if step >= n else np.ascontiguousarray(curves[:, c : c + step])
        with np.errstate(invalid="ignore", divide="ignore"):
            norm = np.where((final != 0)[:, None], block / final[:, None], np.nan)
        values[:, c : c + step] = _column_stats(block, quantiles)
        normed[:, c : c + step] = _column_stats(norm, quantiles)
    return pd.DataFrame(
        {
            "inclusion": np.repeat(np.arange(1, n + 1, dtype=np.float64) / max(n, 1), len(names)),
            "stat": np.tile(np.asarray(names, dtype=object), n),
            "value": values.T.reshape(-1),
            "normalised": normed.T.reshape(-1),
        }
    )


def disagreement_rows(
    DF_rows: np.ndarray, DS_rows: np.ndarray, curves_out: np.ndarray | None = None
) -> tuple[np.ndarray | None, ...]:
    """The curves of a block of rows of one class (every quantity is row-local).

    Parameters
    ----------
    DF_rows, DS_rows : ndarray, shape (b, n)
        Rows of ``DF`` and ``DS`` of :func:`disagreement_from_distances`.
    curves_out : ndarray, shape (b, n), optional
        Where to write the curves (e.g. the block's rows of a class-wide matrix); the
        thresholds are then not kept (returned as None) and nothing ``b x n`` is returned.

    Returns
    -------
    tuple
        ``auc, first_threshold, first_disagreement, t_max, n_reachable`` (each (b,)),
        ``curves, thresholds`` (each (b, n), or None with ``curves_out``): the rows of
        :class:`DisagreementResult`.
    """
    DF_rows = np.asarray(DF_rows, dtype=np.float64)
    DS_rows = np.asarray(DS_rows, dtype=np.float64)
    if DF_rows.ndim != 2 or DF_rows.shape != DS_rows.shape:
        raise InputDataError(
            f"DF and DS rows must be equal (b, n) blocks, got {DF_rows.shape}, {DS_rows.shape}"
        )
    b, n = DF_rows.shape
    rows = max(1, _BLOCK_ELEMENTS // max(n, 1))
    pos = np.arange(n)
    parts = []
    for s in range(0, b, rows):
        part = _block(DF_rows[s : s + rows], DS_rows[s : s + rows], pos)
        if curves_out is not None:
            curves_out[s : s + rows] = part[5]
            part = part[:5]
        parts.append(part)
    k = 5 if curves_out is not None else 7
    if not parts:
        empty = [np.empty(0)] * 4 + [
            np.empty(0, dtype=np.int64),
            np.empty((0, n)),
            np.empty((0, n)),
        ]
        out = tuple(empty[:k])
    else:
        out = tuple(np.concatenate([p[i] for p in parts]) for i in range(k))
    return out if curves_out is None else (*out, None, None)


def _column_stats(a: np.ndarray, quantiles: tuple[float, ...]) -> np.ndarray:
    """(n_stats, n_cols): min, mean, max and quantiles (linear) of each column, NaN skipped."""
    n_rows, n_cols = a.shape
    srt = np.sort(a, axis=0)  # NaN last
    k = (~np.isnan(a)).sum(axis=0)
    cols = np.arange(n_cols)
    has = k > 0
    last = np.maximum(k - 1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(has, np.nansum(a, axis=0) / np.maximum(k, 1), np.nan)
    rows = [
        np.where(has, srt[0] if n_rows else np.nan, np.nan),
        mean,
        np.where(has, srt[last, cols] if n_rows else np.nan, np.nan),
    ]
    for q in quantiles:
        pos = q * last
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, last)
        frac = pos - lo
        v_lo, v_hi = srt[lo, cols], srt[hi, cols]
        rows.append(np.where(has, v_lo + frac * (v_hi - v_lo), np.nan))
    return np.vstack(rows) if n_cols else np.empty((len(rows), 0))
