"""Cross-release linkage: how well two releases of one population pair series to series.

A recipient who holds two releases of the same patients (two methods of a sweep; the ``stays``
and the ``ihm48`` release of one method) can join them: for every series of release A it takes
the series of release B whose released values look most alike. Each correct pair puts
together what the two releases protect apart (e.g. a ``stays`` series' duration class and an
``ihm48`` series' outcome labels). This module measures that join as the data owner sees it,
with the pseudonym maps that only the owner holds.

Attacker. Released values are summarised per series by the strong attacker's statistics
(:data:`~mimic_deid.deid.features.ATTACKER_STATS`: mean, variance, min, max and observed
hours of every variable the two releases both publish), each standardised by its standard
deviation over both releases; the partner of a series of A is its nearest series of B
(:func:`~mimic_deid.evaluate.distances.nearest_feature_distances`: the exact distances of
:func:`~mimic_deid.evaluate.distances.feature_distances` where they decide; ties shared as in the linkage
attack: ``t`` equally near candidates count ``1/t`` if the true partner is among them).

The attacker family (docs/threat-model.md) pairs too: :func:`shape_pairing_rate` is its
``shape`` member across releases. Each series' first :data:`SHAPE_HOURS` hours (at most; the
hours both releases have) of every variable both publish are z-normalised over the series' own
observed hours, and the partner is the nearest by root-mean-square difference per value
compared (:func:`mimic_deid.evaluate.attackers.znormalise`), ties shared as above, on the same
sample of targets. The cross-release table reports both and the stronger.

Pairs (:func:`release_pairs`). Every two releases of the sweep: all of them are releases of
one population, whatever their method, dk, fk or heuristic, and a recipient may hold any two.
Their number grows with the square of the sweep (each pair is linear in the release), which is
one more reason for the rule of docs/releases.md: publish one release per population.

Rate. The share of A's series (those whose person is also in B) paired with their own
series of B, with its 95 % Wilson interval. Chance (:func:`cell_chance`) is what guessing
achieves among the candidates a target cannot tell apart from its partner by the published
indexes: the series of B that publish the target's values in every index column both releases
publish (duration class, split, each demographic, each label), leaving out, target by target,
a column on which the target and its own partner differ (a different dk, a generalisation at
another level); ``1 / |cell|`` averaged over the targets (``1 / |B|`` without the indexes). For a large
release the targets are a random sample of ``max_targets`` series of A
(:data:`RELEASE_TARGETS`, drawn from the given generator by
:func:`~mimic_deid.evaluate.linkage.sample_targets`, as the privacy rule draws its targets in
a class), so the cost is ``O(max_targets * |B| * features)``: linear in the release. Series
that publish the same values (:func:`~mimic_deid.core.arrays.distinct_rows`: a
microaggregation release publishes each cluster's mean for all its members) are compared
once, each distinct series of B counting as many candidates as publish it, so a release of
``k``-groups costs ``1 / k`` of that on its side and the rates are those of every target
against every series.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from mimic_deid.core.arrays import distinct_rows
from mimic_deid.core.errors import InputDataError
from mimic_deid.core.seeding import derive_rng
from mimic_deid.deid.classes import KEY
from mimic_deid.evaluate.attackers import znormalise
from mimic_deid.evaluate.distances import nearest_feature_distances, series_distances
from mimic_deid.evaluate.linkage import rate_interval, sample_targets

__all__ = [
    "RELEASE_TARGETS",
    "cell_chance",
    "group_intersections",
    "pair_generator",
    "pair_row",
    "pair_table",
    "pairing_rate",
    "pairs_of",
    "release_k",
    "release_name",
    "release_pairs",
    "SHAPE_HOURS",
    "series_shapes",
    "series_statistics",
    "shape_pairing_rate",
]

#: Hours of each series (from its first released hour) the shape pairing compares, at most.
SHAPE_HOURS = 48

#: Series of release A attacked at most (a random sample above it).
RELEASE_TARGETS = 2000
_TIE = 1e-9


def pair_generator(seed: int, a: str, b: str) -> np.random.Generator:
    """The random stream of the pairing of releases ``a`` and ``b`` (its sample of targets):
    ``derive_rng(seed, "pairing", a, b)``."""
    return derive_rng(seed, "pairing", a, b)


def series_statistics(series: pd.DataFrame, variables: list[str]) -> pd.DataFrame:
    """Per-series mean, variance, min, max and observed hours of each variable.

    Parameters
    ----------
    series : DataFrame
        A release's long table: ``pseudonym``, ``hour``, one column per variable.
    variables : list of str

    Returns
    -------
    DataFrame, indexed by pseudonym
        Columns ``<variable>_<statistic>``; NaN where a series never observed the variable.
    """
    missing = [v for v in ["pseudonym", *variables] if v not in series.columns]
    if missing:
        raise InputDataError(f"release series: missing column(s) {missing}")
    grouped = series.groupby("pseudonym", sort=True)[variables]
    parts = {
        "mean": grouped.mean(),
        "var": grouped.var(ddof=0),
        "min": grouped.min(),
        "max": grouped.max(),
        "count": grouped.count().astype(np.float64),
    }
    out = pd.concat({stat: frame for stat, frame in parts.items()}, axis=1)
    out.columns = [f"{var}_{stat}" for stat, var in out.columns]
    return out


def pairing_rate(
    stats_a: pd.DataFrame,
    keys_a: pd.Series,
    stats_b: pd.DataFrame,
    keys_b: pd.Series,
    rng: np.random.Generator,
    max_targets: int = RELEASE_TARGETS,
    index_a: pd.DataFrame | None = None,
    index_b: pd.DataFrame | None = None,
) -> dict:
    """Share of release A's series that a nearest-neighbour join pairs with their own in B.

    Parameters
    ----------
    stats_a, stats_b : DataFrame, indexed by pseudonym
        :func:`series_statistics` of the two releases (the common columns are used).
    keys_a, keys_b : Series
        Pseudonym -> the person's private key (``icustay_id``) of each release.
    rng : numpy.random.Generator
        Draws the sample of targets when A has more than ``max_targets`` series in B.
    max_targets : int
    index_a, index_b : DataFrame, optional
        The two releases' published indexes (``index.parquet``): the chance is then
        :func:`cell_chance`'s.

    Returns
    -------
    dict
        ``targets`` (A's series attacked), ``candidates`` (B's series), ``paired`` (expected
        correct pairs), ``rate`` (fraction), ``rate_ci`` ([low, high], 95 % Wilson),
        ``chance`` (:func:`cell_chance` with the indexes, else ``1 / candidates``),
        ``chance_columns`` (the index columns both publish, ``;``-joined; empty without the
        indexes), ``features`` (statistics compared).
    """
    columns = [c for c in stats_a.columns if c in set(stats_b.columns)]
    if not columns:
        raise InputDataError("cross-release pairing: the two releases share no variable")
    A = stats_a[columns].to_numpy(dtype=np.float64)
    B = stats_b[columns].to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore"):
        scale = np.nanstd(np.vstack([A, B]), axis=0)
    return _pair(
        (stats_a.index, keys_a, index_a, A),
        (stats_b.index, keys_b, index_b, B),
        lambda rows, columns: nearest_feature_distances(A[rows], B[columns], scale, tie=_TIE),
        len(columns),
        rng,
        max_targets,
    )


def _pair(side_a, side_b, distances, features: int, rng, max_targets: int) -> dict:
    """The pairing both attackers share: the targets, then a block of at most 256 of them at a
    time against every series of B, then the chance; each side is ``(pseudonyms, keys,
    published index or None, values)``, ``values`` shape ``(n, m)`` the compared values of
    each series (NaN = not published).

    Identical series are compared once (a microaggregation release publishes each cluster's
    mean for every member): ``distances(rows, columns)`` gives the distances of A's series at
    ``rows`` to B's at ``columns``, shape ``(len(rows), len(columns))``, and is asked for the
    distinct targets against the distinct series of B only; each distinct series of B counts
    as many candidates as series publish it (:func:`_shared_hits`), so the rate is the one
    of every target against every series of B.
    """
    (names_a, keys_a, index_a, values_a), (names_b, keys_b, index_b, values_b) = side_a, side_b
    in_both, truth = _targets(names_a, keys_a, names_b, keys_b, max_targets, rng)
    first_b, which_b, many_b = distinct_rows(values_b)
    first_a, which_a, _ = distinct_rows(values_a[in_both])
    hits = np.zeros(in_both.size, dtype=np.float64)
    for start in range(0, first_a.size, 256):
        block = np.arange(start, min(start + 256, first_a.size))
        D = distances(in_both[first_a[block]], first_b)
        targets = np.flatnonzero((which_a >= start) & (which_a < start + 256))
        hits[targets] = _shared_hits(D, which_a[targets] - start, which_b[truth[targets]], many_b)
    # summed by blocks of 256 targets in sample order, as ever
    paired = sum(float(np.sum(hits[s : s + 256])) for s in range(0, hits.size, 256))
    chance = _chance(names_a[in_both], names_b[truth], index_a, index_b, len(names_b))
    return _pairing(paired, int(in_both.size), len(names_b), chance, features)


def _targets(names_a, keys_a, names_b, keys_b, max_targets, rng) -> tuple[np.ndarray, np.ndarray]:
    """The targets of a pairing (A's series whose own series B publishes, a sample of at most
    ``max_targets``) and the position of each one's own series in B."""
    own_a = keys_a.reindex(names_a).to_numpy()
    position = {key: i for i, key in enumerate(keys_b.reindex(names_b).to_numpy())}
    in_both = np.flatnonzero([key in position for key in own_a])
    in_both = in_both[sample_targets(in_both.size, max_targets, rng)]
    return in_both, np.array([position[key] for key in own_a[in_both]], dtype=np.int64)


