"""Joint re-identification risk of the ``stays`` release and the demographics (seed 000 §7.2).

A recipient of the series release sees each series' duration class; one who also holds the
demographics of seed 003 can intersect both. :func:`joint_risk` joins every released stay
(duration class > 0) to its subject's demographics and reports, per view, the equivalence
classes of the stays: the duration class alone, the demographics alone (original, and
generalised at the node OLA chooses for the demographics with the release's k and max_sup),
and both together. Stays whose subject has no complete demographics row are counted apart.
Given a series release that publishes demographics with the series (config
``release.demographics``), a last view is what its recipient holds: the release index's
duration class and published demographics, which the release keeps at >= fk series
(:mod:`mimic_deid.deid.demographics`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from mimic_deid.core.errors import require_columns
from mimic_deid.deid.hierarchy import encode
from mimic_deid.pipeline.cohort import STAY_DEMOGRAPHICS
from mimic_deid.tabular.anonymity import class_sizes
from mimic_deid.tabular.demographics import DEMOGRAPHIC_QIS
from mimic_deid.tabular.ola import ola

__all__ = ["joint_risk"]


def _row(view: str, codes: np.ndarray, cards: Sequence[int]) -> dict:
    n = int(codes.shape[0])
    if n == 0:
        return {"view": view, "stays": 0, "classes": 0, "mean_class_size": 0.0,
                "unique": 0, "unique_percent": 0.0, "smallest_class": 0}  # fmt: skip
    _, sizes = class_sizes(codes, cards)
    unique = int(np.count_nonzero(sizes == 1))
    return {
        "view": view,
        "stays": n,
        "classes": int(sizes.size),
        "mean_class_size": n / sizes.size,
        "unique": unique,
        "unique_percent": 100.0 * unique / n,
        "smallest_class": int(sizes.min()),
    }


def joint_risk(
    duration: pd.DataFrame,
    stays: pd.DataFrame,
    demographics: pd.DataFrame,
    hierarchies: Mapping,
    k: int,
    max_sup: float,
    metric: str = "prec",
    release_index: pd.DataFrame | None = None,
    release_name: str = "",
) -> pd.DataFrame:
    """Equivalence classes of the released stays under each view of an attacker's knowledge.

    Parameters
    ----------
    duration : DataFrame
        ``duration.parquet`` of the ``stays`` release: ``icustay_id``, ``class_length``
        (0 = suppressed).
    stays : DataFrame
        The cohort: ``icustay_id``, ``subject_id``.
    demographics : DataFrame
        The demographics table without procedures (``subject_id`` and the
        :data:`~mimic_deid.tabular.demographics.DEMOGRAPHIC_QIS`).
    hierarchies : mapping
        :func:`~mimic_deid.deid.hierarchy.load_hierarchies` output.
    k, max_sup, metric :
        OLA's parameters for the generalised view (seed 003's release settings).
    release_index : DataFrame, optional
        A ``stays`` series release's ``index.parquet``: ``duration_class`` and its published
        demographics (any of :data:`~mimic_deid.pipeline.cohort.STAY_DEMOGRAPHICS`).
    release_name : str
        Names that release in the view (e.g. its method label).

    Returns
    -------
    DataFrame
        One row per view: ``view``, ``stays``, ``classes``, ``mean_class_size``, ``unique``,
        ``unique_percent``, ``smallest_class``; the generalised views name OLA's levels; a last
        row counts the released stays without demographics.
    """
    require_columns(duration, ["icustay_id", "class_length"], "duration classes")
    require_columns(stays, ["icustay_id", "subject_id"], "cohort stays")
    require_columns(demographics, ["subject_id", *DEMOGRAPHIC_QIS], "demographics table")
    released = duration.loc[duration["class_length"] > 0, ["icustay_id", "class_length"]]
    released = released.merge(stays[["icustay_id", "subject_id"]], on="icustay_id", how="inner")
    joined = released.merge(
        demographics[["subject_id", *DEMOGRAPHIC_QIS]], on="subject_id", how="inner"
    )
    joined = joined.sort_values("icustay_id", kind="stable").reset_index(drop=True)
    qis = list(DEMOGRAPHIC_QIS)
    _, duration_codes = np.unique(joined["class_length"].to_numpy(), return_inverse=True)
    duration_codes = duration_codes.reshape(-1, 1).astype(np.int64)
    d_card = [int(duration_codes.max()) + 1 if len(joined) else 1]
    enc = encode(joined, qis, hierarchies, "demographics of the released stays")
    original = enc.generalised(np.zeros(len(qis), dtype=np.int64))
    o_cards = [h.cardinalities[0] for h in enc.hierarchies]
    rows = [
        _row("duration class", duration_codes, d_card),
        _row("demographics", original, o_cards),
        _row(
            "duration class x demographics",
            np.column_stack([duration_codes, original]),
            d_card + o_cards,
        ),
    ]
    table = encode(demographics, qis, hierarchies, "demographics table")
    if len(joined) and table.n_rows >= k:
        node = ola(table, k, max_sup, metric).node
        levels = ", ".join(f"{c} {lv}" for c, lv in zip(qis, node, strict=True))
        gen = enc.generalised(node)
        g_cards = [h.cardinalities[lv] for h, lv in zip(enc.hierarchies, node, strict=True)]
        rows.append(_row(f"demographics at OLA k={k} ({levels})", gen, g_cards))
        rows.append(
            _row(
                f"duration class x demographics at OLA k={k}",
                np.column_stack([duration_codes, gen]),
                d_card + g_cards,
            )
        )
    if release_index is not None:
        published = [c for c in STAY_DEMOGRAPHICS if c in release_index.columns]
        codes = release_index.groupby(["duration_class", *published], sort=True).ngroup()
        codes = codes.to_numpy(dtype=np.int64).reshape(-1, 1)
        shown = " x ".join(published) if published else "no demographics"
        rows.append(
            _row(
                f"release index: duration class x {shown} ({release_name})",
                codes,
                [int(codes.max()) + 1 if len(codes) else 1],
            )
        )
    missing = len(released) - len(joined)
    rows.append(
        {
            **_row("released stays without demographics", np.zeros((0, 1), np.int64), [1]),
            "stays": missing,
        }
    )
    return pd.DataFrame(rows)
