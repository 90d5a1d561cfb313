"""Mondrian multi-dimensional k-anonymity over series features (seed §4.1, Algorithm 1).

Run per duration class (and per split for ``ihm48``). Starting from one partition holding
every series, a partition is split on one feature at a time:

- split value = the *lower* median of the partition's non-null values of that feature;
- left half = values <= split value; right half = values > split value OR null (by
  convention nulls go right);
- a split is *allowed* only if both halves hold >= k series, and, with outcomes (the labels a
  release publishes, ``ell`` > 1), only if both halves hold >= ``ell`` distinct values of every
  outcome column (ℓ-diverse Mondrian: a class an attacker recovers by grouping released
  values never discloses its members' outcome; issue 26);
- the feature is chosen by a heuristic:
  ``range``: features ordered by the partition's range of non-null values divided by the
  range of that feature over all n series (a feature whose overall range is zero or undefined
  is never chosen); the first feature, in that order, with an allowed split is used (ties:
  lower feature index first).
  ``diversity``: among all features with an allowed split, the one whose two halves have the
  largest mean of their within-half mean pairwise series distances (ties: lower feature index).
  Series distance = Euclidean distance over the records and dimensions non-null in both
  series (pairs with no such record have no distance and are left out of the means).
- partitions with no allowed split are the equivalence classes.

The recursion uses an explicit stack, so it never hits Python's recursion limit. Labels are
numbered 0..c-1 in the order of each class's smallest series index (row order of ``F``),
which does not depend on the traversal order.

The target of a series is its class mean per feature, over the class's non-null values; a
series' own null feature stays null (seed: nulls are ignored and preserved).
"""

from __future__ import annotations

import warnings

import numpy as np

from mimic_deid.core.errors import ConfigError, InputDataError, require_int
from mimic_deid.core.logs import get_logger

log = get_logger(__name__)

HEURISTICS = ("range", "diversity")
_BLOCK_ROWS = 1024


def _check_k(k: int) -> int:
    return require_int(k, "feature k (fk)")


def _check_features(F: np.ndarray) -> np.ndarray:
    F = np.asarray(F, dtype=np.float64)
    if F.ndim != 2:
        raise InputDataError(f"features must be a 2-D array (n_series, n_features), got {F.shape}")
    if np.isinf(F).any():
        raise InputDataError("features contain +/-inf; only finite values or NaN (null) allowed")
    return F


def series_distance_matrix(X: np.ndarray) -> np.ndarray:
    """Masked Euclidean distances between all pairs of series.

    Parameters
    ----------
    X : ndarray, shape (n, L, D)
        Series with NaN for null records.

    Returns
    -------
    ndarray of float64, shape (n, n)
        ``sqrt(sum over (t, d) non-null in both of (X[i,t,d] - X[j,t,d])**2)``; NaN where two
        series share no non-null record; 0 on the diagonal of a series with any record.

    Notes
    -----
    Computed in row blocks with three matrix products per block. Each (t, d) coordinate is
    centred first (differences are unchanged) to limit cancellation. Memory is O(n^2).
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 3:
        raise InputDataError(f"series must be a 3-D array (n, length, dims), got {X.shape}")
    n = X.shape[0]
    flat = X.reshape(n, -1)
    mask = ~np.isnan(flat)
    used = mask.any(axis=0)
    flat, mask = flat[:, used], mask[:, used]
    if flat.shape[1]:
        centre = np.nanmean(flat, axis=0)
        flat = flat - centre
    Y = np.where(mask, flat, 0.0)
    Q = Y * Y
    Mf = mask.astype(np.float64)
    out = np.empty((n, n), dtype=np.float64)
    for start in range(0, n, _BLOCK_ROWS):
        b = slice(start, min(start + _BLOCK_ROWS, n))
        d2 = Q[b] @ Mf.T
        d2 += Mf[b] @ Q.T
        d2 -= 2.0 * (Y[b] @ Y.T)
        np.maximum(d2, 0.0, out=d2)
        np.sqrt(d2, out=d2)
        common = (Mf[b] @ Mf.T) > 0
        d2[~common] = np.nan
        out[b] = d2
    idx = np.arange(n)
    out[idx, idx] = np.where(mask.any(axis=1), 0.0, np.nan)
    return out


class _Diversity:
    """Precomputed series distances and the within-half mean pairwise distance score."""

    def __init__(self, X: np.ndarray, n: int) -> None:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 3 or X.shape[0] != n:
            raise InputDataError(f"X must have shape ({n}, length, dims) to match F, got {X.shape}")
        D = series_distance_matrix(X)
        defined = ~np.isnan(D)
        np.fill_diagonal(defined, False)
        self.D = np.where(defined, D, 0.0)
        # Only keep the pair indicator when some off-diagonal pair has no distance.
        self.defined = None if defined.sum() == n * (n - 1) else defined

    def scores(self, P: np.ndarray, left: np.ndarray) -> np.ndarray:
        """Mean of the two halves' mean pairwise distances for each candidate split.

        P: (p,) series indices; left: (p, a) bool, left-half membership per candidate.
        Returns (a,) scores; -inf where neither half has a defined pair.
        """
        S = self.D[np.ix_(P, P)]
        L = left.astype(np.float64)
        R = 1.0 - L
        SL = S @ L
        sum_l = np.einsum("ia,ia->a", L, SL)
        sum_r = np.einsum("ia,ia->a", R, S.sum(axis=1)[:, None] - SL)
        if self.defined is None:
            n_l = L.sum(axis=0)
            n_r = R.sum(axis=0)
            cnt_l, cnt_r = n_l * (n_l - 1), n_r * (n_r - 1)
        else:
            V = self.defined[np.ix_(P, P)].astype(np.float64)
            VL = V @ L
            cnt_l = np.einsum("ia,ia->a", L, VL)
            cnt_r = np.einsum("ia,ia->a", R, V.sum(axis=1)[:, None] - VL)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.stack([sum_l / cnt_l, sum_r / cnt_r])  # 0/0 -> NaN
        means[np.stack([cnt_l, cnt_r]) == 0] = np.nan
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=RuntimeWarning)
            score = np.nanmean(means, axis=0)
        return np.where(np.isnan(score), -np.inf, score)


def _candidate_splits(
    FP: np.ndarray, k: int, YP: tuple[np.ndarray, np.ndarray] | None = None, ell: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Lower-median split of every feature of a partition.

    FP: (p, m); YP: the partition's one-hot outcome values and their columns (``_one_hot``)
    or None. Returns (left membership (p, m) bool, allowed (m,) bool).
    """
    p = FP.shape[0]
    n_nonnull = np.sum(~np.isnan(FP), axis=0)
    srt = np.sort(FP, axis=0)  # NaN sorts last
    pos = np.maximum(n_nonnull - 1, 0) // 2
    median = srt[pos, np.arange(FP.shape[1])]
    left = FP <= median[None, :]  # NaN compares False -> right
    n_left = left.sum(axis=0)
    allowed = (n_nonnull > 0) & (n_left >= k) & (p - n_left >= k)
    if YP is not None and ell > 1:
        allowed &= _diverse_halves(left, YP, ell)
    return left, allowed


