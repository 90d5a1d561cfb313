"""MinHash similarity of sequences and their clustering (seed 004 §2.2, Eqs. 2-3, Definition 3).

Signatures come from ``datasketch.MinHash`` over the w-shingles of each sequence (a sequence
shorter than ``w`` is one shingle); Eq. 2's similarity is the share of equal signature
entries. Clusters: ``k = max(1, round(fraction x n))`` sections (seed §5: 15 %). The ``k``
most frequent distinct signatures are the medoids (ties: signature order); every other
signature joins the most similar medoid, looked up among the candidates of a
``datasketch.MinHashLSH`` index of the medoids and, for signatures without a candidate, by an
exact search over all medoids.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mimic_deid.core.errors import ConfigError

if TYPE_CHECKING:  # datasketch (and its scipy) is imported where signatures are made: the
    # workflow imports this package when it starts
    from datasketch import MinHash

__all__ = ["cluster_signatures", "nearest_similarity", "signatures"]

MINHASH_SEED = 1  # datasketch permutation seed: fixed, so signatures depend on the data only
SCHEME = "affine32"  # datasketch 2 hashing scheme, named so that stored values stay comparable


def _check(num_perm: int, w: int) -> None:
    if isinstance(num_perm, bool) or not isinstance(num_perm, int | np.integer) or num_perm < 2:
        raise ConfigError(
            f"sequences: number of hash functions must be an integer >= 2, got {num_perm!r}"
        )
    if isinstance(w, bool) or not isinstance(w, int | np.integer) or w < 1:
        raise ConfigError(f"sequences: shingle size must be an integer >= 1, got {w!r}")


def signatures(seq_codes: np.ndarray, starts: np.ndarray, num_perm: int, w: int) -> np.ndarray:
    """MinHash signatures (Eq. 3) of sequences given as one flat array of state codes.

    Parameters
    ----------
    seq_codes : ndarray of int64, shape (n_records,)
        State codes of all sequences, concatenated.
    starts : ndarray of int64, shape (n_seq + 1,)
        Offsets: sequence i is ``seq_codes[starts[i]:starts[i + 1]]`` (non-empty).
    num_perm : int
        |H|, the number of hash functions.
    w : int
        Shingle size.

    Returns
    -------
    ndarray of uint64, shape (n_seq, num_perm)
    """
    _check(num_perm, w)
    n = len(starts) - 1
    keys = [tuple(seq_codes[starts[i] : starts[i + 1]].tolist()) for i in range(n)]
    uniq: dict[tuple, int] = {}
    inverse = np.fromiter((uniq.setdefault(k, len(uniq)) for k in keys), np.int64, n)
    from datasketch import MinHash

    proto = MinHash(num_perm=int(num_perm), seed=MINHASH_SEED, scheme=SCHEME)
    out = np.empty((len(uniq), int(num_perm)), dtype=np.uint64)
    for key, j in uniq.items():
        m = MinHash(
            num_perm=int(num_perm),
            seed=MINHASH_SEED,
            permutations=proto.permutations,
            scheme=SCHEME,
        )
        g = max(1, len(key) - w + 1)
        m.update_batch([",".join(map(str, key[i : i + w])).encode() for i in range(g)])
        out[j] = m.hashvalues
    return out[inverse]


def nearest_similarity(
    query: np.ndarray, ref: np.ndarray, chunk: int = 64
) -> tuple[np.ndarray, np.ndarray]:
    """For each query signature, the best Eq. 2 similarity over ``ref`` and its index.

    Parameters
    ----------
    query : ndarray (q, H); ref : ndarray (r, H)
    chunk : int
        Query rows compared at once (memory ``chunk x r x H`` booleans).

    Returns
    -------
    best : ndarray of float64, shape (q,)
    arg : ndarray of int64, shape (q,)
        Lowest index among equally similar references.
    """
    best = np.zeros(len(query))
    arg = np.zeros(len(query), dtype=np.int64)
    step = max(1, int(chunk * 2_000_000 // max(1, len(ref) * query.shape[1] * 8)))
    for s in range(0, len(query), step):
        sim = (query[s : s + step, None, :] == ref[None, :, :]).sum(axis=2)
        arg[s : s + step] = sim.argmax(axis=1)
        best[s : s + step] = sim.max(axis=1) / query.shape[1]
    return best, arg


def cluster_signatures(
    sig: np.ndarray, fraction: float = 0.15, threshold: float = 0.5
) -> np.ndarray:
    """Cluster of every sequence (Definition 3), ``max(1, round(fraction x n))`` clusters at most.

    Parameters
    ----------
    sig : ndarray of uint64, shape (n, H)
    fraction : float in (0, 1]
        Clusters per sequence (seed: 0.15).
    threshold : float in (0, 1)
        Jaccard threshold of the ``MinHashLSH`` candidate index.

    Returns
    -------
    ndarray of int64, shape (n,)
        Cluster ids 0 .. k - 1 (0 = the most frequent medoid).
    """
    if not 0 < fraction <= 1 or not 0 < threshold < 1:
        raise ConfigError(
            f"sequences.lsh: cluster_fraction must be in (0, 1] and threshold in (0, 1), got "
            f"{fraction!r}, {threshold!r}"
        )
    n, h = sig.shape
    k = max(1, round(fraction * n))
    uniq, inverse, counts = np.unique(sig, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    order = np.lexsort((np.arange(len(uniq)), -counts))
    if len(uniq) <= k:
        rank = np.empty(len(uniq), dtype=np.int64)
        rank[order] = np.arange(len(uniq))
        return rank[inverse]
    medoids = order[:k]
    label = np.full(len(uniq), -1, dtype=np.int64)
    label[medoids] = np.arange(k)
    from datasketch import MinHash, MinHashLSH

    index = MinHashLSH(threshold=threshold, num_perm=h)
    perms = MinHash(num_perm=h, seed=MINHASH_SEED, scheme=SCHEME).permutations

    def sketch(values: np.ndarray) -> MinHash:
        return MinHash(num_perm=h, hashvalues=values, permutations=perms, scheme=SCHEME)

    for j, m in enumerate(medoids):
        index.insert(j, sketch(uniq[m]), check_duplication=False)
    rest = order[k:]
    missed = []
    for r in rest:
        cand = np.array(
            sorted(index.query(sketch(uniq[r]))),
            dtype=np.int64,
        )
        if len(cand) == 0:
            missed.append(r)
            continue
        sim = (uniq[medoids[cand]] == uniq[r]).sum(axis=1)
        label[r] = cand[int(np.argmax(sim))]
    if missed:
        missed_arr = np.array(missed, dtype=np.int64)
        _, arg = nearest_similarity(uniq[missed_arr], uniq[medoids])
        label[missed_arr] = arg
    return label[inverse]
