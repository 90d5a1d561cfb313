"""The report's two data types: the loaded run (:class:`ReportData`) and one figure or table
(:class:`ReportItem`).

Every stage's report module (named by its :attr:`~mimic_deid.core.stage.Stage.report_module`)
declares its items as a tuple ``ITEMS`` of :class:`ReportItem`, each drawing from a
:class:`ReportData` that :func:`mimic_deid.report.inputs.load_report_data` read, the one
place where the report reads a file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.evaluate.curves import MAIN_CLASS_HOURS, closest_class
from mimic_deid.evaluate.pairing import release_name
from mimic_deid.report.decision import card_name
from mimic_deid.report.tables import write_table

__all__ = ["AUDIENCES", "GA_INPUTS", "ReportData", "ReportItem", "table_item"]

#: Who reads a report: ``public`` (results/report, the HTML bundle) or ``private`` (the owner).
AUDIENCES = ("public", "private")
#: The input of the GA examples (rule method_examples): original and perturbed series of
#: individual patients.
GA_INPUTS = ("ga_examples",)


@dataclass
class ReportData:
    """Everything the report draws, loaded from one run.

    Attributes
    ----------
    point : dict
        The sweep point shown (dk, fk, heuristic, method).
    lengths, class_lengths : ndarray of int, shape (n,)
        Original and duration-class lengths of every ``stays`` series.
    records_lost : ndarray of int, shape (n,)
        Hours each of those series loses to its class (rule ``duration_classes``).
    duration_methods : DataFrame
        Seed §6.1 for every duration method (rule ``duration_classes``).
    baseline_summary, summary : DataFrame
        Summary disagreement curves of the original data and of the release.
    baseline_series, per_series : DataFrame
        Per-series disagreement of the original data and of the release.
    linkage : dict
        The release's linkage attack (``linkage.json``).
    utility : DataFrame
        The trust settings (``trust_settings.csv``).
    tuning : dict of str to DataFrame
        Tables 6.1/6.2 per optimiser kind (``adhoc``, ``genetic``), where configured.
    ga_examples : list of dict
        :func:`ga_examples` of the genetic optimiser; empty if none ran and in the public
        report.
    units : dict of str to (label, unit)
        Variable labels and units.
    main_class, small_class : int or None
        The class lengths shown (closest to the seed's 30 h and 9 h).
    duration_method : str
        The run's ``duration/method`` (the §6.1 table marks it).
    main_curves : dict
        :func:`~mimic_deid.evaluate.curves.main_class_curves` of the release's main class
        (empty without the input ``main_curves``; without
        :data:`~mimic_deid.evaluate.curves.ORIGINAL_KEYS` in the public report).
    inputs : dict
        Every other input as read (:func:`mimic_deid.report.inputs.read_input`), by input
        name: the comparator stages' artefacts, which their report modules select from
        (absent when the stage is not part of the run).
    cards : list of dict
        Every release's card (``card.json``, inputs ``card_*``), in input-name order.
    cross_release : DataFrame
        The cross-release pairing of the sweep (``cross_release.csv``; empty without it).
    frontier : DataFrame
        The privacy-utility frontier (``frontier.csv``, :mod:`mimic_deid.evaluate.frontier`;
        empty without it).
    sweep : DataFrame or None
        The sweep summary (``sweep_summary.csv``; the public report's last section).
    cohort : dict
        The source and cohort counts (``cohort.json``) for the front matter.
    audience : {"public", "private"}
        Who the data was loaded for: the public report draws certified releases only
        (:meth:`drawable`).
    """

    point: dict
    lengths: np.ndarray
    class_lengths: np.ndarray
    records_lost: np.ndarray
    duration_methods: pd.DataFrame
    baseline_summary: pd.DataFrame
    summary: pd.DataFrame
    baseline_series: pd.DataFrame
    per_series: pd.DataFrame
    linkage: dict
    utility: pd.DataFrame
    tuning: dict[str, pd.DataFrame]
    ga_examples: list[dict]
    units: dict[str, tuple[str, str]]
    main_class: int | None = field(init=False)
    small_class: int | None = field(init=False)
    duration_method: str = "greedy"
    series_distance: str = "euclidean"
    main_curves: dict = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    cards: list[dict] = field(default_factory=list)
    cross_release: pd.DataFrame = field(default_factory=pd.DataFrame)
    frontier: pd.DataFrame = field(default_factory=pd.DataFrame)
    sweep: pd.DataFrame | None = None
    cohort: dict = field(default_factory=dict)
    audience: str = "public"

    def __post_init__(self) -> None:
        # the seed shows the classes of 30 h and 9 h
        self.main_class = closest_class(self.summary, MAIN_CLASS_HOURS)
        self.small_class = closest_class(self.summary, 9)

    def release_card(self, release: str) -> dict | None:
        """The card of ``release`` (``stays``, ``ihm48``) at the point shown, or None."""
        name = release_name(release, self.point)
        return next((c for c in self.cards if card_name(c) == name), None)

    def drawable(self, release: str) -> str | None:
        """None when the report may draw ``release`` at the point shown, else why not.

        The private report draws every release (the owner judges the refused ones); the
        public report draws a release only when its card says certified."""
        if self.audience == "private":
            return None
        card = self.release_card(release)
        name = release_name(release, self.point)
        if card is None:
            return f"not drawn: release {name} has no release card in this run"
        if card.get("passed") is True:
            return None
        return (
            f"not drawn: release {name} was refused (see 'What to hand out'); the public "
            "report draws certified releases only"
        )


@dataclass(frozen=True)
class ReportItem:
    """One figure or table of the report.

    Attributes
    ----------
    name : str
        File stem (``figures/<name>.png`` or ``tables/<name>.csv``) and caption file stem.
    kind : {"figure", "table"}
    section : str
        The report section (page heading) it appears under.
    caption : str
        One line on the index page; the fields of every report module's ``caption_fields``
        (``{main_class}``, ``{small_class}``, ...) are filled in.
    draw : callable
        ``draw(data, out_path)`` writes the file.
    audience : {"public", "private"}
        ``public``: drawn from released values, aggregates and attack measures, written to
        ``results/report`` and bundled by ``snakemake --report``; ``private``: shows original
        values of individual patients, written under ``results/private/report`` only.
    release : {"stays", "ihm48"} or None
        The release of the point shown that the item draws; the public report draws it only
        when that release is certified (:meth:`ReportData.drawable`), and otherwise writes a
        note in its place. None: the item draws no single release.
    """

    name: str
    kind: str
    section: str
    caption: str
    draw: Callable[[ReportData, str], None]
    audience: str = "public"
    release: str | None = None


def table_item(make: Callable[[ReportData], pd.DataFrame]) -> Callable[[ReportData, str], None]:
    """The ``draw`` of a table item: ``make(data)`` written as CSV and Markdown."""

    def draw(data: ReportData, out: str) -> None:
        write_table(make(data), out, Path(out).with_suffix(".md"))

    return draw
