"""A machine judge's labels from a file, and their alignment with human labels of the same pairs.

A machine judge's file is either TREC qrels (``qid iter docno grade``, or its TSV form) or JSON Lines,
one object per pair: ``{"qid", "doc_id", "label", "confidence"?, "rationale"?}`` (``docno`` is accepted
for ``doc_id``). The format is told by the content, not the name: a file whose first line that is
neither blank nor a comment starts with ``{`` is JSON Lines. Reading is all or nothing: the first bad
line stops it with ``FormatError(path, line, reason)`` and nothing is returned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from evalcore import trec
from evalcore.arrow import to_numpy
from evalcore.errors import FormatError
from evalcore.ids import id_problem
from evalcore.retrieval.data import DuplicateRowError, Qrels, lookup
from evalcore.stats._validation import FloatArray, IntArray
from evalcore.textfiles import json_object, refuse_gzip, text_lines

PathLike = str | Path

#: The fields a JSON Lines label may have; any other is refused, so that a typo (``"lable"``) is not
#: read as a missing field.
JSONL_FIELDS = ("qid", "doc_id", "docno", "label", "confidence", "rationale")


@dataclass(frozen=True, eq=False)
class MachineLabels:
    """A machine judge's grades: ``qrels`` (one row per pair, the grade as its relevance) and, aligned
    with its rows, each grade's ``confidence`` (``NaN`` where the judge gave none) and ``rationale``
    (None where none). ``source_format`` is ``"jsonl"`` or the qrels format read."""

    qrels: Qrels
    confidence: FloatArray
    rationale: tuple[str | None, ...]
    source_format: str

    def __len__(self) -> int:
        return len(self.qrels)

    @property
    def has_confidence(self) -> bool:
        return bool(np.isfinite(self.confidence).any())


@dataclass(frozen=True, eq=False)
class JudgedPairs:
    """The pairs both a human qrels and a machine judge graded, in the human qrels' row order.

    ``human_rows`` and ``machine_rows`` index the two qrels; ``human``, ``machine`` are the grades,
    ``topics`` each pair's query id: the input of ``calibrate_judge``.
    """

    human_rows: IntArray
    machine_rows: IntArray
    human: IntArray
    machine: IntArray
    topics: np.ndarray

    def __len__(self) -> int:
        return int(self.human_rows.size)


def read_machine_labels(path: PathLike) -> MachineLabels:
    """Read a machine judge's labels, TREC qrels or JSON Lines told apart by content; see the module docstring."""
    name = str(path)
    refuse_gzip(name)
    if _is_jsonl(name):
        return _read_jsonl(name)
    # The content is not JSON: TREC qrels, or their TSV form, whatever the file's name says.
    fmt: trec.Format = "tsv" if trec.detect_format(name, "qrels") == "tsv" else "trec"
    qrels = trec.read_qrels(name, fmt=fmt, strict=True)
    return MachineLabels(qrels, np.full(len(qrels), np.nan), (None,) * len(qrels), fmt)


def pair_labels(human: Qrels, machine: Qrels) -> JudgedPairs:
    """The (query, document) pairs graded in both, matched on the exact ids by one hash join.

    A negative grade marks a pooled but unjudged document (trec_eval's reading) and pairs nothing.
    """
    machine_query = (
        lookup(human.qids, machine.qids)[machine.qid_codes] if len(machine) else np.zeros(0, np.int64)
    )
    left = pa.table({"q": pa.array(human.qid_codes.astype(np.int64)), "d": _plain(human.docnos),
                     "h": pa.array(np.arange(len(human)))})  # fmt: skip
    right = pa.table({"q": pa.array(machine_query), "d": _plain(machine.docnos),
                      "m": pa.array(np.arange(len(machine)))})  # fmt: skip
    left = left.filter(pa.array(human.rels >= 0))
    right = right.filter(pa.array((machine.rels >= 0) & (machine_query >= 0)))
    joined = left.join(right, keys=["q", "d"], join_type="inner")
    h_rows = to_numpy(joined.column("h")).astype(np.int64)
    m_rows = to_numpy(joined.column("m")).astype(np.int64)
    order = np.argsort(h_rows, kind="stable")
    h_rows, m_rows = h_rows[order], m_rows[order]
    return JudgedPairs(
        human_rows=h_rows,
        machine_rows=m_rows,
        human=human.rels[h_rows],
        machine=machine.rels[m_rows],
        topics=human.qids[human.qid_codes[h_rows]],
    )


