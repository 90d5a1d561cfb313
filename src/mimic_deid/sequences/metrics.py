"""Quality and anonymity measures of a generated dataset (seed 004 §5, Definition 4)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mimic_deid.sequences.lsh import nearest_similarity, signatures

__all__ = ["dataset_similarity", "top_bigram_intersection"]


def _offsets(obj: np.ndarray) -> np.ndarray:
    change = np.flatnonzero(np.r_[True, obj[1:] != obj[:-1]])
    return np.r_[change, len(obj)].astype(np.int64)


def dataset_similarity(
    src_obj: np.ndarray,
    src_state: np.ndarray,
    gen_obj: np.ndarray,
    gen_state: np.ndarray,
    num_perm: int,
    w: int,
    sample: int,
    rng: np.random.Generator,
) -> float:
    """Definition 4, Eq. 4: mean over generated objects of the best Eq. 2 similarity to a
    source object (sequences of states per object, sorted by object).

    ``sample`` generated objects at most are scored (drawn with ``rng``; all when fewer).
    Returns NaN when nothing was generated.
    """
    if len(gen_obj) == 0:
        return float("nan")
    s_off, g_off = _offsets(src_obj), _offsets(gen_obj)
    n_gen = len(g_off) - 1
    pick = np.sort(rng.choice(n_gen, sample, replace=False)) if n_gen > sample else np.arange(n_gen)
    lens = g_off[pick + 1] - g_off[pick]
    sub_off = np.r_[0, np.cumsum(lens)]
    # record indices of the picked objects: each object's offset plus 0 .. len - 1
    take = np.repeat(g_off[pick] - sub_off[:-1], lens) + np.arange(sub_off[-1])
    src_sig = np.unique(signatures(src_state, s_off, num_perm, w), axis=0)
    gen_sig = signatures(gen_state[take], sub_off, num_perm, w)
    best, _ = nearest_similarity(gen_sig, src_sig)
    return float(best.mean())


def _bigrams(obj: np.ndarray, state: np.ndarray, n_states: int) -> pd.Series:
    same = obj[1:] == obj[:-1]
    code = state[:-1][same] * n_states + state[1:][same]
    counts = pd.Series(code).value_counts()
    # ties broken by the code, so the top list is deterministic
    return counts.sort_index().sort_values(ascending=False, kind="stable")


def top_bigram_intersection(
    src_obj: np.ndarray,
    src_state: np.ndarray,
    gen_obj: np.ndarray,
    gen_state: np.ndarray,
    n_states: int,
    top: int = 20,
) -> float:
    """Share of the ``top`` most frequent 2-grams of the source also among the generated
    data's ``top`` (seed §5); NaN when nothing was generated."""
    if len(gen_obj) < 2:
        return float("nan")
    a = set(_bigrams(src_obj, src_state, n_states).index[:top])
    b = set(_bigrams(gen_obj, gen_state, n_states).index[:top])
    return len(a & b) / max(1, min(top, len(a)))
