"""Where each row of a run stands in trec_eval's order: by query, then score descending.

Evaluation needs the rank of a few rows only (the judged ones, about 30 a query), so neither layout
orders the run's rows. Each answers, for given rows, the tie group they fall in (the positions of the
rows of the same query with the same score) and which rows make up a tie group; trec_eval settles a
tie by document id descending, which `evalcore.retrieval.ranking` applies where a tie touches a
judged document.

- `GroupedLayout`: the rows already come grouped by query with scores non-increasing, as a TREC file
  written by a search engine does. A row's position is its index; nothing is sorted.
- `KeyedLayout`: any other order (a run written by a script, shuffled, or merged). Each row gets one
  64-bit key, the query code in the high half and the score's order in the low half, and only the
  keys are sorted (a value sort, several times faster than sorting row indices, and than a stable
  sort by query followed by a sort of each query's scores): a tie group is the range of equal keys,
  and a query's rows the range of its code, both found by binary search.

Scores are compared as C floats (single precision), as trec_eval stores them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from evalcore.arrow import pooled_empty

_U64 = np.uint64
_BLOCK = 1 << 16
_SPREAD = _U64(0x9E3779B97F4A7C15)  # odd: spreads a key's bits into the top ones a bitmap reads


def layout_of(codes: np.ndarray, scores: np.ndarray, num_queries: int) -> GroupedLayout | KeyedLayout:
    """The cheaper layout for rows with these query codes and (single-precision) scores."""
    scores = scores.astype(np.float32, copy=False)
    grouped = GroupedLayout.of(codes, scores, num_queries)
    return grouped if grouped is not None else KeyedLayout.of(codes, scores, num_queries)


@dataclass(frozen=True)
class GroupedLayout:
    """Rows grouped by query, scores non-increasing within a query: positions are row indices."""

    new_tie: np.ndarray  # per row: does a new (query, score) group start here?
    query_start: np.ndarray  # first row of each query code
    counts: np.ndarray  # rows of each query code

    @classmethod
    def of(cls, codes: np.ndarray, scores: np.ndarray, num_queries: int) -> GroupedLayout | None:
        """The layout, or None when the rows are not in that order."""
        n = len(codes)
        new_tie = np.ones(n, dtype=bool)
        if n > 1:
            changes = np.not_equal(codes[1:], codes[:-1], out=new_tie[1:])
            if int(np.count_nonzero(changes)) != num_queries - 1:
                return None  # some query's rows are split
            rising = scores[1:] > scores[:-1]
            rising &= ~changes
            if rising.any():
                return None
        starts = np.flatnonzero(new_tie)
        query_start = np.zeros(num_queries, dtype=np.int64)
        counts = np.zeros(num_queries, dtype=np.int64)
        if n:
            query_start[codes[starts]] = starts
            counts[codes[starts]] = np.diff(np.append(starts, n))
        if n > 1:
            new_tie[1:] |= scores[1:] != scores[:-1]
        return cls(new_tie, query_start, counts)

    @cached_property
    def _tie_starts(self) -> np.ndarray:
        return np.flatnonzero(self.new_tie)

    def tie_groups(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """[begin, end) positions of the tie group of each row.

        Walks a few steps from each row, which settles the usual short ties cheaply, and looks the
        long ones up among all group starts.
        """
        n = len(self.new_tie)
        begin, end = rows.astype(np.int64), rows.astype(np.int64) + 1
        open_begin, open_end = np.arange(len(rows)), np.arange(len(rows))
        for _ in range(8):
            open_begin = open_begin[~self.new_tie[begin[open_begin]]]
            begin[open_begin] -= 1
            at = end[open_end]
            open_end = open_end[(at < n) & ~self.new_tie[np.minimum(at, n - 1)]]
            end[open_end] += 1
            if not len(open_begin) and not len(open_end):
                return begin, end
        starts = self._tie_starts
        begin[open_begin] = starts[np.searchsorted(starts, begin[open_begin], side="right") - 1]
        following = np.searchsorted(starts, end[open_end], side="left")
        end[open_end] = np.where(following < len(starts), starts[np.minimum(following, len(starts) - 1)], n)
        return begin, end

    def tie_members(self, begin: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows, group index) of every row of the groups [begin, end), group by group."""
        size = end - begin
        offset = np.concatenate([[0], np.cumsum(size)[:-1]]).astype(np.int64)
        group = np.repeat(np.arange(len(begin)), size)
        return np.repeat(begin - offset, size) + np.arange(int(size.sum())), group


