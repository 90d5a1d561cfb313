"""The series stage's report items: the seed's figures and tables of the sweep point shown.

Each :class:`~mimic_deid.report.items.ReportItem` of :data:`ITEMS` names a figure (PNG) or
table (CSV + Markdown), its section, caption, the function that draws it from the loaded run
and its *audience*:

- ``public`` items (``results/report/``, bundled by ``snakemake --report``) draw released
  values, aggregates and attack measures only. The report's reader
  (:func:`mimic_deid.report.inputs.load_report_data`) for the public report refuses the GA
  inputs and keeps no original series or features in memory
  (:data:`~mimic_deid.evaluate.curves.ORIGINAL_KEYS`), so no public item can draw one; the
  original lengths stay in memory for the counts of ``duration_methods``
  (tests/report/test_report_audience.py checks every public figure and table for a sentinel
  value and a sentinel length);
- ``private`` items (``results/private/report/``, owner-only) show original values of
  individual patients: what the release method did to one patient's series (the GA examples,
  seed Figs 6.2/6.3, and seed Fig. 3.1 with the original target,
  ``disagreement_example_original``), and the original lengths of stay, whose rare long stays
  are single patients drawn at their exact length (``duration_classes``, seed Fig. 6.1, and
  ``records_lost``). The public report keeps the duration classes in counts
  (``duration_methods``: series alone or in at most 5 per hour class).

:func:`caption_fields` gives the numbers the captions name (``{main_class}``, ``{bound}``, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from mimic_deid.core.numbers import measure, percent, percent_ci
from mimic_deid.deid.tuning import TUNED_METHODS
from mimic_deid.evaluate.curves import ORIGINAL_KEYS
from mimic_deid.report import disagreement as dis
from mimic_deid.report import figures as fig
from mimic_deid.report import frontier as frontier_report
from mimic_deid.report.decision import certified_names
from mimic_deid.report.items import ReportData, ReportItem
from mimic_deid.report.tables import (
    card_table,
    cross_release_table,
    optimiser_table,
    trust_settings_table,
    write_table,
)

__all__ = ["ITEMS", "caption_fields", "example_target", "ga_caption"]


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
        dis.plot_summary_disagreement(
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
        dis.plot_disagreement_curves(None, np.empty((0, 0)), np.empty(0), data.main_class or 0, out)
        return
    dis.plot_disagreement_curves(
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
        dis.plot_disagreement_example(
            empty, empty, empty, empty, np.empty(0), np.empty(0), 0.0, 0.0, 0, None, 0, {}, out
        )
        return
    r = c["result"]
    label, unit = data.units.get(c["variable"], (c["variable"], ""))
    dis.plot_disagreement_example(
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
            "distance": dis.distance_unit(data.series_distance),
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


#: The series stage's figures and tables in page order.
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
        lambda d, out: fig.plot_records_lost(d.lengths, d.class_lengths, d.records_lost, out),
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
        lambda d, out: dis.plot_first_disagreement_cdf(
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
            d.duration_methods,
            out,
            Path(out).with_suffix(".md"),
        ),
    ),
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


def caption_fields(data: ReportData) -> dict[str, object]:
    """The fields the series items' captions name, from the loaded run."""
    return {
        "main_class": data.main_class,
        "small_class": data.small_class,
        "bound": _bound_text(data),
        "duration_method": data.duration_method,
        "ga_worst": ga_caption(data, "worst"),
        "ga_median": ga_caption(data, "median"),
    }