def _pairing(paired: float, n: int, candidates: int, chance: dict, features: int) -> dict:
    """The result of :func:`pairing_rate` (also :func:`shape_pairing_rate`'s)."""
    return {
        "targets": n,
        "candidates": candidates,
        "paired": paired,
        "rate": paired / n if n else float("nan"),
        "rate_ci": list(rate_interval(paired, n)),
        **chance,
        "features": features,
    }


def _chance(targets, partners, index_a, index_b, candidates: int) -> dict:
    """``chance`` and ``chance_columns`` of a pairing: :func:`cell_chance` or ``1 / |B|``."""
    if index_a is None or index_b is None:
        return {"chance": 1.0 / candidates if candidates else float("nan"), "chance_columns": ""}
    chance, columns = cell_chance(targets, partners, index_a, index_b)
    return {"chance": chance, "chance_columns": ";".join(columns)}


def cell_chance(
    targets: pd.Index, partners: pd.Index, index_a: pd.DataFrame, index_b: pd.DataFrame
) -> tuple[float, list[str]]:
    """What guessing achieves among the candidates the published indexes leave a target.

    Parameters
    ----------
    targets : Index of str, shape (n,)
        The pseudonyms in release A of the series attacked.
    partners : Index of str, shape (n,)
        The pseudonym in release B of each target's own series (the owner's knowledge; it
        decides only which columns a target can be matched on, never the candidates' values).
    index_a, index_b : DataFrame
        The two releases' indexes: ``pseudonym`` and the published columns (duration class,
        split, demographics, labels).

    Returns
    -------
    chance : float
        Mean over the targets of ``1 / |cell|``, the cell being the series of B that publish
        the target's value in every column both indexes hold on which the target agrees with
        its partner (so the partner is always in its cell); NaN without targets.
    columns : list of str
        The index columns both releases publish (those compared).

    Raises
    ------
    InputDataError
        An index lacks ``pseudonym`` or a target or partner.
    """
    for name, index, wanted in (("A", index_a, targets), ("B", index_b, partners)):
        if "pseudonym" not in index.columns:
            raise InputDataError(f"release index {name}: missing column 'pseudonym'")
        absent = pd.Index(wanted).difference(index["pseudonym"])
        if len(absent):
            raise InputDataError(
                f"release index {name}: {len(absent)} series of the pairing have no row; "
                "expected one row per released series"
            )
    columns = [c for c in index_a.columns if c != "pseudonym" and c in set(index_b.columns)]
    if not len(targets):
        return float("nan"), columns
    if not columns:
        return 1.0 / len(index_b), columns
    A = index_a.set_index("pseudonym").loc[targets, columns].astype(str).reset_index(drop=True)
    P = index_b.set_index("pseudonym").loc[partners, columns].astype(str).reset_index(drop=True)
    B = index_b[columns].astype(str)
    agree = A.to_numpy() == P.to_numpy()
    sizes = np.empty(len(A), dtype=np.float64)
    patterns, which = np.unique(agree, axis=0, return_inverse=True)
    for p, pattern in enumerate(patterns):
        rows = np.flatnonzero(which.ravel() == p)
        cols = [c for c, kept in zip(columns, pattern, strict=True) if kept]
        if not cols:
            sizes[rows] = len(B)
            continue
        counts = B.groupby(cols, sort=False).size().rename("_n").reset_index()
        sizes[rows] = A.iloc[rows][cols].merge(counts, on=cols, how="left")["_n"].to_numpy()
    return float(np.mean(1.0 / sizes)), columns


