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
import pyarrow.json as pajson
from pyarrow.compute import is_valid

from evalcore import trec
from evalcore.arrow import equal, from_numpy, take, to_numpy
from evalcore.errors import FormatError
from evalcore.ids import first_bad_row, id_problem
from evalcore.retrieval.data import DuplicateRowError, Qrels, lookup
from evalcore.retrieval.keys import as_binary_chunks, query_salts
from evalcore.stats._validation import FloatArray, IntArray
from evalcore.textfiles import arrow_input, json_object, refuse_gzip, text_lines
from evalcore.trec import _qid_codes as trec_qid_codes  # the readers' one way to code query ids

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
    ``topic_codes`` each pair's query as an index into ``topic_ids`` (the human qrels' sorted query
    ids): the input of ``calibrate_judge``. ``topics`` spells the ids out.
    """

    human_rows: IntArray
    machine_rows: IntArray
    human: IntArray
    machine: IntArray
    topic_codes: IntArray
    topic_ids: np.ndarray

    def __len__(self) -> int:
        return int(self.human_rows.size)

    @property
    def topics(self) -> np.ndarray:
        return self.topic_ids[self.topic_codes]


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
    """The (query, document) pairs graded in both, matched on the exact ids.

    Rows are matched on (query, document key) by one sort of both sides together: a human row followed
    by a machine row with the same query and key is a pair. Keys are the ids
    themselves when every id fits in 8 bytes, else hashes, whose matches are confirmed on the bytes.
    A negative grade marks a pooled but unjudged document (trec_eval's reading) and pairs nothing.
    """
    exact = human.exact_keys and machine.exact_keys
    h_rows, h_keys = human.doc_keys_for(exact)
    m_rows, m_keys = machine.doc_keys_for(exact)
    machine_query = lookup(human.qids, machine.qids)[machine.qid_codes[m_rows]]
    h_keep = human.rels[h_rows] >= 0
    m_keep = (machine.rels[m_rows] >= 0) & (machine_query >= 0)
    query = np.concatenate([human.qid_codes[h_rows][h_keep].astype(np.int64), machine_query[m_keep]])
    key = np.concatenate([h_keys[h_keep], m_keys[m_keep]])
    side = np.repeat([0, 1], [int(h_keep.sum()), int(m_keep.sum())])
    row = np.concatenate([h_rows[h_keep], m_rows[m_keep]])
    # One sort on the (query, document) hash; the concatenation puts people's rows first, and a stable
    # sort keeps them before the machine's with the same hash. Only where two rows of one side share a
    # hash (two ids of a query with the same 64-bit key hash) does the slower three-key sort decide.
    pair_hash = key ^ query_salts(len(human.qids))[query]
    order = np.argsort(pair_hash, kind="stable")
    sorted_hash, sorted_side = pair_hash[order], side[order]
    if ((sorted_hash[1:] == sorted_hash[:-1]) & (sorted_side[1:] == sorted_side[:-1])).any():
        order = np.lexsort((side, key, query))
    query, key, side, row = query[order], key[order], side[order], row[order]
    match = np.flatnonzero(
        (side[:-1] == 0) & (side[1:] == 1) & (query[:-1] == query[1:]) & (key[:-1] == key[1:])
    )
    h_pair, m_pair = row[match], row[match + 1]
    if not exact and h_pair.size:
        same = equal(take(human.docnos, from_numpy(h_pair)), take(machine.docnos, from_numpy(m_pair)))
        h_pair, m_pair = h_pair[same], m_pair[same]
    # In human row order without a second sort: each human row pairs at most once.
    partner = np.full(len(human), -1, dtype=np.int64)
    partner[h_pair] = m_pair
    h_pair = np.flatnonzero(partner >= 0)
    m_pair = partner[h_pair]
    return JudgedPairs(
        human_rows=h_pair,
        machine_rows=m_pair,
        human=human.rels[h_pair],
        machine=machine.rels[m_pair],
        topic_codes=human.qid_codes[h_pair].astype(np.int64),
        topic_ids=human.qids,
    )


def _binary(texts: list[str]) -> pa.Array:
    """Ids as an Arrow binary array built from its buffers: ``pa.array`` imports pandas (a quarter of a
    second) the first time it is called, which a file command does not pay for."""
    encoded = [text.encode("utf-8") for text in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    large = offsets[-1] >= 2**31
    kind, width = (pa.large_binary(), np.int64) if large else (pa.binary(), np.int32)
    buffers = [None, pa.py_buffer(offsets.astype(width)), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(kind, len(encoded), buffers)


def _is_jsonl(path: str) -> bool:
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            stripped = line.lstrip()
            if stripped and not stripped.startswith("#"):
                return stripped.startswith("{")
    return Path(path).suffix.lower() in (".jsonl", ".ndjson", ".json")


def _read_jsonl(path: str) -> MachineLabels:
    """Arrow's multi-threaded JSON reader when the file is regular; else a line-by-line scan that names
    the first bad line (or, where Arrow was merely stricter than the format, reads the file)."""
    try:
        return _read_jsonl_fast(path)
    except (pa.ArrowException, ValueError):  # a FormatError or DuplicateRowError too: the scan names the line
        return _read_jsonl_slow(path)


def _read_jsonl_fast(path: str) -> MachineLabels:
    """Raises ``pa.ArrowException`` on anything the scan must look at: an unknown field, a missing or
    mistyped value, an id a TREC file cannot hold, a confidence out of range."""
    first = _first_record(path)
    # An explicit schema: left to infer, Arrow builds a nested type for a nested value, and one nested
    # thousands deep overflows its stack (see `evalcore.trec`).
    schema = pa.schema(
        [
            pa.field("qid", pa.int64() if type(first.get("qid")) is int else pa.string()),
            pa.field("doc_id", pa.string()),
            pa.field("docno", pa.string()),
            pa.field("label", pa.float64()),
            pa.field("confidence", pa.float64()),
            pa.field("rationale", pa.string()),
        ]
    )
    parse = pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
    with arrow_input(path) as source:
        table = pajson.read_json(
            source, read_options=pajson.ReadOptions(block_size=1 << 21), parse_options=parse
        )
    if table.num_rows == 0:
        raise pa.ArrowInvalid("no rows")
    qid, label, confidence = table.column("qid"), table.column("label"), table.column("confidence")
    doc_id, docno = table.column("doc_id"), table.column("docno")
    if doc_id.null_count != table.num_rows and docno.null_count != table.num_rows:
        raise pa.ArrowInvalid("both doc_id and docno")
    docs = doc_id if docno.null_count == table.num_rows else docno
    if qid.null_count or docs.null_count or label.null_count:
        raise pa.ArrowInvalid("a missing field")
    grades = to_numpy(label.combine_chunks())
    if not (
        np.isfinite(grades).all() and (grades == np.round(grades)).all() and (np.abs(grades) < 2**53).all()
    ):
        raise pa.ArrowInvalid("a label that is not an integer grade")
    confidences = _with_nan(confidence)
    if ((confidences < 0) | (confidences > 1)).any():  # NaN, a missing confidence, compares false
        raise pa.ArrowInvalid("a confidence out of range")
    docnos = as_binary_chunks(docs)
    vocab, codes = trec_qid_codes(qid.cast(pa.string()) if pa.types.is_integer(qid.type) else qid)
    if first_bad_row(docnos) is not None or any(id_problem(q, "query id") for q in vocab.tolist()):
        raise pa.ArrowInvalid("an id a TREC file cannot hold")
    qrels = Qrels.from_codes(vocab, codes, docnos, grades.astype(np.int64))
    rationale = table.column("rationale")
    reasons = (
        (None,) * table.num_rows if rationale.null_count == table.num_rows else tuple(rationale.to_pylist())
    )
    return MachineLabels(qrels, confidences, reasons, "jsonl")


def _first_record(path: str) -> dict[str, object]:
    for _, line in text_lines(path):
        if line.strip():
            return json_object(line)
    return {}


def _with_nan(column: pa.ChunkedArray) -> FloatArray:
    """A float64 column as numpy with NaN for its nulls, from the buffers (``fill_null`` with a Python
    float makes an Arrow scalar, which imports pandas)."""
    out = np.full(len(column), np.nan)
    at = 0
    for chunk in column.chunks:
        if len(chunk) and chunk.null_count < len(chunk):
            values = np.frombuffer(chunk.buffers()[1], dtype=np.float64)[
                chunk.offset : chunk.offset + len(chunk)
            ]
            valid = to_numpy(is_valid(chunk))
            out[at : at + len(chunk)][valid] = values[valid]
        at += len(chunk)
    return out


def _read_jsonl_slow(path: str) -> MachineLabels:
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
    if not lines:
        raise FormatError(path, None, "the file holds no labels")
    vocab, codes = np.unique(np.asarray(qids, dtype=object), return_inverse=True)
    try:
        qrels = Qrels.from_codes(
            vocab, codes.reshape(-1), _binary(docnos), np.asarray(labels, dtype=np.int64)
        )
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
