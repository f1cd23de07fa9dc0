"""The sufficient statistic of a retrieval evaluation: where the judged documents landed.

Every trec_eval measure depends on a query's ranking only through the ranks of its judged documents,
the number of documents retrieved, and the query's judgments. So instead of a queries x depth matrix,
the context keeps the judged hits (about 30 a query instead of 1,000 rows) sorted by (query, rank),
and the kernels reduce them with `np.bincount`, never a Python loop per query.

Building it costs one hash join of the run against the qrels and no sort of the run when its rows
already come grouped by query and by descending score, as TREC files do. Ties in score are settled by
document id descending only where a tie touches a judged document.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.errors import EvalCoreError
from evalcore.retrieval.data import Qrels, Run, RunLayout, lookup
from evalcore.retrieval.keys import iter_pair_hashes, ordered_keys, query_salts, to_numpy

Gain = Literal["linear", "exp"]

_SEEDS = 8


@dataclass(frozen=True)
class RelevantHits:
    """Retrieved documents with rel >= level, sorted by (query, rank)."""

    query: np.ndarray
    rank: np.ndarray
    count_so_far: np.ndarray  # 1 for the first relevant document of a query, 2 for the next...
    first: np.ndarray  # index of each query's first relevant hit (== len when it has none)
    per_query: np.ndarray  # number of relevant retrieved documents of each query


@dataclass(frozen=True)
class IdealGains:
    """Each query's positive judgments, best first: position 0 is the ideal ranking's first document."""

    query: np.ndarray
    position: np.ndarray
    grade: np.ndarray


@dataclass(eq=False)
class RankingContext:
    """Judged hits of the queries that both the run and the qrels hold (trec_eval's evaluated set)."""

    qids: np.ndarray  # evaluated query ids, sorted
    num_ret: np.ndarray  # documents retrieved per query
    hit_query: np.ndarray  # judged retrieved documents, sorted by (query, rank)
    hit_rank: np.ndarray  # 1-based rank in trec_eval's order
    hit_rel: np.ndarray  # relevance; negative: in the pool but unjudged
    judged_query: np.ndarray  # every judgment of the evaluated queries
    judged_rel: np.ndarray
    missing_qids: np.ndarray  # qrels queries that the run lacks
    num_qrels_queries: int
    _cache: dict[object, object] = field(default_factory=dict, repr=False)

    @property
    def num_queries(self) -> int:
        return len(self.qids)

    def count(self, query: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Per-query sum of `weights` (or count) over entries tagged with `query`."""
        return np.bincount(query, weights=weights, minlength=self.num_queries).astype(np.float64)

    def num_rel(self, level: int) -> np.ndarray:
        key = ("num_rel", level)
        if key not in self._cache:
            self._cache[key] = self.count(self.judged_query[self.judged_rel >= level])
        return self._cache[key]  # type: ignore[return-value]

    def num_nonrel(self, level: int) -> np.ndarray:
        """Judged documents below the level; negative grades (unjudged) do not count."""
        nonrel = (self.judged_rel >= 0) & (self.judged_rel < level)
        return self.count(self.judged_query[nonrel])

    def relevant(self, level: int) -> RelevantHits:
        key = ("relevant", level)
        if key not in self._cache:
            keep = self.hit_rel >= level
            query, rank = self.hit_query[keep], self.hit_rank[keep]
            first = np.searchsorted(query, np.arange(self.num_queries))
            so_far = np.arange(1, len(query) + 1) - first[query] if len(query) else query.copy()
            per_query = np.bincount(query, minlength=self.num_queries)
            self._cache[key] = RelevantHits(query, rank, so_far, first, per_query)
        return self._cache[key]  # type: ignore[return-value]

    def ideal(self) -> IdealGains:
        if "ideal" not in self._cache:
            positive = self.judged_rel > 0
            query, grade = self.judged_query[positive], self.judged_rel[positive]
            order = np.lexsort((-grade, query))
            query, grade = query[order], grade[order]
            first = np.searchsorted(query, np.arange(self.num_queries))
            position = np.arange(len(query)) - first[query] if len(query) else query.copy()
            self._cache["ideal"] = IdealGains(query, position, grade)
        return self._cache["ideal"]  # type: ignore[return-value]

    def interpolated_precision(self, level: int) -> np.ndarray:
        """For each relevant hit, the best precision at its rank or any later rank (trec_eval)."""
        key = ("iprec", level)
        if key not in self._cache:
            rel = self.relevant(level)
            precision = rel.count_so_far / rel.rank
            out = np.empty_like(precision)
            if len(precision):
                slot = rel.count_so_far - 1
                width = int(slot.max()) + 1
                step = max(1, 8_000_000 // width)
                for lo in range(0, self.num_queries, step):
                    # Queries in blocks so the padded matrix stays small even for deep judgments.
                    a, b = np.searchsorted(rel.query, [lo, lo + step])
                    grid = np.full((min(step, self.num_queries - lo), width), -np.inf)
                    grid[rel.query[a:b] - lo, slot[a:b]] = precision[a:b]
                    grid = np.maximum.accumulate(grid[:, ::-1], axis=1)[:, ::-1]
                    out[a:b] = grid[rel.query[a:b] - lo, slot[a:b]]
            self._cache[key] = out
        return self._cache[key]  # type: ignore[return-value]


def _evaluated_queries(qrels: Qrels, run: Run) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(evaluated qids, run code -> evaluated index or -1, qrels code -> evaluated index or -1)."""
    run_in_qrels = lookup(qrels.qids, run.qids)
    evaluated = run_in_qrels >= 0
    run_to_eval = np.where(evaluated, np.cumsum(evaluated) - 1, -1)
    qrels_to_eval = np.full(len(qrels.qids), -1, dtype=np.int64)
    qrels_to_eval[run_in_qrels[evaluated]] = np.flatnonzero(evaluated)
    qrels_to_eval[qrels_to_eval >= 0] = run_to_eval[qrels_to_eval[qrels_to_eval >= 0]]
    return run.qids[evaluated], run_to_eval, qrels_to_eval


def _candidates(
    run: Run, salts: np.ndarray, bitmap: np.ndarray, shift: np.uint64
) -> tuple[np.ndarray, np.ndarray]:
    """Run rows whose (query, document) hash falls in a marked bucket, and their hashes."""
    rows, hashes = [], []
    for lo, block in iter_pair_hashes(run.doc_keys, run.qid_codes, salts):
        hit = np.flatnonzero(bitmap[block >> shift])
        rows.append(hit + lo)
        hashes.append(block[hit])
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64)
    return np.concatenate(rows), np.concatenate(hashes)


def _join(
    qrels: Qrels, run: Run, run_to_eval: np.ndarray, qrels_to_eval: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Matching (run row, qrels row) pairs: same evaluated query, same document id.

    A (query, document) pair hashes to `doc_key ^ salt[query]`, as in the run's duplicate check. A
    bitmap of the judged pairs' hashes discards almost every run row in one pass; the rows left are
    looked up by binary search and confirmed on the exact query and key.
    """
    empty = np.zeros(0, dtype=np.int64)
    words = run.key_words
    fits, qkeys = qrels.doc_keys_for(words)
    qeval = qrels_to_eval[qrels.qid_codes[fits]]
    keep = qeval >= 0
    fits, qkeys, qeval = fits[keep], qkeys[keep], qeval[keep]
    if not len(fits) or not len(run):
        return empty, empty
    qrun = np.flatnonzero(run_to_eval >= 0)[qeval]  # the run's code of each judged pair's query
    for seed in range(_SEEDS):
        salts = run.salts if seed == 0 else query_salts(len(run.qids), seed)
        qhash = qkeys ^ salts[qrun]
        order = np.argsort(qhash)
        qsorted = qhash[order]
        if not np.any(qsorted[1:] == qsorted[:-1]):
            break
        # pragma: no cover - two judged pairs share a hash; try other salts
    else:  # pragma: no cover - needs a 64-bit collision between two ids of one query
        raise EvalCoreError("two document ids of one query share a hash key; please report this")
    bits = int(np.clip(np.ceil(np.log2(len(qsorted) * 32)), 16, 23))
    shift = np.uint64(64 - bits)
    bitmap = np.zeros(1 << bits, dtype=bool)
    bitmap[qsorted >> shift] = True
    rows, rhashes = _candidates(run, salts, bitmap, shift)
    at = np.minimum(np.searchsorted(qsorted, rhashes), len(qsorted) - 1)
    found = qsorted[at] == rhashes
    rows, qindex = rows[found], order[at[found]]
    same = (run.qid_codes[rows] == qrun[qindex]) & (run.doc_keys[rows] == qkeys[qindex])
    run_rows, qrels_rows = rows[same], fits[qindex[same]]
    if words > 1 and len(run_rows):
        # Hashed keys: confirm on the bytes.
        equal = to_numpy(
            pc.equal(run.docnos.take(pa.array(run_rows)), qrels.docnos.take(pa.array(qrels_rows)))
        )
        run_rows, qrels_rows = run_rows[equal], qrels_rows[equal]
    return run_rows, qrels_rows


def _ranks(run: Run, rows: np.ndarray) -> np.ndarray:
    """1-based rank of each of `rows` within its query: score descending, then document id descending."""
    layout: RunLayout = run.layout
    pos = layout.positions(rows)
    begin, end = layout.tie_group(pos)
    rank = begin - layout.query_start[run.qid_codes[rows]] + 1
    tied = np.flatnonzero(end - begin > 1)
    if not len(tied):
        return rank
    g_begin, first, which = np.unique(begin[tied], return_index=True, return_inverse=True)
    which = which.reshape(-1)
    g_size = end[tied][first] - g_begin
    g_offset = np.concatenate([[0], np.cumsum(g_size)[:-1]])
    total = int(g_size.sum())
    members = layout.rows(np.repeat(g_begin - g_offset, g_size) + np.arange(total))
    member_group = np.repeat(np.arange(len(g_begin)), g_size)
    if run.key_words == 1:
        order = np.lexsort((ordered_keys(run.doc_keys[members]), member_group))
    else:
        table = pa.table({"g": member_group, "d": run.docnos.take(pa.array(members))})
        order = to_numpy(pc.sort_indices(table, sort_keys=[("g", "ascending"), ("d", "ascending")]))
    ascending = np.empty(total, dtype=np.int64)
    ascending[order] = np.arange(total) - np.repeat(g_offset, g_size)
    member = g_offset[which] + (pos[tied] - g_begin[which])
    rank[tied] += g_size[which] - 1 - ascending[member]
    return rank


def build_context(qrels: Qrels, run: Run) -> RankingContext:
    """Join `run` to `qrels` and place every judged retrieved document at its trec_eval rank."""
    qids, run_to_eval, qrels_to_eval = _evaluated_queries(qrels, run)
    run_rows, qrels_rows = _join(qrels, run, run_to_eval, qrels_to_eval)
    hit_query = run_to_eval[run.qid_codes[run_rows]]
    hit_rank = _ranks(run, run_rows)
    order = np.lexsort((hit_rank, hit_query))
    per_code = run.layout.counts
    judged = qrels_to_eval[qrels.qid_codes]
    in_eval = judged >= 0
    return RankingContext(
        qids=qids,
        num_ret=per_code[run_to_eval >= 0].astype(np.float64),
        hit_query=hit_query[order],
        hit_rank=hit_rank[order],
        hit_rel=qrels.rels[qrels_rows][order],
        judged_query=judged[in_eval],
        judged_rel=qrels.rels[in_eval],
        missing_qids=qrels.qids[lookup(run.qids, qrels.qids) < 0],
        num_qrels_queries=len(qrels.qids),
    )
