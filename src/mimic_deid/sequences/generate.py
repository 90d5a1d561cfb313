"""Three-phase generation from the (anonymised) ensembles (seed 004 §4).

1. Objects: each synthetic object draws a start day from the day list (§3.6) and a start hour
   from the CTE ``all`` model's StartTimeFreq.
2. Sections: the first cluster and the number of sections come from the CTE start counts,
   each next cluster and the time between section starts from its transitions; every
   section's duration comes from the STE StartTimeFreq of its cluster.
3. Filling: each section draws a start state, then state and time pairs from the STE
   transitions until a record reaches its end time (or the longest source section is
   reached). The section's last record is the first at or after its end, as a source
   section's end is the time of its last record: a drawn transition is always kept, so the
   decision to stop never depends on the transition being drawn (a stopping rule that dropped
   the transition crossing the end would under-generate the transitions with long times).
   Later sections of the object are shifted so that sections never overlap.

At every draw the models that match the current generation point (its cluster and factor
values) are combined with weights 1 / support normalised to one (§4, inverse-support
weighting; support = the model's released count total in that table): a model is drawn with
that weight, then a row of it in proportion to its count, which samples the weighted mean
of the models' distributions. A state without any released transition is repaired through
its neighbours (§3.6): the next state is drawn in proportion to the neighbour counts. Times
and durations are Normal(mean, sd) draws truncated at zero (conditioned on being positive, not
clamped: clamping would put the mass of the negative half at exactly zero, i.e. zero-time
transitions and one-record sections). Every draw is vectorised over all objects or
sections of a step.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mimic_deid.sequences.model import STE_LEVELS, Ensemble, factor_values, model_codes

__all__ = ["generate"]


class _Table:
    """Rows of one count table grouped by (model, key) for mixture sampling."""

    def __init__(self, df: pd.DataFrame, key: str | None, width: int, n_models: int) -> None:
        keys = ["model", key] if key else ["model"]
        df = df.sort_values(
            [*keys] + ([c for c in ("b", "state", "hour") if c in df and c != key][:1]),
            kind="stable",
        )
        self.df = df.reset_index(drop=True)
        m = self.df["model"].to_numpy(np.int64)
        k = self.df[key].to_numpy(np.int64) if key else np.zeros(len(m), np.int64)
        self.width = width
        g = m * width + k
        self.gkeys, self.gstart = np.unique(g, return_index=True)
        counts = self.df["count"].to_numpy(np.float64)
        self.cum = np.cumsum(counts)
        before = np.r_[0.0, self.cum][self.gstart]
        after = self.cum[np.r_[self.gstart[1:], len(g)] - 1] if len(g) else np.zeros(0)
        self.gbefore, self.gtotal = before, after - before
        self.support = np.bincount(m, weights=counts, minlength=n_models)

    def sample(self, cand: np.ndarray, key: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Row index drawn from the inverse-support mixture of models ``cand`` (n, M; -1 =
        none) at ``key`` (n,); -1 where no candidate has a row."""
        n = len(key)
        if len(self.gkeys) == 0 or n == 0:
            return np.full(n, -1, dtype=np.int64)
        gk = np.where(cand >= 0, cand, 0) * self.width + key[:, None]
        pos = np.minimum(np.searchsorted(self.gkeys, gk), len(self.gkeys) - 1)
        found = (cand >= 0) & (self.gkeys[pos] == gk)
        with np.errstate(divide="ignore"):
            w = np.where(found, 1.0 / self.support[np.where(cand >= 0, cand, 0)], 0.0)
        tot = w.sum(axis=1)
        ok = tot > 0
        cw = np.cumsum(w, axis=1) / np.where(ok, tot, 1.0)[:, None]
        u = rng.random(n)
        pick = np.minimum((u[:, None] > cw).sum(axis=1), cand.shape[1] - 1)
        g = pos[np.arange(n), pick]
        target = self.gbefore[g] + rng.random(n) * self.gtotal[g]
        row = np.searchsorted(self.cum, target, side="right")
        row = np.minimum(row, len(self.cum) - 1)
        return np.where(ok, row, -1)


