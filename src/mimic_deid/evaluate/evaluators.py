"""Evaluators of one duration class over one blocked distance kernel (seed §5.2-§5.3).

The privacy evaluation of a class (:func:`~mimic_deid.evaluate.privacy.evaluate_class`) walks
the class a block of target series at a time. For each block, :class:`Block` is the *kernel*:
the series distances every evaluator may need (original targets against the released series,
against the original series, and the disagreement's own distance), each computed at most once
per block and only if an evaluator asks for it. An *evaluator* is anything with

    block(b: Block) -> None     take one block's share (its targets are ``b.rows``)
    finish() -> result          the class's result, once every block was given

and results never depend on the block size. Two kinds exist: :class:`Disagreement` (the
disagreement curves of seed §5.2) and :class:`Linkage` (one attacker's linkage attack, seed
§5.3, on both sides: the original series released unchanged, and the release);
:class:`AttackerLinkage` runs one member of the attacker family
(:mod:`mimic_deid.evaluate.attackers`) on the release side. :func:`run_blocks` gives every
block to every evaluator. Which evaluators a release's privacy rule runs is the evaluator
registry (:data:`~mimic_deid.evaluate.registry.EVALUATORS`): a new feature attacker is one
class and one line there, a new member of the family one class and one line in
:data:`~mimic_deid.evaluate.attackers.ATTACKERS`; neither edits the loop.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mimic_deid.evaluate.disagreement import (
    class_std,
    disagreement_rows,
    standardised_series,
    summarise_curve_matrix,
)
from mimic_deid.evaluate.distances import (
    dtw_distances,
    feature_distances,
    series_centre,
    series_distances,
)
from mimic_deid.evaluate.linkage import finish_score, linkage_header, score_rows

__all__ = [
    "SIDES",
    "AttackerLinkage",
    "Block",
    "ClassSeries",
    "Disagreement",
    "Linkage",
    "class_series",
    "disagreement_distances",
    "run_blocks",
]

#: The two sides of every attack: the original series released unchanged, and the release.
SIDES = ("baseline", "release")
#: Per-row results of the disagreement (:class:`~mimic_deid.evaluate.disagreement.DisagreementResult`).
_ROW_KEYS = ("auc", "first_threshold", "first_disagreement", "t_max", "n_reachable")


@dataclass(frozen=True)
class ClassSeries:
    """What the kernel computes distances of, for one class.

    Attributes
    ----------
    X_o, X_r : ndarray, shape (n, L, D)
        Original and released series (``X_r is X_o`` for the baseline).
    centre_rel, centre_base : ndarray
        Column centres of the original-released and original-original distances
        (:func:`~mimic_deid.evaluate.distances.series_centre`).
    X_os, X_rs, centre_dis : ndarray
        The series (and centre) the disagreement's distance uses (scaled with ``standardise``).
    series_distance : str
        ``euclidean``, ``per_record`` or ``dtw``.
    dtw_window : int or None
    shared : bool
        The disagreement's distance is the plain Euclidean one, shared with the linkage
        attack's reconstruction error.
    """

    X_o: np.ndarray
    X_r: np.ndarray
    centre_rel: np.ndarray
    centre_base: np.ndarray
    X_os: np.ndarray
    X_rs: np.ndarray
    centre_dis: np.ndarray
    series_distance: str
    dtw_window: int | None
    shared: bool

    @property
    def same(self) -> bool:
        return self.X_r is self.X_o


def class_series(
    X_o: np.ndarray,
    X_r: np.ndarray,
    standardise: bool,
    series_distance: str,
    dtw_window: int | None,
) -> ClassSeries:
    """The kernel's arrays of one class (``X_r is X_o`` for the baseline): the column centres
    of its distances and, with ``standardise``, the series in units of each dimension's
    class-wide std over the original non-null values
    (:func:`~mimic_deid.evaluate.disagreement.standardised_series`)."""
    same = X_r is X_o
    centre_rel = series_centre(X_o, X_r)
    centre_base = centre_rel if same else series_centre(X_o, X_o)
    X_os, X_rs, centre_dis = X_o, X_r, centre_rel
    if standardise:
        X_os, X_rs = standardised_series(X_o, X_r)
        centre_dis = series_centre(X_os, X_rs)
    return ClassSeries(
        X_o, X_r, centre_rel, centre_base, X_os, X_rs, centre_dis, series_distance, dtw_window,
        # the Euclidean distance of the unscaled series is shared by the linkage attack's
        # reconstruction error and (without standardise) the Euclidean disagreement
        shared=series_distance != "dtw" and not standardise,
    )  # fmt: skip


def run_blocks(
    series: ClassSeries, rows: np.ndarray, evaluators: Sequence, block_rows: int
) -> None:
    """Give every block of ``block_rows`` targets (``rows``, ascending class indices) of a
    class to every evaluator, in order; each block's distances are computed once."""
    for s in range(0, rows.size, block_rows):
        part = slice(s, min(rows.size, s + block_rows))
        block = Block(series, rows[part], part)
        for evaluator in evaluators:
            evaluator.block(block)


