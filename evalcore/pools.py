"""Judgment pools: the (query, document) pairs to judge, from runs pooled to a depth or from pair lists.

`pool_run(run, depth)` keeps each query's top `depth` documents, ordered as trec_eval orders a ranking
(score descending, then document id descending). `read_pairs` reads `qid<TAB>doc_id` files.
`find_line` locates a (qid, doc_id) pair in a file, for error messages about rows that parsed well but
name something unknown. Nothing here imports Django.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from evalcore.errors import FormatError
from evalcore.ids import id_problem
from evalcore.retrieval.data import Run
from evalcore.textfiles import text_lines

__all__ = ["find_line", "pool_run", "read_pairs"]

PathLike = str | Path
_FIELD_SEPARATORS = re.compile(r'[\s",:{}\[\]]+')
_PAIR_HEADERS = {("qid", "doc_id"), ("qid", "docno"), ("query_id", "doc_id"), ("query-id", "corpus-id")}


def pool_run(run: Run, depth: int) -> list[tuple[str, str]]:
    """The top-`depth` (qid, doc_id) pairs of every query, best first within a query."""
    if depth < 1:
        raise ValueError("depth must be at least 1")
    if not len(run):
        return []
    codes, scores = run.qid_codes, run.scores
    order = np.lexsort((-scores, codes))
    sorted_codes = codes[order]
    counts = np.bincount(sorted_codes, minlength=run.num_queries)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    # The score at the cut; rows tied with it are settled by document id below.
    cut = scores[order[starts + np.minimum(counts, depth) - 1]]
    candidates = order[scores[order] >= cut[sorted_codes]]
    docnos = run.docno_strings(candidates)
    by_query: dict[int, list[tuple[float, str]]] = {}
    for row, doc in zip(candidates.tolist(), docnos, strict=True):
        by_query.setdefault(int(codes[row]), []).append((float(scores[row]), doc))
    pairs: list[tuple[str, str]] = []
    for code in sorted(by_query):
        ranked = sorted(by_query[code], reverse=True)[:depth]
        pairs.extend((str(run.qids[code]), doc) for _, doc in ranked)
    return pairs


def read_pairs(path: PathLike) -> Iterator[tuple[str, str, int]]:
    """(qid, doc_id, line) from a `qid<TAB>doc_id` file; an optional header row is skipped.

    Each line is decoded strictly, and its ids must be ones TREC files can hold (`evalcore.ids`)."""
    seen: dict[tuple[str, str], int] = {}
    for number, line in text_lines(path):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.rstrip("\r\n").split("\t")]
        if number == 1 and tuple(f.lower() for f in fields) in _PAIR_HEADERS:
            continue
        if len(fields) != 2:
            raise FormatError(str(path), number, f"expected qid<TAB>doc_id, found {len(fields)} columns")
        qid, doc_id = fields
        if not qid or not doc_id:
            raise FormatError(str(path), number, "empty qid or doc_id")
        problem = id_problem(qid, "query id") or id_problem(doc_id, "document id")
        if problem:
            raise FormatError(str(path), number, problem)
        first = seen.setdefault((qid, doc_id), number)
        if first != number:
            raise FormatError(str(path), number, f"pair {qid} {doc_id} appears twice (first on line {first})")
        yield qid, doc_id, number


def find_line(path: PathLike, qid: str, doc_id: str) -> int | None:
    """The first line whose fields (split on whitespace and JSON punctuation) include both ids, if any."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if qid in line and doc_id in line:
                fields = _FIELD_SEPARATORS.split(line)
                if qid in fields and doc_id in fields:
                    return number
    return None