class _Lookup:
    """Model ids of an ensemble by key (level, factor, cluster, value)."""

    def __init__(self, ens: Ensemble) -> None:
        codes = ens.model_key_codes()
        self.order = np.argsort(codes)
        self.codes = codes[self.order]
        self.ens = ens

    def ids(self, level: str, factor: int, cluster: np.ndarray, value: np.ndarray) -> np.ndarray:
        n = len(cluster)
        code = model_codes(np.full(n, STE_LEVELS.index(level)), np.full(n, factor), cluster, value)
        pos = np.minimum(np.searchsorted(self.codes, code), max(len(self.codes) - 1, 0))
        hit = len(self.codes) > 0 and self.codes[pos] == code
        return np.where(hit, self.order[pos], -1)

    def candidates(self, cluster: np.ndarray, values: dict[str, np.ndarray]) -> np.ndarray:
        """(n, M) model ids matching each generation point, -1 where absent."""
        n = len(cluster)
        none = np.full(n, -1, dtype=np.int64)
        cols = []
        for lv in self.ens.levels:
            if lv in ("all", "cluster"):
                cols.append(self.ids(lv, -1, cluster if lv == "cluster" else none, none))
            else:
                for fi, f in enumerate(self.ens.factors):
                    c = cluster if lv == "cluster&factor" else none
                    cols.append(self.ids(lv, fi, c, values[f]))
        return np.stack(cols, axis=1) if cols else np.zeros((n, 0), dtype=np.int64)


def _take(t: _Table, col: str, row: np.ndarray) -> np.ndarray:
    """Column ``col`` of ``t`` at ``row`` (0 where row is -1 or the table is empty)."""
    if len(t.df) == 0:
        return np.zeros(len(row), dtype=np.float64 if col.endswith(("mean", "sd")) else np.int64)
    return t.df[col].to_numpy()[np.maximum(row, 0)]


