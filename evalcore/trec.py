"""Readers for TREC qrels, runs and topics, and their TSV and JSONL equivalents.

| kind   | trec (whitespace)            | tsv                      | jsonl                                   |
|--------|------------------------------|--------------------------|-----------------------------------------|
| qrels  | `qid iter docno rel`         | `qid<TAB>docno<TAB>rel`  | `{"qid", "docno"|"doc_id", "rel"|"relevance"}` |
| run    | `qid Q0 docno rank score tag`| `qid<TAB>docno<TAB>score`| `{"qid", "docno"|"doc_id", "score"}`    |
| topics | `<top><num> Number: 401 <title> ...</top>` | `qid<TAB>text` | `{"qid", "text"}`              |

Qrels and runs are parsed by Arrow's multi-threaded CSV and JSON readers into columns, never a Python
object per line. When the fast path rejects a file, a slow line-by-line scan finds the first bad line
and raises `FormatError(path, line, reason)`; if the scan finds none, the file merely used irregular
whitespace, which is normalised before a second fast parse. Blank lines are skipped.

A document listed twice for a query is an error, as in trec_eval; `on_duplicate="first"` keeps the
first occurrence instead. An id must be one a TREC file can hold, not empty and without whitespace
(`evalcore.ids`, checked on the columns), and a query id or a topic must be UTF-8 text. A gzip-compressed
file is refused with the reason (only document collections are read gzipped, `evalcore.textfiles`), and
Arrow is handed the file as it is, so that it never decompresses one because of its name.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson

from evalcore.arrow import pooled_empty, reader_pool, small_pages, to_numpy
from evalcore.errors import FormatError
from evalcore.ids import first_bad_row, first_long_row, id_problem, long_id_problem
from evalcore.retrieval.data import DuplicateRowError, OnDuplicate, Qrels, Run
from evalcore.retrieval.keys import as_binary_chunks, decode
from evalcore.textfiles import arrow_input, json_object, refuse_gzip, text_lines

__all__ = [
    "Format",
    "Qrels",
    "Run",
    "detect_format",
    "line_id_problem",
    "read_qrels",
    "read_run",
    "read_topics",
]

Format = Literal["trec", "tsv", "jsonl"]
PathLike = str | Path

_BLOCK = 1 << 21


@dataclass(frozen=True)
class _Columns:
    """What one kind of row looks like in one format."""

    kind: Literal["qrels", "run"]
    names: tuple[str, ...]  # every column of the file, in order
    value: str  # "rel" or "score"
    describe: str

    @property
    def integer(self) -> bool:
        return self.value == "rel"


_TREC = {
    "qrels": _Columns("qrels", ("qid", "iter", "docno", "rel"), "rel", "qid iter docno rel"),
    "run": _Columns(
        "run", ("qid", "q0", "docno", "rank", "score", "tag"), "score", "qid Q0 docno rank score tag"
    ),
}
_TSV = {
    "qrels": _Columns("qrels", ("qid", "docno", "rel"), "rel", "qid<TAB>docno<TAB>rel"),
    "run": _Columns("run", ("qid", "docno", "score"), "score", "qid<TAB>docno<TAB>score"),
}
_JSON_FIELDS = {
    "qid": ("qid", "query_id"),
    "docno": ("docno", "doc_id"),
    "rel": ("rel", "relevance"),
    "score": ("score",),
}


# --- format detection ------------------------------------------------------------------------------


def _first_line(path: PathLike) -> str:
    """The first line that is neither blank nor a comment."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if _is_content(line):
                return line
    return ""


def detect_format(path: PathLike, kind: Literal["qrels", "run", "topics"]) -> Format:
    """By extension (.jsonl/.json, .tsv), else by the first non-blank line."""
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if suffix == ".tsv":
        return "tsv"
    line = _first_line(path)
    if line.lstrip().startswith("{"):
        return "jsonl"
    if kind == "topics":
        return "trec" if "<" in line else "tsv"
    tsv_width = len(_TSV[kind].names)
    if "\t" in line and len(line.rstrip("\r\n").split("\t")) == tsv_width and len(line.split()) == tsv_width:
        return "tsv"
    return "trec"


