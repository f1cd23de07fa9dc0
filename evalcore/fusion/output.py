"""A run written as a TREC run file (`qid Q0 docno rank score tag`), without a Python loop per line."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from evalcore.retrieval.data import Run


def ranked_rows(run: Run, depth: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(rows in evaluation order: query id, score descending, document id descending; 1-based ranks),
    keeping the first `depth` of each query when given."""
    if _in_evaluation_order(run):  # a fused run is: its rows need no second sort
        order = np.arange(len(run), dtype=np.int64)
    else:
        # One sort that compares the ids themselves (byte by byte) only where query and score tie.
        table = pa.table({"q": run.qid_codes, "s": run.scores, "d": run.docnos})
        keys = [("q", "ascending"), ("s", "descending"), ("d", "descending")]
        order = np.asarray(pc.sort_indices(table, sort_keys=keys)).astype(np.int64)
    codes = run.qid_codes[order]
    starts = np.concatenate(([0], np.flatnonzero(codes[1:] != codes[:-1]) + 1)) if len(codes) else codes
    sizes = np.diff(np.append(starts, len(codes)))
    ranks = np.arange(len(codes)) - np.repeat(starts, sizes) + 1
    if depth is not None:
        keep = ranks <= depth
        order, ranks = order[keep], ranks[keep]
    return order, ranks


def _in_evaluation_order(run: Run) -> bool:
    """Whether the rows are already by query, score descending, then id descending (the ids compared
    byte by byte, as Arrow's sort compares them, only where query and score tie)."""
    q, s = run.qid_codes, run.scores
    same_q = q[1:] == q[:-1]
    if np.any(q[1:] < q[:-1]) or np.any(same_q & ~(s[1:] <= s[:-1])):  # a NaN score fails too
        return False
    tied = np.flatnonzero(same_q & (s[1:] == s[:-1]))
    if not len(tied):
        return True
    ids = run.docnos
    return bool(pc.all(pc.greater(ids.take(pa.array(tied)), ids.take(pa.array(tied + 1)))).as_py())


def write_trec_run(run: Run, path: str | os.PathLike[str], *, tag: str, depth: int | None = None) -> int:
    """Write `run` to `path` in TREC format; returns the number of lines written.

    Scores are written as Arrow's shortest text that reads back as the same float (2.0 as `2`), so reading the file
    back gives the same scores.
    """
    if any(c in tag for c in " \t\n") or not tag:
        raise ValueError(f"the run tag must be one word, not {tag!r}")
    order, ranks = ranked_rows(run, depth)
    qids = pa.array(run.qids.astype(str), type=pa.string()).take(pa.array(run.qid_codes[order]))
    docnos = run.docnos.take(pa.array(order)).cast(pa.large_binary()).cast(pa.large_string())
    table = pa.table(
        {
            "qid": qids,
            "q0": pa.repeat(pa.scalar("Q0", pa.string()), len(order)),
            "docno": docnos,
            "rank": pa.array(ranks, type=pa.int64()),
            "score": pc.cast(pa.array(run.scores[order], type=pa.float64()), pa.string()),
            "tag": pa.repeat(pa.scalar(tag, pa.string()), len(order)),  # in C++: no Python string per line
        }
    )
    options = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    pacsv.write_csv(table, os.fspath(path), write_options=options)
    return len(order)
