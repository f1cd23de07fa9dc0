"""Read document collections: JSONL `{"doc_id", "title"?, "text"}` or TSV, plain or gzipped.

| format | one line                                                                   |
|--------|----------------------------------------------------------------------------|
| jsonl  | `{"doc_id": "d1", "title": "optional", "text": "..."}` (`docno`/`id` also name the id) |
| tsv    | `doc_id<TAB>text` or `doc_id<TAB>title<TAB>text`; an optional header row names the columns |

`read_documents` streams `DocumentRecord`s and raises `FormatError(path, line, reason)` at the first bad
line: text that is not UTF-8, a malformed JSON object, a missing or empty id or one with whitespace in it
(`evalcore.ids`), a missing text, a wrong column count, or an id seen before. Blank lines are skipped.
A gzipped file is decompressed as it is read, and refused once it has expanded past
`max_decompressed_bytes` (`evalcore.textfiles`). A document whose title and text hold more than
`max_document_bytes` of UTF-8 is refused at its line, as is a line too long to hold one: a reader's memory
is then bounded by the limit, not by the longest line of the file. Nothing here imports Django.
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from evalcore.errors import FormatError
from evalcore.ids import id_problem
from evalcore.textfiles import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    byte_size,
    json_object,
    text_lines,
)

__all__ = ["DocumentFormat", "DocumentRecord", "detect_document_format", "document_size", "read_documents"]

DocumentFormat = Literal["jsonl", "tsv"]
PathLike = str | Path

_ID_FIELDS = ("doc_id", "docno", "id", "_id")
_TSV_HEADERS = {
    ("doc_id", "text"),
    ("doc_id", "title", "text"),
    ("docno", "text"),
    ("docno", "title", "text"),
    ("id", "text"),
    ("id", "title", "text"),
}


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    doc_id: str
    text: str
    title: str
    line: int


Lines = Iterator[tuple[int, str]]

#: JSON may spell one byte of text as six (`\u0001`); with the id and the field names, a line that holds a
#: document of n bytes is shorter than 6 n + this.
_LINE_OVERHEAD = 64 << 10


def _lines(
    path: PathLike, max_decompressed_bytes: int, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Lines:
    return text_lines(
        path, decompress=True, max_decompressed_bytes=max_decompressed_bytes, max_line_bytes=max_line_bytes
    )


def document_size(record: DocumentRecord) -> int:
    """The bytes of a document's title and text in UTF-8 (what the database stores)."""
    return sum(
        len(field) if field.isascii() else len(field.encode()) for field in (record.title, record.text)
    )


def _base_suffix(path: PathLike) -> str:
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def detect_document_format(
    path: PathLike, *, max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
) -> DocumentFormat:
    """By extension (.jsonl/.json/.ndjson, .tsv/.txt, optionally .gz), else by the first non-blank line."""
    suffix = _base_suffix(path)
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if suffix in (".tsv", ".txt"):
        return "tsv"
    for _, line in _lines(path, max_decompressed_bytes):
        if line.strip():
            return "jsonl" if line.lstrip().startswith("{") else "tsv"
    return "tsv"


