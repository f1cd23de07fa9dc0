"""Compact, columnar qrels and runs.

A `Qrels` or a `Run` holds one row per (query, document) pair as flat arrays: a query code (an index
into the sorted query ids), the document id as Arrow binary, and the relevance or the score. No Python
object exists per row, so a 7-million-line run costs about 16 bytes a row plus its document ids.
Document ids are compared through 64-bit keys (see `evalcore.retrieval.keys`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, ClassVar, Generic, Literal, Self, TypeVar

import numpy as np
import pyarrow as pa

from evalcore.retrieval.keys import (
    as_binary_chunks,
    decode,
    docno_keys,
    docno_lengths,
    exact_keys,
    find_duplicates,
    query_salts,
)
from evalcore.retrieval.layout import GroupedLayout, KeyedLayout, layout_of

OnDuplicate = Literal["error", "first"]
V = TypeVar("V", int, float)


class DuplicateRowError(ValueError):
    """The same document appears twice for a query; `rows` are the two 0-based row indices."""

    def __init__(self, qid: str, docno: str, rows: tuple[int, int]) -> None:
        self.qid = qid
        self.docno = docno
        self.rows = rows
        super().__init__(f"document {docno!r} appears twice for query {qid!r}")


# --- query ids -------------------------------------------------------------------------------------


def encode_qids(values: Sequence[str] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique query ids (an object array of str) and the int32 code of every value."""
    arr = np.asarray(values, dtype=object)
    if arr.size == 0:
        return np.zeros(0, dtype=object), np.zeros(0, dtype=np.int32)
    vocab, inverse = np.unique(arr, return_inverse=True)
    return vocab.astype(object), inverse.astype(np.int32).reshape(-1)


