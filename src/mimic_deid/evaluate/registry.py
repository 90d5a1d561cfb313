"""The evaluator registry: what the privacy rule measures of a release, one entry per attacker.

:func:`~mimic_deid.evaluate.privacy.evaluate_release` walks every duration class once, a block
of targets at a time over the shared distance kernel
(:class:`~mimic_deid.evaluate.evaluators.Block`), and gives every block to every entry of
:data:`EVALUATORS` that the evaluation asks for (:meth:`Evaluation.wanted`). An entry is one
class with three methods:

``wanted(request)``
    Whether this evaluation runs it (its features are given, its members chosen).
``start(ctx)``
    Its evaluator of one class (:class:`ClassContext`): an object with ``block(b)`` and
    ``finish()`` (:mod:`mimic_deid.evaluate.evaluators`).
``collect(request, results, out)``
    Its share of the release's outputs (:class:`ReleaseResult`) from every class's
    ``finish()``, in class order.

Entries (:data:`EVALUATORS`, in this order; one class and one registry line each):

``seed``
    Seed §6.3's attacker, who knows the features de-identification targets (config
    ``deid.features``) up to each relative error, on both sides (the original series released
    unchanged, and the release); the disagreement curves are ranked by the same features. Its
    results are the per-series rows, the curves' summary and the top level of
    ``linkage.json``.
``strong``
    The strong attacker (:func:`~mimic_deid.deid.features.attacker_features`), both sides,
    under ``strong``.
``alternative``
    Seed §6.3's attacker who knows other features (config ``evaluate/attacker_features``):
    its disagreement (per-series columns with the suffix ``_alt``) and its linkage attack
    under ``alternative``.
``family``
    The chosen members of the attacker family (:data:`~mimic_deid.evaluate.attackers.ATTACKERS`,
    itself one class and one line per member) against the release with exact knowledge,
    under ``family``, and the strongest of them under ``strongest``.

A feature attacker's noise in class (group, length) comes from ``derive_rng(seed, "linkage",
*stream, group, length)`` with its :attr:`FeatureAttack.stream` (none for ``seed``). A new
feature attacker is one subclass of :class:`FeatureAttack` (its knowledge:
:meth:`FeatureAttack.spec`, its results: :meth:`Evaluation.collect`) and one line in
:data:`EVALUATORS` (``tests/evaluate/test_registry.py`` adds one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.core.seeding import derive_rng
from mimic_deid.deid.classes import ClassArray
from mimic_deid.deid.features import FeatureSpec, compute_features
from mimic_deid.evaluate.attackers import ATTACKERS, strongest_attacker
from mimic_deid.evaluate.disagreement import check_class, class_std
from mimic_deid.evaluate.evaluators import (
    AttackerLinkage,
    Block,
    ClassSeries,
    Disagreement,
    Linkage,
)
from mimic_deid.evaluate.linkage import linkage_summary

__all__ = [
    "EVALUATORS",
    "NO_SERIES",
    "TOP",
    "ClassContext",
    "Evaluation",
    "FeatureAttack",
    "ReleaseResult",
    "Request",
    "class_frames",
    "no_release",
]

#: Ranks at which the linkage attack's success is reported.
TOP = (1, 5)

#: The disagreement's per-target columns written to ``per_series.parquet``.
_ROW_COLUMNS = ("auc", "first_threshold", "first_disagreement")


@dataclass(frozen=True)
class Request:
    """What one evaluation of a release asks for (the same for every class).

    Attributes
    ----------
    features : mapping of str to FeatureSpec
        Each feature attacker's knowledge by entry name (``seed``, ``strong``,
        ``alternative``); an entry whose name is missing does not run.
    errors : tuple of float
        The feature attackers' relative estimation errors.
    family : tuple of str
        The members of the attacker family to run (:data:`ATTACKERS` names).
    seed : int
        Master seed of every random stream.
    standardise : bool
        The disagreement's features are divided by their class-wide std.
    block_rows : int
        Target series per block (the disagreement summary's column block too).
    fk : int or None
        The release's k: the family's strongest member is held to ``1 / fk``.
    dims : tuple of str
        The series dimensions, in class-array order (for an entry that names its own
        features, :meth:`FeatureAttack.spec`).
    """

    features: Mapping[str, FeatureSpec]
    errors: tuple[float, ...] = ()
    family: tuple[str, ...] = ()
    seed: int = 0
    standardise: bool = False
    block_rows: int = 256
    fk: int | None = None
    dims: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClassContext:
    """One duration class as every entry's :meth:`Evaluation.start` sees it.

    Attributes
    ----------
    request : Request
    orig, rel : ClassArray
        The original series and the released series keyed back to their ids.
    series : ClassSeries
        The kernel's arrays (the blocks' distances are computed of these).
    targets : ndarray of int
        The targets' class indices (ascending).
    target_keys : ndarray
        The targets' pseudonyms.
    cells : ndarray or None
        Published demographics, coded (:func:`~mimic_deid.evaluate.privacy.evaluate_class`).
    """

    request: Request
    orig: ClassArray
    rel: ClassArray
    series: ClassSeries
    targets: np.ndarray
    target_keys: np.ndarray
    cells: np.ndarray | None

    def rng(self, *stream: Any) -> np.random.Generator:
        """The class's generator of ``stream`` (``derive_rng(seed, *stream, group, length)``)."""
        return derive_rng(self.request.seed, *stream, self.orig.group, self.orig.length)


