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

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.arrow import to_numpy
from evalcore.errors import EvalCoreError
from evalcore.retrieval.data import Qrels, Run, lookup
from evalcore.retrieval.keys import iter_pair_hashes, ordered_keys, query_salts

_SEEDS = 8
T = TypeVar("T")


@dataclass(frozen=True)
class RelevantHits:
    """Retrieved documents with rel >= level, sorted by (query, rank)."""

    query: np.ndarray
    rank: np.ndarray
    count_so_far: np.ndarray  # 1 for the first relevant document of a query, 2 for the next...
    first: np.ndarray  # index of each query's first relevant hit (== len when it has none)
    per_query: np.ndarray  # number of relevant retrieved documents of each query


@dataclass(frozen=True)
class Gains:
    """How a grade becomes a gain: the grade itself (trec_eval), or 2^grade - 1 (the seeds' nDCG).

    `overrides` are trec_eval's `level=gain` parameters (`ndcg.1=3,2=9`): those grades get that gain
    instead. A document that is unjudged, or judged with a negative grade, gains 0.
    """

    kind: Literal["linear", "exp"] = "linear"
    overrides: tuple[tuple[int, float], ...] = ()

    def of(self, grade: np.ndarray) -> np.ndarray:
        value = grade.astype(np.float64)
        gain = value if self.kind == "linear" else np.exp2(value) - 1.0
        for level, override in self.overrides:
            gain = np.where(grade == level, override, gain)
        return np.where(grade < 0, 0.0, gain)


@dataclass(frozen=True)
class IdealGains:
    """Each query's judged documents of positive gain, best first: position 0 is the ideal ranking's first."""

    query: np.ndarray
    position: np.ndarray
    gain: np.ndarray
    first: np.ndarray  # index of each query's first entry
    per_query: np.ndarray  # entries of each query


def segmented_cumsum(query: np.ndarray, values: np.ndarray, num_queries: int) -> np.ndarray:
    """Running sum of `values` within each query (entries sorted by query), added in order.

    Queries are laid out as rows of a padded matrix, a block at a time, so that each query's sum
    restarts at zero and adds its terms one by one, as trec_eval's loops do (a global cumulative sum
    would carry every earlier query's rounding).
    """
    return _scan(query, values, num_queries, "sum")


