"""Read document collections: JSONL `{"doc_id", "title"?, "text"}` or TSV, plain or gzipped.

| format | one line                                                                   |
|--------|----------------------------------------------------------------------------|
| jsonl  | `{"doc_id": "d1", "title": "optional", "text": "..."}` (`docno`/`id` also name the id) |
| tsv    | `doc_id<TAB>text` or `doc_id<TAB>title<TAB>text`; an optional header row names the columns |

`read_documents` streams `DocumentRecord`s and raises `FormatError(path, line, reason)` at the first bad
line: text that is not UTF-8, a malformed JSON object, a missing or empty id or one with whitespace in it
(`evalcore.ids`), a missing text, a wrong column count, or an id seen before. Blank lines are skipped.
A gzipped file is decompressed as it is read, and refused once it has expanded past
`max_decompressed_bytes` (`evalcore.textfiles`). Nothing here imports Django.
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
from evalcore.textfiles import DEFAULT_MAX_DECOMPRESSED_BYTES, json_object, text_lines

__all__ = ["DocumentFormat", "DocumentRecord", "detect_document_format", "read_documents"]

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


def _lines(path: PathLike, max_decompressed_bytes: int) -> Lines:
    return text_lines(path, decompress=True, max_decompressed_bytes=max_decompressed_bytes)


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
) -> Iterator[DocumentRecord]:
    """Stream the documents of a file; `fmt` is detected when None. Each doc_id may appear once.

    A `.gz` file may expand to `max_decompressed_bytes` at most."""
    fmt = fmt or detect_document_format(path, max_decompressed_bytes=max_decompressed_bytes)
    lines = _lines(path, max_decompressed_bytes)
    if fmt == "jsonl":
        records = _read_jsonl(path, lines)
    elif fmt == "tsv":
        records = _read_tsv(path, lines, max_field_bytes)
    else:
        raise ValueError(f"unknown document format {fmt!r}; expected jsonl or tsv")
    seen: dict[str, int] = {}
    for record in records:
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