def sort_vocabulary(vocab: Sequence[str], codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Re-express `codes` against the sorted, de-duplicated `vocab`."""
    sorted_vocab, inverse = np.unique(np.asarray(list(vocab), dtype=object), return_inverse=True)
    return sorted_vocab.astype(object), inverse.astype(np.int32).reshape(-1)[codes]


def lookup(vocab: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Index of each value in the sorted `vocab`, or -1."""
    if not len(vocab) or not len(values):
        return np.full(len(values), -1, dtype=np.int64)
    pos = np.searchsorted(vocab, values)
    pos = np.minimum(pos, len(vocab) - 1)
    return np.where(vocab[pos] == values, pos, -1).astype(np.int64)


# --- containers ------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Rows(Generic[V]):
    """Shared by Qrels and Run: query codes and document ids, with cached document keys.

    Each subclass adds one value column, the field named `_value_field`, of dtype `_value_dtype`.
    """

    _value_field: ClassVar[str]
    _value_type: ClassVar[type]  # what `from_dict` converts each value with
    _value_dtype: ClassVar[type[np.generic]]

    qids: np.ndarray
    qid_codes: np.ndarray
    docnos: pa.ChunkedArray
    _key_cache: dict[bool, tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __len__(self) -> int:
        return len(self.qid_codes)

    @property
    def _values(self) -> np.ndarray:
        values: np.ndarray = getattr(self, self._value_field)
        return values

    @classmethod
    def from_codes(
        cls,
        qids: Sequence[str] | np.ndarray,
        qid_codes: np.ndarray | Sequence[int],
        docnos: pa.Array | pa.ChunkedArray | Sequence[str],
        values: np.ndarray | Sequence[V],
        /,
        *,
        on_duplicate: OnDuplicate = "error",
    ) -> Self:
        """Validate the columns (each subclass checks its own values)."""
        raise NotImplementedError

    @classmethod
    def _from_columns(
        cls,
        vocab: np.ndarray,
        codes: np.ndarray,
        chunks: pa.ChunkedArray,
        values: np.ndarray,
        on_duplicate: OnDuplicate,
        **fields: Any,
    ) -> Self:
        """From validated columns: sorted query ids that every code uses, Arrow binary ids.

        `fields` sets the subclass's other fields (a run's id) here rather than on a copy, which
        would lose the document keys the duplicate check has just computed.
        """
        rows = cls(vocab, codes, chunks, **{cls._value_field: values}, **fields)
        keep = rows._check_duplicates(on_duplicate)
        return rows if keep is None else replace(rows.take(keep), **fields)

    @classmethod
    def from_dict(cls, mapping: Mapping[str, Mapping[str, V]]) -> Self:
        """From {qid: {docno: value}}, the shape pytrec_eval takes."""
        qids = list(mapping)
        codes = np.repeat(np.arange(len(qids)), [len(mapping[q]) for q in qids])
        docnos = [str(d) for q in qids for d in mapping[q]]
        values = np.array(
            [cls._value_type(v) for q in qids for v in mapping[q].values()], dtype=cls._value_dtype
        )
        return cls.from_codes(qids, codes, docnos, values)

    def take(self, rows: np.ndarray) -> Self:
        return self.from_codes(
            self.qids, self.qid_codes[rows], self.docnos.take(pa.array(rows)), self._values[rows]
        )

    def to_dict(self) -> dict[str, dict[str, V]]:
        out: dict[str, dict[str, V]] = {}
        for code, doc, value in zip(
            self.qid_codes.tolist(), self.docno_strings(), self._values.tolist(), strict=True
        ):
            out.setdefault(str(self.qids[code]), {})[doc] = value
        return out

    @property
    def num_queries(self) -> int:
        return len(self.qids)

    @cached_property
    def exact_keys(self) -> bool:
        """Whether every document id fits in 8 bytes, so that `doc_keys` are the ids, not hashes."""
        return exact_keys(self.docnos)

    @cached_property
    def salts(self) -> np.ndarray:
        return query_salts(len(self.qids))

    @cached_property
    def doc_keys(self) -> np.ndarray:
        """Every row's document key (exact when `exact_keys`, else a hash)."""
        return docno_keys(self.docnos, exact=self.exact_keys)

    def doc_keys_for(self, exact: bool) -> tuple[np.ndarray, np.ndarray]:
        """(rows whose key can match, their keys) with keys of the other's kind, cached.

        Exact keys exist only for ids of at most 8 bytes, and a longer id cannot equal one of those;
        hashed keys exist for every id.
        """
        if exact == self.exact_keys:
            return np.arange(len(self)), self.doc_keys
        if exact not in self._key_cache:
            fits = np.flatnonzero(docno_lengths(self.docnos) <= 8) if exact else np.arange(len(self))
            subset = self.docnos.take(pa.array(fits)) if len(fits) < len(self) else self.docnos
            self._key_cache[exact] = (fits, docno_keys(subset, exact=exact))
        return self._key_cache[exact]

    def docno_strings(self, rows: np.ndarray | None = None) -> list[str]:
        values = self.docnos if rows is None else self.docnos.take(pa.array(rows, type=pa.int64()))
        return decode(values.to_pylist())

    def _check_duplicates(self, on_duplicate: OnDuplicate) -> np.ndarray | None:
        """None when the rows are unique; else the rows to keep (on_duplicate='first') or raise."""
        later, first = find_duplicates(
            self.qid_codes, self.docnos, self.doc_keys, self.salts, self.exact_keys
        )
        if not later.size:
            return None
        if on_duplicate == "error":
            row = int(later[0])
            raise DuplicateRowError(
                str(self.qids[self.qid_codes[row]]),
                self.docno_strings(np.array([row]))[0],
                (int(first[0]), row),
            )
        if on_duplicate != "first":
            raise ValueError(f"on_duplicate must be 'error' or 'first', not {on_duplicate!r}")
        keep = np.ones(len(self), dtype=bool)
        keep[later] = False
        return np.flatnonzero(keep)


def _check_codes(qids: np.ndarray, codes: np.ndarray, n: int) -> None:
    if len(codes) != n:
        raise ValueError("every column must have one value per row")
    if n and (codes.min() < 0 or codes.max() >= len(qids)):
        raise ValueError("query codes must index the query ids")


def _prepare(
    qids: Sequence[str] | np.ndarray, qid_codes: np.ndarray | Sequence[int], docnos: object
) -> tuple[np.ndarray, np.ndarray, pa.ChunkedArray]:
    vocab = np.asarray([str(q) for q in qids], dtype=object)
    codes = np.asarray(qid_codes, dtype=np.int32)
    chunks = as_binary_chunks(docnos)  # type: ignore[arg-type]
    _check_codes(vocab, codes, len(chunks))
    if len(vocab) > 1 and not np.all(vocab[:-1] < vocab[1:]):
        vocab, codes = sort_vocabulary(list(vocab), codes)
    present = np.zeros(len(vocab), dtype=bool)
    present[codes] = True
    used = np.flatnonzero(present)
    if len(used) < len(vocab):
        # Drop ids no row uses, so that `qids` is exactly the set of queries present.
        remap = np.full(len(vocab), -1, dtype=np.int32)
        remap[used] = np.arange(len(used), dtype=np.int32)
        vocab, codes = vocab[used], remap[codes]
    return vocab, codes, chunks


@dataclass(frozen=True, eq=False)
class Qrels(_Rows[int]):
    """Relevance judgments: one row per judged (query, document) pair; `rels` are integers.

    A negative relevance marks a document that is in the pool but unjudged (trec_eval's reading).
    """

    _value_field = "rels"
    _value_type = int
    _value_dtype = np.int64

    rels: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @classmethod
    def from_codes(
        cls,
        qids: Sequence[str] | np.ndarray,
        qid_codes: np.ndarray | Sequence[int],
        docnos: pa.Array | pa.ChunkedArray | Sequence[str],
        rels: np.ndarray | Sequence[int],
        *,
        on_duplicate: OnDuplicate = "error",
    ) -> Self:
        vocab, codes, chunks = _prepare(qids, qid_codes, docnos)
        rel = np.asarray(rels)
        if len(rel) != len(codes):
            raise ValueError("every column must have one value per row")
        if rel.dtype.kind == "f":
            if not np.all(np.isfinite(rel)) or np.any(rel != np.round(rel)):
                raise ValueError("relevance must be an integer")
        elif rel.size and rel.dtype.kind not in "iu":
            raise ValueError("relevance must be an integer")
        return cls._from_columns(vocab, codes, chunks, rel.astype(np.int64), on_duplicate)


@dataclass(frozen=True, eq=False)
class Run(_Rows[float]):
    """A ranking: one row per retrieved (query, document) pair with its score.

    Rows may be in any order; evaluation orders each query by score descending, then document id
    descending (trec_eval). Like trec_eval, which stores scores as C floats, it compares scores in
    single precision. The rank column of a TREC file is ignored, as trec_eval ignores it.
    """

    _value_field = "scores"
    _value_type = float
    _value_dtype = np.float64

    scores: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    #: The run's name, trec_eval's `runid`: the tag of a TREC file's last line (None when unknown).
    run_id: str | None = None

    @classmethod
    def from_codes(
        cls,
        qids: Sequence[str] | np.ndarray,
        qid_codes: np.ndarray | Sequence[int],
        docnos: pa.Array | pa.ChunkedArray | Sequence[str],
        scores: np.ndarray | Sequence[float],
        *,
        on_duplicate: OnDuplicate = "error",
    ) -> Self:
        vocab, codes, chunks = _prepare(qids, qid_codes, docnos)
        score = np.asarray(scores, dtype=np.float64)
        if len(score) != len(codes):
            raise ValueError("every column must have one value per row")
        if np.isnan(score).any():
            raise ValueError("scores must not be NaN")
        return cls._from_columns(vocab, codes, chunks, score, on_duplicate)

    @cached_property
    def layout(self) -> GroupedLayout | KeyedLayout:
        """Where each row stands in trec_eval's order (scores compared as C floats, as trec_eval does)."""
        return layout_of(self.qid_codes, self.scores.astype(np.float32), len(self.qids))