def series_shapes(
    series: pd.DataFrame, variables: list[str], hours: int = SHAPE_HOURS
) -> tuple[pd.Index, np.ndarray]:
    """The first ``hours`` hours of every series of a release, as an array.

    Parameters
    ----------
    series : DataFrame
        A release's long table: ``pseudonym``, ``hour``, one column per variable.
    variables : list of str
    hours : int

    Returns
    -------
    pseudonyms : Index
        The series, sorted (as :func:`series_statistics`' index).
    X : ndarray, shape (n, hours, len(variables))
        Values by series, hour and variable; NaN where not published.
    """
    missing = [v for v in ["pseudonym", "hour", *variables] if v not in series.columns]
    if missing:
        raise InputDataError(f"release series: missing column(s) {missing}")
    index = pd.Index(np.unique(series["pseudonym"].to_numpy()), name="pseudonym")
    early = series[series["hour"].to_numpy() < hours]
    rows = index.get_indexer(early["pseudonym"])
    X = np.full((len(index), hours, len(variables)), np.nan)
    X[rows, early["hour"].to_numpy(dtype=np.int64)] = early[variables].to_numpy(np.float64)
    return index, X


def shape_pairing_rate(
    shapes_a: tuple[pd.Index, np.ndarray, list[str]],
    keys_a: pd.Series,
    shapes_b: tuple[pd.Index, np.ndarray, list[str]],
    keys_b: pd.Series,
    rng: np.random.Generator,
    **options: Any,
) -> dict:
    """:func:`pairing_rate` of the shape attacker (module docstring).

    Parameters
    ----------
    shapes_a, shapes_b : tuple
        ``(pseudonyms, X, variables)`` of each release (:func:`series_shapes` and its
        variables); the variables both publish and the hours both hold are compared.
    keys_a, keys_b, rng
        As :func:`pairing_rate` (the same generator draws the same sample of targets).
    **options
        ``max_targets``, ``index_a``, ``index_b``: as :func:`pairing_rate`.

    Returns
    -------
    dict
        As :func:`pairing_rate`; ``features`` is the number of (hour, variable) values compared
        per series at most.
    """
    unknown = sorted(set(options) - {"max_targets", "index_a", "index_b"})
    if unknown:
        raise TypeError(f"shape_pairing_rate: unexpected option {unknown[0]!r}")
    names_a, X_a, vars_a = shapes_a
    names_b, X_b, vars_b = shapes_b
    common = [v for v in vars_a if v in set(vars_b)]
    if not common:
        raise InputDataError("cross-release pairing: the two releases share no variable")
    # the hours both releases hold (a 48 h release beside a longer one: its 48 h)
    hours = min(_hours_held(X_a), _hours_held(X_b))
    Z_a = znormalise(X_a[:, :hours, [vars_a.index(v) for v in common]])
    Z_b = znormalise(X_b[:, :hours, [vars_b.index(v) for v in common]])

    def distances(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        d, counts = series_distances(Z_a[rows], Z_b[columns], return_counts=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return d / np.sqrt(counts)

    width = hours * len(common)  # the values compared per series (a release may have none)
    return _pair(
        (names_a, keys_a, options.get("index_a"), Z_a.reshape(len(Z_a), width)),
        (names_b, keys_b, options.get("index_b"), Z_b.reshape(len(Z_b), width)),
        distances,
        width,
        rng,
        options.get("max_targets", RELEASE_TARGETS),
    )


def _hours_held(X: np.ndarray) -> int:
    """One past the last hour that any series of ``X`` (n, hours, D) publishes."""
    held = np.flatnonzero((~np.isnan(X)).any(axis=(0, 2)))
    return int(held[-1]) + 1 if held.size else 0


def _shared_hits(
    D: np.ndarray, rows: np.ndarray, own: np.ndarray, counts: np.ndarray
) -> np.ndarray:
    """Expected correct pairs of each target: ``t`` equally near candidates count ``1 / t``.

    ``D`` (r, u): distances of r distinct targets to the u distinct series of B, each standing
    for ``counts[j]`` series; target ``i`` is distinct target ``rows[i]`` and its own series
    is distinct series ``own[i]``.
    """
    D = np.where(np.isnan(D), np.inf, D)
    best = D.min(axis=1, keepdims=True)
    tied = D <= best + _TIE
    near = tied.astype(np.int64) @ counts
    return tied[rows, own] / near[rows]


def release_pairs(points: list[dict], releases: tuple[str, ...] = ("stays", "ihm48")) -> list:
    """The pairs of releases :func:`pairing_rate` measures: every two (module docstring).

    Parameters
    ----------
    points : list of dict
        The sweep points (dk, fk, heuristic, method), in sweep order.
    releases : tuple of str
        The release names; in a pair of two kinds the later kind (``ihm48``, the smaller
        release) gives the targets.

    Returns
    -------
    list of ((release, point), (release, point))
        Release A (the targets) and release B (the candidates): first every two points of one
        release kind, in sweep order, kind by kind; then every pair of two kinds.
    """
    out = []
    for release in releases:
        out += [((release, a), (release, b)) for i, a in enumerate(points) for b in points[i + 1 :]]
    for i, first in enumerate(releases):
        for later in releases[i + 1 :]:
            out += [((later, a), (first, b)) for a in points for b in points]
    return out


def release_name(release: str, point: dict) -> str:
    """One release of a sweep as a name: ``<release>_<dk>_<fk>_<heuristic>_<method>``."""
    return "_".join([release, *(str(point[k]) for k in ("dk", "fk", "heuristic", "method"))])


def release_k(name: str) -> int:
    """The fk of a release named by :func:`release_name` (its third field: the release kind and
    dk hold no underscore)."""
    try:
        return int(name.split("_")[2])
    except (IndexError, ValueError):
        raise InputDataError(
            f"release name '{name}': expected <release>_<dk>_<fk>_<heuristic>_<method>"
        ) from None


def pairs_of(table: pd.DataFrame, name: str) -> list[dict]:
    """The rows of a cross-release table (rule ``cross_release``) that involve release
    ``name``, each with ``other`` (the other release's name) and ``as`` (``a``: this release's
    series were the targets; ``b``: the candidates)."""
    out = []
    for row in table.to_dict("records"):
        if name in (row["release_a"], row["release_b"]):
            side = "a" if row["release_a"] == name else "b"
            other = row["release_b"] if side == "a" else row["release_a"]
            out.append({"other": other, "as": side, **row})
    return out


def group_intersections(groups_a: pd.DataFrame, groups_b: pd.DataFrame, k: int) -> dict[str, float]:
    """Share of the people in two releases whose published groups intersect in fewer than ``k``.

    A recipient who can tell the groups of each release apart (e.g. the k-groups of a (k,P)
    release, whose members publish identical values) intersects a person's group in release A
    with their group in release B: the people in both are the candidates for that person.

    Parameters
    ----------
    groups_a, groups_b : DataFrame
        The groups each release lets a recipient recover (a release method's ``groups`` hook,
        :class:`~mimic_deid.deid.methods.ReleaseMethod`): ``icustay_id`` and one column per
        grouping, group ids unique over the release (-1: not grouped).
    k : int
        The releases' k.

    Returns
    -------
    dict
        Grouping column (both releases have) -> percent of the people grouped in both whose
        intersection holds fewer than ``k`` people (the owner's measure; the recipient sees
        the groups, not who is in them).
    """
    columns = [c for c in groups_a.columns if c != KEY and c in groups_b.columns]
    out = {}
    for column in columns:
        a = groups_a.loc[groups_a[column] >= 0, [KEY, column]]
        b = groups_b.loc[groups_b[column] >= 0, [KEY, column]]
        both = a.merge(b, on=KEY, suffixes=("_a", "_b"))
        if both.empty:
            continue
        size = both.groupby([f"{column}_a", f"{column}_b"], sort=False)[KEY].transform("size")
        out[column] = float(100.0 * (size < k).mean())
    return out


def pair_row(
    a: str,
    b: str,
    k: int,
    seed: int,
    release_a: tuple,
    release_b: tuple,
    groups: tuple[pd.DataFrame, pd.DataFrame] | None = None,
) -> dict:
    """One row of the cross-release table: releases ``a`` and ``b`` paired by the summary
    attacker (:func:`pairing_rate`) and the shape attacker (:func:`shape_pairing_rate`), each
    drawing its targets from its own :func:`pair_generator` (so the row depends on ``seed``,
    ``a`` and ``b`` only, never on the other pairs or the process that computes it), and,
    with ``groups`` (the two releases' recovered groups), :func:`group_intersections` below
    ``k``.

    ``release_a`` and ``release_b`` are ``(statistics, keys, shapes, index)``:
    :func:`series_statistics`, the pseudonym -> ``icustay_id`` map, :func:`series_shapes`
    plus the dims, and the release index. The certification columns are the caller's.
    """
    stats_a, keys_a, shapes_a, index_a = release_a
    stats_b, keys_b, shapes_b, index_b = release_b
    cells = {"index_a": index_a, "index_b": index_b}
    result = pairing_rate(stats_a, keys_a, stats_b, keys_b, pair_generator(seed, a, b), **cells)
    low, high = result.pop("rate_ci")
    row = {**result, "rate_lo": low, "rate_hi": high}
    # the attacker family's shape member on the same targets (docs/threat-model.md)
    shape = shape_pairing_rate(
        shapes_a, keys_a, shapes_b, keys_b, pair_generator(seed, a, b), **cells
    )
    row["shape_rate"] = shape["rate"]
    row["shape_rate_lo"], row["shape_rate_hi"] = shape["rate_ci"]
    row["strongest_attacker"] = "shape" if shape["rate"] > result["rate"] else "summary"
    row["strongest_rate"] = max(shape["rate"], result["rate"])
    if groups is not None:  # two releases with recoverable groups: intersections below k
        below = group_intersections(*groups, k)
        row["groups_below_k_pct_max"] = max(below.values()) if below else float("nan")
        row["groups_below_k_column"] = max(below, key=below.get) if below else ""
    return row


def pair_table(rows: pd.DataFrame, certified: dict[str, bool]) -> pd.DataFrame:
    """The cross-release table: the pairing rows with whether each release is certified.

    Parameters
    ----------
    rows : DataFrame
        One row per pair (:func:`pair_row`, after ``release_a`` and ``release_b``: the two
        releases' names), as rule ``pair_releases`` writes them.
    certified : dict of str to bool
        Every release's verdict (its check's ``passed``), by name.

    Returns
    -------
    DataFrame
        ``rows`` with ``certified_a`` and ``certified_b`` after the two names (``rows``
        itself when there is no pair).

    Raises
    ------
    InputDataError
        A release of a pair has no verdict.
    """
    names = [*rows.get("release_a", []), *rows.get("release_b", [])]
    missing = sorted(set(names) - set(certified))
    if missing:
        raise InputDataError(
            f"cross-release table: no check for release(s) {missing}; expected one verdict "
            "per release of the sweep"
        )
    out = rows.copy()
    if not len(out):  # no pair: nothing to mark
        return out
    for position, side in enumerate(("a", "b"), start=2):
        out.insert(position, f"certified_{side}", [certified[n] for n in rows[f"release_{side}"]])
    return out
