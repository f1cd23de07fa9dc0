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
            "q0": pa.repeat("Q0", len(order)) if hasattr(pa, "repeat") else pa.array(["Q0"] * len(order)),
            "docno": docnos,
            "rank": pa.array(ranks, type=pa.int64()),
            "score": pc.cast(pa.array(run.scores[order], type=pa.float64()), pa.string()),
            "tag": pa.array(np.full(len(order), tag, dtype=object), type=pa.string()),
        }
    )
    options = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    pacsv.write_csv(table, os.fspath(path), write_options=options)
    return len(order)