def read_documents(
    path: PathLike,
    *,
    fmt: DocumentFormat | None = None,
    max_field_bytes: int = 64 << 20,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    max_document_bytes: int | None = None,
) -> Iterator[DocumentRecord]:
    """Stream the documents of a file; `fmt` is detected when None. Each doc_id may appear once.

    A `.gz` file may expand to `max_decompressed_bytes` at most; a document's title and text may hold
    `max_document_bytes` at most (no limit when None)."""
    fmt = fmt or detect_document_format(path, max_decompressed_bytes=max_decompressed_bytes)
    line_limit = DEFAULT_MAX_LINE_BYTES
    if max_document_bytes is not None:
        line_limit = min(line_limit, 6 * max_document_bytes + _LINE_OVERHEAD)
        max_field_bytes = min(max_field_bytes, line_limit)
    lines = _lines(path, max_decompressed_bytes, line_limit)
    if fmt == "jsonl":
        records = _read_jsonl(path, lines)
    elif fmt == "tsv":
        records = _read_tsv(path, lines, max_field_bytes)
    else:
        raise ValueError(f"unknown document format {fmt!r}; expected jsonl or tsv")
    seen: dict[str, int] = {}
    for record in records:
        if max_document_bytes is not None and document_size(record) > max_document_bytes:
            raise FormatError(str(path), record.line, _too_long(record, max_document_bytes))
        first = seen.setdefault(record.doc_id, record.line)
        if first != record.line:
            raise FormatError(
                str(path), record.line, f"doc_id {record.doc_id!r} appears twice (first on line {first})"
            )
        yield record


def _text_field(record: dict[str, object], name: str, *, required: bool) -> str:
    value = record.get(name)
    if value is None:
        if required:
            raise ValueError(f'missing field "{name}"')
        return ""
    if not isinstance(value, str):
        raise ValueError(f'"{name}" must be a string, not {type(value).__name__}')
    return value


def _json_id(record: dict[str, object]) -> str:
    for name in _ID_FIELDS:
        if name in record:
            value = record[name]
            if isinstance(value, bool) or not isinstance(value, str | int):
                raise ValueError(f'"{name}" must be a string, not {type(value).__name__}')
            doc_id = str(value).strip()
            if not doc_id:
                raise ValueError(f'"{name}" is empty')
            problem = id_problem(doc_id, "document id")
            if problem:
                raise ValueError(problem)
            return doc_id
    raise ValueError('missing field "doc_id"')


def _read_jsonl(path: PathLike, lines: Lines) -> Iterator[DocumentRecord]:
    for number, line in lines:
        if not line.strip():
            continue
        try:
            record = json_object(line)
            doc_id = _json_id(record)
            text = _text_field(record, "text", required=True)
            title = _text_field(record, "title", required=False)
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            raise FormatError(str(path), number, str(exc)) from None
        yield DocumentRecord(doc_id, text, title, number)


def _read_tsv(path: PathLike, lines: Lines, max_field_bytes: int) -> Iterator[DocumentRecord]:
    csv.field_size_limit(min(max_field_bytes, sys.maxsize))
    rows = csv.reader((line for _, line in lines), delimiter="\t", quoting=csv.QUOTE_NONE, strict=True)
    width = 0
    try:
        for fields in rows:
            number = rows.line_num
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue
            if not width:
                width = len(fields)
                if tuple(f.strip().lower() for f in fields) in _TSV_HEADERS:
                    continue
                if width not in (2, 3):
                    raise FormatError(str(path), number, _columns_reason(width))
            if len(fields) != width:
                raise FormatError(
                    str(path), number, f"{_columns_reason(len(fields))}; earlier lines have {width}"
                )
            doc_id = fields[0].strip()
            if not doc_id:
                raise FormatError(str(path), number, "empty doc_id")
            problem = id_problem(doc_id, "document id")
            if problem:
                raise FormatError(str(path), number, problem)
            title = fields[1] if width == 3 else ""
            yield DocumentRecord(doc_id, fields[-1], title, number)
    except csv.Error as exc:
        raise FormatError(str(path), rows.line_num, str(exc)) from None


def _columns_reason(found: int) -> str:
    return f"expected doc_id<TAB>text or doc_id<TAB>title<TAB>text, found {found} column{'s' * (found != 1)}"


def _too_long(record: DocumentRecord, limit: int) -> str:
    size, most = byte_size(document_size(record)), byte_size(limit)
    if size == most:  # rounded to the same figure
        size, most = f"{document_size(record):,} bytes", f"{limit:,} bytes"
    return f"document {record.doc_id!r} holds {size} of text, more than the {most} a document may hold"