# --- line-level validation (the slow path) ---------------------------------------------------------


def _is_content(line: str) -> bool:
    """Not blank and not a comment: trec_eval (from 9.0.9) skips lines that start with '#'."""
    stripped = line.lstrip()
    return bool(stripped) and not stripped.startswith("#")


def _lines(path: PathLike) -> Iterator[tuple[int, str]]:
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as handle:
        for number, line in enumerate(handle, start=1):
            if _is_content(line):
                yield number, line


def _split(line: str, fmt: Format) -> list[str]:
    if fmt == "tsv":
        return [f.strip() for f in line.rstrip("\r\n").split("\t")]
    return line.split()


_INT64 = (-(2**63), 2**63 - 1)


def _out_of_range(value: int) -> bool:
    return not _INT64[0] <= value <= _INT64[1]


def _range_problem(text: str) -> str:
    shown = text if len(text) <= 40 else f"{text[:40]}..."
    return f"relevance {shown!r} is out of range (a 64-bit integer)"


def _value_problem(text: str, integer: bool, strict: bool) -> str | None:
    if integer:
        try:
            value = int(text) if strict else _leading_integer(text)
            if value is None:
                int(text)  # raises: trec_eval would read it as 0, which is refused rather than guessed
        except ValueError:
            # Python's int() also refuses more than 4,300 digits: out of range either way.
            digits = _LEADING_INTEGER.match(text)
            if digits and len(digits.group().strip().lstrip("+-")) > 4000:
                return _range_problem(text)
            return f"relevance {text!r} is not an integer"
        return _range_problem(text) if value is not None and _out_of_range(value) else None
    try:
        score = float(text)
    except ValueError:
        return f"score {text!r} is not a number"
    return f"score {text!r} is not a number" if math.isnan(score) else None


def _leading_integer(text: str) -> int | None:
    """The relevance as trec_eval reads it (C's atol): the leading integer, so `1.0` and `1.5` are 1.

    None when the text does not start with an integer, which trec_eval would read as 0: a grade such as
    `high` is refused rather than taken for 0.
    """
    match = _LEADING_INTEGER.match(text)
    return int(match.group()) if match else None


_LEADING_INTEGER = re.compile(r"^\s*[+-]?[0-9]+")


def _row_problem(fields: list[str], cols: _Columns, strict: bool) -> str | None:
    width = len(cols.names)
    extra_ok = cols.kind == "run" and not strict  # trec_eval ignores a run's columns after the sixth
    if len(fields) < width or (len(fields) > width and not extra_ok):
        problem = f"expected {width} columns ({cols.describe}), found {len(fields)}"
        if len(fields) > width and cols.kind == "run":
            problem += "; trec_eval ignores the columns after the sixth, as this reader does without --strict"
        return problem
    return _value_problem(fields[cols.names.index(cols.value)], cols.integer, strict)


