"""Masked distance matrices between feature vectors and between series: Euclidean and DTW.

Both distances compare only the values that are non-null (not NaN) in *both* operands (the
conventions of :mod:`mimic_deid.evaluate.disagreement`): a feature or record that is null on
either side is skipped, and a pair with nothing in common has an undefined (NaN) distance.

Accuracy. Feature vectors are short (m ~ 22), so feature distances are computed by blocked
direct differences: a pair of identical rows is exactly 0 and two pairs with identical
operands give bit-identical distances. Series are long (L*D up to ~16,000 values), so series
distances use the matrix-product form ``d^2 = A^2 . Mb^T + Ma . B^2^T - 2 A . B^T`` on
zero-filled arrays ``A, B`` with masks ``Ma, Mb``, after centring every (record, dimension)
column on its mean. Its rounding error is bounded by ``2 k u S`` where ``k`` is the number of
compared columns, ``u`` the unit round-off and ``S`` the first two terms (the squared norms over
the common support): every pair with ``d^2 <= tau * S``, ``tau = k u / 1e-10``, is recomputed
exactly by direct differences, so every returned distance has a relative error below ~1e-10,
and the distance of a series to itself is exactly 0.

Memory is bounded by processing row blocks of both operands (``block_elements`` values per
operand block, ~128 MB by default), whatever ``n`` and ``L``. The rows of ``X_a`` go through
the matrix products in chunks of at most :data:`ROW_CHUNK` rows counted from its first row:
a BLAS product's rounding can depend on the operands' shapes, so this fixed geometry is what
makes a row block of ``X_a`` that starts at a multiple of :data:`ROW_CHUNK` give exactly the
rows of the whole matrix (the privacy evaluation's blocks, :mod:`mimic_deid.evaluate.privacy`).

Dynamic time warping (:func:`dtw_distances`, seed §4.3's alternative to the Euclidean series
distance). DTW aligns two sequences that may differ in length, so nulls are handled by leaving
them out rather than by masking positions: the *independent* multivariate DTW (the sum over
dimensions of one-dimensional DTW) where, in each dimension, each series is compacted to its
non-null records in time order. With squared differences as the local cost,

    ``d(a, b)^2 = sum_k DTW_k(a_k, b_k)^2``,  ``DTW_k^2 = min over warping paths of the sum of
    (a_k[i] - b_k[j])^2 along the path``,

over the dimensions ``k`` non-null (at least one record) in both series; a dimension null
throughout either series contributes nothing, and a pair with no such dimension has an
undefined (NaN) distance, as for the Euclidean distance. So DTW with ``window=0`` (no warping)
*is* the masked Euclidean distance whenever the two series have the same non-null records, and
DTW is never larger than it then. ``window`` is a Sakoe-Chiba band in positions of the
compacted sequences (hours for a dimension without nulls; more hours where nulls were left
out): record ``i`` of a sequence of ``r`` records may be aligned with record ``j`` of one of
``c`` records when ``i - max(0, r - c) - window <= j <= i + max(0, c - r) + window``, i.e.
within ``window`` of the strip between the diagonal that aligns the two starts and the one
that aligns the two ends (``|i - j| <= window`` for equal lengths). The distances of a pair depend on that pair only, so any block of rows equals the same rows of
the whole matrix. Computed in C by ``dtaidistance`` (``dtw.distance_matrix_fast``), one
dimension at a time over a whole block of pairs; the cost is O(n n2 D L w) for a band of
``w`` (O(n n2 D L^2) without one), about ``2 w + 1`` times the Euclidean distance's
arithmetic and without BLAS: measured figures in ``benchmarks/README.md``.
"""

from __future__ import annotations

import numpy as np
from dtaidistance import dtw

from mimic_deid.core.errors import InputDataError

#: Default number of float64 values per operand block (~128 MB).
BLOCK_ELEMENTS = 16_000_000

#: Default number of pairs per block of feature distances (~1 MB, cache-resident).
FEATURE_BLOCK_ELEMENTS = 131_072

#: Rows of ``X_a`` per matrix product in :func:`series_distances` (fixed geometry, see above).
ROW_CHUNK = 256