def disagreement_distances(
    X_a: np.ndarray,
    X_b: np.ndarray,
    series_distance: str,
    dtw_window: int | None,
    euclidean: np.ndarray | None = None,
    centre: np.ndarray | None = None,
) -> np.ndarray:
    """The disagreement's ``d_S`` between the series of ``X_a`` and ``X_b``, shape (n, n2).

    ``euclidean``: their Euclidean distances when already computed; ``centre``: as in
    :func:`~mimic_deid.evaluate.distances.series_distances`.
    """
    if series_distance == "dtw":
        return dtw_distances(X_a, X_b, window=dtw_window)
    d = series_distances(X_a, X_b, centre=centre) if euclidean is None else euclidean
    return d / max(X_a.shape[1], 1) if series_distance == "per_record" else d


class Block:
    """The blocked distance kernel: the distances of one block of targets of a class.

    Every quantity is computed on first use and kept for the block's other evaluators.

    Parameters
    ----------
    series : ClassSeries
    rows : ndarray of int, shape (b,)
        The targets' indices in the class (ascending); every series of the class is a
        candidate, so each distance is ``(b, n)``.
    part : slice
        The same targets' positions among all the targets of the class (the rows of an
        evaluator's per-target arrays).
    """

    def __init__(self, series: ClassSeries, rows: np.ndarray, part: slice) -> None:
        self.series = series
        self.rows = rows
        self.part = part
        self._rms: dict[str, np.ndarray] = {}

    @functools.cached_property
    def euclidean(self) -> tuple[np.ndarray, np.ndarray]:
        """Original targets against every released series: distances and compared values."""
        c = self.series
        return series_distances(c.X_o[self.rows], c.X_r, return_counts=True, centre=c.centre_rel)

    def rms(self, side: str) -> np.ndarray:
        """Per-value RMS distance of the targets to every series of ``side``, (b, n)."""
        if side == "baseline" and self.series.same:
            side = "release"
        if side not in self._rms:
            c = self.series
            if side == "release":
                d, counts = self.euclidean
            else:
                d, counts = series_distances(
                    c.X_o[self.rows], c.X_o, return_counts=True, centre=c.centre_base
                )
            with np.errstate(invalid="ignore", divide="ignore"):
                self._rms[side] = d / np.sqrt(counts)
        return self._rms[side]

    @functools.cached_property
    def disagreement(self) -> np.ndarray:
        """The disagreement's series distance ``d_S`` of the targets, (b, n)."""
        c = self.series
        return disagreement_distances(
            c.X_os[self.rows],
            c.X_rs,
            c.series_distance,
            c.dtw_window,
            euclidean=self.euclidean[0] if c.shared else None,
            centre=c.centre_dis,
        )


class Disagreement:
    """The disagreement curves of a class (seed §5.2), ranked by the features ``F_o``/``F_r``.

    ``finish()`` gives ``(per_row, summary)``: the per-target
    :class:`~mimic_deid.evaluate.disagreement.DisagreementResult` columns and
    :func:`~mimic_deid.evaluate.disagreement.summarise_curve_matrix` of the ``targets x n``
    curves, the only class-sized array the evaluation holds.
    """

    def __init__(
        self,
        F_o: np.ndarray,
        F_r: np.ndarray,
        f_scale: np.ndarray | None,
        column_block: int,
        targets: int,
    ) -> None:
        self.F_o, self.F_r, self.f_scale = F_o, F_r, f_scale
        self.curves = np.empty((targets, F_o.shape[0]))
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in _ROW_KEYS}
        self.column_block = column_block

    def block(self, b: Block) -> None:
        d_f = feature_distances(self.F_o[b.rows], self.F_r, self.f_scale)
        out = disagreement_rows(d_f, b.disagreement, self.curves[b.part])
        for key, values in zip(_ROW_KEYS, out[:5], strict=True):
            self.parts[key].append(values)

    def finish(self) -> tuple[dict[str, np.ndarray], pd.DataFrame]:
        per_row = {k: np.concatenate(v) if v else np.empty(0) for k, v in self.parts.items()}
        summary = summarise_curve_matrix(
            self.curves, per_row["n_reachable"], column_block=self.column_block
        )
        return per_row, summary


