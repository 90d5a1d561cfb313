"""What a release can form at its configured sizes, in words: the largest values that fit,
the report's paragraph for a release of which nothing is published, and the one stop left
(the release the report draws with no series). Issue 48; docs/cohort-sizes.md.

The groups themselves (which split or release cannot form a class, with its counts) are
:func:`mimic_deid.deid.duration.unpublished_groups`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from mimic_deid.core.errors import ConfigError
from mimic_deid.deid.duration import unpublished_groups

__all__ = [
    "DRAWN_RELEASE",
    "SMALL_COHORT_PRESET",
    "largest_fitting",
    "require_drawable",
    "sizes_advice",
]

#: The preset sized for a cohort of about 100 subjects, named by :func:`sizes_advice`.
SMALL_COHORT_PRESET = "config/presets/demo.yaml"


def largest_fitting(unpublished: Sequence[Mapping]) -> str:
    """The largest value of each parameter at fault with which every group forms a class.

    Parameters
    ----------
    unpublished : sequence of mapping
        :func:`unpublished_groups` of a release (or the ``unpublished`` of its card).

    Returns
    -------
    str
        One sentence per parameter, in name order (``The largest dk with which every group
        forms a class: 5``), ``; ``-joined; empty when no group is unpublished.
    """
    parameters = sorted({str(g["parameter"]) for g in unpublished})
    return "; ".join(
        f"The largest {p.removeprefix('deid.')} with which every group forms a class: "
        f"{min(int(g['largest']) for g in unpublished if g['parameter'] == p)}"
        for p in parameters
    )


def sizes_advice(release: str, dk: int, unpublished: Sequence[Mapping]) -> str:
    """Why nothing of a release is published at ``dk``, and which values would fit.

    A release with an unpublished group is refused whole (its check refuses it first,
    :func:`unpublished_groups`), so nothing of it is published; the report's first screen
    says so with this paragraph (:mod:`mimic_deid.report.decision`).

    Parameters
    ----------
    release : str
    dk : int
    unpublished : sequence of mapping
        :func:`unpublished_groups` of the release at ``dk`` (its card's ``unpublished``).

    Returns
    -------
    str
        Empty when every group is published.
    """
    if not unpublished:
        return ""
    return (
        f"Nothing of {release} is published at dk={dk}: "
        + "; ".join(str(g["reason"]) for g in unpublished)
        + f". {largest_fitting(unpublished)}; or run with --configfile {SMALL_COHORT_PRESET} "
        "for a cohort of about 100 subjects (docs/cohort-sizes.md gives the sizes that fit "
        "each cohort size)."
    )


#: The release the report draws (its figures, the privacy baseline, the tuning tables and
#: the curves come from its first sweep point): one of no series leaves them nothing, so
#: :func:`require_drawable` stops the run at its duration classes.
DRAWN_RELEASE = "stays"


def require_drawable(classes: pd.DataFrame, dk: int, release: str) -> None:
    """Stop a run whose :data:`DRAWN_RELEASE` would publish no series, naming sizes and fix.

    Any other release with nothing to publish runs on to its card, refused
    (:func:`unpublished_groups`), and the report says why (:func:`sizes_advice`); the drawn
    release is left out whole only in a cohort of fewer stays than ``dk`` (``stays`` is one
    group), where the run stops here.

    Parameters
    ----------
    classes : DataFrame
        ``duration.parquet`` of the release.
    dk : int
    release : str

    Raises
    ------
    ConfigError
        ``release`` is :data:`DRAWN_RELEASE` and none of its series is published: the message
        names its series, the parameter, the largest value that fits and the preset.
    """
    groups = unpublished_groups(classes, dk)
    if release != DRAWN_RELEASE or not len(classes) or len(groups) < classes["group"].nunique():
        return
    raise ConfigError(
        f"config parameter 'deid/dk': release '{release}' would publish no series, and the "
        "report draws it: " + "; ".join(g["reason"] for g in groups) + f". "
        f"{largest_fitting(groups)}. A cohort this small needs smaller sizes in every stage: "
        f"run with --configfile {SMALL_COHORT_PRESET} (sized for about 100 subjects; "
        "docs/cohort-sizes.md)"
    )
