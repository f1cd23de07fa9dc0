"""Two runs' ranked lists, cut at depth k, as integer matrices over the queries both runs answer.

Each run is ranked as trec_eval ranks it: per query by score descending (scores compared as C
floats, as trec_eval does), then by document id descending. A document gets the same integer id
in both matrices (ids are shared across queries; a list never repeats a document, as a run holds
one row per query and document). Rows shorter than k are padded with -1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from evalcore import arrow
from evalcore.arrow import from_numpy
from evalcore.retrieval import Run

__all__ = ["PAD", "RankedLists", "ranked_lists"]

PAD = -1


@dataclass(frozen=True, slots=True)
class RankedLists:
    """The top-k lists of two runs on the queries both answer (qid order: string order)."""

    qids: np.ndarray  # (n,) str
    a: np.ndarray  # (n, k) int64 document ids, PAD after each list's end
    b: np.ndarray  # (n, k)
    only_a: tuple[str, ...]  # queries the first run answers and the second does not
    only_b: tuple[str, ...]


def _ordered_rows(run: Run, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(qid strings, rank 0..depth-1, row) of every row within depth, in trec_eval's order."""
    vocab = np.asarray(run.qids).astype(str)
    place = np.empty(len(vocab), dtype=np.int64)
    place[np.argsort(vocab, kind="stable")] = np.arange(len(vocab))  # qid string order as integers
    key = place[run.qid_codes]
    # Arrow arrays over numpy buffers: `pa.array` of a numpy array imports pandas
    scores = np.ascontiguousarray(run.scores.astype(np.float32))
    score_column = pa.Array.from_buffers(pa.float32(), len(scores), [None, pa.py_buffer(scores)])
    table = pa.table({"q": from_numpy(key), "s": score_column, "d": run.docnos})
    order = arrow.sort_indices(table, [("q", "ascending"), ("s", "descending"), ("d", "descending")])
    rows = order.astype(np.int64)
    q_sorted = key[rows]
    starts = np.r_[True, q_sorted[1:] != q_sorted[:-1]] if len(rows) else np.zeros(0, dtype=bool)
    first = np.maximum.accumulate(np.where(starts, np.arange(len(rows)), 0)) if len(rows) else rows
    rank = np.arange(len(rows)) - first
    keep = rank < depth
    return vocab[run.qid_codes[rows[keep]]], rank[keep], rows[keep]


def ranked_lists(a: Run, b: Run, *, depth: int) -> RankedLists:
    """Both runs' top-`depth` lists as matrices of shared document ids, one row per common query.

    >>> a = Run.from_dict({"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}, "q2": {"x": 1.0}})
    >>> b = Run.from_dict({"q1": {"d3": 9.0, "d1": 9.0}, "q3": {"y": 1.0}})
    >>> lists = ranked_lists(a, b, depth=2)
    >>> lists.qids.tolist(), lists.a.shape, lists.b.shape, lists.only_a, lists.only_b
    (['q1'], (1, 2), (1, 2), ('q2',), ('q3',))

    The ids are codes shared by both matrices (their values are arbitrary): b's second document (d1, tied
    with d3 and after it by document id descending) is a's first, and b's first (d3) is not in a's top 2.

    >>> bool(lists.b[0, 1] == lists.a[0, 0]), bool(lists.b[0, 0] in lists.a[0])
    (True, False)
    """
    if depth < 1:
        raise ValueError("the depth k must be at least 1")
    qa, ra, rows_a = _ordered_rows(a, depth)
    qb, rb, rows_b = _ordered_rows(b, depth)
    picked = [arrow.take(run.docnos, from_numpy(rows)) for run, rows in ((a, rows_a), (b, rows_b))]
    docs = pa.chunked_array(
        [chunk for p in picked for chunk in arrow.cast(p, pa.large_string()).chunks], pa.large_string()
    )
    ids = arrow.to_numpy(arrow.dictionary_encode(docs.combine_chunks()).indices).astype(np.int64)
    set_a, set_b = set(qa.tolist()), set(qb.tolist())
    common = np.array(sorted(set_a & set_b), dtype=str)
    mat_a = _matrix(common, qa, ra, ids[: len(rows_a)], depth)
    mat_b = _matrix(common, qb, rb, ids[len(rows_a) :], depth)
    return RankedLists(
        qids=common,
        a=mat_a,
        b=mat_b,
        only_a=tuple(sorted(set_a - set_b)),
        only_b=tuple(sorted(set_b - set_a)),
    )


def _matrix(common: np.ndarray, qids: np.ndarray, rank: np.ndarray, ids: np.ndarray, k: int) -> np.ndarray:
    out = np.full((len(common), k), PAD, dtype=np.int64)
    if not len(common):
        return out
    where = np.searchsorted(common, qids)
    where = np.minimum(where, len(common) - 1)
    inside = common[where] == qids
    out[where[inside], rank[inside]] = ids[inside]
    return out