def _one_hot(outcomes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Outcomes (n, t) as one indicator column per (outcome column, value): (n, v) float64,
    and the outcome column of each indicator, (v,)."""
    columns, owner = [], []
    for c in range(outcomes.shape[1]):
        for value in np.unique(outcomes[:, c]):
            columns.append(outcomes[:, c] == value)
            owner.append(c)
    return np.column_stack(columns).astype(np.float64), np.asarray(owner, dtype=np.int64)


def _distinct(counts: np.ndarray, owner: np.ndarray, t: int) -> np.ndarray:
    """Fewest distinct values over the outcome columns: counts (v, m) -> (m,)."""
    present = counts > 0
    per_column = np.stack([present[owner == c].sum(axis=0) for c in range(t)])
    return per_column.min(axis=0)


def _diverse_halves(left: np.ndarray, YP: tuple[np.ndarray, np.ndarray], ell: int) -> np.ndarray:
    """Splits (m,) whose both halves hold >= ell distinct values of every outcome column."""
    onehot, owner = YP
    t = int(owner.max()) + 1
    n_left = onehot.T @ left.astype(np.float64)  # (v, m) series per value in the left half
    n_right = onehot.sum(axis=0)[:, None] - n_left
    return (_distinct(n_left, owner, t) >= ell) & (_distinct(n_right, owner, t) >= ell)


def mondrian_partition(
    F: np.ndarray,
    k: int,
    heuristic: str = "range",
    X: np.ndarray | None = None,
    outcomes: np.ndarray | None = None,
    ell: int = 1,
    cells: np.ndarray | None = None,
) -> np.ndarray:
    """Mondrian equivalence classes of the series' feature vectors.

    Parameters
    ----------
    F : ndarray, shape (n, m)
        Features, NaN = null.
    k : int
        Minimum class size (>= 1).
    heuristic : {"range", "diversity"}
        Split-feature choice (module docstring).
    X : ndarray, shape (n, L, D), optional
        The series; required by ``diversity`` (an ``InputDataError`` otherwise), ignored by ``range``.
    outcomes : ndarray, shape (n, t), optional
        The outcome labels the release publishes (e.g. mortality and long stay, integers).
    ell : int
        With ``outcomes``: a split is allowed only if both halves hold at least ``ell``
        distinct values of every outcome column (module docstring). A partition that starts
        with fewer keeps them; the caller (the duration classes) suppresses such classes.
    cells : ndarray of int, shape (n,), optional
        A partition to start from (the demographic cells,
        :func:`~mimic_deid.deid.demographics.demographic_cells`): every class lies inside one
        cell. Default: one cell.

    Returns
    -------
    ndarray of int64, shape (n,)
        Class label 0..c-1 of each series, numbered by each class's smallest row index.

    Notes
    -----
    Every class holds >= k series when n >= k. If ``n < k`` no split is possible and all
    series form one class of size n < k: the function does not fail, the caller (the release
    check) decides. Fully deterministic: lower median, stable tie rules, no randomness.
    Cost: O(n m log n) per tree level for ``range``; ``diversity`` adds an O(n^2 L D)
    distance matrix and O(n^2 m) matrix products over the tree, with O(n^2) memory.
    """
    k = _check_k(k)
    if heuristic not in HEURISTICS:
        raise ConfigError(f"Mondrian heuristic must be one of {HEURISTICS}, got {heuristic!r}")
    F = _check_features(F)
    n, m = F.shape
    if heuristic == "diversity" and X is None:
        raise InputDataError("the 'diversity' heuristic needs the series X (n, length, dims)")
    labels = np.zeros(n, dtype=np.int64)
    if n == 0:
        return labels
    if n < k:
        log.warning("Mondrian: %d series < k=%d, all series form one class", n, k)
        return labels

    diversity = _Diversity(X, n) if heuristic == "diversity" else None
    Y = _outcome_codes(outcomes, n) if outcomes is not None and ell > 1 else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        global_range = np.nanmax(F, axis=0) - np.nanmin(F, axis=0)
    range_ok = np.isfinite(global_range) & (global_range > 0)

    leaves: list[np.ndarray] = []
    stack = _cell_stack(cells, n)
    while stack:
        P = stack.pop()
        if P.size < 2 * k or m == 0:
            leaves.append(P)
            continue
        FP = F[P]
        left, allowed = _candidate_splits(FP, k, None if Y is None else (Y[0][P], Y[1]), ell)
        if diversity is None:
            allowed &= range_ok
        if not allowed.any():
            leaves.append(P)
            continue
        j = _split_feature(FP, P, left, np.flatnonzero(allowed), diversity, global_range)
        stack.append(P[~left[:, j]])  # right half (values > split, or null)
        stack.append(P[left[:, j]])  # left half, processed first

    first = np.array([leaf.min() for leaf in leaves], dtype=np.int64)
    for label, leaf_idx in enumerate(np.argsort(first, kind="stable")):
        labels[leaves[leaf_idx]] = label
    smallest = min(leaf.size for leaf in leaves)
    log.info(
        "Mondrian %s k=%d: %d series -> %d classes (smallest %d)",
        heuristic,
        k,
        n,
        len(leaves),
        smallest,
    )
    return labels


def _split_feature(FP, P, left, cand, diversity, global_range) -> int:
    """The feature partition ``P`` (features ``FP``) is split on, among the allowed ``cand``:
    the widest normalised range (``range``) or the best diversity score."""
    if diversity is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=RuntimeWarning)
            part_range = np.nanmax(FP[:, cand], axis=0) - np.nanmin(FP[:, cand], axis=0)
        norm = part_range / global_range[cand]
        return cand[np.argsort(-norm, kind="stable")[0]]
    scores = diversity.scores(P, left[:, cand])
    return cand[int(np.argmax(scores))]


def _outcome_codes(outcomes: np.ndarray, n: int):
    """The outcomes (n, t) one-hot coded (:func:`_one_hot`), after their shape is checked."""
    outcomes = np.asarray(outcomes)
    if outcomes.ndim != 2 or outcomes.shape[0] != n:
        raise InputDataError(
            f"outcomes must be a 2-D array with one row per series ({n}), got {outcomes.shape}"
        )
    return _one_hot(outcomes)


def _cell_stack(cells: np.ndarray | None, n: int) -> list[np.ndarray]:
    """The partitions the split starts from: every series (``cells`` None) or one per
    demographic cell, the first cell last (it is popped first)."""
    if cells is None:
        return [np.arange(n, dtype=np.int64)]
    cells = np.asarray(cells)
    if cells.shape != (n,):
        raise InputDataError(f"cells must have one entry per series ({n}), got {cells.shape}")
    order = np.argsort(cells, kind="stable")
    bounds = np.flatnonzero(np.diff(cells[order])) + 1
    return list(reversed(np.split(order, bounds)))


def class_targets(F: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Feature targets: each series gets its class mean per feature.

    Parameters
    ----------
    F : ndarray, shape (n, m)
        Features, NaN = null.
    labels : ndarray of int, shape (n,)
        Equivalence class of each series (any integer labels).

    Returns
    -------
    ndarray of float64, shape (n, m)
        ``targets[i, j]`` = mean of the non-null ``F[:, j]`` over i's class; NaN where
        ``F[i, j]`` is null (nulls are preserved) or where the whole class is null for j.
    """
    F = _check_features(F)
    labels = np.asarray(labels)
    n, m = F.shape
    if labels.shape != (n,):
        raise InputDataError(f"labels must have shape ({n},), got {labels.shape}")
    if n == 0:
        return F.copy()
    _, inv = np.unique(labels, return_inverse=True)
    c = int(inv.max()) + 1
    nonnull = ~np.isnan(F)
    flat = (inv[:, None] * m + np.arange(m)[None, :]).ravel()
    sums = np.bincount(flat, weights=np.where(nonnull, F, 0.0).ravel(), minlength=c * m)
    counts = np.bincount(flat, weights=nonnull.ravel().astype(np.float64), minlength=c * m)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (sums / counts).reshape(c, m)
    targets = means[inv]
    targets[~nonnull] = np.nan
    return targets
