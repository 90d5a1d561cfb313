"""What the report shows: one registry of its figures and tables, and the function that builds it.

Each :class:`ReportItem` names a figure (PNG) or table (CSV + Markdown), the report section it
belongs to, its one-line caption on the HTML index, the function that draws it from the
loaded run (:class:`ReportData`) and its *audience*:

- ``public`` items (``results/report/``, bundled by ``snakemake --report``) draw released
  values, aggregates and attack measures only. :func:`load_report_data` for the public report
  refuses the GA inputs and keeps no original series or features in memory
  (:data:`ORIGINAL_KEYS`), so no public item can draw one; the original lengths stay in
  memory for the counts of ``duration_methods`` (tests/report/test_report_audience.py checks every
  public figure and table for a sentinel value and a sentinel length);
- ``private`` items (``results/private/report/``, owner-only) show original values of
  individual patients: what the release method did to one patient's series (the GA examples,
  seed Figs 6.2/6.3, and seed Fig. 3.1 with the original target,
  ``disagreement_example_original``), and the original lengths of stay, whose rare long stays
  are single patients drawn at their exact length (``duration_classes``, seed Fig. 6.1, and
  ``records_lost``). The public report keeps the duration classes in counts
  (``duration_methods``: series alone or in at most 5 per hour class).

``workflow/rules/report.smk`` reads the names of each audience from :data:`ITEMS` for the
outputs of ``rule report`` and ``rule private_report``, and each public name has a longer
caption ``workflow/report/<name>.rst`` for Snakemake's HTML report.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from mimic_deid.core.atomic import read_json
from mimic_deid.core.errors import ConfigError, require_choice
from mimic_deid.core.numbers import measure, percent, percent_ci
from mimic_deid.deid.classes import KEY
from mimic_deid.deid.examples import examples_from_json
from mimic_deid.deid.tuning import TUNED_METHODS
from mimic_deid.evaluate.curves import (
    MAIN_CLASS_HOURS,
    ORIGINAL_KEYS,
    closest_class,
    curves_from_table,
)
from mimic_deid.evaluate.pairing import release_name
from mimic_deid.pipeline.variables import load_variables
from mimic_deid.report import codes as codes_report
from mimic_deid.report import figures as fig
from mimic_deid.report import frontier as frontier_report
from mimic_deid.report import tabular as tab
from mimic_deid.report.decision import card_name, certified_names, decision_section
from mimic_deid.report.front import SYNTHETIC_LABEL, front_sections
from mimic_deid.report.html import write_index
from mimic_deid.report.plotting import new_figure, no_data, save
from mimic_deid.report.sequences import attack_table, plot_sequences, sequences_table
from mimic_deid.report.sweep import sweep_overview
from mimic_deid.report.tables import (
    card_table,
    cross_release_table,
    duration_table,
    optimiser_table,
    trust_settings_table,
    write_table,
)

__all__ = [
    "AUDIENCES",
    "FIGURES",
    "GA_INPUTS",
    "ITEMS",
    "ORIGINAL_KEYS",
    "PRIVATE_FIGURES",
    "TABLES",
    "ReportData",
    "ReportItem",
    "build_report",
    "example_target",
    "ga_caption",
    "load_report_data",
    "report_items",
]

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
    codes : dict
        The diagnosis-code stage's public aggregates
        (:func:`mimic_deid.report.codes.load_codes`).
    main_class, small_class : int or None
        The class lengths shown (closest to the seed's 30 h and 9 h).
    duration_method : str
        The run's ``duration/method`` (the §6.1 table marks it).
    main_curves : dict
        :func:`~mimic_deid.evaluate.curves.main_class_curves` of the release's main class
        (empty without the input ``main_curves``; without
        :data:`~mimic_deid.evaluate.curves.ORIGINAL_KEYS` in the public report).
    sequences, sequences_friedman : DataFrame
        The sequences stage's sweep rows and Friedman tests over its tables (empty when the
        stage is not part of the run).
    sequences_attack : list of dict
        The stage's verbatim-copy attack per table (``attack.json``; empty without it).
    sequences_verdicts : dict of str to str
        Each sequence release's verdict by table (``check.json``: certified or refused).
    tabular : dict
        The tabular stage's outputs (:func:`mimic_deid.report.tabular.load_tabular`); empty
        when the stage did not run.
    cards : list of dict
        Every release's card (``card.json``, inputs ``card_*``), in input-name order.
    cross_release : DataFrame
        The cross-release pairing of the sweep (``cross_release.csv``; empty without it).
    frontier : DataFrame
        The privacy-utility frontier (``frontier.csv``, :mod:`mimic_deid.evaluate.frontier`;
        empty without it).
    audience : {"public", "private"}
        Who the data was loaded for: the public report draws certified releases only
        (:meth:`drawable`).
    """

    point: dict
    lengths: np.ndarray
    class_lengths: np.ndarray
    baseline_summary: pd.DataFrame
    summary: pd.DataFrame
    baseline_series: pd.DataFrame
    per_series: pd.DataFrame
    linkage: dict
    utility: pd.DataFrame
    tuning: dict[str, pd.DataFrame]
    ga_examples: list[dict]
    units: dict[str, tuple[str, str]]
    codes: dict[str, Any] = field(default_factory=dict)
    main_class: int | None = field(init=False)
    small_class: int | None = field(init=False)
    duration_method: str = "greedy"
    series_distance: str = "euclidean"
    main_curves: dict = field(default_factory=dict)
    sequences: pd.DataFrame = field(default_factory=pd.DataFrame)
    sequences_friedman: pd.DataFrame = field(default_factory=pd.DataFrame)
    sequences_attack: list[dict] = field(default_factory=list)
    sequences_verdicts: dict[str, str] = field(default_factory=dict)
    tabular: dict[str, Any] = field(default_factory=dict)
    cards: list[dict] = field(default_factory=list)
    cross_release: pd.DataFrame = field(default_factory=pd.DataFrame)
    frontier: pd.DataFrame = field(default_factory=pd.DataFrame)
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