def _plain(docnos: pa.ChunkedArray) -> pa.ChunkedArray:
    """Binary ids as one type on both sides of a join (a large file may hold large_binary)."""
    return docnos.cast(pa.large_binary())


def _is_jsonl(path: str) -> bool:
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            stripped = line.lstrip()
            if stripped and not stripped.startswith("#"):
                return stripped.startswith("{")
    return Path(path).suffix.lower() in (".jsonl", ".ndjson", ".json")


def _read_jsonl(path: str) -> MachineLabels:
    qids: list[str] = []
    docnos: list[str] = []
    labels: list[int] = []
    confidence: list[float] = []
    rationale: list[str | None] = []
    lines: list[int] = []
    for number, line in text_lines(path):
        if not line.strip():
            continue
        try:
            qid, docno, label, conf, why = _record(json_object(line))
        except ValueError as exc:
            raise FormatError(path, number, str(exc)) from None
        qids.append(qid)
        docnos.append(docno)
        labels.append(label)
        confidence.append(conf)
        rationale.append(why)
        lines.append(number)
    vocab, codes = np.unique(np.asarray(qids, dtype=object), return_inverse=True) if qids else (np.zeros(0, object), np.zeros(0, np.int64))  # fmt: skip
    try:
        qrels = Qrels.from_codes(vocab, codes.reshape(-1), docnos, np.asarray(labels, dtype=np.int64))
    except DuplicateRowError as exc:
        first, again = (lines[row] for row in exc.rows)
        reason = f"document {exc.docno!r} appears twice for query {exc.qid!r} (first on line {first})"
        raise FormatError(path, again, reason) from None
    return MachineLabels(qrels, np.asarray(confidence, dtype=np.float64), tuple(rationale), "jsonl")


def _record(record: dict[str, Any]) -> tuple[str, str, int, float, str | None]:
    unknown = [key for key in record if key not in JSONL_FIELDS]
    if unknown:
        raise ValueError(f'unknown field "{unknown[0]}"; a label has {", ".join(JSONL_FIELDS)}')
    qid = _id(record, ("qid",), "query id")
    docno = _id(record, ("doc_id", "docno"), "document id")
    label = record.get("label")
    if (
        isinstance(label, bool)
        or not isinstance(label, int | float)
        or not math.isfinite(label)
        or label != int(label)
    ):
        raise ValueError(
            f'"label" must be an integer grade, got {label!r}' if "label" in record else 'no "label"'
        )
    conf = record.get("confidence")
    if conf is None:
        conf = math.nan
    elif isinstance(conf, bool) or not isinstance(conf, int | float) or not 0.0 <= conf <= 1.0:
        raise ValueError(f'"confidence" must be a number from 0 to 1, got {conf!r}')
    why = record.get("rationale")
    if why is not None and not isinstance(why, str):
        raise ValueError(f'"rationale" must be text, got {type(why).__name__}')
    return qid, docno, int(label), float(conf), why


def _id(record: dict[str, Any], keys: tuple[str, ...], what: str) -> str:
    present = [key for key in keys if key in record]
    if not present:
        raise ValueError(f'no "{keys[0]}"')
    if len(present) > 1:
        raise ValueError(f'both "{present[0]}" and "{present[1]}"; give one')
    value = record[present[0]]
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f'"{present[0]}" must be text or an integer, got {value!r}')
    text = str(value)
    problem = id_problem(text, what)
    if problem:
        raise ValueError(problem)
    return text