@dataclass
class ReleaseResult:
    """The outputs of :func:`~mimic_deid.evaluate.privacy.evaluate_release`, filled by the
    entries' :meth:`Evaluation.collect` in registry order."""

    per_series: pd.DataFrame = field(default_factory=pd.DataFrame)
    summary: pd.DataFrame = field(default_factory=pd.DataFrame)
    linkage: dict = field(default_factory=dict)


#: The reason recorded in ``linkage.json`` (``not_computable``) and on the card
#: (``privacy_not_computable``) of a release with no published series.
NO_SERIES = (
    "not computable: the release publishes no series (no duration class formed at the "
    "configured sizes; its check names each group, its series and what would fit)"
)


def no_release(alt: bool) -> ReleaseResult:
    """The outputs for a release with no published series: tables without rows (their
    columns and types as measured ones) and a ``linkage`` of no attack,
    ``{"not_computable": NO_SERIES, "details": {}}``; ``alt``: with the alternative
    attacker's columns."""
    figures = _ROW_COLUMNS
    per_series = pd.DataFrame(
        {
            "pseudonym": np.zeros(0, dtype=object),
            "group": np.zeros(0, dtype=object),
            "class_length": np.zeros(0, dtype=np.int32),
            **{c: np.zeros(0) for c in figures},
            **{f"{c}_alt": np.zeros(0) for c in figures if alt},
        }
    )
    summary = pd.DataFrame(
        {
            "group": np.zeros(0, dtype=object),
            "class_length": np.zeros(0, dtype=np.int32),
            "inclusion": np.zeros(0),
            "stat": np.zeros(0, dtype=object),
            "value": np.zeros(0),
            "normalised": np.zeros(0),
        }
    )
    return ReleaseResult(per_series, summary, {"not_computable": NO_SERIES, "details": {}})