def ga_caption(data: ReportData, rank: str) -> str:
    """The numbers of GA example ``rank`` (``"worst"`` / ``"median"``) for its caption."""
    ex = next((e for e in data.ga_examples if e.get("rank") == rank), None)
    if ex is None:
        return "no genetic optimiser run"
    k = ex["key_stats"]
    label = data.units.get(ex["variable"], (ex["variable"], ""))[0]
    return (
        f"{rank} of {k['n']:,} series with {label.lower()} targets: unfeasibility "
        f"{measure(k['unfeasibility'])} and distortion {measure(k['distortion'])} over all its feature "
        f"dimensions, {k['iterations']} generations, {k['class_length']} h class"
    )


def load_report_data(
    inputs: Mapping[str, str],
    point: Mapping[str, Any],
    *,
    duration_method: str,
    series_distance: str,
    audience: str = "public",
) -> ReportData:
    """Read the run's artefacts the report draws (input names as in ``rule report``).

    Nothing is computed here but selections: the main class's curves come finished from
    rule ``privacy_curves`` (input ``main_curves``,
    :func:`~mimic_deid.evaluate.curves.curves_from_table`), the GA examples from rule
    ``method_examples`` (input ``ga_examples``,
    :func:`~mimic_deid.deid.examples.examples_from_json`). ``duration_method`` and
    ``series_distance`` are the run's config values (the §6.1 table marks the method; the
    disagreement figures name the distance's unit). For the ``public`` audience the GA inputs
    (:data:`GA_INPUTS`) are refused and the main class's original series and features are
    dropped as they are read: the public report holds measures of them, never the values.
    """
    _check_audience(audience)
    refused = [name for name in GA_INPUTS if name in inputs]
    if audience == "public" and refused:
        raise ConfigError(
            f"public report: input {refused[0]!r} holds original values of individual "
            "patients; only the private report (audience 'private') reads it"
        )
    meta = pd.read_parquet(inputs["meta"])
    classes = pd.read_parquet(inputs["classes"]).set_index(KEY).loc[meta[KEY]]
    tuning = {
        kind: pd.read_csv(inputs[f"tuning_{kind}"])
        for kind in TUNED_METHODS
        if f"tuning_{kind}" in inputs
    }
    examples: list[dict] = []
    if audience == "private" and "ga_examples" in inputs:
        examples = examples_from_json(read_json(inputs["ga_examples"]))
    summary = pd.read_parquet(inputs["summary"])
    curves: dict = {}
    if "main_curves" in inputs:
        curves = curves_from_table(pq.read_table(inputs["main_curves"]), inputs["main_curves"])
        if audience == "public":
            curves = {k: v for k, v in curves.items() if k not in ORIGINAL_KEYS}
    return ReportData(
        point=dict(point),
        lengths=meta["length"].to_numpy(),
        class_lengths=classes["class_length"].to_numpy(),
        baseline_summary=pd.read_parquet(inputs["baseline_summary"]),
        summary=summary,
        baseline_series=pd.read_parquet(inputs["baseline_series"]),
        per_series=pd.read_parquet(inputs["per_series"]),
        linkage=read_json(inputs["linkage"]),
        utility=pd.read_csv(inputs["utility"]),
        tuning=tuning,
        ga_examples=examples,
        units={v.name: (v.label, v.unit) for v in load_variables(inputs["variables"])},
        duration_method=duration_method,
        series_distance=series_distance,
        main_curves=curves,
        codes=codes_report.load_codes(inputs),
        sequences=_concat_csv(inputs, "sequences_sweep_"),
        sequences_friedman=_concat_csv(inputs, "sequences_friedman_"),
        sequences_attack=[
            read_json(v) for k, v in sorted(inputs.items()) if k.startswith("sequences_attack_")
        ],
        sequences_verdicts={  # keyed as attack.json names its table (input sequences_check_<t>)
            k.removeprefix("sequences_check_").upper(): read_json(v)["verdict"]
            for k, v in sorted(inputs.items())
            if k.startswith("sequences_check_")
        },
        tabular=tab.load_tabular(inputs),
        cards=[read_json(v) for k, v in sorted(inputs.items()) if k.startswith("card_")],
        cross_release=(
            pd.read_csv(inputs["cross_release"]) if "cross_release" in inputs else pd.DataFrame()
        ),
        frontier=pd.read_csv(inputs["frontier"]) if "frontier" in inputs else pd.DataFrame(),
        audience=audience,
    )