def _has_header(path: PathLike, cols: _Columns) -> bool:
    """A TSV file may start with a header such as `query-id<TAB>corpus-id<TAB>score` (BEIR)."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        first = handle.readline()
    fields = _split(first, "tsv")
    if len(fields) != len(cols.names):
        return False
    try:
        float(fields[-1])
    except ValueError:
        return True
    return False


def _scan(path: PathLike, cols: _Columns, fmt: Format, skip_header: bool, strict: bool) -> None:
    """Raise a FormatError at the first malformed line, if any."""
    for number, line in _lines(path):
        if skip_header and number == 1:
            continue
        problem = _row_problem(_split(line, fmt), cols, strict)
        if problem:
            raise FormatError(str(path), number, problem)


def _line_numbers(path: PathLike, rows: list[int], skip_header: bool) -> list[int]:
    """1-based line numbers of the given 0-based data rows (blank lines, comments and a header skipped)."""
    wanted = {r: i for i, r in enumerate(rows)}
    found = [0] * len(rows)
    row = 0
    for number, _ in _lines(path):
        if skip_header and number == 1:
            continue
        if row in wanted:
            found[wanted[row]] = number
        row += 1
        if row > max(rows):
            break
    return found


def _parsed_a_comment(table: pa.Table) -> bool:
    """Did a comment line parse as a row? Its query id would start with '#'.

    A comment that does not parse sends the file down the slow path anyway; checking the parsed ids
    costs a look at each chunk's dictionary instead of a scan of the file.
    """
    for chunk in table.column("qid").chunks:
        ids = chunk.dictionary if pa.types.is_dictionary(chunk.type) else chunk
        if len(ids) and pc.any(pc.starts_with(ids, "#")).as_py():
            return True
    return False


# --- fast columnar parsing -------------------------------------------------------------------------


def _csv_options(
    cols: _Columns, delimiter: str, skip_rows: int, strict: bool
) -> tuple[pacsv.ReadOptions, pacsv.ParseOptions, pacsv.ConvertOptions]:
    read = pacsv.ReadOptions(column_names=list(cols.names), block_size=_BLOCK, skip_rows=skip_rows)
    parse = pacsv.ParseOptions(
        delimiter=delimiter, quote_char=False, double_quote=False, escape_char=False, ignore_empty_lines=True
    )
    # Relevance is read as text unless strict, and then as trec_eval reads it (`_relevance`).
    value_type = (pa.int64() if strict else pa.binary()) if cols.integer else pa.float64()
    convert = pacsv.ConvertOptions(
        include_columns=["qid", "docno", cols.value],
        column_types={
            "qid": pa.dictionary(pa.int32(), pa.binary()),
            "docno": pa.binary(),
            cols.value: value_type,
        },
        null_values=[],
        strings_can_be_null=False,
        check_utf8=False,
    )
    return read, parse, convert


def _normalised_whitespace(path: PathLike, cols: _Columns) -> io.BytesIO:
    """The file with comments dropped, whitespace made single spaces, and a run's columns cut to six."""
    data = Path(path).read_bytes()
    data = re.sub(rb"(?m)^[ \t\r\f\v]*#[^\n]*(\n|$)", b"", data)
    data = re.sub(rb"[ \t\r\f\v]+", b" ", data)
    data = re.sub(rb" ?\n ?", b"\n", data)
    data = data.lstrip(b" ")
    if cols.kind == "run":
        data = re.sub(rb"(?m)^((?:[^ \n]+ ){5}[^ \n]+) [^\n]*", rb"\1", data)
    return io.BytesIO(data)


def _normalised_tsv(path: PathLike, cols: _Columns, skip_header: bool) -> io.BytesIO:
    width = len(cols.names)
    out = [
        "\t".join(_split(line, "tsv")[:width])
        for number, line in _lines(path)
        if not (skip_header and number == 1)
    ]
    return io.BytesIO(("\n".join(out) + "\n").encode("utf-8", errors="surrogateescape"))


def _read_delimited(path: PathLike, cols: _Columns, fmt: Format, strict: bool) -> tuple[pa.Table, bool]:
    skip_header = fmt == "tsv" and _has_header(path, cols)
    delimiters = [" ", "\t"] if fmt == "trec" else ["\t"]
    if fmt == "trec" and "\t" in _first_line(path) and " " not in _first_line(path).strip():
        delimiters.reverse()  # a tab-separated TREC file parses as fast as a space-separated one
    for delimiter in delimiters:
        try:
            with arrow_input(path) as source:
                table = pacsv.read_csv(
                    source,
                    *_csv_options(cols, delimiter, int(skip_header), strict),
                    memory_pool=reader_pool(),
                )
        except pa.ArrowException:
            continue
        if not _parsed_a_comment(table):
            return table, skip_header
        break
    _scan(path, cols, fmt, skip_header, strict)
    # No bad line: comments, tabs, repeated spaces, whitespace-only lines or a run's extra columns
    # threw the fast path off.
    source = _normalised_whitespace(path, cols) if fmt == "trec" else _normalised_tsv(path, cols, skip_header)
    read, parse, convert = _csv_options(cols, " " if fmt == "trec" else "\t", 0, strict)
    # A line longer than a block (a 10 MB id) fails Arrow's parse ("straddling object"): the text is
    # already in memory, so it is then parsed as one block.
    if _longest_line(source) >= _BLOCK:
        read.block_size = len(source.getbuffer()) + 1
    try:
        return pacsv.read_csv(source, read, parse, convert, memory_pool=reader_pool()), skip_header
    except pa.ArrowException as exc:  # pragma: no cover - the scan accepts only parseable lines
        raise FormatError(str(path), None, str(exc)) from exc