def class_frames(
    per_row: Mapping[str, np.ndarray],
    summary: pd.DataFrame,
    cls: ClassArray,
    keys: np.ndarray | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-series rows (``keys``: the targets' pseudonyms) and the curves' summary of one class."""
    per_series = pd.DataFrame(
        {"class_length": np.int32(cls.length), **{c: per_row[c] for c in _ROW_COLUMNS}}
    )
    if keys is None:
        per_series.insert(0, "group", cls.group)
    else:
        per_series.insert(0, "pseudonym", keys)
        per_series.insert(1, "group", cls.group)
    summary = summary.copy()
    summary.insert(0, "class_length", np.int32(cls.length))
    summary.insert(0, "group", cls.group)
    return per_series, summary


class Evaluation:
    """One entry of :data:`EVALUATORS` (module docstring)."""

    name: str = ""

    def wanted(self, request: Request) -> bool:
        raise NotImplementedError

    def start(self, ctx: ClassContext) -> Any:
        raise NotImplementedError

    def collect(self, request: Request, results: Sequence[Any], out: ReleaseResult) -> None:
        raise NotImplementedError


class _FeatureClass:
    """A feature attacker's evaluator of one class: its linkage attack and, for an attacker
    that ranks the disagreement, the disagreement curves; both over the shared blocks."""

    def __init__(self, linkage: Linkage, disagreement: Disagreement | None) -> None:
        self.linkage, self.disagreement = linkage, disagreement

    def block(self, b: Block) -> None:
        if self.disagreement is not None:
            self.disagreement.block(b)
        self.linkage.block(b)

    def finish(self) -> tuple[Any, dict]:
        ranked = self.disagreement.finish() if self.disagreement is not None else None
        return ranked, self.linkage.finish()


class FeatureAttack(Evaluation):
    """An attacker who knows features of a target up to a relative error (its
    :attr:`Request.features` entry), attacked on both sides with the same noise.

    Subclasses set ``name``, ``stream`` (its noise's stream after ``"linkage"``) and
    ``ranks`` (it also ranks a disagreement), and implement :meth:`collect`.
    """

    stream: tuple[str, ...] = ()
    ranks: bool = False

    def spec(self, request: Request) -> FeatureSpec | None:
        """The attacker's knowledge: its :attr:`Request.features` entry (None: not run)."""
        return request.features.get(self.name)

    def wanted(self, request: Request) -> bool:
        return self.spec(request) is not None

    def start(self, ctx: ClassContext) -> _FeatureClass:
        spec = self.spec(ctx.request)
        F_o, F_r = compute_features(ctx.orig.X, spec), compute_features(ctx.rel.X, spec)
        rng = ctx.rng("linkage", *self.stream)
        linkage = Linkage(F_o, F_r, rng, ctx.request.errors, TOP, ctx.cells)
        disagreement = None
        if self.ranks:
            F_o, F_r, _, _ = check_class(F_o, F_r, ctx.series.X_o, ctx.series.X_r)
            f_scale = class_std(F_o, axis=0) if ctx.request.standardise else None
            disagreement = Disagreement(
                F_o, F_r, f_scale, ctx.request.block_rows, targets=ctx.targets.size
            )
        return _FeatureClass(linkage, disagreement)

    @staticmethod
    def summary(results: Sequence[tuple[Any, dict]]) -> dict:
        """:func:`~mimic_deid.evaluate.linkage.linkage_summary` of both sides over the classes."""
        return linkage_summary(
            {side: [r[1][side] for r in results] for side in ("baseline", "release")}
        )


class SeedAttack(FeatureAttack):
    """The ``seed`` entry (module docstring)."""

    name = "seed"
    ranks = True

    def start(self, ctx: ClassContext) -> _SeedClass:
        return _SeedClass(super().start(ctx), ctx)

    def collect(self, request, results, out):
        frames = [r[0] for r in results]
        out.per_series = pd.concat([f[0] for f in frames], ignore_index=True)
        out.summary = pd.concat([f[1] for f in frames], ignore_index=True)
        out.linkage.update(self.summary(results))


class _SeedClass:
    """The seed attacker's class evaluator, whose disagreement becomes the class's frames."""

    def __init__(self, inner: _FeatureClass, ctx: ClassContext) -> None:
        self.inner, self.cls, self.keys = inner, ctx.orig, ctx.target_keys

    def block(self, b: Block) -> None:
        self.inner.block(b)

    def finish(self):
        (per_row, summary), linkage = self.inner.finish()
        return class_frames(per_row, summary, self.cls, self.keys), linkage


class StrongAttack(FeatureAttack):
    """The ``strong`` entry (module docstring)."""

    name = "strong"
    stream = ("strong",)

    def collect(self, request, results, out):
        out.linkage["strong"] = self.summary(results)


class AlternativeAttack(FeatureAttack):
    """The ``alternative`` entry (module docstring)."""

    name = "alternative"
    stream = ("alternative",)
    ranks = True

    def collect(self, request, results, out):
        for col in _ROW_COLUMNS:
            out.per_series[f"{col}_alt"] = np.concatenate([r[0][0][col] for r in results])
        out.linkage["alternative"] = self.summary(results)


class _FamilyClass:
    """The chosen members of the attacker family against one class."""

    def __init__(self, members: Mapping[str, AttackerLinkage]) -> None:
        self.members = members

    def block(self, b: Block) -> None:
        for member in self.members.values():
            member.block(b)

    def finish(self) -> dict:
        return {name: member.finish() for name, member in self.members.items()}


class FamilyAttack(Evaluation):
    """The ``family`` entry (module docstring); member ``name``'s random stream in class
    (group, length) is ``derive_rng(seed, "attacker", name, group, length)``."""

    name = "family"

    def wanted(self, request: Request) -> bool:
        return bool(request.family)

    def start(self, ctx: ClassContext) -> _FamilyClass:
        s = ctx.series
        return _FamilyClass(
            {
                name: AttackerLinkage(
                    ATTACKERS[name], s.X_o, s.X_r, ctx.rng("attacker", name), TOP, ctx.cells
                )
                for name in ctx.request.family
            }
        )

    def collect(self, request, results, out):
        family = {
            name: {
                "knows": ATTACKERS[name].knows,
                **linkage_summary({"release": [r[name]["release"] for r in results]}),
            }
            for name in request.family
        }
        out.linkage["family"] = family
        out.linkage["strongest"] = strongest_attacker(family, request.fk)


#: Every evaluator of a release, by name; one line each (``seed`` first: its rows are the
#: per-series table the others add columns to).
EVALUATORS: dict[str, Evaluation] = {
    e.name: e for e in (SeedAttack(), StrongAttack(), AlternativeAttack(), FamilyAttack())
}
