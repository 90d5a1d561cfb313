"""Pseudonymous release: pseudonyms and the assembly of the public tables.

Public tables (docs/architecture.md, "Artefacts"):

- series: ``pseudonym`` (string), ``hour`` (int32, 0-based from the first kept hour), dims;
  sorted by (pseudonym, hour);
- index: ``pseudonym``, ``duration_class`` (int32), ``split`` (string; only a release
  de-identified per split, whose classes and demographic cells are counted within it: a
  release de-identified as a whole, ``stays``, drops it, since a split would divide its
  classes below dk and its cells below fk), then the published
  demographics (string, one column each, generalised: :mod:`mimic_deid.deid.demographics`)
  and, if given, the labels of :data:`mimic_deid.deid.duration.LABELS` (int8: ``label`` =
  in-hospital mortality, ``long_stay``); sorted by pseudonym, so row order reveals nothing
  about the private ids.

The privacy claims of a release are verified by :mod:`mimic_deid.deid.check`; the tables are
staged privately and reach their public directory only through :func:`publish_release`, once
the check certifies them, with the release card and the data dictionary
(:mod:`mimic_deid.deid.dictionary`); a refused release's directory holds :data:`REFUSED_FILE`
and the card instead.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from os import PathLike
from pathlib import Path

import numpy as np
import pandas as pd

from mimic_deid.core.atomic import atomic_dir, read_json
from mimic_deid.core.errors import ConfigError, InputDataError, require_columns
from mimic_deid.core.logs import get_logger
from mimic_deid.core.seeding import derive_rng
from mimic_deid.deid.classes import KEY, class_frame, dims_of, iter_class_arrays
from mimic_deid.deid.duration import LABELS
from mimic_deid.deid.missing import fill_missing_hours
from mimic_deid.deid.plausible import PlausibleValues, project

log = get_logger(__name__)

#: What a refused release's public directory holds: its verdict, one line.
REFUSED_FILE = "refused.txt"
#: The release card's name in the public directory, certified or refused.
CARD_FILE = "card.json"

PSEUDONYM_PREFIX = "P"
PSEUDONYM_HEX_DIGITS = 12
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def make_pseudonyms(n: int, rng: np.random.Generator | int) -> np.ndarray:
    """Random, unique, non-sequential pseudonyms ``'P' + 12 hex digits``.

    Parameters
    ----------
    n : int
        Number of pseudonyms.
    rng : numpy.random.Generator or int
        Source of randomness (an int is used as a seed); the same seeded generator gives the
        same pseudonyms.

    Returns
    -------
    ndarray of str, shape (n,)
        Unique pseudonyms; duplicates (probability ~ n^2 / 2^49) are redrawn.
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise ConfigError(f"number of pseudonyms must be an integer >= 0, got {n!r}")
    rng = rng if isinstance(rng, np.random.Generator) else derive_rng(rng)
    width = 1 + PSEUDONYM_HEX_DIGITS

    def draw(count: int) -> np.ndarray:
        chars = np.empty((count, width), dtype=np.uint8)
        chars[:, 0] = ord(PSEUDONYM_PREFIX)
        chars[:, 1:] = _HEX[rng.integers(0, 16, size=(count, PSEUDONYM_HEX_DIGITS))]
        return chars.view(f"S{width}").ravel().astype(f"U{width}")

    out = draw(int(n))
    while True:
        _, first = np.unique(out, return_index=True)
        dup = np.ones(out.size, dtype=bool)
        dup[first] = False
        if not dup.any():
            return out
        out[dup] = draw(int(dup.sum()))