def _normal(mean: np.ndarray, sd: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.maximum(mean + np.nan_to_num(sd) * rng.standard_normal(len(mean)), 0.0)


def _positive_normal(mean: np.ndarray, sd: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Normal(``mean``, ``sd``) truncated to (0, inf) by inverse CDF, shape (n,); ``mean``
    (at least 0) where the sd is 0 or NaN (a statistic of one value)."""
    from scipy.special import ndtr, ndtri  # here: the workflow imports this package at start

    mean = np.asarray(mean, dtype=np.float64)
    sd = np.nan_to_num(np.asarray(sd, dtype=np.float64))
    u = 1.0 - rng.random(len(mean))  # (0, 1]
    spread = sd > 0
    s = np.where(spread, sd, 1.0)
    # P(X > 0) = Phi(mean / sd); X = mean - sd * Phi^-1(u * Phi(mean / sd))
    x = mean - s * ndtri(u * ndtr(np.maximum(mean / s, -30.0)))
    return np.where(spread, np.maximum(x, 0.0), np.maximum(mean, 0.0))


def _neighbour_step(
    nb: pd.DataFrame, a: np.ndarray, n_states: int, rng: np.random.Generator
) -> np.ndarray:
    """Neighbour repair: a state drawn in proportion to the neighbour counts of ``a``; -1 if none."""
    t = _Table(nb.rename(columns={"a": "model"}), None, 1, n_states)
    return np.where(
        (row := t.sample(a[:, None], np.zeros(len(a), np.int64), rng)) >= 0,
        _take(t, "b", row) if len(t.df) else 0,
        -1,
    )


def _draw(
    t: _Table, row: np.ndarray, name: str, extra: dict, rng: np.random.Generator
) -> np.ndarray:
    """Normal(``name``_mean, ``name``_sd) of each drawn row, truncated at zero; the ensemble's
    overall mean and sd where no row was drawn (-1)."""
    n = len(row)
    own = _positive_normal(_take(t, f"{name}_mean", row), _take(t, f"{name}_sd", row), rng)
    overall = _positive_normal(
        np.full(n, extra[f"{name}_mean"]), np.full(n, extra[f"{name}_sd"]), rng
    )
    return np.where(row >= 0, own, overall)


def _step(
    t: _Table, ens: Ensemble, cand: np.ndarray, state: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One transition from each ``state`` (n,) at models ``cand`` (n, M): the next state (-1
    where neither a transition nor a neighbour exists) and the transition time in hours."""
    row = t.sample(cand, state, rng)
    nxt = np.where(row >= 0, _take(t, "b", row), -1)
    miss = row < 0
    if miss.any():
        nxt[miss] = _neighbour_step(ens.neighbour, state[miss], ens.n_states, rng)
    return nxt, _draw(t, row, "time", ens.extra, rng)


def _filled(df: pd.DataFrame, cols: tuple[str, str], mean: float, sd: float) -> pd.DataFrame:
    return df.fillna({cols[0]: mean, cols[1]: sd})


def _empty_records() -> pd.DataFrame:
    """The records table of :func:`generate` with no row."""
    return pd.DataFrame(
        {
            c: pd.Series(dtype=t)
            for c, t in (
                ("object", "int64"),
                ("section", "int64"),
                ("position", "int64"),
                ("cluster", "int64"),
                ("state", "int64"),
                ("time", "float64"),
            )
        }
    )


def _tables(ste: Ensemble, cte: Ensemble) -> tuple[_Table, ...]:
    """The six released tables :func:`generate` samples: the CTE's start, hour and
    transitions, the STE's start, hour and transitions."""
    cte_start = _Table(
        _filled(
            cte.start,
            ("length_mean", "length_sd"),
            cte.extra["length_mean"],
            cte.extra["length_sd"],
        ),
        None,
        1,
        len(cte.models),
    )
    cte_hour = _Table(cte.hour, None, 1, len(cte.models))
    cte_trans = _Table(
        _filled(cte.trans, ("time_mean", "time_sd"), cte.extra["time_mean"], cte.extra["time_sd"]),
        "a",
        cte.n_states,
        len(cte.models),
    )
    ste_start = _Table(ste.start, None, 1, len(ste.models))
    ste_hour = _Table(
        _filled(
            ste.hour, ("length_mean", "length_sd"), ste.extra["length_mean"], ste.extra["length_sd"]
        ),
        "hour",
        24,
        len(ste.models),
    )
    ste_trans = _Table(
        _filled(ste.trans, ("time_mean", "time_sd"), ste.extra["time_mean"], ste.extra["time_sd"]),
        "a",
        ste.n_states,
        len(ste.models),
    )
    return cte_start, cte_hour, cte_trans, ste_start, ste_hour, ste_trans


def _start_times(days, n_objects, cl, cte, cte_hour, rng) -> np.ndarray:
    """Phase 1 of :func:`generate`: the start time of every object (its day, then its hour)."""
    p = days["objects"].to_numpy(np.float64)
    day = days["day"].to_numpy(np.int64)[rng.choice(len(days), n_objects, p=p / p.sum())]
    all_cte = cl.candidates(np.full(1, -1), {f: np.zeros(1, np.int64) for f in cte.factors})
    all_cte = all_cte[:, [i for i, lv in enumerate(_levels_cols(cte)) if lv == "all"]]
    hrow = cte_hour.sample(
        np.repeat(all_cte, n_objects, axis=0), np.zeros(n_objects, np.int64), rng
    )
    hour = np.where(hrow >= 0, _take(cte_hour, "hour", hrow) if len(cte_hour.df) else 0, 0)
    t0 = day * 24.0 + hour + rng.random(n_objects)
    return t0


def _sections(t0, alive, n_sec, clus, cl, cte, cte_trans, rng):
    """Phase 2 of :func:`generate`: every object's sections (object, index, cluster, start
    slot), ordered by object and index; None when no object has one."""
    sec_obj, sec_idx, sec_cl, sec_t = [], [], [], []
    t = t0.copy()
    for k in range(int(n_sec.max()) if len(t0) else 0):
        on = alive & (n_sec > k)
        if not on.any():
            break
        idx = np.flatnonzero(on)
        sec_obj.append(idx)
        sec_idx.append(np.full(len(idx), k))
        sec_cl.append(clus[idx].copy())
        sec_t.append(t[idx].copy())
        # next cluster and start-to-start time
        vals = {f: factor_values(f, t[idx]) for f in cte.factors}
        cand = cl.candidates(np.full(len(idx), -1), vals)
        nxt, dt = _step(cte_trans, cte, cand, clus[idx], rng)
        stop = nxt < 0
        alive[idx[stop]] = False
        clus[idx] = np.maximum(nxt, 0)
        t[idx] = t[idx] + dt
    if not sec_obj:
        return None
    s_obj = np.concatenate(sec_obj)
    s_idx = np.concatenate(sec_idx)
    s_cl = np.concatenate(sec_cl)
    s_t = np.concatenate(sec_t)
    order = np.lexsort((s_idx, s_obj))
    s_obj, s_idx, s_cl, s_t = s_obj[order], s_idx[order], s_cl[order], s_t[order]
    return s_obj, s_idx, s_cl, s_t


def generate(
    ste: Ensemble,
    cte: Ensemble,
    days: pd.DataFrame,
    n_objects: int,
    rng: np.random.Generator,
) -> pd.DataFrame:
    """Generate ``n_objects`` objects from released ensembles (seed 004 §4).

    Parameters
    ----------
    ste, cte : Ensemble
        Released state and cluster-transition ensembles (rows with count > 0).
    days : DataFrame
        ``day`` (days since 1970) and ``objects`` (objects starting that day), §3.6.
    n_objects : int
    rng : numpy.random.Generator

    Returns
    -------
    DataFrame
        object, section (0-based within the object), position (0-based within the section),
        cluster, state (code), time (hours since 1970), sorted by object, section, position.
        Empty when every start statistic was suppressed.
    """
    cte_start, cte_hour, cte_trans, ste_start, ste_hour, ste_trans = _tables(ste, cte)
    if n_objects < 1 or len(cte_start.df) == 0 or len(ste_start.df) == 0 or len(days) == 0:
        return _empty_records()
    cl, sl = _Lookup(cte), _Lookup(ste)

    # phase 1: start day and hour of every object
    t0 = _start_times(days, n_objects, cl, cte, cte_hour, rng)

    # phase 2: clusters and time slots of the sections
    vals = {f: factor_values(f, t0) for f in cte.factors}
    cand = cl.candidates(np.full(n_objects, -1), vals)
    row = cte_start.sample(cand, np.zeros(n_objects, np.int64), rng)
    alive = row >= 0
    clus = _take(cte_start, "state", row)
    mean, sd = _take(cte_start, "length_mean", row), _take(cte_start, "length_sd", row)
    n_sec = np.maximum(1, np.rint(_normal(mean, sd, rng))).astype(np.int64)
    n_sec = np.where(alive, np.minimum(n_sec, cte.extra["max_length"]), 0)
    sections = _sections(t0, alive, n_sec, clus, cl, cte, cte_trans, rng)
    if sections is None:
        return _empty_records()
    s_obj, s_idx, s_cl, s_t = sections
    ns = len(s_obj)
    # section durations from the STE StartTimeFreq of the cluster at the start hour
    dur0 = np.zeros(ns)
    vals = {f: factor_values(f, s_t, dur0) for f in ste.factors}
    cand = sl.candidates(s_cl, vals)
    row = ste_hour.sample(cand, factor_values("hour", s_t), rng)
    dur = _draw(ste_hour, row, "length", ste.extra, rng)
    # sections must not overlap: a section starts at the later of its slot and the previous end
    same = np.r_[False, s_obj[1:] == s_obj[:-1]]
    for _ in range(int(s_idx.max()) + 1):
        end = s_t + dur
        s_t = np.where(same, np.maximum(s_t, np.r_[0.0, end[:-1]]), s_t)
    end = s_t + dur

    # phase 3: fill every section
    vals = {f: factor_values(f, s_t, dur) for f in ste.factors}
    cand = sl.candidates(s_cl, vals)
    row = ste_start.sample(cand, np.zeros(ns, np.int64), rng)
    started = row >= 0
    state = np.where(started, _take(ste_start, "state", row), -1)
    time = s_t.copy()
    out_sec, out_pos, out_state, out_time = (
        [np.flatnonzero(started)],
        [np.zeros(int(started.sum()), np.int64)],
        [state[started]],
        [time[started]],
    )
    max_len = int(ste.extra["max_length"])
    # a section goes on while its last record is before its end time (a zero-length slot
    # holds its start record only); the record that reaches the end is kept
    live = started & (s_t < end)
    for k in range(1, max_len):
        idx = np.flatnonzero(live)
        if len(idx) == 0:
            break
        vals = {f: factor_values(f, time[idx], dur[idx]) for f in ste.factors}
        cand = sl.candidates(s_cl[idx], vals)
        nxt, dt = _step(ste_trans, ste, cand, state[idx], rng)
        tn = time[idx] + dt
        go = nxt >= 0
        live[idx] = go & (tn < end[idx])
        g = idx[go]
        state[g], time[g] = nxt[go], tn[go]
        out_sec.append(g)
        out_pos.append(np.full(len(g), k))
        out_state.append(state[g])
        out_time.append(time[g])
    return _records(s_obj, s_idx, s_cl, s_t, same, out_sec, out_pos, out_state, out_time)


def _records(s_obj, s_idx, s_cl, s_t, same, out_sec, out_pos, out_state, out_time) -> pd.DataFrame:
    """The generated records of the sections, later sections of an object shifted so that
    none starts before the previous one's last record."""
    ns = len(s_obj)
    sec = np.concatenate(out_sec)
    rec_time = np.concatenate(out_time)
    # the last record may pass the planned end: shift later sections of the object so that
    # each starts no earlier than the previous one's last record
    last = np.full(ns, -np.inf)
    np.maximum.at(last, sec, rec_time)
    last = np.where(np.isfinite(last), last, s_t)
    shift = np.zeros(ns)
    for _ in range(int(s_idx.max()) + 1):
        prev_last = np.r_[-np.inf, (last + shift)[:-1]]
        need = np.where(same, np.maximum(prev_last - (s_t + shift), 0.0), 0.0)
        if not need.any():
            break
        shift += need
    res = pd.DataFrame(
        {
            "object": s_obj[sec],
            "section": s_idx[sec],
            "position": np.concatenate(out_pos),
            "cluster": s_cl[sec],
            "state": np.concatenate(out_state),
            "time": rec_time + shift[sec],
        }
    )
    return res.sort_values(["object", "section", "position"], kind="stable").reset_index(drop=True)


def _levels_cols(ens: Ensemble) -> list[str]:
    """The level of each column of :meth:`_Lookup.candidates`."""
    cols = []
    for lv in ens.levels:
        cols.extend([lv] if lv in ("all", "cluster") else [lv] * len(ens.factors))
    return cols
