"""State & time Markovian models and their ensembles (seed 004 §3.1-3.4, §3.6).

An :class:`Ensemble` holds the STMMs (Definition 6, Eqs. 9-12) of every support level
(Definition 8) as count tables keyed by an integer model id:

- ``start``: model, state, count, length_mean, length_sd (StartStateFreq, Eq. 10),
- ``hour``: model, hour (0-23), count, length_mean, length_sd (StartTimeFreq, Eq. 11),
- ``trans``: model, a, b, count, time_mean, time_sd (Transition, Eq. 12),
- ``neighbour``: a, b, count: sequences holding both states (§3.6, for repairs).

*Length* is the section's duration in hours in the STE (Definition 9, Eq. 13) and the number
of sections in the CTE (Definition 10, Eq. 14), whose states are clusters. Standard
deviations are population sds (ddof = 0). ``models`` names each id: level, factor, cluster,
value. Factors (Definition 7) are evaluated at each record's time: ``weekday`` (Monday = 0),
``hour``, ``month`` (0-11), ``year``, and ``duration`` (the section's duration,
``min(floor(log2(1 + hours)), 15)``, a fixed data-independent binning).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mimic_deid.core.errors import ConfigError

__all__ = [
    "CTE_LEVELS",
    "FACTORS",
    "STE_LEVELS",
    "Ensemble",
    "factor_values",
    "fit_ensemble",
    "model_codes",
]

STE_LEVELS = ("cluster&factor", "factor", "cluster", "all")
CTE_LEVELS = ("factor", "all")
FACTORS = ("weekday", "hour", "month", "year", "duration")
COUNT_TABLES = ("start", "hour", "trans", "neighbour")


def factor_values(name: str, hours: np.ndarray, duration: np.ndarray | None = None) -> np.ndarray:
    """Value of factor ``name`` at times ``hours`` (hours since 1970), int64 of the same shape."""
    hours = np.asarray(hours, dtype=np.float64)
    if name == "weekday":
        return ((np.floor(hours / 24.0) + 3) % 7).astype(np.int64)
    if name == "hour":
        return (np.floor(hours) % 24).astype(np.int64)
    if name in ("month", "year"):
        t = (hours * 3600.0).astype("datetime64[s]")
        if name == "month":
            return (t.astype("datetime64[M]").astype(np.int64) % 12).astype(np.int64)
        return t.astype("datetime64[Y]").astype(np.int64) + 1970
    if name == "duration":
        if duration is None:
            raise ValueError("factor 'duration' needs the section durations")
        return np.minimum(np.floor(np.log2(1.0 + np.maximum(duration, 0.0))), 15).astype(np.int64)
    raise ConfigError(f"sequences: unknown factor {name!r}; expected one of {list(FACTORS)}")


def model_codes(
    level: np.ndarray, factor: np.ndarray, cluster: np.ndarray, value: np.ndarray
) -> np.ndarray:
    """One int64 per model key (level code, factor code or -1, cluster or -1, value or -1)."""
    return ((level * 8 + factor + 1) * 1_000_003 + cluster + 1) * 100_003 + value + 1


@dataclass
class Ensemble:
    """The STMMs of one ensemble (STE or CTE); see the module docstring for the tables."""

    name: str
    levels: tuple[str, ...]
    factors: tuple[str, ...]
    n_states: int
    models: pd.DataFrame
    start: pd.DataFrame
    hour: pd.DataFrame
    trans: pd.DataFrame
    neighbour: pd.DataFrame
    extra: dict = field(default_factory=dict)

    def model_key_codes(self) -> np.ndarray:
        m = self.models
        return model_codes(
            m["level_code"].to_numpy(), m["factor_code"].to_numpy(),
            m["cluster"].to_numpy(), m["value"].to_numpy(),
        )  # fmt: skip


def _memberships(
    levels: tuple[str, ...], factors: dict[str, np.ndarray], cluster: np.ndarray | None, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """(row index, model code) of every (row, model) membership of ``n`` rows."""
    rows, codes = [], []
    names = list(factors)
    none = np.full(n, -1, dtype=np.int64)
    for lv in levels:
        lcode = np.full(n, STE_LEVELS.index(lv), dtype=np.int64)
        if lv in ("all", "cluster"):
            c = cluster if lv == "cluster" else none
            rows.append(np.arange(n))
            codes.append(model_codes(lcode, none, c, none))
        else:
            for fi, f in enumerate(names):
                c = cluster if lv == "cluster&factor" else none
                rows.append(np.arange(n))
                codes.append(model_codes(lcode, np.full(n, fi), c, factors[f]))
    return np.concatenate(rows), np.concatenate(codes)


def _agg(df: pd.DataFrame, keys: list[str], value: str, prefix: str) -> pd.DataFrame:
    g = df.groupby(keys, sort=True)[value]
    out = g.agg(["size", "mean", "std"]).reset_index()
    out["std"] = g.std(ddof=0).to_numpy()
    return out.rename(columns={"size": "count", "mean": f"{prefix}_mean", "std": f"{prefix}_sd"})


def _neighbours(seq: np.ndarray, state: np.ndarray) -> pd.DataFrame:
    """How many sequences hold both states a and b (a != b): a, b, count."""
    pairs = pd.DataFrame({"seq": seq, "s": state}).drop_duplicates()
    nb = pairs.merge(pairs, on="seq", suffixes=("_a", "_b"))
    nb = nb[nb["s_a"] != nb["s_b"]]
    neighbour = (
        nb.groupby(["s_a", "s_b"])
        .size()
        .rename("count")
        .reset_index()
        .rename(columns={"s_a": "a", "s_b": "b"})
    )
    return neighbour


def _models(all_codes: np.ndarray, fnames: tuple[str, ...]) -> pd.DataFrame:
    """The ensemble's models, named from their codes (level, factor, cluster, value)."""
    v = all_codes
    value = v % 100_003 - 1
    v = v // 100_003
    cl = v % 1_000_003 - 1
    v = v // 1_000_003
    fcode = v % 8 - 1
    lcode = v // 8
    models = pd.DataFrame(
        {
            "model": np.arange(len(all_codes)),
            "level_code": lcode,
            "level": np.array(STE_LEVELS, dtype=object)[lcode],
            "factor_code": fcode,
            "factor": np.array(("",) + fnames, dtype=object)[fcode + 1],
            "cluster": cl,
            "value": value,
        }
    )
    return models