def assemble_release(
    series_private: pd.DataFrame,
    duration: pd.DataFrame,
    pseudonyms: pd.DataFrame,
    labels: pd.DataFrame | None = None,
    *,
    dims: list[str] | None = None,
    key_col: str = "icustay_id",
    demographics: pd.DataFrame | None = None,
    publish_split: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Replace private ids by pseudonyms and build the public series and index tables.

    Parameters
    ----------
    series_private : DataFrame
        Perturbed, trimmed series: ``key_col``, ``hour``, dims (hour 0 = first kept hour).
    duration : DataFrame
        ``key_col``, ``split``, ``class_length`` (0 = suppressed) for every input series
        (``duration.parquet``).
    pseudonyms : DataFrame
        ``key_col``, ``pseudonym`` for every released series.
    labels : DataFrame, optional
        ``key_col`` and every meta column of :data:`~mimic_deid.deid.duration.LABELS`
        (e.g. ``meta.parquet``); gives the index's label columns.
    dims : list of str, optional
        Dimension columns in release order; default: every series column but key and hour.
    key_col : str
    demographics : DataFrame, optional
        ``key_col`` and the published (generalised) demographics of every released series
        (``targets.parquet``'s label columns).
    publish_split : bool
        Publish each series' ``split``: only for a release de-identified per split
        (:data:`~mimic_deid.deid.duration.GROUP_BY_SPLIT`), whose duration classes and
        demographic cells are formed and checked within each split. A release de-identified as
        a whole withholds it: its classes hold at least dk series, and its cells fk, only
        over all splits together.

    Returns
    -------
    series_public : DataFrame
        ``pseudonym``, ``hour`` (int32), dims; sorted by (pseudonym, hour).
    index_public : DataFrame
        ``pseudonym``, ``duration_class`` (int32), [``split``], [demographics (str)],
        [``label``, ``long_stay`` (int8)]; sorted by pseudonym.

    Raises
    ------
    InputDataError
        A column is missing, a released series has no (or a repeated) pseudonym, a series row
        belongs to no released series, or a label is missing.
    """
    require_columns(series_private, [key_col, "hour"], "private series table")
    require_columns(duration, [key_col, "split", "class_length"], "duration table")
    require_columns(pseudonyms, [key_col, "pseudonym"], "pseudonym table")
    if dims is None:
        dims = [c for c in series_private.columns if c not in (key_col, "hour")]
    require_columns(series_private, dims, "private series table")

    released = duration.loc[duration["class_length"].to_numpy() > 0, [key_col, "split"]].copy()
    released["duration_class"] = (
        duration.loc[duration["class_length"].to_numpy() > 0, "class_length"]
        .to_numpy()
        .astype(np.int32)
    )
    if released[key_col].duplicated().any():
        raise InputDataError(f"duration table repeats a '{key_col}'")
    if pseudonyms[key_col].duplicated().any() or pseudonyms["pseudonym"].duplicated().any():
        raise InputDataError("pseudonym table repeats a series key or a pseudonym")
    index = released.merge(pseudonyms[[key_col, "pseudonym"]], on=key_col, how="left")
    if index["pseudonym"].isna().any():
        raise InputDataError(
            f"pseudonym table: {int(index['pseudonym'].isna().sum())} released series have no "
            f"pseudonym; expected one row per released '{key_col}'"
        )
    demo_cols = [
        c for c in (demographics.columns if demographics is not None else []) if c != key_col
    ]
    if demographics is not None:
        index = _with_demographics(index, demographics, demo_cols, key_col)
    if labels is not None:
        index = _with_labels(index, labels, key_col)
    series_public = _public_series(series_private, index, dims, key_col)

    cols = ["pseudonym", "duration_class", *(["split"] if publish_split else []), *demo_cols]
    cols += list(LABELS.values()) if labels is not None else []
    index_public = index[cols].copy()
    for c in demo_cols:
        index_public[c] = index_public[c].astype(str)
    index_public["pseudonym"] = index_public["pseudonym"].astype(str)
    if publish_split:
        index_public["split"] = index_public["split"].astype(str)
    index_public = index_public.sort_values("pseudonym", kind="stable").reset_index(drop=True)
    log.info("release assembled: %d series, %d rows", len(index_public), len(series_public))
    return series_public, index_public


def _with_demographics(
    index: pd.DataFrame, demographics: pd.DataFrame, demo_cols: list[str], key_col: str
) -> pd.DataFrame:
    """The index with every released series' published demographics."""
    require_columns(demographics, [key_col], "demographics table")
    index = index.merge(demographics.drop_duplicates(key_col), on=key_col, how="left")
    lost = int(index[demo_cols].isna().any(axis=1).sum()) if demo_cols else 0
    if lost:
        raise InputDataError(
            f"demographics table: {lost} released series have no published demographics; "
            f"expected one row per released '{key_col}'"
        )
    return index


def _with_labels(index: pd.DataFrame, labels: pd.DataFrame, key_col: str) -> pd.DataFrame:
    """The index with every released series' public labels (:data:`LABELS`, int8)."""
    require_columns(labels, [key_col, *LABELS], "label table")
    lab = labels[[key_col, *LABELS]].drop_duplicates(key_col)
    index = index.merge(lab, on=key_col, how="left")
    for label_col, public in LABELS.items():
        if index[label_col].isna().any():
            raise InputDataError(
                f"label table: {int(index[label_col].isna().sum())} released series have "
                f"no '{label_col}'; expected one row per released '{key_col}'"
            )
        index[public] = index.pop(label_col).to_numpy().astype(np.int8)
    return index


def _public_series(
    series_private: pd.DataFrame, index: pd.DataFrame, dims: list[str], key_col: str
) -> pd.DataFrame:
    """The released series under their pseudonyms, sorted by (pseudonym, hour)."""
    row_keys = series_private[key_col].to_numpy()
    known = np.isin(row_keys, index[key_col].to_numpy())
    if not known.all():
        raise InputDataError(
            f"private series table: {int((~known).sum())} rows belong to no released series "
            "(suppressed or unknown); trim the series to the duration classes first"
        )
    pmap = pd.Series(index["pseudonym"].to_numpy(), index=index[key_col].to_numpy())
    series_public = pd.DataFrame(
        {
            "pseudonym": pmap.reindex(row_keys).to_numpy().astype(str),
            "hour": series_private["hour"].to_numpy().astype(np.int32),
        }
    )
    for d in dims:
        series_public[d] = series_private[d].to_numpy(dtype=np.float64)
    series_public = series_public.sort_values(["pseudonym", "hour"], kind="stable")
    return series_public.reset_index(drop=True)


def pseudonymous_release(
    perturbed: pd.DataFrame,
    classes: pd.DataFrame,
    meta: pd.DataFrame,
    seed: int,
    salt: str,
    variables: list[str] | None = None,
    labelled: bool = True,
    demographics: pd.DataFrame | None = None,
    plausible: PlausibleValues | None = None,
    publish_split: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Replace identifiers with random per-release pseudonyms: the public release.

    Only ``variables`` are published, each with its missing-hours pattern withheld
    (:func:`~mimic_deid.deid.missing.fill_missing_hours`, per duration class), then projected
    onto its plausible values (:func:`~mimic_deid.deid.plausible.project`: the method's values
    are already plausible, :func:`~mimic_deid.deid.methods.apply_method`; this snaps the class
    means that fill a never-observed discrete variable to its value set).

    Parameters
    ----------
    perturbed : DataFrame
        group, class_length, icustay_id, hour, dims (``perturbed.parquet``).
    classes : DataFrame
        ``duration.parquet`` of the release.
    meta : DataFrame
        icustay_id and the label columns of :data:`~mimic_deid.deid.duration.LABELS`
        (``meta.parquet``): give the index's labels.
    seed : int
        Master seed.
    salt : str
        Names the release (its path), so two releases made with the same master seed get
        unrelated pseudonyms.
    variables : list of str, optional
        The variables published (default: every dimension of ``perturbed``); the others are
        withheld.
    labelled : bool
        Publish the outcome labels (only the release that needs them, ``ihm48``).
    demographics : DataFrame, optional
        icustay_id and the published demographics (as :func:`assemble_release`).
    plausible : PlausibleValues, optional
        The plausible values of the published variables (``config/variables.yaml``); the
        workflow always gives them. None: the filled values as they are.
    publish_split : bool
        As :func:`assemble_release` (the workflow: the release's
        :data:`~mimic_deid.deid.duration.GROUP_BY_SPLIT`).

    Returns
    -------
    series_public, index_public : DataFrame
        As :func:`assemble_release`.
    pseudonyms : DataFrame
        icustay_id, pseudonym (private: the key back to the patients).
    """
    dims = (
        variables
        if variables is not None
        else dims_of(perturbed.drop(columns=["group", "class_length"]))
    )
    require_columns(perturbed, ["group", "class_length", KEY, "hour", *dims], "perturbed series")
    plausible = plausible.select(dims) if plausible is not None else None

    def publishable(X: np.ndarray) -> np.ndarray:
        filled = fill_missing_hours(X)
        return filled if plausible is None else project(filled, plausible)

    filled = [
        class_frame(cls, publishable(cls.X), dims) for cls in iter_class_arrays(perturbed, dims)
    ]
    published = (
        pd.concat(filled, ignore_index=True).drop(columns=["group", "class_length"])
        if filled
        else perturbed[[KEY, "hour", *dims]].iloc[0:0]
    )
    keys = np.sort(published[KEY].unique())
    pseudonyms = pd.DataFrame(
        {KEY: keys, "pseudonym": make_pseudonyms(len(keys), derive_rng(seed, "pseudonyms", salt))}
    )
    series_public, index_public = assemble_release(
        published,
        classes,
        pseudonyms,
        labels=meta[[KEY, *LABELS]] if labelled else None,
        dims=dims,
        demographics=demographics,
        publish_split=publish_split,
    )
    return series_public, index_public, pseudonyms


def release_verdict(check: Mapping, card: str | PathLike | None = None) -> dict:
    """The final verdict of a release: its card's ``passed`` and ``verdict`` when it has a
    card (the check's, unless a pairing refuses it: :mod:`mimic_deid.evaluate.card`), else its
    check's.

    Raises
    ------
    InputDataError
        The card holds no ``passed`` or ``verdict``.
    """
    source, name = (check, "check") if card is None else (read_json(card), f"card {card}")
    missing = [key for key in ("passed", "verdict") if key not in source]
    if missing:
        raise InputDataError(f"{name}: missing key(s) {missing}; expected the release's verdict")
    return {"passed": bool(source["passed"]), "verdict": str(source["verdict"])}


def publish_release(
    check: Mapping,
    staged: Mapping[str, str | PathLike],
    public_dir: str | PathLike,
    card: str | PathLike | None = None,
    documents: Mapping[str, str] | None = None,
) -> list[str]:
    """Publish a checked release, or withhold it: the public directory, written atomically.

    The card's verdict decides when a card is given (:func:`release_verdict`): a release its
    check certified is still withheld when the card refuses it (its pairing with another
    certified release, issue 45.2).

    Parameters
    ----------
    check : mapping
        The release's ``check.json`` (:func:`mimic_deid.deid.check.check_sweep_point` or
        :func:`~mimic_deid.sequences.check.check_sequence_release`): ``passed`` and ``verdict``.
    staged : mapping of str to path
        Public file name -> the staged (private) file it is a copy of.
    public_dir : path
        The release's public directory; replaced as a whole.
    card : path, optional
        The release card (:func:`mimic_deid.evaluate.card.release_card`), copied in as
        :data:`CARD_FILE` whatever the verdict: a refused release's folder says why. Its
        ``passed`` and ``verdict`` are the final verdict.
    documents : mapping of str to str, optional
        File name -> text written beside a certified release (its data dictionary,
        :mod:`mimic_deid.deid.dictionary`); never beside a refused one, since it describes
        the values withheld.

    Returns
    -------
    list of str
        The file names the directory holds, sorted: those of ``staged`` and ``documents``
        when the release is certified, else only :data:`REFUSED_FILE` (the verdict:
        ``refused: <claim>: <figures>``); and :data:`CARD_FILE` when ``card`` is given.
    """
    documents = dict(documents or {})
    verdict = release_verdict(check, card)
    with atomic_dir(public_dir) as tmp:
        if verdict["passed"]:
            for name, source in staged.items():
                shutil.copyfile(source, tmp / name)
            for name, text in documents.items():
                (tmp / name).write_text(text, encoding="utf-8")
            names = [*staged, *documents]
        else:
            (tmp / REFUSED_FILE).write_text(f"{verdict['verdict']}\n", encoding="utf-8")
            names = [REFUSED_FILE]
        if card is not None:
            shutil.copyfile(card, tmp / CARD_FILE)
            names.append(CARD_FILE)
    log.info("%s: %s", Path(public_dir), "published" if verdict["passed"] else "withheld")
    return sorted(names)
