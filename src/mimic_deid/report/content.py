"""What the report shows: every stage's items gathered in page order, and the function that
builds the page.

Each stage declares, in its :attr:`~mimic_deid.core.stage.Stage.report_module`, a tuple
``ITEMS`` of :class:`~mimic_deid.report.items.ReportItem` (a figure or table, its section,
caption, drawing function and audience) and may give ``caption_fields(data)``, the numbers
its captions name. :func:`report_items` imports those modules by name, in the order given
(:data:`mimic_deid.stages.REPORT_MODULES`: the stage list's order), so this package keeps no
list of stages and a new stage's items need no line here.

``workflow/rules/report.smk`` reads the names of each audience for the outputs of ``rule
report`` and ``rule private_report``, and each public name has a longer caption
``workflow/report/<name>.rst`` for Snakemake's HTML report.
"""

from __future__ import annotations

import importlib
import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from mimic_deid.core.errors import ConfigError, require_choice
from mimic_deid.report import frontier as frontier_report
from mimic_deid.report.decision import decision_section
from mimic_deid.report.front import SYNTHETIC_LABEL, front_sections
from mimic_deid.report.html import write_index
from mimic_deid.report.items import AUDIENCES, ReportData, ReportItem
from mimic_deid.report.plotting import new_figure, no_data, save
from mimic_deid.report.sweep import sweep_overview
from mimic_deid.report.tables import write_table

__all__ = [
    "NOT_DRAWN_AGAIN",
    "build_report",
    "item_names",
    "report_items",
    "stage_items",
]


def stage_items(modules: Sequence[str]) -> tuple[ReportItem, ...]:
    """Every item of the report modules ``modules`` (dotted names), in their order.

    Raises
    ------
    ConfigError
        A module that cannot be imported or has no ``ITEMS``, or an item name given twice.
    """
    items: list[ReportItem] = []
    for name in modules:
        module = _module(name)
        if not hasattr(module, "ITEMS"):
            raise ConfigError(f"report module {name!r}: expected a tuple ITEMS of ReportItem")
        items.extend(module.ITEMS)
    seen: set[str] = set()
    for item in items:
        if item.name in seen:
            raise ConfigError(f"report item {item.name!r}: given by two report modules")
        seen.add(item.name)
    return tuple(items)


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ConfigError(f"report module {name!r}: cannot be imported ({exc})") from exc


def report_items(audience: str, modules: Sequence[str]) -> tuple[ReportItem, ...]:
    """The items of ``modules`` of one audience (``public`` or ``private``), in page order."""
    require_choice(audience, AUDIENCES, "report audience")
    return tuple(i for i in stage_items(modules) if i.audience == audience)


def item_names(audience: str, kind: str, modules: Sequence[str]) -> tuple[str, ...]:
    """The file stems of the ``kind`` (``figure`` / ``table``) items of ``audience``: the
    outputs of ``rule report`` (public) and ``rule private_report`` (private)."""
    return tuple(i.name for i in report_items(audience, modules) if i.kind == kind)


def _caption_fields(data: ReportData, modules: Sequence[str]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name in modules:
        make = getattr(_module(name), "caption_fields", None)
        if make is not None:
            fields |= make(data)
    return fields


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
    *,
    modules: Sequence[str],
) -> None:
    """Draw the :data:`ITEMS` entries of ``audience`` and write the HTML index that shows them.

    The page opens on the decision (:func:`mimic_deid.report.decision.decision_section`),
    led by the best certified ``ihm48`` release per task and setting on the frontier
    (:func:`mimic_deid.report.frontier.best_lines`):
    one sentence per release card, certified or refused, and the folder to hand out. The
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
    modules : sequence of str
        The stages' report modules, in page order (:data:`mimic_deid.stages.REPORT_MODULES`).
    """
    base = os.path.dirname(os.fspath(index_out))
    sections = _draw_items(data, audience, modules, figures_dir, tables_dir, base)
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
    if sweep_csv is not None:
        page.append(_sweep_section(data, os.path.relpath(os.fspath(sweep_csv), base)))
    write_index(index_out, title, page)


def _draw_items(
    data: ReportData,
    audience: str,
    modules: Sequence[str],
    figures_dir: str | os.PathLike,
    tables_dir: str | os.PathLike,
    base: str,
) -> dict[str, list[dict]]:
    """Draw every item of ``audience`` (or its note when not drawn); its page entries by
    section, in page order."""
    sections: dict[str, list[dict]] = {}
    fields = _caption_fields(data, modules)
    for item in report_items(audience, modules):
        directory, suffix = (figures_dir, ".png") if item.kind == "figure" else (tables_dir, ".csv")
        path = os.path.join(os.fspath(directory), item.name + suffix)
        note = data.drawable(item.release) if item.release else None
        if note is None:
            item.draw(data, path)
        else:
            _not_drawn(item, path, note)
        caption = item.caption.format(**fields)
        entry = {"kind": item.kind, "path": os.path.relpath(path, base), "caption": caption}
        shown = sections.setdefault(item.section, [])
        if note and note in (e.get("note_text") for e in shown):
            entry |= {"note": NOT_DRAWN_AGAIN, "note_text": note}  # said once per section
        elif note:
            entry |= {"note": note, "note_text": note}
        shown.append(entry)
    return sections


def _sweep_section(data: ReportData, link: str) -> dict:
    """The public report's last section: the sweep overview, linking the whole CSV."""
    return {
        "title": "Sweep",
        "items": [
            {
                "kind": "table",
                "path": link,
                "caption": "One row per sweep point: what the release lost, how often each "
                "attacker re-identifies a series with exact feature knowledge, and the test "
                "ROC-AUC of mortality prediction: the data owner's baseline on every "
                "variable, then each trust setting on the released variables (original side "
                "as evaluate.utility.cross says), and of the long-stay task. A refused "
                "release's utility and perturbation cells are left empty (the public report "
                "draws certified releases only). Every column, attacker error and "
                "disagreement statistic is in the linked CSV (docs/outputs.md).",
                "data": sweep_overview(
                    data.sweep if data.sweep is not None else pd.DataFrame(), certified_only=True
                ),
            }
        ],
    }
