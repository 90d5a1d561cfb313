"""Verbatim-copy membership attack on a synthetic sequence release.

A synthetic release reproduces a source sequence *verbatim* when one of its objects has the
same state sequence (same states, same order, same length) as a source object. A sequence
that is *unique* in the source and is reproduced verbatim points at one patient: whoever knows
that patient's care path finds it in the release and learns that the patient was in the
source (membership), and whoever finds it in the release learns a real patient's whole path.
:func:`verbatim_shares` measures how often that happens.

Short or common paths are reproduced by any model of the population, member or not. The
holdout baseline separates that from memorisation: :func:`membership_attack` splits the source
objects into two halves at random and fits the release method on one half (the members). The
attacker holds a patient's path that is unique in its half and says "member" when the release
shows it verbatim: the share of the member half's unique paths found in that release is the
attacker's true-positive rate, the share of the holdout half's unique paths (which the model
never saw) its false-positive rate, and their difference the membership advantage (Yeom et
al. 2018), near zero when the model does not memorise rare paths. Its standard error is that of
a difference of two independent proportions.

Sequences are compared through two independent 64-bit polynomial hashes of their state codes
(and their length): one pass of NumPy over the records, no loop over pairs; two different
sequences share both hashes with probability about 2^-128.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from mimic_deid.core.errors import InputDataError
from mimic_deid.core.seeding import derive_rng
from mimic_deid.sequences.events import EventLog, check_log

__all__ = [
    "ATTACK_FIELDS",
    "membership_attack",
    "release_codes",
    "sequence_keys",
    "split_log",
    "verbatim_shares",
]

#: Two odd 64-bit multipliers of the polynomial hashes (fixed; any odd constants work).
_BASES = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))
#: The fields :func:`verbatim_shares` returns.
ATTACK_FIELDS = (
    "released",
    "verbatim",
    "verbatim_unique",
    "source_unique",
    "unique_sequences",
    "unique_reproduced",
    "unique_reproduced_share",
)


def sequence_keys(obj: np.ndarray, state: np.ndarray) -> np.ndarray:
    """One 128-bit key per object's state sequence.

    Parameters
    ----------
    obj : ndarray of int, shape (n_records,)
        Object of each record, records of one object contiguous and in sequence order.
    state : ndarray of int, shape (n_records,)
        State code of each record (>= 0).

    Returns
    -------
    ndarray of uint64, shape (n_objects, 2)
        Per object in order of first appearance: two polynomial hashes
        ``sum_i (state_i + 1) * B^i`` (mod 2^64) mixed with the sequence length. Equal
        sequences have equal keys.
    """
    obj = np.asarray(obj)
    state = np.asarray(state, dtype=np.int64)
    if len(obj) != len(state):
        raise InputDataError(
            f"sequence keys: obj and state must have the same length, got {len(obj)} and "
            f"{len(state)}"
        )
    if len(obj) == 0:
        return np.zeros((0, 2), dtype=np.uint64)
    start = np.flatnonzero(np.r_[True, obj[1:] != obj[:-1]])
    length = np.diff(np.r_[start, len(obj)])
    pos = np.arange(len(obj)) - np.repeat(start, length)
    code = (state + 1).astype(np.uint64)
    keys = np.empty((len(start), 2), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j, base in enumerate(_BASES):
            powers = np.cumprod(np.r_[np.uint64(1), np.full(length.max() - 1, base)])
            h = np.add.reduceat(code * powers[pos], start)
            keys[:, j] = h ^ (length.astype(np.uint64) * _BASES[1 - j])
    return keys


def verbatim_shares(source: np.ndarray, released: np.ndarray) -> dict:
    """How many released sequences copy a source sequence, and a unique one.

    Parameters
    ----------
    source, released : ndarray of uint64, shape (n, 2)
        :func:`sequence_keys` of the source objects and of the released objects.

    Returns
    -------
    dict
        ``released`` (released sequences), ``verbatim`` (share of them equal to some source
        sequence), ``verbatim_unique`` (share equal to a sequence that occurs once in the
        source), ``source_unique`` (share of source objects whose sequence is unique),
        ``unique_sequences`` (how many source sequences are unique), ``unique_reproduced``
        (how many of them the release holds) and ``unique_reproduced_share`` (their share).
        Shares are in [0, 1]; NaN when their denominator is 0.
    """
    n_src, n_rel = len(source), len(released)
    _, ids = np.unique(np.concatenate([source, released]), axis=0, return_inverse=True)
    ids = ids.reshape(-1)
    src_counts = np.bincount(ids[:n_src], minlength=int(ids.max()) + 1 if len(ids) else 0)
    hit = src_counts[ids[n_src:]]
    unique_hit = hit == 1
    n_unique = int((src_counts == 1).sum())
    reproduced = int(np.unique(ids[n_src:][unique_hit]).size)
    return {
        "released": int(n_rel),
        "verbatim": float((hit > 0).mean()) if n_rel else float("nan"),
        "verbatim_unique": float(unique_hit.mean()) if n_rel else float("nan"),
        "source_unique": float((src_counts[ids[:n_src]] == 1).mean()) if n_src else float("nan"),
        "unique_sequences": n_unique,
        "unique_reproduced": reproduced,
        "unique_reproduced_share": reproduced / n_unique if n_unique else float("nan"),
    }


def release_codes(release: pd.DataFrame, states: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Objects and state codes of a released table, in sequence order.

    Parameters
    ----------
    release : DataFrame
        ``object``, ``section``, ``position``, ``state`` (labels), as ``release.parquet``.
    states : tuple of str
        The source's state vocabulary (``EventLog.states``); a released state outside it gets
        its own code, so it never matches a source sequence.

    Returns
    -------
    obj, state : ndarray of int64, shape (n_records,)
    """
    for col in ("object", "section", "position", "state"):
        if col not in release.columns:
            raise InputDataError(
                f"sequence release: column {col!r} missing (expected object, section, "
                f"position, state; got {', '.join(map(str, release.columns))})"
            )
    r = release.sort_values(["object", "section", "position"], kind="stable")
    labels = r["state"].astype(str).to_numpy()
    vocab = {s: i for i, s in enumerate(states)}
    codes = pd.Series(labels).map(vocab)
    unknown = codes.isna().to_numpy()
    codes = codes.fillna(len(states)).to_numpy(np.int64)
    return r["object"].to_numpy(np.int64), np.where(unknown, len(states), codes)