def _concat_csv(inputs: Mapping[str, str], prefix: str) -> pd.DataFrame:
    frames = [pd.read_csv(v) for k, v in sorted(inputs.items()) if k.startswith(prefix)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


# --------------------------------------------------------------------------------------------
# drawing functions: (data, out_path) -> None


def _ga_example(rank: str) -> Callable[[ReportData, str], None]:
    def draw(data: ReportData, out: str) -> None:
        ex = next((e for e in data.ga_examples if e.get("rank") == rank), None)
        if ex is None:
            fig.plot_ga_example(np.array([]), np.array([]), {}, out, "no genetic optimiser run", "")
            return
        label, unit = data.units.get(ex["variable"], (ex["variable"], ""))
        title = f"{rank.capitalize()} series by unfeasibility: {label}"
        fig.plot_ga_example(
            ex["original"], ex["perturbed"], ex["features"], out, label, unit, title=title
        )

    return draw


def _summary_curves(
    which: str, stats: tuple[str, ...], normalised: bool = False
) -> Callable[[ReportData, str], None]:
    def draw(data: ReportData, out: str) -> None:
        fig.plot_summary_disagreement(
            data.baseline_summary,
            data.summary,
            getattr(data, which),
            out,
            stats=stats,
            normalised=normalised,
            series_distance=data.series_distance,
        )

    return draw


def _draw_curves(data: ReportData, out: str) -> None:
    c = data.main_curves
    if not c:
        fig.plot_disagreement_curves(None, np.empty((0, 0)), np.empty(0), data.main_class or 0, out)
        return
    fig.plot_disagreement_curves(
        data.summary, c["result"].curves, c["result"].n_reachable, c["class_length"], out
    )


def example_target(auc: np.ndarray) -> int | None:
    """The series of median Δ-AUC (position ``(k - 1) // 2`` of the k defined values)."""
    defined = np.flatnonzero(~np.isnan(auc))
    if not defined.size:
        return None
    order = defined[np.argsort(auc[defined], kind="stable")]
    return int(order[(order.size - 1) // 2])


def _draw_example(original: bool) -> Callable[[ReportData, str], None]:
    """Seed Fig. 3.1: with ``original`` the target's original series and the attacker's
    knowledge of it (private report); without, the target's released series and released
    features only (public report)."""

    def draw(data: ReportData, out: str) -> None:
        _example(data, out, original)

    return draw


def _example(data: ReportData, out: str, original: bool) -> None:
    c = data.main_curves
    target = example_target(c["result"].auc) if c else None
    if target is None or (original and not set(ORIGINAL_KEYS) <= set(c)):
        empty = np.empty((0, 0))
        fig.plot_disagreement_example(
            empty, empty, empty, empty, np.empty(0), np.empty(0), 0.0, 0.0, 0, None, 0, {}, out
        )
        return
    r = c["result"]
    label, unit = data.units.get(c["variable"], (c["variable"], ""))
    fig.plot_disagreement_example(
        c["X_orig"] if original else None,
        c["X_rel"],
        c["F_orig"][:, :2] if original else None,
        c["F_rel"][:, :2],
        r.thresholds[target],
        r.curves[target],
        float(r.t_max[target]),
        float(r.auc[target]),
        target,
        int(c["first_included"][target]) if c["first_included"][target] >= 0 else None,
        c["class_length"],
        {
            "variable": label,
            "unit": unit,
            "feature_x": c["names"][0],
            "feature_y": c["names"][1] if len(c["names"]) > 1 else c["names"][0],
            "distance": fig.distance_unit(data.series_distance),
        },
        out,
    )


def _tuning_table(kind: str) -> Callable[[ReportData, str], None]:
    def draw(data: ReportData, out: str) -> None:
        table = (
            optimiser_table(data.tuning[kind])
            if kind in data.tuning
            else pd.DataFrame({"note": [f"no {kind} optimiser configured"]})
        )
        write_table(table, out, Path(out).with_suffix(".md"))

    return draw


def _tabular_table(make: Callable[[dict], pd.DataFrame]) -> Callable[[ReportData, str], None]:
    def draw(data: ReportData, out: str) -> None:
        write_table(make(data.tabular), out, Path(out).with_suffix(".md"))

    return draw


def _trust_table(split: str, task: str = "mortality") -> Callable[[ReportData, str], None]:
    def draw(data: ReportData, out: str) -> None:
        table = trust_settings_table(data.utility, split, task=task)
        write_table(table, out, Path(out).with_suffix(".md"))

    return draw


def _cross_release(data: ReportData) -> pd.DataFrame:
    """The cross-release table; the public report keeps the pairs of certified releases."""
    pairing = data.cross_release
    if data.audience == "public" and not pairing.empty:
        certified = certified_names(data.cards)
        both = pairing["release_a"].isin(certified) & pairing["release_b"].isin(certified)
        pairing = pairing[both]
        if pairing.empty:
            return pd.DataFrame({"note": ["no two certified releases of one population"]})
    return cross_release_table(pairing)


#: The page's note on a further item of a section not drawn for the reason already given.
NOT_DRAWN_AGAIN = "not drawn, for the reason above"


def _not_drawn(item: ReportItem, path: str, note: str) -> None:
    """Write the file of an item the public report does not draw: a figure or a table that
    says why, so that the rule's outputs exist and a reader of the file sees the reason."""
    if item.kind == "table":
        write_table(pd.DataFrame({"note": [note]}), path, Path(path).with_suffix(".md"))
        return
    figure = new_figure(8, 2)
    ax = figure.add_subplot()
    no_data(ax, textwrap.fill(note, 70))
    ax.set_axis_off()
    save(figure, path)


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
        One line on the index page; ``{main_class}`` and ``{small_class}`` are filled in.
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


#: The report's figures and tables in page order.
ITEMS: tuple[ReportItem, ...] = (
    ReportItem(
        "frontier",
        "figure",
        "Privacy-utility frontier",
        "Every ihm48 release of the sweep (frontier.csv): the strongest attacker's top-1 "
        "against the mortality model's test ROC-AUC, both with 95 % intervals; filled markers "
        "certified, hollow refused; dotted lines the bound 1/k of each k, the dashed line the "
        "data owner's baseline, the star the seed's point (Table 6.4, drawn at its bound). "
        "Every figure is the release's card's, public also for a refused release.",
        lambda d, out: frontier_report.plot_frontier(d.frontier, out),
    ),
    ReportItem(
        "duration_classes",
        "figure",
        "Duration classes",
        "Length-of-stay classes before and after duration k-classes, {duration_method} "
        "method (seed Fig. 6.1).",
        lambda d, out: fig.plot_duration_classes(d.lengths, d.class_lengths, out),
        "private",
    ),
    ReportItem(
        "records_lost",
        "figure",
        "Duration classes",
        "Hours trimmed from the start of each series to join a duration class.",
        lambda d, out: fig.plot_records_lost(d.lengths, d.class_lengths, out),
        "private",
    ),
    *(
        ReportItem(
            f"optimiser_{kind}",
            "table",
            "Constraint optimisation",
            f"{title} optimiser on the tuning series (seed Table {table}).",
            _tuning_table(kind),
        )
        for kind, (title, table) in TUNED_METHODS.items()
    ),
    ReportItem(
        "ga_example_worst",
        "figure",
        "Constraint optimisation",
        "Genetic optimiser, the worst series by unfeasibility ({ga_worst}) (seed Fig. 6.2).",
        _ga_example("worst"),
        "private",
    ),
    ReportItem(
        "ga_example_median",
        "figure",
        "Constraint optimisation",
        "Genetic optimiser, the median series by unfeasibility ({ga_median}) (seed Fig. 6.3).",
        _ga_example("median"),
        "private",
    ),
    ReportItem(
        "summary_disagreement_mean",
        "figure",
        "Disagreement",
        "Mean disagreement curve, class of {main_class} h, before and after (seed Fig. 6.4).",
        _summary_curves("main_class", ("mean",)),
        release="stays",
    ),
    ReportItem(
        "summary_disagreement_min",
        "figure",
        "Disagreement",
        "Minimum disagreement curve, class of {small_class} h (seed Fig. 6.5).",
        _summary_curves("small_class", ("min",)),
        release="stays",
    ),
    ReportItem(
        "summary_disagreement_normalised",
        "figure",
        "Disagreement",
        "Summary disagreement plot, normalised, class of {main_class} h (seed Fig. 5.4).",
        _summary_curves("main_class", ("min", "mean", "max"), normalised=True),
        release="stays",
    ),
    ReportItem(
        "disagreement_curves",
        "figure",
        "Disagreement",
        "Summary disagreement plot of the release with 100 of the curves behind it, class of "
        "{main_class} h (seed Fig. 5.4, both panels).",
        _draw_curves,
        release="stays",
    ),
    ReportItem(
        "disagreement_example",
        "figure",
        "Disagreement",
        "One series of median Δ-AUC in the class of {main_class} h: its released series, the "
        "released features and its disagreement step curve with the area Δ-AUC (seed Fig. 3.1 "
        "from released values; the original target is in the private report).",
        _draw_example(original=False),
        release="stays",
    ),
    ReportItem(
        "disagreement_example_original",
        "figure",
        "Disagreement",
        "Seed Fig. 3.1 with the original: the series of median Δ-AUC in the class of "
        "{main_class} h, its original series and the attacker's knowledge of its features "
        "against the release.",
        _draw_example(original=True),
        "private",
    ),
    ReportItem(
        "first_disagreement_cdf",
        "figure",
        "Disagreement",
        "First-disagreement CDF, class of {main_class} h (seed Fig. 6.6).",
        lambda d, out: fig.plot_first_disagreement_cdf(
            d.baseline_series, d.per_series, d.main_class, out, d.series_distance
        ),
        release="stays",
    ),
    ReportItem(
        "release_cards",
        "table",
        "Linkage attack",
        "Every release of the sweep: the strong attacker's top-1 and top-5 re-identification "
        "rate with its 95 % interval against the bound 1/k stated before the attack, and the "
        "final verdict on its card (card.json: its own check's, unless its pairing with "
        "another certified release exceeds 1/k).",
        lambda d, out: write_table(card_table(d.cards), out, Path(out).with_suffix(".md")),
    ),
    ReportItem(
        "cross_release",
        "table",
        "Linkage attack",
        "Releases of one population held together: the share of release A's series that a "
        "nearest-neighbour join on released values pairs with their own series of release B "
        "(pairs of certified releases only).",
        lambda d, out: write_table(_cross_release(d), out, Path(out).with_suffix(".md")),
    ),
    ReportItem(
        "linkage",
        "figure",
        "Linkage attack",
        "Re-identification rate and reconstruction error against the attacker's estimation error.",
        lambda d, out: fig.plot_linkage(d.linkage, out),
        release="stays",
    ),
    ReportItem(
        "linkage_strong",
        "figure",
        "Linkage attack",
        "The strong attacker: features and observed-hour counts of every released variable "
        "({bound}).",
        lambda d, out: fig.plot_linkage(
            d.linkage.get("strong", {}),
            out,
            title="Strong attacker: every released variable's features and hour counts",
        ),
        release="stays",
    ),
    ReportItem(
        "trust_settings",
        "figure",
        "Utility: in-hospital mortality",
        "ROC-AUC and PR-AUC with 95 % bootstrap intervals: the data owner's baseline (orig. / "
        "orig. on every series variable) and the four trust settings on the released "
        "variables, with the original side as recorded (shipped) and gap-filled like the "
        "release (like-for-like), beside the seed's figures.",
        lambda d, out: fig.plot_trust_settings(d.utility, out),
        release="ihm48",
    ),
    ReportItem(
        "trust_settings_train",
        "table",
        "Utility: in-hospital mortality",
        "Training set (seed Table 6.3): shipped, like-for-like and the seed's figures.",
        _trust_table("train"),
        release="ihm48",
    ),
    ReportItem(
        "trust_settings_test",
        "table",
        "Utility: in-hospital mortality",
        "Test set (seed Table 6.4): shipped, like-for-like and the seed's figures.",
        _trust_table("test"),
        release="ihm48",
    ),
    ReportItem(
        "trust_settings_long_stay",
        "figure",
        "Utility: length of stay > 7 days",
        "The second task, predicted from the same first 48 hours of the ihm48 release: "
        "ROC-AUC and PR-AUC with 95 % bootstrap intervals, the data owner's baseline and "
        "the four trust settings, shipped and like-for-like (the seed has no such task).",
        lambda d, out: fig.plot_trust_settings(d.utility, out, task="long_stay"),
        release="ihm48",
    ),
    ReportItem(
        "trust_settings_long_stay_test",
        "table",
        "Utility: length of stay > 7 days",
        "Test set: shipped and like-for-like, with the data owner's baseline.",
        _trust_table("test", task="long_stay"),
        release="ihm48",
    ),
    ReportItem(
        "duration_methods",
        "table",
        "Duration classes",
        "Seed §6.1 for both duration methods at this dk (the run used {duration_method}): "
        "series moved and suppressed, hours lost per series, and the series whose hour class "
        "holds 1 or at most 5 series before de-identification.",
        lambda d, out: write_table(
            duration_table(d.lengths, d.class_lengths, d.point["dk"], d.duration_method),
            out,
            Path(out).with_suffix(".md"),
        ),
    ),
    ReportItem(
        "sequences_measures",
        "figure",
        "Sequences (seed 004)",
        "Markov-model synthesis of TRANSFERS and CPTEVENTS: the seed's four measures against "
        "eps (seed Figs. 2-5). seed_ratio is the seed's ratio test and is NOT eps-differential "
        "privacy; laplace is eps-DP for the released counts.",
        lambda d, out: plot_sequences(d.sequences, out),
    ),
    ReportItem(
        "sequences_summary",
        "table",
        "Sequences (seed 004)",
        "Mean measures per table, mechanism and eps, with what each mechanism promises.",
        lambda d, out: write_table(sequences_table(d.sequences), out, Path(out).with_suffix(".md")),
    ),
    ReportItem(
        "sequences_friedman",
        "table",
        "Sequences (seed 004)",
        "Friedman tests across the LSH settings (|H|, w), blocks = (eps, repetition).",
        lambda d, out: write_table(
            d.sequences_friedman
            if not d.sequences_friedman.empty
            else pd.DataFrame({"note": ["no sequences sweep in this run"]}),
            out,
            Path(out).with_suffix(".md"),
        ),
    ),
    ReportItem(
        "sequences_attack",
        "table",
        "Sequences (seed 004)",
        "Verbatim-copy attack on each release: released sequences that copy a source sequence "
        "unique in the source, and the membership advantage against a holdout half.",
        lambda d, out: write_table(
            attack_table(d.sequences_attack, d.sequences_verdicts),
            out,
            Path(out).with_suffix(".md"),
        ),
    ),
    ReportItem(
        "tabular_uniqueness",
        "table",
        "Tabular: demographics and procedures",
        "Records alone in their class: demographics and procedure sequences (seed 003 §3.1, §3.2).",
        _tabular_table(tab.uniqueness_table),
    ),
    ReportItem(
        "tabular_loss_vs_suppression",
        "figure",
        "Tabular: demographics and procedures",
        "OLA: information loss of the chosen node against allowed suppression (seed 003 Fig. 6.1).",
        lambda d, out: tab.plot_loss_vs_suppression(d.tabular, out),
    ),
    ReportItem(
        "tabular_nodes_checked",
        "table",
        "Tabular: demographics and procedures",
        "OLA: lattice nodes checked per k and max_sup (seed 003 Table 6.9).",
        _tabular_table(tab.nodes_checked_table),
    ),
    ReportItem(
        "tabular_inverse_ola",
        "table",
        "Tabular: demographics and procedures",
        "Inverse OLA: best k within a loss budget (seed 003 Tables 6.2, 6.3).",
        _tabular_table(tab.inverse_table),
    ),
    ReportItem(
        "tabular_concealing",
        "table",
        "Tabular: demographics and procedures",
        "m-concealing of Inverse OLA's releases when procedures may be known (seed 003 Tables 6.4-6.8).",
        _tabular_table(tab.concealing_table),
    ),
    ReportItem(
        "tabular_dps",
        "table",
        "Tabular: demographics and procedures",
        "DPS: delta per (beta, epsilon) and k (seed 003 §6.2.1).",
        _tabular_table(tab.dps_table),
    ),
    ReportItem(
        "tabular_epsilon_la",
        "figure",
        "Tabular: demographics and procedures",
        "epsilon-safe LA: probability of a good node and suppression per penalty (seed 003 Figs. 6.3, 6.4, C.1).",
        lambda d, out: tab.plot_epsilon_la(d.tabular, out),
    ),
    ReportItem(
        "tabular_release",
        "table",
        "Tabular: demographics and procedures",
        "The OLA release at tabular.release: its node, the records kept and the verdict of "
        "its check (claims T1-T4).",
        _tabular_table(tab.ola_release_table),
    ),
    ReportItem(
        "tabular_joint_risk",
        "table",
        "Tabular: demographics and procedures",
        "Released stays by duration class and demographics: what holding both reveals "
        "(seed 000 §7.2).",
        _tabular_table(tab.joint_risk_table),
    ),
)
ITEMS += (
    ReportItem(
        "codes_distinguishability",
        "figure",
        "Diagnosis codes (seed 002)",
        "Distinguishability of the cohort's diagnosis codes: percent of records matching at "
        "most x population records (seed Fig. 2).",
        lambda d, out: codes_report.plot_distinguishability(d.codes, out),
    ),
    ReportItem(
        "codes_gccens",
        "table",
        "Diagnosis codes (seed 002)",
        "GCCens: CUL statistics by k and by cap (seed Tables 1/2).",
        lambda d, out: codes_report.gccens_table(d.codes, out),
    ),
    ReportItem(
        "codes_lda",
        "table",
        "Diagnosis codes (seed 002)",
        "LDA: information loss and query error of k-anonymous (ICD, age) trajectories, "
        "Baseline vs A-GS alignment.",
        lambda d, out: codes_report.lda_table(d.codes, out),
    ),
)


def _check_audience(audience: str) -> None:
    require_choice(audience, AUDIENCES, "report audience")


def report_items(audience: str) -> tuple[ReportItem, ...]:
    """The :data:`ITEMS` of one audience (``public`` or ``private``), in page order."""
    _check_audience(audience)
    return tuple(i for i in ITEMS if i.audience == audience)


#: The public report's figures and tables (outputs of ``rule report``, Snakemake's HTML bundle).
FIGURES: tuple[str, ...] = tuple(i.name for i in report_items("public") if i.kind == "figure")
TABLES: tuple[str, ...] = tuple(i.name for i in report_items("public") if i.kind == "table")
#: The private report's figures (``rule private_report``, under results/private/report).
PRIVATE_FIGURES: tuple[str, ...] = tuple(
    i.name for i in report_items("private") if i.kind == "figure"
)


def _bound_text(data: ReportData) -> str:
    bound = data.linkage.get("bound")
    if not bound:
        return "no bound measured"
    verdict = "kept: certified" if bound["within"] else "NOT kept: the release is refused"
    low, high = bound.get("strong_top1_ci", (float("nan"), float("nan")))
    return (
        f"top-1 {percent_ci(bound['strong_top1'], low, high)} against the bound 1/k = "
        f"{percent(bound['top1'])} stated "
        f"before the attack: {verdict}"
    )


def _page_text(label: str, audience: str) -> str:
    text = f"Release 'stays', {label}."
    if audience == "private":
        text += (
            " PRIVATE: these figures show original values of individual patients; they stay "
            "with the data owner and are never published."
        )
    return text


def build_report(
    data: ReportData,
    figures_dir: str | os.PathLike,
    tables_dir: str | os.PathLike,
    index_out: str | os.PathLike,
    sweep_csv: str | os.PathLike | None = None,
    audience: str = "public",
    run: Mapping[str, Any] | None = None,
    folders: Mapping[str, str] | None = None,
) -> None:
    """Draw the :data:`ITEMS` entries of ``audience`` and write the HTML index that shows them.

    The page opens on the decision (:func:`mimic_deid.report.decision.decision_section`):
    the best certified ``ihm48`` release per task and setting on the frontier
    (:func:`mimic_deid.report.frontier.best_lines`), then one sentence per release card,
    certified or refused, and the folder to hand out. The
    public report draws certified releases only: an item of a refused release (its
    ``release`` at the point shown) is written as a note saying so, and the sweep overview
    leaves a refused release's utility and perturbation figures empty.

    Parameters
    ----------
    data : ReportData
        Loaded for the same audience (:func:`load_report_data`).
    figures_dir, tables_dir : path
        Where ``<name>.png`` and ``<name>.csv`` (+ ``.md``) are written.
    index_out : path
        The index page; it links the files relative to its own directory.
    sweep_csv : path, optional
        The sweep summary, shown as the last section (public report).
    audience : {"public", "private"}
    run : mapping, optional
        What was run (:func:`mimic_deid.report.front.run_table`: source kind, cohort counts,
        commit and date, parameters); given, the page opens with it and a glossary
        (:func:`~mimic_deid.report.front.front_sections`), and a synthetic run's title says
        so. The series count and the shown point are filled in from ``data``.
    folders : mapping, optional
        Release name (:func:`mimic_deid.evaluate.pairing.release_name`) -> its published
        ``release/`` folder, named in the first screen's sentences.
    """
    base = os.path.dirname(os.fspath(index_out))
    sections: dict[str, list[dict]] = {}
    for item in report_items(audience):
        directory, suffix = (figures_dir, ".png") if item.kind == "figure" else (tables_dir, ".csv")
        path = os.path.join(os.fspath(directory), item.name + suffix)
        note = data.drawable(item.release) if item.release else None
        if note is None:
            item.draw(data, path)
        else:
            _not_drawn(item, path, note)
        caption = item.caption.format(
            main_class=data.main_class,
            small_class=data.small_class,
            bound=_bound_text(data),
            duration_method=data.duration_method,
            ga_worst=ga_caption(data, "worst"),
            ga_median=ga_caption(data, "median"),
        )
        entry = {"kind": item.kind, "path": os.path.relpath(path, base), "caption": caption}
        shown = sections.setdefault(item.section, [])
        if note and note in (e.get("note_text") for e in shown):
            entry |= {"note": NOT_DRAWN_AGAIN, "note_text": note}  # said once per section
        elif note:
            entry |= {"note": note, "note_text": note}
        shown.append(entry)
    p = data.point
    label = f"dk={p['dk']}, fk={p['fk']}, {p['heuristic']} heuristic, method {p['method']}"
    page = [
        {
            "title": title,
            "items": items,
            **({"text": _page_text(label, audience)} if i == 0 else {}),
        }
        for i, (title, items) in enumerate(sections.items())
    ]
    title = "mimic-deid report" if audience == "public" else "mimic-deid private report"
    if run is not None:
        page = front_sections({**run, "series": int(data.lengths.size), "point": label}) + page
        if run.get("source_kind") == "synthetic":
            title += f" ({SYNTHETIC_LABEL})"
    if audience == "public":
        decision = decision_section(data.cards, folders)
        # the best certified release per task and setting first (the frontier's answer)
        decision["decisions"] = frontier_report.best_lines(data.frontier) + decision["decisions"]
        page = [decision] + page
    if sweep_csv is None:
        write_index(index_out, title, page)
        return
    page.append(
        {
            "title": "Sweep",
            "items": [
                {
                    "kind": "table",
                    "path": os.path.relpath(os.fspath(sweep_csv), base),
                    "caption": "One row per sweep point: what the release lost, how often each "
                    "attacker re-identifies a series with exact feature knowledge, and the test "
                    "ROC-AUC of mortality prediction: the data owner's baseline on every "
                    "variable, then each trust setting on the released variables (original side "
                    "as evaluate.utility.cross says), and of the long-stay task. A refused "
                    "release's utility and perturbation cells are left empty (the public report "
                    "draws certified releases only). Every column, attacker error and "
                    "disagreement statistic is in the linked CSV (docs/outputs.md).",
                    "data": sweep_overview(pd.read_csv(sweep_csv), certified_only=True),
                }
            ],
        }
    )
    write_index(index_out, title, page)