def fit_ensemble(
    name: str,
    seq: np.ndarray,
    state: np.ndarray,
    time: np.ndarray,
    n_states: int,
    levels: tuple[str, ...],
    factors: dict[str, np.ndarray],
    length: np.ndarray,
    cluster: np.ndarray | None = None,
) -> Ensemble:
    """Fit the STMM of every model of an ensemble (Eqs. 9-14).

    Parameters
    ----------
    name : {"STE", "CTE"}
    seq : ndarray of int64, shape (n,)
        Sequence id of each record (0 .. n_seq - 1, consecutive records per sequence, sorted
        by time within a sequence).
    state : ndarray of int64, shape (n,)
        State codes 0 .. n_states - 1 (clusters for the CTE).
    time : ndarray of float64, shape (n,)
        Hours.
    levels : tuple of str
        Support levels (subset of ``STE_LEVELS``).
    factors : dict of str to ndarray of int64, shape (n,)
        Factor values at each record.
    length : ndarray of float64, shape (n_seq,)
        Per sequence: duration in hours (STE) or number of sections (CTE).
    cluster : ndarray of int64, shape (n_seq,), optional
        Cluster of each sequence (levels with ``cluster``).

    Returns
    -------
    Ensemble
    """
    n = len(seq)
    first = np.r_[True, seq[1:] != seq[:-1]]
    cl_rec = cluster[seq] if cluster is not None else np.full(n, -1, dtype=np.int64)
    fnames = tuple(factors)
    # starts
    s_idx = np.flatnonzero(first)
    s_rows, s_codes = _memberships(
        levels, {f: v[s_idx] for f, v in factors.items()}, cl_rec[s_idx], len(s_idx)
    )
    # transitions: record i -> i + 1 within a sequence
    t_idx = np.flatnonzero(~first[1:])  # i such that i + 1 is in the same sequence
    t_rows, t_codes = _memberships(
        levels, {f: v[t_idx] for f, v in factors.items()}, cl_rec[t_idx], len(t_idx)
    )
    all_codes, model_of = np.unique(np.r_[s_codes, t_codes], return_inverse=True)
    s_model, t_model = model_of[: len(s_codes)], model_of[len(s_codes) :]

    s = s_idx[s_rows]
    starts = pd.DataFrame(
        {
            "model": s_model,
            "state": state[s],
            "hour": factor_values("hour", time[s]),
            "length": length[seq[s]],
        }
    )
    start = _agg(starts, ["model", "state"], "length", "length")
    hour = _agg(starts, ["model", "hour"], "length", "length")
    t = t_idx[t_rows]
    trans = _agg(
        pd.DataFrame(
            {"model": t_model, "a": state[t], "b": state[t + 1], "dt": time[t + 1] - time[t]}
        ),
        ["model", "a", "b"],
        "dt",
        "time",
    )
    neighbour = _neighbours(seq, state)
    models = _models(all_codes, fnames)
    dur = np.r_[time[1:] - time[:-1], 0.0][t_idx] if len(t_idx) else np.zeros(0)
    extra = {
        "time_mean": float(dur.mean()) if len(dur) else 0.0,
        "time_sd": float(dur.std()) if len(dur) else 0.0,
        "length_mean": float(length.mean()),
        "length_sd": float(length.std()),
        "max_length": int(np.bincount(seq).max()),
    }
    return Ensemble(
        name=name,
        levels=tuple(levels),
        factors=fnames,
        n_states=int(n_states),
        models=models,
        start=start,
        hour=hour,
        trans=trans,
        neighbour=neighbour.astype({"a": np.int64, "b": np.int64, "count": np.int64}),
        extra=extra,
    )
