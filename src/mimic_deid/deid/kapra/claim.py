"""Claim 11 of a (k,P) release (seed 001 §2.2.2): its k-groups, pattern words and envelope
midpoints, checked on the published series; and the registry's ``claims`` hook."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mimic_deid.core.claims import ClaimInputs
from mimic_deid.core.errors import ReleaseCheckError, require_columns
from mimic_deid.deid.classes import KEY, unit_keys
from mimic_deid.deid.plausible import PlausibleValues, project_variable

__all__ = ["check_kp_groups", "claims"]


def _project_flat(
    flat: np.ndarray, lengths: np.ndarray, plausible: PlausibleValues, var: str
) -> np.ndarray:
    """Series laid end to end (``lengths`` hours each) projected onto ``var``'s plausible
    values, as :func:`~mimic_deid.deid.plausible.project` projects them in a class."""
    out = np.empty_like(flat)
    starts = np.cumsum(lengths) - lengths
    for length in np.unique(lengths):
        at = starts[lengths == length][:, None] + np.arange(length)[None, :]
        out[at] = project_variable(flat[at], plausible, var)
    return out


def _off_midpoint(
    grouped: pd.DataFrame, rows: pd.DataFrame, var: str, plausible: PlausibleValues | None
) -> int:
    """Released values of ``var`` (``rows``: pseudonym, hour, var) that are not the midpoint
    of the envelope ``lo_<var>``/``hi_<var>`` of ``grouped`` (0 if there is no envelope),
    projected onto the variable's plausible values when ``plausible`` names it."""
    lo_col, hi_col = f"lo_{var}", f"hi_{var}"
    if not {lo_col, hi_col} <= set(grouped.columns):
        return 0
    lengths = grouped[lo_col].map(len).to_numpy(dtype=np.int64)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    mid = 0.5 * (
        np.concatenate(grouped[lo_col].to_list()) + np.concatenate(grouped[hi_col].to_list())
    )
    if plausible is not None and var in plausible.dims:
        mid = _project_flat(mid, lengths, plausible, var)
    env = pd.DataFrame(
        {
            KEY: np.repeat(grouped[KEY].to_numpy(), lengths),
            "hour": np.arange(int(lengths.sum())) - starts,
            "mid": mid,
        }
    )
    both = rows.merge(env.merge(grouped[[KEY, "pseudonym"]], on=KEY), on=["pseudonym", "hour"])
    return int((both[var].to_numpy() != both["mid"].to_numpy()).sum())


def check_kp_groups(
    per_series: pd.DataFrame,
    series_public: pd.DataFrame,
    pseudonyms: pd.DataFrame,
    k: int,
    P: int,
    plausible: PlausibleValues | None = None,
) -> dict:
    """Claim 11: the (k,P)-anonymity of a release made by a (k,P) method (seed 001 §2.2.2).

    Parameters
    ----------
    per_series : DataFrame
        The method's ``method.parquet``: icustay_id, group, class_length and per grouped
        variable ``k_group_<var>`` (-1 where the class never observed it), ``sax_level_<var>``
        and ``word_<var>``; with ``lo_<var>``/``hi_<var>`` (the envelope, one value per hour)
        every released value is also checked to be the envelope's midpoint (projected onto
        its plausible values when ``plausible`` is given, as every release is:
        :func:`~mimic_deid.deid.plausible.project`).
    series_public : DataFrame
        ``release/series.parquet``.
    pseudonyms : DataFrame
        icustay_id, pseudonym.
    k, P : int
    plausible : PlausibleValues, optional
        The plausible values of the released variables.

    Returns
    -------
    dict
        ``k``, ``P``, ``variables``, ``k_groups`` (over variables), ``smallest_k_group``,
        ``smallest_word_share`` and ``breach_bound`` (``1 / P``).
    """
    variables = sorted(
        c.removeprefix("k_group_") for c in per_series.columns if c.startswith("k_group_")
    )
    if not variables:
        raise ReleaseCheckError(
            "(k,P) groups: the method's per-series table has no 'k_group_<variable>' column"
        )
    keys = unit_keys(per_series)
    require_columns(per_series, [KEY, *keys], "method per-series table", ReleaseCheckError)
    n_groups, smallest, share = 0, None, None
    for var in variables:
        kg, lv, word = f"k_group_{var}", f"sax_level_{var}", f"word_{var}"
        require_columns(per_series, [lv, word], "method per-series table", ReleaseCheckError)
        grouped = per_series[per_series[kg] >= 0]
        sizes = grouped.groupby([*keys, kg], sort=True).size()
        if len(sizes) and sizes.min() < k:
            raise ReleaseCheckError(
                f"(k,P) groups: variable '{var}': {int((sizes < k).sum())} k-group(s) under "
                f"k={k}, smallest {int(sizes.min())} series"
            )
        shares = grouped.groupby([*keys, kg, lv, word], sort=True).size()
        if len(shares) and shares.min() < P:
            raise ReleaseCheckError(
                f"(k,P) groups: variable '{var}': {int((shares < P).sum())} pattern word(s) "
                f"shared by fewer than P={P} series of their k-group, smallest {int(shares.min())}"
            )
        if var in series_public.columns and len(grouped):
            member = grouped[[KEY, *keys, kg]].merge(pseudonyms, on=KEY)
            rows = series_public[["pseudonym", "hour", var]].merge(
                member.drop(columns=[KEY]), on="pseudonym"
            )
            spread = rows.groupby([*keys, kg, "hour"], sort=True)[var].agg(["min", "max"])
            if (spread["max"] > spread["min"]).any():
                raise ReleaseCheckError(
                    f"(k,P) groups: variable '{var}': series of one k-group publish different "
                    "values (the release is not the k-group's envelope midpoint)"
                )
            off = _off_midpoint(grouped.merge(pseudonyms, on=KEY), rows, var, plausible)
            if off:
                raise ReleaseCheckError(
                    f"(k,P) groups: variable '{var}': {off} released value(s) differ from "
                    "their k-group's envelope midpoint"
                )
        n_groups += len(sizes)
        if len(sizes):
            smallest = int(sizes.min()) if smallest is None else min(smallest, int(sizes.min()))
            share = int(shares.min()) if share is None else min(share, int(shares.min()))
    return {
        "k": int(k),
        "P": int(P),
        "variables": variables,
        "k_groups": n_groups,
        "smallest_k_group": smallest,
        "smallest_word_share": share,
        "breach_bound": 1.0 / P,
    }


def claims(point: ClaimInputs) -> dict:
    """The method's claim (claim 11 of :mod:`mimic_deid.deid.check`): ``{"kp_groups": ...}``
    (:func:`check_kp_groups` with the point's k, the label's P and the plausible values)."""
    return {
        "kp_groups": check_kp_groups(
            point.per_series,
            point.series_public,
            point.pseudonyms,
            point.k,
            point.params["P"],
            point.plausible,
        )
    }
