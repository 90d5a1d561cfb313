"""One printed format per kind of quantity, for the report, the card's text and log lines.

A reader meets the same quantity in the report's pages and tables, in a release's verdict
(``check.json`` and ``card.json``) and in the logs; each kind is printed one way everywhere
(issue 44.6):

- a **rate** (a share of series, records or patients, stored as a fraction in [0, 1]) in
  percent with :data:`DECIMALS` ``["percent"]`` decimal: ``12.3 %``; with its 95 % interval
  ``12.3 % (95 % interval 10.1 to 14.6 %)`` in a sentence and ``12.3 [10.1, 14.6] %`` in a
  table cell;
- an **AUC** (ROC-AUC, PR-AUC) with :data:`DECIMALS` ``["auc"]`` decimals: ``0.731``, and
  ``0.731 [0.702, 0.760]`` with its interval;
- any other **measure** (unfeasibility, distortion, Δ-AUC, a loss) with 3 significant digits
  and at most :data:`DECIMALS` ``["measure"]`` decimals (:func:`measure`); counts are whole
  numbers with thousands separators (:func:`count`).

Machine-readable artefacts (JSON, the full CSVs) keep full precision; these functions are for
text a person reads. A missing or non-finite value prints as :data:`NOT_AVAILABLE`.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "DECIMALS",
    "NOT_AVAILABLE",
    "auc",
    "auc_ci",
    "count",
    "finite",
    "measure",
    "percent",
    "percent_cell",
    "percent_ci",
]

#: Decimals printed per kind of quantity (rates in percent, AUCs, other measures at most).
DECIMALS: dict[str, int] = {"percent": 1, "auc": 3, "measure": 3}
#: What a missing value prints as.
NOT_AVAILABLE = "n/a"


def finite(value: Any) -> float | None:
    """``value`` as a float, or None when it is missing, not a number or not finite."""
    if value is None or isinstance(value, bool):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _pct(fraction: Any) -> str | None:
    v = finite(fraction)
    return None if v is None else f"{100.0 * v:.{DECIMALS['percent']}f}"


def percent(fraction: Any) -> str:
    """A rate given as a fraction, in percent: ``0.1234 -> "12.3 %"``."""
    text = _pct(fraction)
    return NOT_AVAILABLE if text is None else f"{text} %"


def percent_ci(fraction: Any, low: Any, high: Any) -> str:
    """A rate and its 95 % interval (fractions) for a sentence:
    ``"12.3 % (95 % interval 10.1 to 14.6 %)"``; the rate alone without an interval."""
    lo, hi = _pct(low), _pct(high)
    if _pct(fraction) is None or lo is None or hi is None:
        return percent(fraction)
    return f"{percent(fraction)} (95 % interval {lo} to {hi} %)"


def percent_cell(fraction: Any, low: Any = None, high: Any = None) -> str:
    """A rate and its 95 % interval (fractions) for a table cell: ``"12.3 [10.1, 14.6] %"``."""
    text, lo, hi = _pct(fraction), _pct(low), _pct(high)
    if text is None:
        return NOT_AVAILABLE
    if lo is None or hi is None:
        return f"{text} %"
    return f"{text} [{lo}, {hi}] %"


def auc(value: Any) -> str:
    """An area under a curve (ROC-AUC, PR-AUC): ``0.73124 -> "0.731"``."""
    v = finite(value)
    return NOT_AVAILABLE if v is None else f"{v:.{DECIMALS['auc']}f}"


def auc_ci(value: Any, low: Any = None, high: Any = None) -> str:
    """An AUC and its 95 % interval: ``"0.731 [0.702, 0.760]"``; the AUC alone without one."""
    if finite(value) is None:
        return NOT_AVAILABLE
    if finite(low) is None or finite(high) is None:
        return auc(value)
    return f"{auc(value)} [{auc(low)}, {auc(high)}]"


def measure(value: Any) -> str:
    """Any other measure: 3 significant digits, at most :data:`DECIMALS` ``["measure"]``
    decimals, whole numbers kept whole (``8.6216 -> "8.62"``, ``0.85123 -> "0.851"``,
    ``80183.2 -> "80183"``, ``0.00012 -> "0.00012"``, ``9.0 -> "9"``)."""
    v = finite(value)
    if v is None:
        return NOT_AVAILABLE
    if float(v).is_integer():
        return str(int(v))
    if abs(v) < 10.0 ** -DECIMALS["measure"]:
        return f"{v:.2g}"
    places = 3 - int(math.floor(math.log10(abs(v)))) - 1
    places = min(max(places, 0), DECIMALS["measure"])
    return f"{round(v, places):.{places}f}"


def count(value: Any) -> str:
    """A count with thousands separators: ``7975 -> "7,975"``."""
    v = finite(value)
    return NOT_AVAILABLE if v is None else f"{int(round(v)):,}"
