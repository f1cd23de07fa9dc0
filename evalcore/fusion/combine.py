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
_BLOCK = 1 << 22  # rows packed at a time


@dataclass(frozen=True)
class Stacked:
    """Every row of every run, run after run: its query code, document code and score; the shared
    vocabularies (documents in first-seen order: byte order is needed only to break ties, where the
    sorts compare the ids themselves), and where each run's rows start."""

    qids: np.ndarray
    docnos: pa.Array
    q: np.ndarray
    d: np.ndarray
    s: np.ndarray
    bounds: np.ndarray  # run i's rows are bounds[i]:bounds[i + 1]
    run_docnos: tuple[pa.ChunkedArray, ...]

    @property
    def n_runs(self) -> int:
        return len(self.bounds) - 1

    @property
    def n_rq(self) -> int:
        return self.n_runs * len(self.qids)

    def run_of_rows(self) -> np.ndarray:
        dtype = np.min_scalar_type(max(self.n_runs - 1, 0))
        return np.repeat(np.arange(self.n_runs, dtype=dtype), np.diff(self.bounds))


def stack(runs: Sequence[Run]) -> Stacked:
    """One table of all rows; documents coded by the runs' 64-bit keys of their ids (`_code_documents`)."""
    if not runs:
        raise ValueError("fusion needs at least one run")
    parts = [r.qids for r in runs if len(r.qids)]
    qids = np.unique(np.concatenate(parts)).astype(object) if parts else np.zeros(0, dtype=object)
    q = np.concatenate([lookup(qids, r.qids).astype(np.int32)[r.qid_codes] for r in runs])
    bounds = np.concatenate(([0], np.cumsum([len(r) for r in runs]))).astype(np.int64)
    s = np.concatenate([r.scores for r in runs]).astype(np.float64, copy=False)
    chunks = [c for r in runs for c in r.docnos.chunks if len(c)]
    large = len({c.type for c in chunks}) > 1
    if large:
        chunks = [c.cast(pa.large_binary()) for c in chunks]
    run_docnos = tuple(pa.chunked_array(r.docnos.chunks, type=r.docnos.type) for r in runs)
    if not chunks:
        empty = np.zeros(0, dtype=np.int32)
        return Stacked(qids, pa.array([], type=pa.binary()), q, empty, s, bounds, run_docnos)
    docnos, d = _code_documents(runs, pa.chunked_array(chunks))
    return Stacked(qids, docnos, q, d, s, bounds, run_docnos)


