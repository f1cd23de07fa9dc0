"""CSV files with a header row, read column by column, with errors that name the file and the line.

The recommendation and fraud readers describe their files as a `CsvSchema` (the columns a file may
have, which of them it must have, and the kind of value in each). `read_csv` checks the header, then
parses the whole file with Arrow's multi-threaded CSV reader into typed columns, never a Python
object per line. When Arrow rejects the file, a line-by-line scan finds the first bad line and
raises `FormatError(path, line, reason)`; checks that need the parsed columns (an empty id, a NaN
score, a repeated row) report their row through `CsvTable.fail`, which finds its line the same way.

Fields follow RFC 4180: comma-separated, optionally double-quoted (a quoted field may hold a comma,
not a line break). Blank lines are skipped. Columns may come in any order; a column the schema does
not know is an error, so that a misspelt optional column is not silently ignored.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NoReturn

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from evalcore.arrow import (
    binary_length,
    dictionary_encode,
    equal,
    from_numpy,
    keep,
    pooled_empty,
    reader_pool,
    to_numpy,
)
from evalcore.errors import FormatError
from evalcore.textfiles import arrow_input

#: text: any string (ids, kept as bytes: no UTF-8 check on millions of ids); code: text read as
#: codes into each block's distinct values (a dictionary per chunk: an id column with many repeats,
#: hashed block by block in tables that stay in cache; `unify_codes` joins the blocks); integer:
#: int64; small integer: int32 (a rank: half the memory of int64); number: float64; flag: 0 or 1
#: (also true/false).
Kind = Literal["text", "code", "integer", "small integer", "number", "flag"]
_ARROW_TYPES: dict[str, pa.DataType] = {
    "text": pa.binary(),
    "code": pa.dictionary(pa.int32(), pa.binary()),
    "integer": pa.int64(),
    "small integer": pa.int32(),
    "number": pa.float64(),
    "flag": pa.bool_(),
}
_TRUE = ["1", "true", "True", "TRUE"]
_FALSE = ["0", "false", "False", "FALSE"]
_BLOCK = 1 << 22


@dataclass(frozen=True)
class CsvSchema:
    """The columns a CSV file may have (in their documented order), which are required, and their kinds."""

    columns: Mapping[str, Kind]
    required: tuple[str, ...]
    ignored: tuple[str, ...] = ()  # checked in the header, never converted (an id nobody reads)

    @property
    def header(self) -> str:
        optional = [name for name in self.columns if name not in self.required]
        return ",".join(self.required) + "".join(f"[,{name}]" for name in optional)


@dataclass(frozen=True, eq=False)
class CsvTable:
    """The parsed columns of one file, and the way back from a row to its line."""

    path: str
    table: pa.Table

    @property
    def num_rows(self) -> int:
        return int(self.table.num_rows)

    def has(self, name: str) -> bool:
        return name in self.table.column_names

    def column(self, name: str) -> pa.ChunkedArray:
        return self.table.column(name)

    def line_numbers(self, rows: Sequence[int]) -> list[int]:
        """The 1-based line of each 0-based data row (the header and blank lines skipped)."""
        return _line_numbers(self.path, [int(r) for r in rows])

    def fail(self, row: int, reason: str) -> NoReturn:
        raise FormatError(self.path, self.line_numbers([row])[0], reason)

    def text(self, name: str, row: int) -> str:
        """The value of text column `name` at `row`, for a message."""
        value = self.column(name)[row].as_py()
        return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)

    def encode(self, name: str, *, grouped: bool = False) -> tuple[pa.Array, np.ndarray]:
        """A text column as int32 codes: the distinct values in order of first appearance, and each
        row's code. An empty value is an error (found in the distinct values, not by a pass over rows).

        `grouped`: the column usually comes in runs of equal values (a user's rows), so only the
        first value of each run is hashed."""
        values, codes = encode_runs(self.column(name)) if grouped else encode_column(self.column(name))
        self.refuse_empty(name, values, codes)
        return values, codes

    def refuse_empty(self, name: str, values: pa.Array, codes: np.ndarray) -> None:
        """`fail` on the first row whose code (in `values`, the distinct values) is the empty value."""
        # pc.index would do, but imports pandas (half a second) on first use.
        empty = np.flatnonzero(binary_length(values) == 0)
        if empty.size and (rows := np.flatnonzero(codes == empty[0])).size:
            self.fail(int(rows[0]), f"empty {name}")


def read_csv(path: str | Path, schema: CsvSchema) -> CsvTable:
    """Read a CSV file with a header row into typed Arrow columns, or raise `FormatError`."""
    name = str(path)
    header = _read_header(name, schema)
    options = (
        pacsv.ReadOptions(column_names=header, skip_rows=1, block_size=_BLOCK),
        pacsv.ParseOptions(
            delimiter=",",
            quote_char='"',
            double_quote=True,
            newlines_in_values=False,
            ignore_empty_lines=True,
        ),
        pacsv.ConvertOptions(
            column_types={column: _ARROW_TYPES[schema.columns[column]] for column in header},
            include_columns=[column for column in header if column not in schema.ignored],
            null_values=[],
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
            true_values=_TRUE,
            false_values=_FALSE,
            check_utf8=False,
        ),
    )
    try:
        with arrow_input(name) as source:  # never decompressed because of its name
            table = pacsv.read_csv(source, *options, memory_pool=reader_pool())
    except pa.ArrowInvalid as exc:
        _scan(name, schema, header)
        raise FormatError(name, None, f"malformed CSV: {exc}") from exc
    return CsvTable(name, table)


# --- the header ------------------------------------------------------------------------------------


def _read_header(path: str, schema: CsvSchema) -> list[str]:
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            first = handle.readline()
    except UnicodeDecodeError as exc:
        raise FormatError(path, 1, f"not UTF-8 text ({exc.reason})") from exc
    expected = f"expected the header {schema.header}"
    if not first.strip():
        raise FormatError(path, 1, f"empty first line; {expected}")
    names = [cell.strip() for cell in next(csv.reader([first]))]
    for number, column in enumerate(names):
        if column not in schema.columns:
            raise FormatError(path, 1, f"unknown column {column!r}; {expected}")
        if column in names[:number]:
            raise FormatError(path, 1, f"column {column!r} appears twice")
    missing = [column for column in schema.required if column not in names]
    if missing:
        raise FormatError(path, 1, f"missing column {missing[0]!r}; {expected}")
    return names


# --- the slow path: find the first bad line --------------------------------------------------------


def _data_lines(path: str) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of every non-blank line after the header."""
    with open(path, "rb") as handle:
        handle.readline()
        for number, line in enumerate(handle, start=2):
            if line.strip(b"\r\n"):
                yield number, line


def _value_problem(text: str, kind: Kind, column: str) -> str | None:
    if kind in ("text", "code"):
        return None
    if text != text.strip() or not text:
        return f"{column} {text!r} is not {'a number' if kind == 'number' else 'an integer'}"
    if kind == "flag":
        return None if text in _TRUE or text in _FALSE else f"{column} {text!r} is not 0 or 1"
    try:
        value = float(text) if kind == "number" else int(text)
    except ValueError:
        return f"{column} {text!r} is not {'a number' if kind == 'number' else 'an integer'}"
    if kind == "small integer" and not -(2**31) <= value < 2**31:
        return f"{column} {text!r} is out of range (at most {2**31 - 1:,} in size)"
    return None


def _scan(path: str, schema: CsvSchema, header: list[str]) -> None:
    """Raise a FormatError at the first line Arrow could not have parsed, if there is one."""
    kinds = [schema.columns[column] for column in header]
    for number, raw in _data_lines(path):
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        try:
            cells = next(csv.reader([text], strict=True))
        except csv.Error as exc:
            raise FormatError(path, number, f"malformed CSV: {exc}") from exc
        if len(cells) != len(header):
            reason = f"expected {len(header)} columns ({','.join(header)}), found {len(cells)}"
            raise FormatError(path, number, reason)
        for cell, kind, column in zip(cells, kinds, header, strict=True):
            problem = _value_problem(cell, kind, column)
            if problem:
                raise FormatError(path, number, problem)


def _line_numbers(path: str, rows: list[int]) -> list[int]:
    if not rows:
        return []
    wanted = np.asarray(rows)
    found = np.zeros(len(rows), dtype=np.int64)
    last = int(wanted.max())
    for row, (number, _) in enumerate(_data_lines(path)):
        found[wanted == row] = number
        if row >= last:
            break
    return found.tolist()


# --- Arrow columns as numpy ----------------------------------------------------------------------


def encode_column(column: pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """Distinct values in order of first appearance, and each row's int32 code (Arrow's hash table)."""
    encoded = dictionary_encode(column)
    chunks = [c for c in encoded.chunks if len(c)]
    if not chunks:
        return pa.array([], column.type), np.zeros(0, dtype=np.int32)
    # Arrow encodes a chunked array with one memo table, so every chunk carries the same dictionary;
    # if a version ever did otherwise, unifying the dictionaries keeps the codes right.
    dictionary = chunks[-1].dictionary
    if any(len(c.dictionary) != len(dictionary) for c in chunks):
        chunks = list(pa.chunked_array(chunks).unify_dictionaries().chunks)
        dictionary = chunks[-1].dictionary
    return dictionary, to_numpy(pa.chunked_array([c.indices for c in chunks]))


def unify_codes(columns: list[pa.ChunkedArray]) -> tuple[pa.Array, list[np.ndarray]]:
    """`encode_column` over several text columns at once, each plain or read as codes (kind "code"):
    the distinct values in order of first appearance over the columns in turn, and each column's
    int32 codes. One hash table takes every plain value and each block's distinct values once; a
    block's rows then take their codes through its dictionary."""
    pieces = [
        c.dictionary if pa.types.is_dictionary(c.type) else c for column in columns for c in column.chunks
    ]
    if not pieces:
        return pa.array([], pa.binary()), [np.zeros(0, dtype=np.int32) for _ in columns]
    values, codes = encode_column(pa.chunked_array(pieces, pa.binary()))
    out, at = [], 0
    for column in columns:
        rows = pooled_empty(len(column), np.int32)
        row = 0
        for chunk in column.chunks:
            if pa.types.is_dictionary(chunk.type):
                width = len(chunk.dictionary)
                indices = chunk.indices
                index = np.frombuffer(indices.buffers()[1], np.int32)[
                    indices.offset : indices.offset + len(chunk)
                ]
                np.take(codes[at : at + width], index, out=rows[row : row + len(chunk)])
            else:
                width = len(chunk)
                rows[row : row + width] = codes[at : at + width]
            at += width
            row += len(chunk)
        out.append(rows)
    return values, out


def encode_runs(column: pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """`encode_column` for a column of runs of equal values: the first value of each run is hashed,
    and its code repeated over the run. A comparison of neighbours is cheaper than a hash lookup;
    when runs turn out short the column is hashed row by row after all."""
    values, (codes,) = encode_runs_together([column])
    return values, codes


def encode_runs_together(columns: list[pa.ChunkedArray]) -> tuple[pa.Array, list[np.ndarray]]:
    """`encode_runs` over several columns in one hash table (`unify_codes`): the distinct values in
    order of first appearance over the columns in turn, and each column's codes. A value's code is
    the same in every column, and the first column's values are 0 .. its distinct values - 1."""
    heads = [_run_heads(column) for column in columns]
    values, codes = unify_codes([head for head, _ in heads])
    repeated = [
        c if lengths is None else np.repeat(c, lengths) for c, (_, lengths) in zip(codes, heads, strict=True)
    ]
    return values, repeated


def _run_heads(column: pa.ChunkedArray) -> tuple[pa.ChunkedArray, np.ndarray | None]:
    """The first value of each run of equal values and the runs' lengths; the column itself and None
    where runs are short (over half as many as rows: hashing every row is then cheaper)."""
    n = len(column)
    if n < 2:
        return column, None
    starts = np.ones(n, dtype=bool)
    starts[1:] = ~equal(column.slice(1), column.slice(0, n - 1))
    heads = np.flatnonzero(starts)
    if heads.size > n // 2:
        return column, None
    return keep(column, from_numpy(starts)), np.diff(np.append(heads, n))