#: Target relative accuracy of the product form before exact recomputation kicks in.
_PRODUCT_RTOL = 1e-10


def _as_2d(F: np.ndarray, name: str) -> np.ndarray:
    F = np.asarray(F, dtype=np.float64)
    if F.ndim != 2:
        raise InputDataError(f"{name}: expected a 2-d array (n, m), got shape {F.shape}")
    return F


def _rows_per_block(width: int, block_elements: int) -> int:
    return max(1, block_elements // max(1, width))


def feature_distances(
    F_a: np.ndarray,
    F_b: np.ndarray,
    scale: np.ndarray | None = None,
    *,
    block_elements: int = FEATURE_BLOCK_ELEMENTS,
) -> np.ndarray:
    """Euclidean distances between feature vectors over the features non-null in both.

    Parameters
    ----------
    F_a : ndarray, shape (n, m)
        Features (NaN = null), e.g. the attacker's (original) features.
    F_b : ndarray, shape (n2, m)
        Features (NaN = null), e.g. the released features.
    scale : ndarray, shape (m,), optional
        Divide feature ``j`` of both operands by ``scale[j]`` first (e.g. the class-wide
        standard deviation); entries that are 0 or not finite leave that feature unscaled.
    block_elements : int
        Pairs per block of rows (small enough to stay in cache).

    Returns
    -------
    ndarray, shape (n, n2)
        ``D[i, j] = sqrt(sum_f (F_a[i, f] - F_b[j, f])^2)`` over features ``f`` non-null in
        both rows, in the features' (scaled) units; NaN where no feature is non-null in both.
        Computed by direct differences: identical rows give exactly 0, identical operand
        pairs give bit-identical distances.
    """
    A0, Ma, B0, Mb = _zero_filled(*_scaled_features(F_a, F_b, scale))
    n, n2, m = A0.shape[0], B0.shape[0], A0.shape[1]
    B0t = np.ascontiguousarray(B0.T)  # (m, n2)
    Mbt = np.ascontiguousarray(Mb.T)
    out = np.empty((n, n2), dtype=np.float64)
    rows = _rows_per_block(n2, block_elements)
    for s in range(0, n, rows):
        a0, ma = A0[s : s + rows], Ma[s : s + rows]
        acc = np.zeros((a0.shape[0], n2))
        seen = np.zeros((a0.shape[0], n2), dtype=bool)
        sq = np.empty_like(acc)
        both = np.empty_like(seen)
        # One feature at a time on a cache-sized block; the terms of a pair are always added
        # in feature order, so equal operands give bit-identical sums.
        for f in range(m):
            np.subtract(a0[:, f, None], B0t[f][None, :], out=sq)
            np.multiply(sq, sq, out=sq)
            np.logical_and(ma[:, f, None], Mbt[f][None, :], out=both)
            np.multiply(sq, both, out=sq)
            acc += sq
            seen |= both
        np.sqrt(acc, out=acc)
        acc[~seen] = np.nan
        out[s : s + rows] = acc
    return out


def _scaled_features(F_a, F_b, scale) -> tuple[np.ndarray, np.ndarray]:
    """Both operands of the feature distances as 2-D float arrays, each feature divided by its
    scale (NaN kept)."""
    A, B = _as_2d(F_a, "F_a"), _as_2d(F_b, "F_b")
    if A.shape[1] != B.shape[1]:
        raise InputDataError(f"feature counts differ: F_a has {A.shape[1]}, F_b has {B.shape[1]}")
    if scale is not None:
        s = safe_scale(scale, A.shape[1])
        A, B = A / s, B / s
    return A, B


def _zero_filled(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(A0, Ma, B0, Mb)``: each operand with NaN as 0, and its mask of non-null values."""
    Ma, Mb = ~np.isnan(A), ~np.isnan(B)
    return np.where(Ma, A, 0.0), Ma, np.where(Mb, B, 0.0), Mb


def nearest_feature_distances(
    F_a: np.ndarray, F_b: np.ndarray, scale: np.ndarray | None = None, *, tie: float = 0.0
) -> np.ndarray:
    """:func:`feature_distances` of each row's nearest rows only, the others infinite.

    What a nearest-neighbour attacker needs from a large matrix: which rows of ``F_b`` are
    nearest to each row of ``F_a``, ties within ``tie`` included, at their exact distances.
    The whole matrix is first screened in the product form of :func:`series_distances` (one
    BLAS product instead of a pass per feature; relative error below ~1e-10), then every pair
    whose screened distance is within ``tie`` of its row's screened minimum, widened by a
    relative 1e-7 (a thousand times that error), is computed again by the direct differences
    of :func:`feature_distances`. So every pair within ``tie`` of its row's exact minimum gets
    its exact (bit-identical) distance, and a pair left infinite is farther than that.

    Parameters
    ----------
    F_a : ndarray, shape (n, m)
    F_b : ndarray, shape (n2, m)
    scale : ndarray, shape (m,), optional
        As :func:`feature_distances`.
    tie : float
        The attacker's tie tolerance, in the features' (scaled) units (>= 0).

    Returns
    -------
    ndarray, shape (n, n2)
        The exact distance of every pair within ``tie`` of its row's minimum; ``inf``
        elsewhere; NaN (as :func:`feature_distances`) for a pair with no feature non-null in
        both, kept where the whole row has none.
    """
    A, B = _scaled_features(F_a, F_b, scale)
    n, n2, m = A.shape[0], B.shape[0], A.shape[1]
    out = np.full((n, n2), np.inf)
    if n == 0 or n2 == 0:
        return out
    screen = series_distances(A.reshape(n, 1, m), B.reshape(n2, 1, m))
    screen = np.where(np.isnan(screen), np.inf, screen)
    best = screen.min(axis=1, keepdims=True)
    ii, jj = np.nonzero(screen <= (best + tie) * (1.0 + 1e-7))
    exact = _pair_feature_distances(*_zero_filled(A, B), ii, jj)
    out[ii, jj] = exact
    # rows whose every pair has nothing in common stay NaN, as the whole matrix has them
    return out


def _pair_feature_distances(A0, Ma, B0, Mb, ii: np.ndarray, jj: np.ndarray) -> np.ndarray:
    """:func:`feature_distances` of the pairs ``(ii[p], jj[p])`` only: the same operations in
    the same (feature) order, so bit-identical to the whole matrix's entries."""
    acc = np.zeros(ii.shape[0])
    seen = np.zeros(ii.shape[0], dtype=bool)
    for f in range(A0.shape[1]):
        both = Ma[ii, f] & Mb[jj, f]
        sq = A0[ii, f] - B0[jj, f]
        np.multiply(sq, sq, out=sq)
        np.multiply(sq, both, out=sq)
        acc += sq
        seen |= both
    np.sqrt(acc, out=acc)
    acc[~seen] = np.nan
    return acc


def safe_scale(scale: np.ndarray, width: int) -> np.ndarray:
    """Return ``scale`` as float64 (width,), with 0 / NaN / inf / negative entries set to 1."""
    s = np.asarray(scale, dtype=np.float64).reshape(-1)
    if s.shape[0] != width:
        raise InputDataError(f"scale: expected {width} entries, got {s.shape[0]}")
    return np.where(np.isfinite(s) & (s > 0), s, 1.0)


def series_distances(
    X_a: np.ndarray,
    X_b: np.ndarray,
    *,
    return_counts: bool = False,
    block_elements: int = BLOCK_ELEMENTS,
    centre: np.ndarray | None = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Euclidean distances between series over the (record, dimension) values non-null in both.

    Parameters
    ----------
    X_a : ndarray, shape (n, L, D)
        Series (NaN = null), e.g. original series of one duration class.
    X_b : ndarray, shape (n2, L, D)
        Series of the same length and dimensions, e.g. released series.
    return_counts : bool
        Also return the number of values compared for each pair.
    block_elements : int
        Bound on the number of values in one operand block (memory control).
    centre : ndarray, shape (L * D,), optional
        The column means to centre on (:func:`series_centre` of the whole operands). Given
        the centre of the whole class, the rows of a row block of ``X_a`` come out exactly as
        in the whole matrix (how the privacy evaluation bounds its memory); None: computed
        from ``X_a`` and ``X_b``.

    Returns
    -------
    D : ndarray, shape (n, n2)
        ``sqrt(sum (X_a[i, t, k] - X_b[j, t, k])^2)`` over ``(t, k)`` non-null in both, in the
        series' own units; NaN where no value is non-null in both. Relative error < ~1e-10
        (see the module docstring); a series compared with an identical one gives exactly 0.
    counts : ndarray of int64, shape (n, n2)
        Only with ``return_counts``: the number of (record, dimension) values compared.
    """
    Xa, Xb = _series_pair(X_a, X_b)
    n, n2 = Xa.shape[0], Xb.shape[0]
    P = Xa.shape[1] * Xa.shape[2]
    A = Xa.reshape(n, P)
    B = Xb.reshape(n2, P)
    Ma = ~np.isnan(A)
    Mb = ~np.isnan(B)

    # Centre every column on the mean of its non-null values over both operands.
    if centre is None:
        mu = _centre(A, B, Ma, Mb)
    else:
        mu = np.asarray(centre, dtype=np.float64).reshape(-1)
        if mu.shape[0] != P:
            raise InputDataError(f"centre: expected {P} column means, got {mu.shape[0]}")

    tau = min(0.5, max(P, 1) * np.finfo(np.float64).eps / _PRODUCT_RTOL)
    d2 = np.empty((n, n2), dtype=np.float64)
    counts = np.empty((n, n2), dtype=np.int64)
    rows_a = min(_rows_per_block(3 * P, block_elements), ROW_CHUNK)
    rows_b = _rows_per_block(3 * P, block_elements)
    for sb in range(0, n2, rows_b):
        bm = Mb[sb : sb + rows_b]
        # right = [mask, centred^2, centred] (b, 3P), filled in place (no temporaries)
        right = np.empty((bm.shape[0], 3 * P), dtype=np.float64)
        bc = right[:, 2 * P :]
        np.subtract(B[sb : sb + rows_b], mu, out=bc)
        bc[~bm] = 0.0
        np.multiply(bc, bc, out=right[:, P : 2 * P])
        right[:, :P] = bm
        right_mask = bm.astype(np.float32)
        del bc
        for sa in range(0, n, rows_a):
            am = Ma[sa : sa + rows_a]
            ac = np.where(am, A[sa : sa + rows_a] - mu, 0.0)
            left_s = np.concatenate([ac * ac, am.astype(np.float64)], axis=1)  # (a, 2P)
            S = left_s @ right[:, : 2 * P].T  # squared norms over the common support
            C = ac @ right[:, 2 * P :].T
            block = S - 2.0 * C
            np.maximum(block, 0.0, out=block)
            cblock = np.rint(am.astype(np.float32) @ right_mask.T).astype(np.int64)
            # Exact recomputation where cancellation could matter.
            ii, jj = np.nonzero(block <= tau * S)
            if ii.size:
                block[ii, jj] = _direct_sq(A, B, ii + sa, jj + sb, block_elements)
            d2[sa : sa + rows_a, sb : sb + rows_b] = block
            counts[sa : sa + rows_a, sb : sb + rows_b] = cblock
    d = np.sqrt(d2, out=d2)
    d[counts == 0] = np.nan
    if return_counts:
        return d, counts
    return d


def _centre(A: np.ndarray, B: np.ndarray, Ma: np.ndarray, Mb: np.ndarray) -> np.ndarray:
    tot = np.where(Ma, A, 0.0).sum(axis=0) + np.where(Mb, B, 0.0).sum(axis=0)
    cnt = Ma.sum(axis=0) + Mb.sum(axis=0)
    return np.divide(tot, cnt, out=np.zeros(A.shape[1]), where=cnt > 0)


def series_centre(X_a: np.ndarray, X_b: np.ndarray) -> np.ndarray:
    """Column means :func:`series_distances` centres ``X_a`` against ``X_b`` on.

    Parameters
    ----------
    X_a, X_b : ndarray, shape (n, L, D) and (n2, L, D)

    Returns
    -------
    ndarray, shape (L * D,)
        Mean of the non-null values of every (record, dimension) column over both operands
        (0 where the column is null throughout).
    """
    A = np.asarray(X_a, dtype=np.float64).reshape(np.shape(X_a)[0], -1)
    B = np.asarray(X_b, dtype=np.float64).reshape(np.shape(X_b)[0], -1)
    return _centre(A, B, ~np.isnan(A), ~np.isnan(B))


def _direct_sq(
    A: np.ndarray, B: np.ndarray, ii: np.ndarray, jj: np.ndarray, block_elements: int
) -> np.ndarray:
    """Squared masked distances of the pairs ``(A[ii[p]], B[jj[p]])`` by direct differences."""
    P = A.shape[1]
    out = np.empty(ii.shape[0], dtype=np.float64)
    step = _rows_per_block(P, block_elements)
    for s in range(0, ii.shape[0], step):
        diff = A[ii[s : s + step]] - B[jj[s : s + step]]
        np.square(diff, out=diff)
        out[s : s + step] = np.nansum(diff, axis=1)
    return out


def _series_pair(X_a: np.ndarray, X_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    Xa = np.asarray(X_a, dtype=np.float64)
    Xb = np.asarray(X_b, dtype=np.float64)
    if Xa.ndim != 3 or Xb.ndim != 3 or Xa.shape[1:] != Xb.shape[1:]:
        raise InputDataError(
            f"series shapes must be (n, L, D) with equal L and D, got {Xa.shape} and {Xb.shape}"
        )
    return Xa, Xb


def compact_dimension(X: np.ndarray, k: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The sequences DTW compares in dimension ``k``: each series' non-null values in time order.

    Parameters
    ----------
    X : ndarray, shape (n, L, D)
    k : int

    Returns
    -------
    rows : ndarray of int, shape (n_k,)
        The series with at least one non-null record in dimension ``k``.
    sequences : list of ndarray, shape (length_i,)
        Their non-null values, contiguous float64, ``1 <= length_i <= L``.
    """
    col = X[:, :, k]
    has = np.flatnonzero((~np.isnan(col)).any(axis=1))
    return has, [np.ascontiguousarray(x[~np.isnan(x)]) for x in col[has]]


def dtw_distances(X_a: np.ndarray, X_b: np.ndarray, *, window: int | None = None) -> np.ndarray:
    """Independent multivariate DTW distances between series, nulls left out (module docstring).

    Parameters
    ----------
    X_a, X_b : ndarray, shape (n, L, D) and (n2, L, D)
        As in :func:`series_distances`.
    window : int or None
        Sakoe-Chiba band: the largest shift, in positions of a dimension's compacted
        sequences, between aligned records (module docstring; 0: no warping between
        sequences of equal length); None: unconstrained.

    Returns
    -------
    ndarray, shape (n, n2)
        ``sqrt(sum_k DTW_k^2)`` over the dimensions non-null in both series, with squared
        differences as the local cost, in the series' own units; NaN where no dimension is
        non-null in both. Each entry depends on its pair only; a series compared with an
        identical one gives exactly 0.
    """
    Xa, Xb = _series_pair(X_a, X_b)
    if window is not None and (
        isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 0
    ):
        raise InputDataError(f"DTW window: expected a non-negative integer or None, got {window!r}")
    # dtaidistance's window w allows shifts up to w - 1; its 0 means unconstrained.
    band = 0 if window is None else int(window) + 1
    n, n2 = Xa.shape[0], Xb.shape[0]
    acc = np.zeros((n, n2), dtype=np.float64)
    seen = np.zeros((n, n2), dtype=bool)
    for k in range(Xa.shape[2]):
        ia, sa = compact_dimension(Xa, k)
        ib, sb = compact_dimension(Xb, k)
        if not (ia.size and ib.size):
            continue
        # One call per dimension: rows sa against columns sb (all of the block lies above
        # the diagonal of the stacked list, so it is computed in full).
        d = dtw.distance_matrix_fast(
            sa + sb, block=((0, ia.size), (ia.size, ia.size + ib.size)), compact=True, window=band
        )
        d2 = np.square(np.frombuffer(d, dtype=np.float64).reshape(ia.size, ib.size))
        cells = np.ix_(ia, ib)
        acc[cells] += d2
        seen[cells] = True
    d = np.sqrt(acc, out=acc)
    d[~seen] = np.nan
    return d
