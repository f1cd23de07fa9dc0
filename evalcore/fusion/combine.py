"""Fuse runs, vectorised over every (run, query, document) row at once, with ranx's semantics.

All runs are stacked into one table of rows (run, query, document, score); queries are coded against
the union of the runs' query ids, documents against the union of their ids in byte order (so a code
compares as `strcmp` does). A query a run lacks counts as an empty ranking for that run.

1. **Normalise** each run's scores per query (`norm`), or, for rank methods, score each row by its
   0-based rank r in its run's ranking of the query (score descending, then document id descending,
   the order trec_eval evaluates in). With n the run's documents for the query, mn/mx/sm/mu/sd the
   minimum, maximum, sum, mean and population standard deviation of its scores, and N the
   candidates (the documents any run retrieved for the query), as ranx defines them:

   | norm      | value                                                                      |
   |-----------|----------------------------------------------------------------------------|
   | `min-max` | (s − mn) / max(mx − mn, 1e-9)                                             |
   | `max`     | s / max(mx, 1e-9)                                                          |
   | `sum`     | (s − mn) / max(sm − n·mn, 1e-9)                                           |
   | `zmuv`    | (s − mu) / max(sd, 1e-9)                                                   |
   | `rank`    | 1 − r / n                                                                  |
   | `borda`   | 1 − r / N; a candidate the run lacks gets 0.5 − (n − 1) / (2N)             |

2. **Combine** the values v_i of a document over the runs i that hold it (c of the k runs):
   CombSUM Σv, CombMNZ c·Σv, CombANZ Σv / c, CombMAX max v, CombMIN min v, CombMED the median of
   the c values (Fox and Shaw 1994); CombGMNZ c^γ·Σv (Lee 1997); `wsum` Σ w_i·v_i and `wmnz`
   Σv · Σ w_i (Wu and Crestani 2002). As ranx, CombMAX counts a missing run as −1e9 and CombMIN
   as 1e9 (so they matter only for scores beyond ±1e9).
   Rank methods: RRF Σ 1/(k + r + 1) (Cormack, Clarke and Büttcher 2009); ISR c·Σ 1/(r + 1)²,
   log_ISR ln(c)·Σ 1/(r + 1)², logn_ISR ln(c + σ)·Σ 1/(r + 1)² (Mourão, Martins and Magalhães
   2014); RBC Σ (1 − φ)·φ^r (Bailey et al. 2017); Borda fuse Σ (N − r), a candidate the run lacks
   scoring (N − n + 1) / 2 (Aslam and Montague 2001).

The `borda` normalisation and Borda fuse complete every run to the query's candidates, as ranx
does, so afterwards every document is held by every run (c = k).

The fused run lists every candidate; its rows are ordered by query id, fused score descending,
then document id descending. ranx orders tied documents by an unstable sort; that is the only
place where the two may list the same scores in another order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.arrow import to_numpy
from evalcore.fusion.params import RANK_METHODS, WEIGHTED_METHODS, FusionParams
from evalcore.retrieval.data import Run, lookup

_FLOOR = 1e-9  # ranx's guard against a zero denominator
_MISSING_MAX = -1e9  # what ranx's CombMAX counts for a run that lacks the document
_MISSING_MIN = 1e9


@dataclass(frozen=True)
class Stacked:
    """Every row of every run: its run, query code, document code, score; the shared vocabularies."""

    qids: np.ndarray
    docnos: pa.Array
    run: np.ndarray
    q: np.ndarray
    d: np.ndarray
    s: np.ndarray
    n_runs: int

    @property
    def n_rq(self) -> int:
        return self.n_runs * len(self.qids)


def stack(runs: Sequence[Run]) -> Stacked:
    """One table of all rows; documents coded in byte order of their ids, queries in sorted order."""
    if not runs:
        raise ValueError("fusion needs at least one run")
    parts = [r.qids for r in runs if len(r.qids)]
    qids = np.unique(np.concatenate(parts)).astype(object) if parts else np.zeros(0, dtype=object)
    q = np.concatenate([lookup(qids, r.qids)[r.qid_codes] for r in runs]).astype(np.int64)
    run = np.repeat(np.arange(len(runs), dtype=np.int64), [len(r) for r in runs])
    s = np.concatenate([r.scores for r in runs]).astype(np.float64)
    chunks = [c for r in runs for c in r.docnos.chunks if len(c)]
    if len({c.type for c in chunks}) > 1:
        chunks = [c.cast(pa.large_binary()) for c in chunks]
    if not chunks:
        empty = np.zeros(0, dtype=np.int64)
        return Stacked(qids, pa.array([], type=pa.binary()), run, q, empty, s, len(runs))
    docs = pa.chunked_array(chunks)
    unique = pc.unique(docs)
    index = to_numpy(pc.index_in(docs, value_set=unique)).astype(np.int64)
    order = to_numpy(pc.array_sort_indices(unique)).astype(np.int64)
    byte_rank = np.empty(len(order), dtype=np.int64)
    byte_rank[order] = np.arange(len(order), dtype=np.int64)
    return Stacked(qids, unique.take(pa.array(order)), run, q, byte_rank[index], s, len(runs))


def _group_starts(sorted_keys: np.ndarray) -> np.ndarray:
    if not len(sorted_keys):
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(([0], np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1))


@dataclass(frozen=True)
class Prepared:
    """The rows as the method combines them: each row's group (a (query, document) pair), run and
    value, and for every group its query and document codes."""

    stacked: Stacked
    group: np.ndarray
    run: np.ndarray
    value: np.ndarray
    group_q: np.ndarray
    group_d: np.ndarray


def prepare(stacked: Stacked, params: FusionParams) -> Prepared:
    """Group rows by (query, document) and give each its normalised or rank-based value."""
    st = stacked
    n_docs = max(len(st.docnos), 1)
    key = st.q * n_docs + st.d
    by_key = np.argsort(key)
    starts = _group_starts(key[by_key])
    group = np.empty(len(key), dtype=np.int64)
    first = np.zeros(len(key), dtype=np.int64)
    first[starts] = 1
    group[by_key] = np.cumsum(first) - 1
    group_key = key[by_key][starts]
    group_q, group_d = group_key // n_docs, group_key % n_docs
    candidates = np.bincount(group_q, minlength=len(st.qids)).astype(np.float64)

    rq = st.run * len(st.qids) + st.q
    needs_rank = params.method in RANK_METHODS or params.norm in ("rank", "borda")
    order = np.lexsort((-st.d, -st.s, rq)) if needs_rank else np.argsort(rq, kind="stable")
    rq_starts = _group_starts(rq[order])
    sizes = np.diff(np.append(rq_starts, len(order)))
    n_rq = np.bincount(rq, minlength=st.n_rq).astype(np.float64)
    n = n_rq[rq]
    rank = np.empty(len(order), dtype=np.float64)
    rank[order] = np.arange(len(order)) - np.repeat(rq_starts, sizes)

    value, fill = _values(st, params, order, rq_starts, sizes, rq, n, rank, candidates, n_rq)
    run = st.run
    if fill is not None:
        group, run, value = _complete(st, group, run, value, group_q, fill)
    return Prepared(st, group, run, value, group_q, group_d)


def _values(
    st: Stacked,
    params: FusionParams,
    order: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    rq: np.ndarray,
    n: np.ndarray,
    rank: np.ndarray,
    candidates: np.ndarray,
    n_rq: np.ndarray,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Each row's value, and the value of a missing candidate per (run, query) where runs complete."""
    method, s = params.method, st.s
    cand_rq = np.tile(candidates, st.n_runs)  # N for every (run, query)
    cand = cand_rq[rq]
    if method in RANK_METHODS:
        if method == "rrf":
            return 1.0 / (params.k + rank + 1.0), None
        if method == "rbc":
            return (1.0 - params.phi) * params.phi**rank, None
        if method == "bordafuse":
            return cand - rank, (cand_rq - n_rq + 1.0) / 2.0
        return 1.0 / (rank + 1.0) ** 2, None  # isr, log_isr, logn_isr
    if params.norm is None:
        return s, None
    if params.norm == "rank":
        return 1.0 - rank / n, None
    if params.norm == "borda":
        return 1.0 - rank / cand, 0.5 - (n_rq - 1.0) / (2.0 * np.maximum(cand_rq, 1.0))
    mn, mx, sm, mean, sd = _score_stats(s, order, starts, sizes, st.n_rq, rq)
    if params.norm == "min-max":
        return (s - mn) / np.maximum(mx - mn, _FLOOR), None
    if params.norm == "max":
        return s / np.maximum(mx, _FLOOR), None
    if params.norm == "sum":
        return (s - mn) / np.maximum(sm - mn * n, _FLOOR), None
    return (s - mean) / np.maximum(sd, _FLOOR), None  # zmuv


