"""Distinguishability with multiset containment through an inverted index (seed 002 §III.4).

A *multiset record* is a set of (item, count) entries; an item is a diagnosis code or an
(ICD, age) pair encoded as an integer. ``dis(D)`` of a query multiset ``D`` is the number of
population records ``p`` with ``count_p(item) >= count_D(item)`` for every item of ``D``; the
empty multiset is contained in every record.

The index keeps one posting list per (item, threshold t): the population records holding the
item at least ``t`` times. Two representations serve the two kinds of query:

* *frequent* keys (more than ``dense_min`` records) are bitsets over the population, so a
  query made only of frequent keys is an AND of its bitsets followed by a population count,
  vectorised over whole chunks of queries with ``np.bitwise_and.reduceat``;
* a query with at least one *rare* key takes the rarest key's posting list as candidates and
  checks every other key of the query on those candidates with one sorted lookup.

No Python loop runs over records or pairs of records; work is chunked to bound memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mimic_deid.core.errors import InputDataError

__all__ = ["MultisetIndex", "Multisets", "multisets"]

CHUNK_BYTES = 64 << 20  # memory of one chunk of gathered bitsets / candidate checks


@dataclass(frozen=True)
class Multisets:
    """Multiset records in coordinate form, sorted by record then item.

    Attributes
    ----------
    n_records : int
        Number of records (records without entries are empty multisets).
    record, item, count : ndarray of int64, shape (n_entries,)
        One entry per (record, distinct item) with its multiplicity (>= 1).
    """

    n_records: int
    record: np.ndarray
    item: np.ndarray
    count: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        """Total multiplicity per record, shape (n_records,)."""
        return np.bincount(self.record, weights=self.count, minlength=self.n_records).astype(
            np.int64
        )

    def take(self, records: np.ndarray) -> Multisets:
        """The multisets of ``records`` (indices, in the given order) renumbered 0..len-1."""
        records = np.asarray(records, dtype=np.int64)
        starts = np.searchsorted(self.record, np.arange(self.n_records + 1))
        lo, hi = starts[records], starts[records + 1]
        lengths = hi - lo
        pos = np.repeat(lo - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
        new_rec = np.repeat(np.arange(len(records), dtype=np.int64), lengths)
        return Multisets(len(records), new_rec, self.item[pos], self.count[pos])


def multisets(record: np.ndarray, item: np.ndarray, n_records: int | None = None) -> Multisets:
    """Count occurrences of ``item`` per ``record`` (one row per occurrence).

    Parameters
    ----------
    record, item : array_like of int, shape (n_rows,)
        Record index (0-based) and item id of every occurrence.
    n_records : int, optional
        Number of records (default: ``record.max() + 1``).

    Returns
    -------
    Multisets
    """
    record = np.asarray(record, dtype=np.int64)
    item = np.asarray(item, dtype=np.int64)
    if record.shape != item.shape:
        raise InputDataError(
            f"multisets: record and item must have the same length, got {record.size} and "
            f"{item.size}"
        )
    if record.size and (record.min() < 0 or item.min() < 0):
        raise InputDataError("multisets: record and item ids must be >= 0")
    n = int(record.max()) + 1 if n_records is None and record.size else int(n_records or 0)
    width = int(item.max()) + 1 if item.size else 1
    key, count = np.unique(record * width + item, return_counts=True)
    return Multisets(n, key // width, key % width, count.astype(np.int64))


class MultisetIndex:
    """Inverted index of a population of multisets: (item, threshold) -> posting list.

    Parameters
    ----------
    population : Multisets
        The population P.
    dense_min : int, default 64
        Keys held by more than this many records are kept as bitsets.
    """

    def __init__(self, population: Multisets, dense_min: int = 64) -> None:
        self.population = population
        self.n = population.n_records
        self.dense_min = int(dense_min)
        self._width = int(population.item.max()) + 1 if population.item.size else 1
        # (record, item) -> count lookup, sorted.
        self._rec_item = population.record * self._width + population.item
        self._count = population.count
        # Posting lists by item, records sorted, with their counts.
        order = np.lexsort((population.record, population.item))
        self._post_item = population.item[order]
        self._post_rec = population.record[order]
        self._post_cnt = population.count[order]
        self._item_start = np.searchsorted(self._post_item, np.arange(self._width + 1))
        self._words = max(1, -(-self.n // 64))

    # -- frequencies ---------------------------------------------------------------------

    def doc_freq(self, item: np.ndarray, count: np.ndarray) -> np.ndarray:
        """Records holding ``item`` at least ``count`` times (>= 1), shape like ``item``."""
        item = np.asarray(item, dtype=np.int64)
        count = np.asarray(count, dtype=np.int64)
        if not self._post_item.size:
            return np.zeros(item.shape, dtype=np.int64)
        base = int(self._post_cnt.max()) + 2
        skey = np.sort(self._post_item * base + self._post_cnt)
        inside = item < self._width
        q_lo = item * base + np.minimum(count, base - 1)
        q_hi = item * base + (base - 1)
        out = np.searchsorted(skey, q_hi, "right") - np.searchsorted(skey, q_lo, "left")
        return np.where(inside & (count >= 1), out, 0).astype(np.int64)

    # -- bitsets ----------------------------------------------------------------------------

    def _bitsets(self, keys: np.ndarray, T: int) -> np.ndarray:
        """Bitsets, shape (len(keys), words), of distinct encoded keys ``item * T + t``."""
        items, ts = keys // T, keys % T
        block = np.zeros((keys.size, self._words), dtype=np.uint64)
        lo, hi = self._item_start[items], self._item_start[items + 1]
        lengths = hi - lo
        pos = np.repeat(lo - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
        row = np.repeat(np.arange(keys.size), lengths)
        keep = self._post_cnt[pos] >= ts[row]
        rec = self._post_rec[pos][keep]
        bit = np.left_shift(np.uint64(1), (rec & 63).astype(np.uint64))
        np.bitwise_or.at(block, (row[keep], rec >> 6), bit)
        return block

    # -- queries ----------------------------------------------------------------------------

    def distinguishability(self, queries: Multisets) -> np.ndarray:
        """``dis`` of every query multiset against the population.

        Parameters
        ----------
        queries : Multisets
            The sample records (possibly censored).

        Returns
        -------
        ndarray of int64, shape (queries.n_records,)
            Number of population records containing each query multiset (``n`` for an
            empty query, 0 when an item is absent from the population).
        """
        out = np.full(queries.n_records, self.n, dtype=np.int64)
        if not queries.record.size:
            return out
        df = self.doc_freq(queries.item, queries.count)
        rec = queries.record
        # The rarest key of each query.
        order = np.lexsort((df, rec))
        first = np.ones(order.size, dtype=bool)
        first[1:] = rec[order][1:] != rec[order][:-1]
        rare_pos = order[first]
        rare_rec = rec[rare_pos]
        rare_df = df[rare_pos]
        out[rare_rec[rare_df == 0]] = 0
        sparse = rare_rec[(rare_df > 0) & (rare_df <= self.dense_min)]
        dense = rare_rec[rare_df > self.dense_min]
        if sparse.size:
            out[sparse] = self._by_candidates(queries, sparse, rare_pos[np.isin(rare_rec, sparse)])
        if dense.size:
            out[dense] = self._by_bitsets(queries, dense)
        return out

    def _by_candidates(self, q: Multisets, recs: np.ndarray, rare_pos: np.ndarray) -> np.ndarray:
        """dis of queries ``recs`` whose rarest entry (positions ``rare_pos``) is rare."""
        result = np.zeros(recs.size, dtype=np.int64)
        q_start = np.searchsorted(q.record, np.arange(q.n_records + 1))
        sizes = q_start[recs + 1] - q_start[recs]
        items, need = q.item[rare_pos], q.count[rare_pos]
        lo, hi = self._item_start[items], self._item_start[items + 1]
        cand_len = hi - lo
        per_query = cand_len * sizes
        budget = max(1, CHUNK_BYTES // 64)
        bounds = np.searchsorted(
            np.cumsum(per_query), np.arange(budget, per_query.sum() + budget, budget)
        )
        start = 0
        for stop in np.unique(np.minimum(bounds + 1, recs.size)):
            sl = slice(start, int(stop))
            start = int(stop)
            if sl.start >= sl.stop:
                continue
            result[sl] = self._candidates_chunk(
                q, q_start, recs[sl], lo[sl], cand_len[sl], need[sl], sizes[sl]
            )
        return result

    def _candidates_chunk(
        self,
        q: Multisets,
        q_start: np.ndarray,
        recs: np.ndarray,
        lo: np.ndarray,
        cand_len: np.ndarray,
        need: np.ndarray,
        sizes: np.ndarray,
    ) -> np.ndarray:
        """dis of one chunk of queries ``recs`` (shape (m,)) from their rarest posting lists.

        ``lo``/``cand_len``: start and length of each rarest posting list; ``need``: the count
        the rarest key asks for; ``sizes``: entries per query. Returns shape (m,).
        """
        # Candidate (query, population record) pairs from the rarest posting list.
        m = recs.size
        pos = np.repeat(lo - np.cumsum(cand_len) + cand_len, cand_len) + np.arange(cand_len.sum())
        pair_q = np.repeat(np.arange(m), cand_len)
        ok = self._post_cnt[pos] >= need[pair_q]
        pair_q, pair_p = pair_q[ok], self._post_rec[pos][ok]
        # Every entry of the query checked on every candidate.
        n_checks = sizes[pair_q]
        chk_pair = np.repeat(np.arange(pair_q.size), n_checks)
        first_entry = q_start[recs][pair_q]
        entry = np.repeat(first_entry - np.cumsum(n_checks) + n_checks, n_checks) + np.arange(
            n_checks.sum()
        )
        key = pair_p[chk_pair] * self._width + np.minimum(q.item[entry], self._width - 1)
        at = np.searchsorted(self._rec_item, key)
        at_c = np.minimum(at, self._rec_item.size - 1)
        found = (self._rec_item[at_c] == key) & (q.item[entry] < self._width)
        have = np.where(found, self._count[at_c], 0)
        fails = np.bincount(chk_pair, weights=have < q.count[entry], minlength=pair_q.size)
        return np.bincount(pair_q, weights=fails == 0, minlength=m).astype(np.int64)

    def _by_bitsets(self, q: Multisets, recs: np.ndarray) -> np.ndarray:
        """dis of queries ``recs`` made only of frequent keys: AND of bitsets, popcount."""
        result = np.zeros(recs.size, dtype=np.int64)
        q_start = np.searchsorted(q.record, np.arange(q.n_records + 1))
        sizes = q_start[recs + 1] - q_start[recs]
        entry = np.repeat(q_start[recs] - np.cumsum(sizes) + sizes, sizes) + np.arange(sizes.sum())
        T = int(q.count.max()) + 1
        keys, key_row = np.unique(q.item[entry] * T + q.count[entry], return_inverse=True)
        bits = self._bitsets(keys, T)
        rows_per_chunk = max(1, CHUNK_BYTES // (8 * self._words))
        cum = np.cumsum(sizes)
        start = 0
        while start < recs.size:
            base = cum[start - 1] if start else 0
            stop = max(start + 1, int(np.searchsorted(cum, base + rows_per_chunk, "right")))
            stop = min(stop, recs.size)
            rows = key_row[base : cum[stop - 1]]
            offsets = np.cumsum(sizes[start:stop]) - sizes[start:stop]
            anded = np.bitwise_and.reduceat(bits[rows], offsets, axis=0)
            result[start:stop] = np.bitwise_count(anded).sum(axis=1, dtype=np.int64)
            start = stop
        return result