class Linkage:
    """One attacker's linkage attack on both sides (seed §5.3).

    Parameters
    ----------
    F_known, F_released : ndarray, shape (n, m)
        The attacker's original features (its knowledge before the error) and the same
        features of the released series.
    rng : numpy.random.Generator
        Draws its estimation noise, one standard normal per feature value, shared by every
        error and both sides (so before and after are paired).
    errors : sequence of float
        Relative estimation errors.
    top : tuple of int
        Ranks of the success rates.
    cells : ndarray, shape (n,), optional
        Published demographics, coded: the attacker links a target only among the series
        that publish its own (:mod:`mimic_deid.deid.demographics`).
    """

    def __init__(
        self,
        F_known: np.ndarray,
        F_released: np.ndarray,
        rng: np.random.Generator,
        errors: Sequence[float],
        top: tuple[int, ...],
        cells: np.ndarray | None = None,
    ) -> None:
        F_k = np.asarray(F_known, dtype=np.float64)
        z = rng.standard_normal(F_k.shape)
        self.sides = {"baseline": F_k, "release": np.asarray(F_released, dtype=np.float64)}
        self.errors = tuple(errors)
        self.known = [F_k * (1.0 + e * z) for e in self.errors]
        self.scale = class_std(F_k, axis=0)
        self.top, self.cells, self.n = top, cells, F_k.shape[0]
        self.scores = {side: [[] for _ in self.errors] for side in SIDES}

    def block(self, b: Block) -> None:
        for side, F_side in self.sides.items():
            for i, K in enumerate(self.known):
                d_f = feature_distances(K[b.rows], F_side, self.scale)
                if self.cells is not None:  # only the series showing the target's demographics
                    d_f[self.cells[b.rows, None] != self.cells[None, :]] = np.inf
                self.scores[side][i].append(score_rows(d_f, b.rms(side), b.rows, self.top))

    def finish(self) -> dict:
        return {
            side: {
                **linkage_header(self.n, True, self.top),
                "by_error": [
                    finish_score(blocks, e, self.top)
                    for blocks, e in zip(self.scores[side], self.errors, strict=True)
                ],
            }
            for side in SIDES
        }


class AttackerLinkage:
    """One member of the attacker family (:mod:`mimic_deid.evaluate.attackers`) against the
    release, with exact knowledge of the original series (its error is 0).

    Parameters
    ----------
    attacker : Attacker
        The member (:data:`~mimic_deid.evaluate.attackers.ATTACKERS`).
    X_o, X_r : ndarray, shape (n, L, D)
        Original and released series of the class (those of the kernel).
    rng : numpy.random.Generator
        The member's random stream for the class (e.g. the ``raw_hours`` attacker's hours).
    top : tuple of int
    cells : ndarray, shape (n,), optional
        Published demographics, coded, as :class:`Linkage`.

    ``finish()`` gives ``{"release": result}`` in the layout of :class:`Linkage` (one
    ``by_error`` entry, error 0), so :func:`~mimic_deid.evaluate.linkage.aggregate_linkage`
    combines the classes.
    """

    def __init__(
        self,
        attacker,
        X_o: np.ndarray,
        X_r: np.ndarray,
        rng: np.random.Generator,
        top: tuple[int, ...],
        cells: np.ndarray | None = None,
    ) -> None:
        self.attacker, self.top, self.cells, self.n = attacker, top, cells, X_o.shape[0]
        self.state = attacker.prepare(X_o, X_r, rng)
        self.scores: list[dict] = []

    def block(self, b: Block) -> None:
        d = np.array(self.attacker.distances(self.state, b), dtype=np.float64, copy=True)
        if self.cells is not None:  # only the series showing the target's demographics
            d[self.cells[b.rows, None] != self.cells[None, :]] = np.inf
        self.scores.append(score_rows(d, b.rms("release"), b.rows, self.top))

    def finish(self) -> dict:
        return {
            "release": {
                **linkage_header(self.n, True, self.top),
                "by_error": [finish_score(self.scores, 0.0, self.top)],
            }
        }
