"""The candidates of a pool: every run's top `depth` documents per topic, and where each run ranks them.

A `PoolCandidates` holds one entry per distinct (topic, document) pair, sorted by topic (trec_eval's
order of query ids) and then by document id, and the *hits*: one (run, candidate, rank) triple per
document a run returned within its top `depth`, sorted by (topic, run, rank). Every strategy reads the
hits; nothing keeps a Python object per run row.
"""

from __future__ import annotations

import io
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa

from evalcore.arrow import dictionary_encode, sort_indices, to_numpy
from evalcore.retrieval.data import Run, lookup
from evalcore.retrieval.keys import decode

__all__ = ["PoolCandidates", "candidates_from_runs"]


@dataclass(frozen=True, eq=False)
class PoolCandidates:
    """The union of every run's top `depth` per topic, with each run's ranks (immutable).

    `query[i]` indexes `qids` for candidate `i`; `hit_run`, `hit_candidate` and `hit_rank` (1-based,
    trec_eval's order) say where each run placed each candidate, sorted by (topic, run, rank).
    """

    qids: tuple[str, ...]
    run_names: tuple[str, ...]
    query: np.ndarray
    docnos: tuple[str, ...]
    hit_run: np.ndarray
    hit_candidate: np.ndarray
    hit_rank: np.ndarray
    depth: int
    _index: dict[tuple[str, str], int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("query", "hit_run", "hit_candidate", "hit_rank"):
            getattr(self, name).setflags(write=False)

    def __len__(self) -> int:
        return len(self.docnos)

    def pair(self, index: int) -> tuple[str, str]:
        """(qid, docno) of candidate `index`."""
        return self.qids[int(self.query[index])], self.docnos[index]

    def index_of(self, qid: str, docno: str) -> int | None:
        """The candidate index of (qid, docno), or None when no run retrieved it within the depth."""
        if not self._index and len(self):
            self._index.update({self.pair(i): i for i in range(len(self))})
        return self._index.get((qid, docno))

    @cached_property
    def topic_bounds(self) -> np.ndarray:
        """Candidates of topic t are `range(topic_bounds[t], topic_bounds[t + 1])`."""
        return np.searchsorted(self.query, np.arange(len(self.qids) + 1)).astype(np.int64)

    @cached_property
    def hit_bounds(self) -> np.ndarray:
        """Hits of topic t are `range(hit_bounds[t], hit_bounds[t + 1])`."""
        return np.searchsorted(self.query[self.hit_candidate], np.arange(len(self.qids) + 1)).astype(np.int64)

    def to_bytes(self) -> bytes:
        """A compact, pickle-free serialisation (numpy's .npz with the strings as JSON)."""
        buffer = io.BytesIO()
        meta = {"qids": self.qids, "run_names": self.run_names, "docnos": self.docnos, "depth": self.depth}
        np.savez_compressed(
            buffer,
            meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
            query=self.query,
            hit_run=self.hit_run,
            hit_candidate=self.hit_candidate,
            hit_rank=self.hit_rank,
        )
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> PoolCandidates:
        with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
            meta = json.loads(arrays["meta"].tobytes().decode())
            return cls(
                tuple(meta["qids"]),
                tuple(meta["run_names"]),
                arrays["query"].astype(np.int32),
                tuple(meta["docnos"]),
                arrays["hit_run"].astype(np.int32),
                arrays["hit_candidate"].astype(np.int64),
                arrays["hit_rank"].astype(np.int32),
                int(meta["depth"]),
            )


def candidates_from_runs(
    runs: Sequence[Run],
    *,
    depth: int,
    names: Sequence[str] | None = None,
    qids: Collection[str] | None = None,
) -> PoolCandidates:
    """Pool the top `depth` documents of each run per topic, ranked as trec_eval ranks them.

    A run's documents are ordered by score descending (compared as C floats), then document id
    descending; `qids` restricts the topics (a project's topics); `names` default to each run's tag
    (or `run<i>`).

    >>> a = Run.from_dict({"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}})
    >>> b = Run.from_dict({"q1": {"d3": 1.0, "d4": 1.0}, "q2": {"d9": 5.0}})
    >>> pool = candidates_from_runs([a, b], depth=2, names=["a", "b"])
    >>> [pool.pair(i) for i in range(len(pool))]
    [('q1', 'd1'), ('q1', 'd2'), ('q1', 'd3'), ('q1', 'd4'), ('q2', 'd9')]
    """
    if depth < 1:
        raise ValueError("depth must be at least 1")
    run_names = _names(runs, names)
    vocab = np.unique(np.array([str(q) for run in runs for q in run.qids], dtype=object))
    if qids is not None:
        vocab = np.intersect1d(vocab, np.array(sorted(str(q) for q in qids), dtype=object))
    topics, ranks, run_of, docs = [], [], [], []
    for index, run in enumerate(runs):
        topic, rank, rows = _top_rows(run, depth, vocab.astype(object))
        topics.append(topic)
        ranks.append(rank)
        run_of.append(np.full(len(rows), index, dtype=np.int32))
        docs.extend(run.docnos.take(pa.array(rows, type=pa.int64())).chunks)
    if not docs or not sum(len(c) for c in docs):
        empty = np.zeros(0, dtype=np.int64)
        return PoolCandidates(
            tuple(str(q) for q in vocab), run_names, empty.astype(np.int32), (), empty.astype(np.int32),
            empty, empty.astype(np.int32), depth,
        )  # fmt: skip
    encoded = dictionary_encode(pa.chunked_array(docs, type=pa.binary()))
    chunks = encoded.chunks if isinstance(encoded, pa.ChunkedArray) else [encoded]
    dictionary = decode(chunks[0].dictionary.to_pylist())
    codes = np.concatenate([to_numpy(c.indices) for c in chunks]).astype(np.int64)
    # Number documents by id, so that candidates come out sorted by (topic, document id).
    names_sorted = np.array(dictionary, dtype=object)
    order = np.argsort(names_sorted, kind="stable")
    place = np.empty(len(order), dtype=np.int64)
    place[order] = np.arange(len(order))
    topic = np.concatenate(topics).astype(np.int64)
    key = topic * len(order) + place[codes]
    unique, candidate = np.unique(key, return_inverse=True)
    hit_run = np.concatenate(run_of)
    hit_rank = np.concatenate(ranks).astype(np.int32)
    hits = np.lexsort((hit_rank, hit_run, topic))
    query = (unique // len(order)).astype(np.int32)
    docnos = tuple(names_sorted[order][unique % len(order)].tolist())
    return PoolCandidates(
        tuple(str(q) for q in vocab), run_names, query, docnos, hit_run[hits],
        candidate.reshape(-1).astype(np.int64)[hits], hit_rank[hits], depth,
    )  # fmt: skip


def _names(runs: Sequence[Run], names: Sequence[str] | None) -> tuple[str, ...]:
    if names is None:
        return tuple(run.run_id or f"run{i + 1}" for i, run in enumerate(runs))
    if len(names) != len(runs):
        raise ValueError("give one name per run")
    if len(set(names)) != len(names):
        raise ValueError("run names must be distinct")
    return tuple(str(n) for n in names)


def _top_rows(run: Run, depth: int, vocab: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(topic index into `vocab`, 1-based rank, row) of the run's top `depth` rows of each kept topic.

    The rows are sorted by (topic, score descending as float32, document id descending): trec_eval's
    order, with the byte-wise comparison strcmp makes.
    """
    if not len(run):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    topic_of_code = lookup(vocab, run.qids.astype(object))
    topic = topic_of_code[run.qid_codes]
    keep = np.flatnonzero(topic >= 0)
    table = pa.table(
        {
            "topic": pa.array(topic[keep]),
            "score": pa.array(run.scores[keep].astype(np.float32)),
            "doc": run.docnos.take(pa.array(keep, type=pa.int64())),
        }
    )
    order = sort_indices(table, [("topic", "ascending"), ("score", "descending"), ("doc", "descending")])
    sorted_topic = topic[keep][order]
    starts = np.searchsorted(sorted_topic, sorted_topic, side="left")
    rank = np.arange(len(order)) - starts + 1
    top = rank <= depth
    return sorted_topic[top], rank[top], keep[order][top]