@dataclass(frozen=True)
class KeyedLayout:
    """Rows in any order, placed through sorted 64-bit (query, score) keys."""

    keys: np.ndarray  # per row, int64: query code << 32 | the score's place among floats, descending
    sorted_keys: np.ndarray
    query_start: np.ndarray  # position of the first row of each query code in trec_eval's order
    counts: np.ndarray

    @classmethod
    def of(cls, codes: np.ndarray, scores: np.ndarray, num_queries: int) -> KeyedLayout:
        n = len(codes)
        keys = pooled_empty(n, np.int64)
        for lo in range(0, n, _BLOCK):  # a block at a time, so that the temporaries stay in cache
            block = keys[lo : lo + _BLOCK]
            block[:] = codes[lo : lo + _BLOCK]
            block <<= np.int64(32)
            block += _descending_bits(scores[lo : lo + _BLOCK])
        sorted_keys = pooled_empty(n, np.int64)
        sorted_keys[:] = keys
        sorted_keys.sort()
        # Each query's rows are a range of the sorted keys: where its code starts in the high half.
        bounds = np.searchsorted(sorted_keys, np.arange(num_queries + 1, dtype=np.int64) << np.int64(32))
        return cls(keys, sorted_keys, bounds[:-1], np.diff(bounds))

    def tie_groups(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        key = self.keys[rows]
        # Searching in key order walks the sorted keys once instead of jumping across 50 MB.
        order = np.argsort(key)
        begin, end = np.empty(len(key), dtype=np.int64), np.empty(len(key), dtype=np.int64)
        begin[order] = np.searchsorted(self.sorted_keys, key[order], side="left")
        end[order] = np.searchsorted(self.sorted_keys, key[order], side="right")
        return begin, end

    def tie_members(self, begin: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows, group index) of every row whose key is a group's key, group by group.

        A bitmap of the groups' keys discards almost every row in one pass; the rows left are
        confirmed on the exact key.
        """
        group_keys = self.sorted_keys[begin]  # ascending, since the groups are distinct ranges
        bits = int(np.clip(np.ceil(np.log2(max(len(group_keys), 1) * 32)), 12, 23))
        shift = _U64(64 - bits)
        bitmap = np.zeros(1 << bits, dtype=bool)
        bitmap[(group_keys.view(np.uint64) * _SPREAD) >> shift] = True
        keys = self.keys.view(np.uint64)
        marked = []
        for lo in range(0, len(keys), _BLOCK):  # a block at a time, so that the temporaries stay in cache
            bucket = keys[lo : lo + _BLOCK] * _SPREAD
            bucket >>= shift
            marked.append(np.flatnonzero(bitmap[bucket]) + lo)
        candidates = np.concatenate(marked) if marked else np.zeros(0, dtype=np.int64)
        # In key order the candidates come out group by group, and the search walks forward.
        candidates = candidates[np.argsort(self.keys[candidates])]
        key = self.keys[candidates]
        found = np.minimum(np.searchsorted(group_keys, key), len(group_keys) - 1)
        exact = group_keys[found] == key
        return candidates[exact], found[exact]


def _descending_bits(scores: np.ndarray) -> np.ndarray:
    """Per float32 score, an int64 in [0, 2^32) that sorts ascending as the scores sort descending.

    Read as an int32, a float's bits sort as the float does when it is non-negative and in reverse
    when negative; flipping the 31 low bits of the negative ones makes the int32 order the float
    order, and subtracting from 2^31 - 1 reverses it. -0.0 becomes +0.0 first, since they are equal.
    """
    bits = (scores + np.float32(0.0)).view(np.int32)
    bits ^= (bits >> np.int32(31)) & np.int32(0x7FFFFFFF)
    out = bits.astype(np.int64)
    np.subtract(np.int64(0x7FFFFFFF), out, out=out)
    return out