def _score_stats(
    s: np.ndarray, order: np.ndarray, starts: np.ndarray, sizes: np.ndarray, n_rq: int, rq: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Per row: its (run, query)'s minimum, maximum, sum, mean and population standard deviation."""
    if not len(s):
        return (s,) * 5
    ordered = s[order]
    mn = np.minimum.reduceat(ordered, starts)
    mx = np.maximum.reduceat(ordered, starts)
    sm = np.add.reduceat(ordered, starts)
    mean = sm / sizes
    dev = ordered - np.repeat(mean, sizes)
    sd = np.sqrt(np.add.reduceat(dev * dev, starts) / sizes)
    which = np.empty(len(s), dtype=np.int64)
    which[order] = np.repeat(np.arange(len(starts)), sizes)
    return mn[which], mx[which], sm[which], mean[which], sd[which]


def _complete(
    st: Stacked,
    group: np.ndarray,
    run: np.ndarray,
    value: np.ndarray,
    group_q: np.ndarray,
    fill: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Add a row for every candidate a run lacks, valued at the run's fill for the query."""
    present = np.zeros((st.n_runs, len(group_q)), dtype=bool)
    present[run, group] = True
    miss_run, miss_group = np.nonzero(~present)
    extra = fill[miss_run * len(st.qids) + group_q[miss_group]]
    return (
        np.concatenate([group, miss_group]),
        np.concatenate([run, miss_run]),
        np.concatenate([value, extra]),
    )


def combine(prep: Prepared, params: FusionParams) -> np.ndarray:
    """Each group's fused score."""
    g, v, method, k = prep.group, prep.value, params.method, prep.stacked.n_runs
    size = len(prep.group_q)
    count = np.bincount(g, minlength=size).astype(np.float64)
    total = np.bincount(g, weights=v, minlength=size)
    if method in WEIGHTED_METHODS:
        w = _weights(params, k)
        if method == "wsum":
            return np.bincount(g, weights=v * w[prep.run], minlength=size)
        return total * np.bincount(g, weights=w[prep.run], minlength=size)
    if method in ("sum", "rrf", "rbc", "bordafuse"):
        return total
    if method in ("mnz", "isr"):
        return total * count
    if method == "anz":
        return total / count
    if method == "gmnz":
        return total * count**params.gamma
    if method == "log_isr":
        return total * np.log(count)
    if method == "logn_isr":
        return total * np.log(count + params.sigma)
    return _order_statistic(g, v, count, method, k)


def _order_statistic(g: np.ndarray, v: np.ndarray, count: np.ndarray, method: str, k: int) -> np.ndarray:
    if not len(g):
        return np.zeros(0)
    order = np.lexsort((v, g))
    ordered = v[order]
    starts = _group_starts(g[order])
    c = count.astype(np.int64)
    if method == "max":
        return np.where(c < k, np.maximum(ordered[starts + c - 1], _MISSING_MAX), ordered[starts + c - 1])
    if method == "min":
        return np.where(c < k, np.minimum(ordered[starts], _MISSING_MIN), ordered[starts])
    return (ordered[starts + (c - 1) // 2] + ordered[starts + c // 2]) / 2.0  # med


def _weights(params: FusionParams, k: int) -> np.ndarray:
    if params.weights is None:
        return np.ones(k)
    if len(params.weights) != k:
        raise ValueError(f"{params.method} needs one weight per run: {k} runs, {len(params.weights)} weights")
    return np.asarray(params.weights, dtype=np.float64)


def fused_run(prep: Prepared, scores: np.ndarray, *, run_id: str | None = None) -> Run:
    """The fused run, rows ordered by query id, score descending, then document id descending."""
    order = np.lexsort((-prep.group_d, -scores, prep.group_q))
    st = prep.stacked
    docnos = st.docnos.take(pa.array(prep.group_d[order]))
    return Run(
        st.qids,
        prep.group_q[order].astype(np.int32),
        pa.chunked_array([docnos], type=st.docnos.type),
        scores=scores[order],
        run_id=run_id,
    )


def fuse(runs: Sequence[Run], params: FusionParams, *, run_id: str | None = None) -> Run:
    """Fuse `runs` (one or more) as ranx's `fuse(runs, norm=..., method=..., params=...)` does.

    >>> a = Run.from_dict({"q1": {"d1": 3.0, "d2": 1.0}})
    >>> b = Run.from_dict({"q1": {"d2": 2.0, "d3": 1.0}})
    >>> fuse([a, b], FusionParams("CombMNZ")).to_dict()
    {'q1': {'d2': 2.0, 'd1': 1.0, 'd3': 0.0}}
    >>> fuse([a, b], FusionParams("rrf", k=1)).to_dict()["q1"]["d2"]
    0.8333333333333333
    """
    prep = prepare(stack(runs), params)
    return fused_run(prep, combine(prep, params), run_id=run_id)