def _longest_line(source: io.BytesIO) -> int:
    with source.getbuffer() as data:
        ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("\n"))
        return int(np.diff(ends, prepend=-1, append=len(data)).max())


def _pick(table: pa.Table, names: tuple[str, ...]) -> pa.ChunkedArray | None:
    present = [
        table.column(n) for n in names if n in table.column_names and table.column(n).null_count < len(table)
    ]
    if not present:
        return None
    return present[0] if len(present) == 1 else pc.coalesce(*present)


def _as_text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    if pa.types.is_integer(column.type):
        return column.cast(pa.string())
    if pa.types.is_string(column.type) or pa.types.is_binary(column.type):
        return column
    raise pa.ArrowInvalid(f"expected text, found {column.type}")


def _json_schema(path: PathLike, cols: _Columns) -> pa.Schema:
    """The fields Arrow's JSON reader is to read, typed as on the first line; it skips every other field.

    Left to infer the types, Arrow builds a nested type for a nested value, and for one nested some
    20,000 deep overflows its stack (a segfault, with pyarrow 26) before any check of ours could run.
    """
    try:
        first = json_object(_first_line(path))
    except ValueError as exc:
        raise pa.ArrowInvalid(str(exc)) from None
    fields = [
        pa.field(name, pa.int64() if type(first.get(name)) is int else pa.string())
        for name in (*_JSON_FIELDS["qid"], *_JSON_FIELDS["docno"])
    ]
    value_type = pa.int64() if cols.integer else pa.float64()
    return pa.schema(fields + [pa.field(name, value_type) for name in _JSON_FIELDS[cols.value]])


def _read_jsonl_fast(path: PathLike, cols: _Columns) -> pa.Table:
    """Arrow's JSON reader; raises pa.ArrowException on anything irregular."""
    parse = pajson.ParseOptions(explicit_schema=_json_schema(path, cols), unexpected_field_behavior="ignore")
    with arrow_input(path) as source:
        table = pajson.read_json(
            source,
            read_options=pajson.ReadOptions(block_size=_BLOCK),
            parse_options=parse,
            memory_pool=reader_pool(),
        )
    qid, docno = _pick(table, _JSON_FIELDS["qid"]), _pick(table, _JSON_FIELDS["docno"])
    value = _pick(table, _JSON_FIELDS[cols.value])
    if qid is None or docno is None or value is None:
        raise pa.ArrowInvalid("missing field")
    if qid.null_count or docno.null_count or value.null_count:
        raise pa.ArrowInvalid("missing value")
    if cols.integer:
        if not pa.types.is_integer(value.type):
            raise pa.ArrowInvalid("relevance is not an integer")
    elif not (pa.types.is_integer(value.type) or pa.types.is_floating(value.type)):
        raise pa.ArrowInvalid("score is not a number")
    return pa.table(
        {
            "qid": _as_text(qid),
            "docno": _as_text(docno),
            cols.value: value.cast(pa.int64() if cols.integer else pa.float64()),
        }
    )


def _json_field(record: dict[str, object], field: str) -> object:
    for name in _JSON_FIELDS[field]:
        if name in record:
            return record[name]
    raise KeyError(" or ".join(f'"{n}"' for n in _JSON_FIELDS[field]))


def _json_text(value: object, what: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"{what} must be a string, not {json.dumps(value)}")