def _scan(
    query: np.ndarray, values: np.ndarray, num_queries: int, how: Literal["sum", "max_after"]
) -> np.ndarray:
    out = np.empty(len(values), dtype=np.float64)
    if not len(values):
        return out
    first = np.searchsorted(query, np.arange(num_queries))
    slot = np.arange(len(query)) - first[query]
    width = int(slot.max()) + 1
    step = max(1, 8_000_000 // width)
    for lo in range(0, num_queries, step):
        # Queries in blocks so the padded matrix stays small even for deep judgments.
        a, b = np.searchsorted(query, [lo, lo + step])
        fill = 0.0 if how == "sum" else -np.inf
        grid = np.full((min(step, num_queries - lo), width), fill)
        grid[query[a:b] - lo, slot[a:b]] = values[a:b]
        if how == "sum":
            np.cumsum(grid, axis=1, out=grid)
        else:
            grid = np.maximum.accumulate(grid[:, ::-1], axis=1)[:, ::-1]
        out[a:b] = grid[query[a:b] - lo, slot[a:b]]
    return out


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
    qrels_rels: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # every judgment
    run_id: str | None = None
    hit_score: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the run's score of each hit
    #: The number of documents in the collection (trec_eval -N; 0 unless given), which utility's d uses.
    num_docs: float = 0.0
    _cache: dict[object, object] = field(default_factory=dict, repr=False)

    @property
    def num_queries(self) -> int:
        return len(self.qids)

    def count(self, query: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Per-query sum of `weights` (or count) over entries tagged with `query`."""
        return np.bincount(query, weights=weights, minlength=self.num_queries).astype(np.float64)

    def _cached(self, key: object, build: Callable[[], T]) -> T:
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]  # type: ignore[return-value]

    def num_rel(self, level: int) -> np.ndarray:
        return self._cached(
            ("num_rel", level), lambda: self.count(self.judged_query[self.judged_rel >= level])
        )

    def num_nonrel(self, level: int) -> np.ndarray:
        """Judged documents below the level; negative grades (unjudged) do not count."""
        nonrel = (self.judged_rel >= 0) & (self.judged_rel < level)
        return self.count(self.judged_query[nonrel])

    @property
    def hit_first(self) -> np.ndarray:
        """Index of each query's first hit (== the next query's when it has none)."""
        return self._cached("hit_first", lambda: np.searchsorted(self.hit_query, np.arange(self.num_queries)))

    def relevant(self, level: int) -> RelevantHits:
        return self._cached(("relevant", level), lambda: self._relevant(level))

    def _relevant(self, level: int) -> RelevantHits:
        keep = self.hit_rel >= level
        query, rank = self.hit_query[keep], self.hit_rank[keep]
        first = np.searchsorted(query, np.arange(self.num_queries))
        so_far = np.arange(1, len(query) + 1) - first[query] if len(query) else query.copy()
        per_query = np.bincount(query, minlength=self.num_queries)
        return RelevantHits(query, rank, so_far, first, per_query)

    def ideal(self, gains: Gains = Gains()) -> IdealGains:
        return self._cached(("ideal", gains), lambda: self._ideal(gains))

    def _ideal(self, gains: Gains) -> IdealGains:
        gain = gains.of(self.judged_rel)
        positive = gain > 0
        query, gain = self.judged_query[positive], gain[positive]
        order = np.lexsort((-gain, query))
        query, gain = query[order], gain[order]
        first = np.searchsorted(query, np.arange(self.num_queries))
        position = np.arange(len(query)) - first[query] if len(query) else query.copy()
        return IdealGains(query, position, gain, first, np.bincount(query, minlength=self.num_queries))

    def interpolated_precision(self, level: int) -> np.ndarray:
        """For each relevant hit, the best precision at its rank or any later rank (trec_eval)."""
        rel = self.relevant(level)
        return self._cached(
            ("iprec", level),
            lambda: _scan(rel.query, rel.count_so_far / rel.rank, self.num_queries, "max_after"),
        )


def judged_context(ctx: RankingContext) -> RankingContext:
    """The context of the same queries with only the documents judged with rel >= 0 retrieved, as trec_eval
    -J ranks them (pytrec_eval's judged_docs_only_flag): the judged hits keep their order and close up.

    A query with no judged document retrieved stays, with nothing retrieved, as it does in trec_eval.
    No second join: the documents -J keeps are exactly the hits.
    """
    keep = ctx.hit_rel >= 0
    query = ctx.hit_query[keep]
    first = np.searchsorted(query, np.arange(ctx.num_queries))
    rank = np.arange(1, len(query) + 1) - first[query] if len(query) else query.copy()
    return replace(
        ctx,
        num_ret=ctx.count(query),
        hit_query=query,
        hit_rank=rank,
        hit_rel=ctx.hit_rel[keep],
        hit_score=ctx.hit_score[keep] if len(ctx.hit_score) == len(keep) else ctx.hit_score,
        _cache={},
    )


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
    exact = run.exact_keys
    fits, qkeys = qrels.doc_keys_for(exact)
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
    if not exact and len(run_rows):
        # Hashed keys: confirm on the bytes.
        equal = to_numpy(
            pc.equal(run.docnos.take(pa.array(run_rows)), qrels.docnos.take(pa.array(qrels_rows)))
        )
        run_rows, qrels_rows = run_rows[equal], qrels_rows[equal]
    return run_rows, qrels_rows


def _ranks(run: Run, rows: np.ndarray) -> np.ndarray:
    """1-based rank of each of `rows` within its query: score descending, then document id descending."""
    layout = run.layout
    begin, end = layout.tie_groups(rows)
    rank = begin - layout.query_start[run.qid_codes[rows]] + 1
    tied = np.flatnonzero(end - begin > 1)
    if not len(tied):
        return rank
    g_begin, first, which = np.unique(begin[tied], return_index=True, return_inverse=True)
    which = which.reshape(-1)
    g_size = end[tied][first] - g_begin
    g_offset = np.concatenate([[0], np.cumsum(g_size)[:-1]])
    members, member_group = layout.tie_members(g_begin, g_begin + g_size)
    if run.exact_keys:
        order = np.lexsort((ordered_keys(run.doc_keys[members]), member_group))
    else:
        table = pa.table({"g": member_group, "d": run.docnos.take(pa.array(members))})
        order = to_numpy(pc.sort_indices(table, sort_keys=[("g", "ascending"), ("d", "ascending")]))
    # Each member's place in its group by document id ascending; a tied row ranks after the members
    # with a greater id (trec_eval's tie-break).
    ascending = np.empty(len(members), dtype=np.int64)
    ascending[order] = np.arange(len(members)) - g_offset[member_group[order]]
    by_row = np.argsort(members)
    member = by_row[np.searchsorted(members, rows[tied], sorter=by_row)]
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
        qrels_rels=qrels.rels,
        run_id=run.run_id,
        hit_score=run.scores[run_rows][order],
    )