def split_log(log_: EventLog, rng: np.random.Generator) -> tuple[EventLog, EventLog]:
    """The log's objects split at random into two halves (first half ``ceil(n / 2)``), each
    renumbered densely in source order."""
    n = log_.n_objects
    member = np.zeros(n, dtype=bool)
    member[rng.permutation(n)[: (n + 1) // 2]] = True

    def part(mask_obj: np.ndarray) -> EventLog:
        keep = mask_obj[log_.obj]
        new_id = np.cumsum(mask_obj) - 1
        out = EventLog(
            table=log_.table,
            obj=new_id[log_.obj[keep]].astype(np.int64),
            time=log_.time[keep],
            state=log_.state[keep],
            states=log_.states,
        )
        check_log(out)
        return out

    return part(member), part(~member)


def membership_attack(
    log_: EventLog,
    released: pd.DataFrame,
    fit: Callable[[EventLog], pd.DataFrame],
    seed: int,
) -> dict:
    """The verbatim-copy attack on a release and its holdout baseline.

    Parameters
    ----------
    log_ : EventLog
        The source.
    released : DataFrame
        The published release of ``log_`` (``object``, ``section``, ``position``, ``state``).
    fit : callable
        ``fit(half) -> generated`` runs the same release method on a half of the source and
        returns its generated table (same columns; e.g. ``fit_release(half, settings,
        seed)[0]``).
    seed : int
        Master seed; the split uses ``derive_rng(seed, "sequences-attack", table)``.

    Returns
    -------
    dict
        ``release``: :func:`verbatim_shares` of the release against the whole source;
        ``members`` / ``holdout``: of the release fitted on the member half against the member
        and the holdout half; ``advantage``: members' ``unique_reproduced_share`` minus the
        holdout's (the attacker's membership advantage on unique paths, in [-1, 1]) and
        ``advantage_se`` its standard error; ``member_objects``, ``holdout_objects``.
    """
    members, holdout = split_log(log_, derive_rng(seed, "sequences-attack", log_.table))
    rel = sequence_keys(*release_codes(released, log_.states))
    half = sequence_keys(*release_codes(fit(members), log_.states))
    on_members = verbatim_shares(sequence_keys(members.obj, members.state), half)
    on_holdout = verbatim_shares(sequence_keys(holdout.obj, holdout.state), half)
    tpr, fpr = on_members["unique_reproduced_share"], on_holdout["unique_reproduced_share"]
    variance = tpr * (1 - tpr) / max(on_members["unique_sequences"], 1) + fpr * (1 - fpr) / max(
        on_holdout["unique_sequences"], 1
    )
    return {
        "release": verbatim_shares(sequence_keys(log_.obj, log_.state), rel),
        "members": on_members,
        "holdout": on_holdout,
        "advantage": tpr - fpr,
        "advantage_se": float(np.sqrt(variance)),
        "member_objects": members.n_objects,
        "holdout_objects": holdout.n_objects,
    }