def _json_value(value: object, integer: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        kind = "relevance" if integer else "score"
        raise ValueError(f"{kind} {json.dumps(value)} is not a number")
    if integer and (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"relevance {json.dumps(value)} is not an integer")
    if integer and _out_of_range(int(value)):
        raise ValueError(_range_problem(json.dumps(value)))
    if not integer and math.isnan(value):
        raise ValueError("score is not a number")
    return value


def _read_jsonl_slow(path: PathLike, cols: _Columns) -> pa.Table:
    qids: list[str] = []
    docnos: list[str] = []
    values: list[float] = []
    for number, line in _lines(path):
        try:
            record = json_object(line)
            qids.append(_json_text(_json_field(record, "qid"), "qid"))
            docnos.append(_json_text(_json_field(record, "docno"), "docno"))
            values.append(_json_value(_json_field(record, cols.value), cols.integer))
        except KeyError as exc:
            raise FormatError(str(path), number, f"missing field {exc.args[0]}") from None
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            raise FormatError(str(path), number, str(exc)) from None
    value_type = pa.int64() if cols.integer else pa.float64()
    return pa.table(
        {
            "qid": pa.array(qids, pa.string()),
            "docno": pa.array(docnos, pa.string()),
            cols.value: pa.array([int(v) for v in values] if cols.integer else values, value_type),
        }
    )


def _read_jsonl(path: PathLike, cols: _Columns) -> pa.Table:
    try:
        return _read_jsonl_fast(path, cols)
    except pa.ArrowException:
        return _read_jsonl_slow(path, cols)


def _qid_codes(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted query ids and each row's code, from per-chunk Arrow dictionaries."""
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    chunks = [c for c in column.chunks if len(c)]
    if not chunks:
        return np.zeros(0, dtype=object), np.zeros(0, dtype=np.int32)
    # One dictionary for all chunks, merged by Arrow's hash table: a run in random row order has
    # every query in every chunk, and sorting those repeated entries in Python took seconds.
    chunks = list(pa.chunked_array(chunks).unify_dictionaries().chunks)
    entries = chunks[0].dictionary.to_pylist()
    values = decode(entries) if entries and isinstance(entries[0], bytes) else entries
    vocab, inverse = np.unique(np.asarray(values, dtype=object), return_inverse=True)
    inverse = inverse.reshape(-1).astype(np.int32)
    codes = pooled_empty(sum(len(c) for c in chunks), np.int32)
    at = 0
    for chunk in chunks:
        np.take(inverse, to_numpy(chunk.indices), out=codes[at : at + len(chunk)])
        at += len(chunk)
    return vocab.astype(object), codes


def _read_table(
    path: PathLike, kind: Literal["qrels", "run"], fmt: Format | None, strict: bool
) -> tuple[pa.Table, bool, Format]:
    refuse_gzip(path)
    fmt = fmt or detect_format(path, kind)
    if fmt not in ("trec", "tsv", "jsonl"):
        raise ValueError(f"unknown format {fmt!r}; expected trec, tsv or jsonl")
    if not _first_line(path).strip():
        raise FormatError(str(path), None, f"the file holds no {kind}")
    if fmt == "jsonl":
        table, skip_header = _read_jsonl(path, _TREC[kind]), False
    else:
        table, skip_header = _read_delimited(path, (_TREC if fmt == "trec" else _TSV)[kind], fmt, strict)
    if not table.num_rows:
        raise FormatError(str(path), None, f"the file holds no {kind}")
    return table, skip_header, fmt


def _relevance(column: pa.ChunkedArray, path: PathLike, skip_header: bool) -> np.ndarray:
    """Relevance read as trec_eval reads it: the leading integer of each value (C's atol)."""
    if pa.types.is_integer(column.type):
        return to_numpy(column)
    # Matched as bytes: a value that is not UTF-8 (`0\xff`) must not make a cast to text raise.
    digits = pc.struct_field(pc.extract_regex(column, r"^\s*(?P<v>[+-]?[0-9]+)"), "v")
    if digits.null_count:
        row = int(np.flatnonzero(to_numpy(pc.is_null(digits)))[0])
        line = _line_numbers(path, [row], skip_header)[0]
        value = column[row].as_py()
        text = value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value
        raise FormatError(str(path), line, f"relevance {text!r} is not an integer")
    try:  # Arrow's cast takes `-2` but not `+2`
        return to_numpy(pc.cast(pc.replace_substring_regex(digits, r"^\+", ""), pa.int64()))
    except pa.ArrowInvalid:  # a leading integer past 64 bits
        row = next(i for i, value in enumerate(digits.to_pylist()) if not _fits_int64(value))
        line = _line_numbers(path, [row], skip_header)[0]
        value = digits[row].as_py()
        raise FormatError(
            str(path), line, _range_problem(decode([value])[0] if isinstance(value, bytes) else value)
        ) from None


def _fits_int64(digits: bytes) -> bool:
    try:
        return not _out_of_range(int(digits))
    except ValueError:  # more digits than Python's int() takes
        return False


def _check_ids(
    path: PathLike,
    vocab: np.ndarray,
    codes: np.ndarray,
    docnos: pa.ChunkedArray,
    skip_header: bool,
    max_chars: int | None,
) -> None:
    """Refuse ids a TREC file cannot hold (`evalcore.ids`) or longer than `max_chars`: each distinct query
    id, then the document ids, the first bad line of each."""
    for code, qid in enumerate(vocab.tolist()):
        problem = id_problem(qid, "query id") or long_id_problem(qid, "query id", max_chars)
        if problem:
            first = int(np.argmax(codes == code))
            raise FormatError(str(path), _line_numbers(path, [first], skip_header)[0], problem)
    bad = first_bad_row(docnos)
    long = None if max_chars is None else first_long_row(docnos, max_chars)
    rows = [row for row in (bad, long) if row is not None]
    if rows:
        row = min(rows)
        docno = decode([docnos[row].as_py()])[0]
        problem = (
            id_problem(docno, "document id")
            or long_id_problem(docno, "document id", max_chars)
            or f"document id {docno!r} contains whitespace"
        )
        raise FormatError(str(path), _line_numbers(path, [row], skip_header)[0], problem)


def line_id_problem(
    line: str, *, kind: Literal["qrels", "run"], fmt: Format, max_id_chars: int
) -> str | None:
    """Why one line's query or document id is longer than `max_id_chars`, or None (also when the line
    is malformed: reading the file says how). For checking a file line by line as it streams past."""
    fields: list[object]
    if fmt == "jsonl":
        try:
            record = json_object(line)
        except ValueError:
            return None
        fields = [next((record[n] for n in _JSON_FIELDS[f] if n in record), None) for f in ("qid", "docno")]
    else:
        cols = (_TREC if fmt == "trec" else _TSV)[kind]
        # The ids come first: the fields after them (a long run tag) need not be split.
        split = line.split(None, 3) if fmt == "trec" else [f.strip() for f in line.split("\t", 2)]
        fields = [
            split[cols.names.index(name)] if len(split) > cols.names.index(name) else None
            for name in ("qid", "docno")
        ]
    for value, what in zip(fields, ("query id", "document id"), strict=True):
        problem = long_id_problem(value, what, max_id_chars) if isinstance(value, str) else None
        if problem:
            return problem
    return None


def _duplicate_error(path: PathLike, exc: DuplicateRowError, skip_header: bool) -> FormatError:
    first, again = _line_numbers(path, list(exc.rows), skip_header)
    reason = f"document {exc.docno!r} appears twice for query {exc.qid!r} (first on line {first})"
    return FormatError(str(path), again, reason)


def read_qrels(
    path: PathLike,
    *,
    fmt: Format | None = None,
    on_duplicate: OnDuplicate = "error",
    strict: bool = False,
    max_id_chars: int | None = None,
) -> Qrels:
    """Read relevance judgments; `fmt` is detected from the extension or the first line when None.

    A relevance is read as trec_eval reads it, by its leading integer (`1.0` is 1); `strict` refuses
    anything but an integer. Ids may be of any length, as in trec_eval, unless `max_id_chars` bounds them.
    """
    with small_pages():
        return _read_qrels(path, fmt, on_duplicate, strict, max_id_chars)


def _read_qrels(
    path: PathLike, fmt: Format | None, on_duplicate: OnDuplicate, strict: bool, max_id_chars: int | None
) -> Qrels:
    table, skip_header, _ = _read_table(path, "qrels", fmt, strict)
    rels = _relevance(table.column("rel"), path, skip_header)
    vocab, codes = _qid_codes(table.column("qid"))
    docnos = as_binary_chunks(table.column("docno"))
    _check_ids(path, vocab, codes, docnos, skip_header, max_id_chars)
    try:
        return Qrels._from_columns(vocab, codes, docnos, rels, on_duplicate)
    except DuplicateRowError as exc:
        raise _duplicate_error(path, exc, skip_header) from None


def read_run(
    path: PathLike,
    *,
    fmt: Format | None = None,
    on_duplicate: OnDuplicate = "error",
    strict: bool = False,
    max_id_chars: int | None = None,
) -> Run:
    """Read a ranking; `fmt` is detected from the extension or the first line when None.

    Columns after a TREC run's sixth are ignored, as trec_eval ignores them; `strict` refuses them.
    The run's id is the last line's sixth column (trec_eval's runid), or the file's name for a TSV or
    JSONL run. Ids may be of any length, as in trec_eval, unless `max_id_chars` bounds them.
    """
    with small_pages():
        return _read_run(path, fmt, on_duplicate, strict, max_id_chars)


def _read_run(
    path: PathLike, fmt: Format | None, on_duplicate: OnDuplicate, strict: bool, max_id_chars: int | None
) -> Run:
    table, skip_header, fmt = _read_table(path, "run", fmt, strict)
    scores = to_numpy(table.column("score"))
    nan = np.flatnonzero(np.isnan(scores))
    if len(nan):
        line = _line_numbers(path, [int(nan[0])], skip_header)[0]
        raise FormatError(str(path), line, "score is not a number (NaN)")
    vocab, codes = _qid_codes(table.column("qid"))
    docnos = as_binary_chunks(table.column("docno"))
    _check_ids(path, vocab, codes, docnos, skip_header, max_id_chars)
    run_id = _last_tag(path) if fmt == "trec" else Path(path).stem
    try:
        return Run._from_columns(vocab, codes, docnos, scores, on_duplicate, run_id=run_id)
    except DuplicateRowError as exc:
        raise _duplicate_error(path, exc, skip_header) from None


def _last_tag(path: PathLike) -> str | None:
    """The sixth column of the file's last content line, where trec_eval takes the runid from."""
    with open(path, "rb") as handle:
        size = handle.seek(0, io.SEEK_END)
        for tail in (1 << 16, size):
            handle.seek(max(0, size - tail))
            lines = handle.read().decode("utf-8", errors="surrogateescape").splitlines()
            content = [line for line in (lines[1:] if tail < size else lines) if _is_content(line)]
            if content:
                fields = content[-1].split()
                return fields[5] if len(fields) > 5 else None
    return None


# --- topics ----------------------------------------------------------------------------------------

_TOP = re.compile(r"<top>(.*?)</top>", re.S | re.I)
_TOPIC_XML = re.compile(r"<topic\b([^>]*)>(.*?)</topic>", re.S | re.I)
_TAG = re.compile(r"<(/?)([a-z]+)\b[^>]*>", re.I)
_PREFIXES = {
    "num": re.compile(r"^\s*number\s*:\s*", re.I),
    "title": re.compile(r"^\s*topic\s*:\s*", re.I),
    "desc": re.compile(r"^\s*description\s*:\s*", re.I),
    "narr": re.compile(r"^\s*narrative\s*:\s*", re.I),
}
_FIELDS = {
    "title": ("title", "query"),
    "description": ("desc", "description"),
    "narrative": ("narr", "narrative"),
}


def _sections(body: str) -> dict[str, str]:
    """Text after each opening tag up to the next tag (TREC SGML tags are often left unclosed)."""
    out: dict[str, str] = {}
    tags = list(_TAG.finditer(body))
    for i, tag in enumerate(tags):
        if tag.group(1):
            continue
        name = tag.group(2).lower()
        end = tags[i + 1].start() if i + 1 < len(tags) else len(body)
        text = body[tag.end() : end]
        prefix = _PREFIXES.get(name)
        text = prefix.sub("", text) if prefix else text
        out.setdefault(name, " ".join(text.split()))
    return out


def _line_at(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _read_trec_topics(path: PathLike, field: str) -> dict[str, str]:
    refuse_gzip(path)
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(str(path), line, f"not UTF-8 text ({exc.reason})") from None
    blocks: list[tuple[int, str | None, str]] = [(m.start(), None, m.group(1)) for m in _TOP.finditer(text)]
    blocks += [(m.start(), m.group(1), m.group(2)) for m in _TOPIC_XML.finditer(text)]
    if not blocks:
        raise FormatError(str(path), None, "no <top> or <topic> element found")
    topics: dict[str, str] = {}
    seen: set[str] = set()
    for start, attributes, body in sorted(blocks, key=lambda b: b[0]):
        line = _line_at(text, start)
        sections = _sections(body)
        number = re.search(r'number\s*=\s*"([^"]*)"', attributes or "", re.I)
        qid = number.group(1).strip() if number else sections.get("num", "").split(" ")[0]
        if not qid:
            raise FormatError(str(path), line, "topic has no <num>")
        problem = id_problem(qid, "query id")
        if problem:
            raise FormatError(str(path), line, problem)
        value = next((sections[t] for t in _FIELDS[field] if sections.get(t)), "")
        if qid in topics or qid in seen:
            raise FormatError(str(path), line, f"topic {qid} appears twice")
        seen.add(qid)
        if value:
            topics[qid] = value
        elif field == "title":
            raise FormatError(str(path), line, f"topic {qid} has no title")
    return topics


def _add_topic(topics: dict[str, str], path: PathLike, number: int, qid: str, text: str) -> None:
    problem = id_problem(qid, "query id")
    if problem:
        raise FormatError(str(path), number, problem)
    if qid in topics:
        raise FormatError(str(path), number, f"topic {qid} appears twice")
    topics[qid] = text


def _topic_lines(path: PathLike) -> Iterator[tuple[int, str]]:
    """Content lines decoded strictly: topics become database rows, which cannot hold undecodable bytes."""
    return ((number, line) for number, line in text_lines(path) if _is_content(line))


def _read_tsv_topics(path: PathLike) -> dict[str, str]:
    topics: dict[str, str] = {}
    for number, line in _topic_lines(path):
        qid, tab, text = line.rstrip("\r\n").partition("\t")
        if not tab:
            raise FormatError(str(path), number, "expected qid<TAB>text")
        _add_topic(topics, path, number, qid.strip(), text.strip())
    return topics


def _read_jsonl_topics(path: PathLike) -> dict[str, str]:
    topics: dict[str, str] = {}
    for number, line in _topic_lines(path):
        try:
            record = json_object(line)
            qid = _json_text(_json_field(record, "qid"), "qid")
            text = record.get("text", record.get("title"))
            if not isinstance(text, str):
                raise ValueError('missing field "text"')
        except KeyError as exc:
            raise FormatError(str(path), number, f"missing field {exc.args[0]}") from None
        except ValueError as exc:
            raise FormatError(str(path), number, str(exc)) from None
        _add_topic(topics, path, number, qid, text)
    return topics


def read_topics(
    path: PathLike,
    *,
    fmt: Format | None = None,
    field: Literal["title", "description", "narrative"] = "title",
) -> dict[str, str]:
    """{qid: text}. For TREC topic files `field` picks the title (or web track `<query>`), the
    description or the narrative; "Number:", "Topic:" and similar labels are dropped. Every topic
    needs a title; topics without the description or narrative asked for are left out."""
    fmt = fmt or detect_format(path, "topics")
    if fmt == "trec":
        return _read_trec_topics(path, field)
    if fmt == "tsv":
        return _read_tsv_topics(path)
    if fmt == "jsonl":
        return _read_jsonl_topics(path)
    raise ValueError(f"unknown format {fmt!r}; expected trec, tsv or jsonl")
