"""The report's figure plumbing: style, new figures, atomic PNG output and their description.

Every report module that draws (:mod:`~mimic_deid.report.figures`, the comparator stages'
:mod:`~mimic_deid.report.sequences` and :mod:`~mimic_deid.report.tabular`) builds its figures
with :func:`new_figure` (a :class:`matplotlib.figure.Figure` rendered by Agg, never through
``pyplot``) and writes them with :func:`save`, which returns a :data:`FigureInfo` that tests
read instead of the image.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

from mimic_deid.core.atomic import atomic_path

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn: the workflow imports the
    # report's item registry when it starts, and matplotlib costs it about a second
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "DPI",
    "NO_DATA",
    "ORIGINAL_COLOR",
    "RELEASE_COLOR",
    "SUPPRESSED_COLOR",
    "STYLE",
    "FigureInfo",
    "corner_note",
    "describe",
    "legend",
    "new_figure",
    "no_data",
    "save",
    "two_decimals",
]

FigureInfo = dict[str, Any]
"""``{"path", "title", "axes": [{"title", "xlabel", "ylabel", "xscale", "yscale",
"legend"}]}``."""

#: Original (pre-release) data is green, the de-identified release blue (seed Fig. 6.6), a
#: suppressed series red.
ORIGINAL_COLOR = "tab:green"
RELEASE_COLOR = "tab:blue"
SUPPRESSED_COLOR = "tab:red"

#: Resolution of every report PNG.
DPI = 120
#: What an empty panel says.
NO_DATA = "no data"

STYLE = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "figure.titlesize": 12,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "lines.linewidth": 1.6,
    "savefig.facecolor": "white",
}


def new_figure(width: float, height: float) -> Figure:
    """A figure of ``width`` x ``height`` inches in the report's style, constrained layout."""
    import matplotlib as mpl
    from matplotlib.figure import Figure

    with mpl.rc_context(STYLE):
        return Figure(figsize=(width, height), layout="constrained")


def describe(fig: Figure, out_path: str | os.PathLike) -> FigureInfo:
    """The :data:`FigureInfo` of ``fig`` (axes without title and axis lines are left out)."""
    axes = []
    for ax in fig.axes:
        if not ax.axison and not ax.get_title():
            continue
        legend = ax.get_legend()
        axes.append(
            {
                "title": ax.get_title(),
                "xlabel": ax.get_xlabel(),
                "ylabel": ax.get_ylabel(),
                "xscale": ax.get_xscale(),
                "yscale": ax.get_yscale(),
                "legend": [t.get_text() for t in legend.get_texts()] if legend else [],
            }
        )
    suptitle = fig.get_suptitle() if hasattr(fig, "get_suptitle") else ""
    return {"path": os.fspath(out_path), "title": suptitle, "axes": axes}


def save(fig: Figure, out_path: str | os.PathLike) -> FigureInfo:
    """Write ``fig`` as PNG atomically and describe it."""
    import matplotlib as mpl

    with mpl.rc_context(STYLE):
        info = describe(fig, out_path)
        with atomic_path(out_path, suffix=".png") as tmp:
            fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})
    return info


def no_data(ax: Axes, message: str = NO_DATA) -> None:
    """Mark ``ax`` as empty: centred message, no ticks, labels kept."""
    from matplotlib.ticker import NullLocator

    ax.text(
        0.5,
        0.5,
        message,
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize=13,
        color="0.4",
    )
    ax.set_xticks([])
    ax.set_yticks([])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_minor_locator(NullLocator())
    ax.grid(False)


def corner_note(ax: Axes, text: str) -> None:
    """A small grey note in the upper right of ``ax``, under where a legend goes."""
    ax.text(0.98, 0.8, text, transform=ax.transAxes, ha="right", va="top", fontsize=9, color="0.3")


def legend(ax: Axes, **kwargs: Any) -> None:
    """A legend on ``ax`` when it has labelled artists (none otherwise)."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(**kwargs)


def two_decimals(value: float) -> str:
    """A figure's number with two decimals, ``n/a`` when not finite."""
    return "n/a" if not math.isfinite(value) else f"{value:.2f}"