def _code_documents(runs: Sequence[Run], ids: pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """(the distinct ids in first-seen order, each row's code among them).

    The runs already hold a 64-bit key of every id (their duplicate check made it), and Arrow hashes
    those numbers in half the time it hashes the ids' bytes. Equal keys are equal ids where every run's
    keys are exact; hashed keys are confirmed on the bytes (each row against its code's first row), and
    a collision falls back to coding the ids themselves, so the codes are always those of the ids.
    """
    exact = all(r.exact_keys for r in runs)
    keys = [r.doc_keys if exact else r.doc_keys_for(False)[1] for r in runs]
    encoded = pc.dictionary_encode(pa.chunked_array([pa.array(k) for k in keys if len(k)], pa.uint64()))
    d = np.concatenate([to_numpy(c.indices) for c in encoded.chunks]).astype(np.int32, copy=False)
    # Codes are numbered in first-seen order, so a code's first row is where the running maximum rises.
    seen = np.maximum.accumulate(d)
    first = np.flatnonzero(np.concatenate(([True], seen[1:] != seen[:-1])))
    docnos = ids.take(pa.array(first)).combine_chunks()
    if exact or _same_ids(ids, docnos, d):
        return docnos, d
    encoded = pc.dictionary_encode(ids)
    # A chunked array is encoded against one memo table: every chunk carries the final dictionary.
    d = np.concatenate([to_numpy(c.indices) for c in encoded.chunks]).astype(np.int32, copy=False)
    return encoded.chunks[-1].dictionary, d


def _same_ids(ids: pa.ChunkedArray, docnos: pa.Array, d: np.ndarray) -> bool:
    """Whether every row's id is the id its code stands for (a chunk at a time, to bound memory)."""
    at = 0
    for chunk in ids.chunks:
        if not pc.all(pc.equal(chunk, docnos.take(pa.array(d[at : at + len(chunk)])))).as_py():
            return False
        at += len(chunk)
    return True


def _group_starts(sorted_keys: np.ndarray) -> np.ndarray:
    if not len(sorted_keys):
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(([0], np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1))


def _groups(q: np.ndarray, d: np.ndarray, n_queries: int, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """(each row's group, int32; each group's key q·n_docs + d), groups numbered in key order.

    One sort of 64-bit numbers: where the key and the row index fit in 64 bits together, the row
    rides in the key's low bits and a plain sort (faster than an argsort) gives both. The keys are
    packed a block of rows at a time, so that no other array of every row's 64-bit numbers exists.
    """
    n = len(q)
    row_bits = max((n - 1).bit_length(), 1)
    if max(n_queries * n_docs - 1, 1).bit_length() + row_bits <= 64:
        packed = np.empty(n, dtype=np.uint64)
        for lo in range(0, n, _BLOCK):
            hi = min(lo + _BLOCK, n)
            block = q[lo:hi].astype(np.uint64)
            block *= np.uint64(n_docs)
            block += d[lo:hi].astype(np.uint64)
            block <<= np.uint64(row_bits)
            block |= np.arange(lo, hi, dtype=np.uint64)
            packed[lo:hi] = block
        packed.sort()
        by_key = (packed & np.uint64((1 << row_bits) - 1)).view(np.int64)
        packed >>= np.uint64(row_bits)
        sorted_key = packed.view(np.int64)
    else:
        sorted_key = q.astype(np.int64) * n_docs + d
        by_key = np.argsort(sorted_key)
        sorted_key = sorted_key[by_key]
    new_group = np.empty(n, dtype=bool)
    new_group[:1] = True
    np.not_equal(sorted_key[1:], sorted_key[:-1], out=new_group[1:])
    group = np.empty(n, dtype=np.int32)
    group[by_key] = np.cumsum(new_group, dtype=np.int32) - 1
    return group, sorted_key[new_group]


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
    group, group_key = _groups(st.q, st.d, len(st.qids), n_docs)
    group_q, group_d = group_key // n_docs, group_key % n_docs
    candidates = np.bincount(group_q, minlength=len(st.qids)).astype(np.float64)
    value = np.empty(len(st.q), dtype=np.float64)
    fills = []  # per run, a missing candidate's value per query (only where runs complete)
    for i in range(st.n_runs):
        lo, hi = int(st.bounds[i]), int(st.bounds[i + 1])
        value[lo:hi], fill = _run_values(st, i, params, candidates)
        if fill is not None:
            fills.append(fill)
    run = st.run_of_rows()
    if fills:
        group, run, value = _complete(st, group, run, value, group_q, np.concatenate(fills))
    return Prepared(st, group, run, value, group_q, group_d)


def _rank_order(q: np.ndarray, s: np.ndarray, docnos: pa.ChunkedArray) -> np.ndarray:
    """The run's rows by query, score descending, then document id descending (ids compared byte by
    byte, trec_eval's `strcmp`); Arrow's sort compares the ids only where query and score tie."""
    table = pa.table({"q": q, "s": s, "d": docnos})
    keys = [("q", "ascending"), ("s", "descending"), ("d", "descending")]
    return to_numpy(pc.sort_indices(table, sort_keys=keys)).astype(np.int64)


def _run_values(
    st: Stacked, i: int, params: FusionParams, candidates: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    """Run `i`'s rows' values, and the value of a missing candidate per query where runs complete."""
    lo, hi = int(st.bounds[i]), int(st.bounds[i + 1])
    q, s = st.q[lo:hi], st.s[lo:hi]
    n_q = np.bincount(q, minlength=len(st.qids)).astype(np.float64)
    needs_rank = params.method in RANK_METHODS or params.norm in ("rank", "borda")
    order = _rank_order(q, s, st.run_docnos[i]) if needs_rank else np.argsort(q, kind="stable")
    starts = _group_starts(q[order])
    sizes = np.diff(np.append(starts, len(order)))
    rank = None
    if needs_rank:
        rank = np.empty(len(order), dtype=np.float64)
        rank[order] = np.arange(len(order)) - np.repeat(starts, sizes)
    return _values(params, s, q, order, starts, sizes, rank, n_q, candidates)


def _values(
    params: FusionParams,
    s: np.ndarray,
    q: np.ndarray,
    order: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    rank: np.ndarray | None,
    n_q: np.ndarray,
    cand_q: np.ndarray,
) -> tuple[np.ndarray, np.ndarray | None]:
    """One run's values: n_q and cand_q are its documents and the candidates N of each query."""
    method = params.method
    if rank is not None:
        cand = cand_q[q]
        if method == "rrf":
            return 1.0 / (params.k + rank + 1.0), None
        if method == "rbc":
            return (1.0 - params.phi) * params.phi**rank, None
        if method == "bordafuse":
            return cand - rank, (cand_q - n_q + 1.0) / 2.0
        if method in RANK_METHODS:
            return 1.0 / (rank + 1.0) ** 2, None  # isr, log_isr, logn_isr
        if params.norm == "rank":
            return 1.0 - rank / n_q[q], None
        return 1.0 - rank / cand, 0.5 - (n_q - 1.0) / (2.0 * np.maximum(cand_q, 1.0))  # borda
    if params.norm is None or not len(s):
        return s.copy(), None
    stats = _score_stats(s, order, starts, sizes, params.norm)
    which = np.empty(len(s), dtype=np.intp)
    which[order] = np.repeat(np.arange(len(starts)), sizes)
    if params.norm == "min-max":
        mn, mx = stats
        return (s - mn[which]) / np.maximum(mx - mn, _FLOOR)[which], None
    if params.norm == "max":
        (mx,) = stats
        return s / np.maximum(mx, _FLOOR)[which], None
    if params.norm == "sum":
        mn, sm = stats
        return (s - mn[which]) / np.maximum(sm - mn * sizes, _FLOOR)[which], None
    mean, sd = stats
    return (s - mean[which]) / np.maximum(sd, _FLOOR)[which], None  # zmuv


def _score_stats(
    s: np.ndarray, order: np.ndarray, starts: np.ndarray, sizes: np.ndarray, norm: str
) -> tuple[np.ndarray, ...]:
    """Per (run, query) segment, what `norm` needs of its scores: the minimum, maximum, sum, mean or
    population standard deviation."""
    ordered = s[order]
    if norm == "min-max":
        return np.minimum.reduceat(ordered, starts), np.maximum.reduceat(ordered, starts)
    if norm == "max":
        return (np.maximum.reduceat(ordered, starts),)
    sm = np.add.reduceat(ordered, starts)
    if norm == "sum":
        return np.minimum.reduceat(ordered, starts), sm
    mean = sm / sizes
    dev = ordered - np.repeat(mean, sizes)
    return mean, np.sqrt(np.add.reduceat(dev * dev, starts) / sizes)


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
        np.concatenate([run, miss_run.astype(run.dtype)]),
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
    table = pa.table({"g": g, "v": v})
    order = to_numpy(pc.sort_indices(table, sort_keys=[("g", "ascending"), ("v", "ascending")]))
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
    st = prep.stacked
    docnos = st.docnos.take(pa.array(prep.group_d))
    table = pa.table({"q": prep.group_q, "s": scores, "d": docnos})
    keys = [("q", "ascending"), ("s", "descending"), ("d", "descending")]
    order = to_numpy(pc.sort_indices(table, sort_keys=keys))
    docnos = docnos.take(pa.array(order))
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
