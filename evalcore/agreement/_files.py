"""Read annotations from CSV (``item,annotator,label``), reporting bad rows by file and line."""

from __future__ import annotations

import csv
import math
from os import PathLike

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from evalcore.agreement._labels import LongLabels
from evalcore.arrow import (
    binary_length,
    cast,
    equal,
    from_numpy,
    keep,
    small_pages,
    sort_indices,
    take,
    to_numpy,
    utf8_rtrim,
    utf8_trim,
)
from evalcore.csvfiles import encode_column
from evalcore.errors import FormatError
from evalcore.stats._validation import IntArray, StatsInputError
from evalcore.textfiles import arrow_input

HEADER = ("item", "annotator", "label")
_BOM = b"\xef\xbb\xbf"
_BLOCK = 1 << 22
# What str.strip() removes: every character for which str.isspace() is true.
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
# A NumPy string array drops its elements' trailing NULs; the ids lose them the same way here.
_NUL = "\x00"


def read_annotations_csv(path: str | PathLike[str]) -> LongLabels:
    """The labels of a CSV file with the header ``item,annotator,label`` and numeric labels.

    Item and annotator ids are strings (surrounding spaces stripped), encoded
    in sorted order; an (item, annotator) cell that is not in the file is a
    missing label. Fields may be double-quoted (a quoted field may hold a comma
    or a line break). Blank lines are skipped; a file with no label at all is an
    error, since there is nothing to measure. A bad row raises ``FormatError``
    naming the file, the 1-based line and the reason: a wrong header, a wrong
    column count, an empty id, a label that is not a finite number, or an
    (item, annotator) cell labelled twice. When several rows are bad, the first
    in the file is reported.

    Arrow's multi-threaded CSV reader parses the file into typed columns, never
    a Python object per row; the ids are encoded from Arrow's dictionary of
    distinct values, and only those are stripped and sorted (a million labels
    take under a second of CPU, mostly parsing and hashing the item ids). A
    file Arrow refuses, or whose columns do not make valid labels, is read again
    row by row with the ``csv`` module, which finds the first bad line, or reads
    what Arrow is stricter about (a label such as ``1_000`` or with a non-ASCII
    space around it, a line of spaces between rows), with the same result.
    A row whose quoted field spans lines is named by its last line.
    """
    name = str(path)
    labels = _read_columns(name)
    return labels if labels is not None else _read_rows(name)


# --- the fast path: Arrow columns ---------------------------------------------------------------------


def _read_columns(name: str) -> LongLabels | None:
    """The labels, or None when the file needs the row-by-row reader (to read it or to find its error)."""
    if not _plain_header(name):
        return None
    with small_pages():
        table = _arrow_table(name, pa.float64())
        if table is None:  # perhaps a label with spaces around it that Arrow's number parser refuses
            table = _arrow_table(name, pa.string())
            if table is None:
                return None
        if table.num_rows == 0:
            return None
        items = _sorted_codes(table.column("item"))
        annotators = _sorted_codes(table.column("annotator"))
        labels = _numbers(table.column("label"))
        if items is None or annotators is None or labels is None:
            return None
        try:
            return LongLabels.from_codes(
                items[1], annotators[1], labels, items=items[0], annotators=annotators[0]
            )
        except StatsInputError:  # a label that is not finite, or a cell labelled twice: find its line
            return None


def _plain_header(name: str) -> bool:
    """Whether the first line is the header, unquoted: Arrow can then skip it as one line."""
    with open(name, "rb") as handle:
        first = handle.readline()
    first = first.removeprefix(_BOM).rstrip(b"\r\n")
    if b'"' in first or b"\r" in first:
        return False
    try:
        cells = first.decode("utf-8").split(",")
    except UnicodeDecodeError:
        return False
    return tuple(cell.strip() for cell in cells) == HEADER


def _arrow_table(name: str, label_type: pa.DataType) -> pa.Table | None:
    options = (
        pacsv.ReadOptions(column_names=list(HEADER), skip_rows=1, block_size=_BLOCK),
        pacsv.ParseOptions(delimiter=",", quote_char='"', double_quote=True, newlines_in_values=True),
        pacsv.ConvertOptions(
            column_types={"item": pa.string(), "annotator": pa.string(), "label": label_type},
            null_values=[],
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
            check_utf8=True,
        ),
    )
    try:
        with arrow_input(name) as source:
            return pacsv.read_csv(source, *options)
    except pa.ArrowInvalid:
        return None


def _numbers(column: pa.ChunkedArray) -> np.ndarray | None:
    if pa.types.is_floating(column.type):
        return to_numpy(column)
    try:
        return to_numpy(cast(utf8_trim(column, WHITESPACE), pa.float64()))
    except pa.ArrowInvalid:
        return None


def _sorted_codes(column: pa.ChunkedArray) -> tuple[np.ndarray, IntArray] | None:
    """The distinct ids (stripped) in sorted order and each row's index among them; None if an id is empty
    or longer than the ``csv`` module reads.

    Only the distinct raw values are stripped and sorted: Arrow's hash table finds them in one pass.
    UTF-8 sorts bytewise in code point order, the order of ``np.unique`` on the same strings.
    """
    raw, codes = encode_column(column)
    if len(raw) and binary_length(raw).max() > csv.field_size_limit():
        return None  # the csv module refuses so long a field: let it say so, at its line
    ids = utf8_rtrim(utf8_trim(raw, WHITESPACE), _NUL)
    order = sort_indices(pa.table({"id": ids}), [("id", "ascending")]).astype(np.int64)
    ordered = take(ids, from_numpy(order))
    first = np.ones(len(ordered), dtype=bool)
    first[1:] = ~equal(ordered[1:], ordered[:-1])
    rank = np.empty(len(ordered), dtype=np.int64)
    rank[order] = np.cumsum(first) - 1
    distinct = keep(ordered, from_numpy(first))
    if len(distinct[0].as_py()) == 0:
        return None
    return np.array(distinct.to_pylist(), dtype=str), rank[codes]


# --- the exact path: csv rows, the first bad line -----------------------------------------------------


def _read_rows(name: str) -> LongLabels:
    """Read the file row by row with the ``csv`` module: the labels, or the first bad row's FormatError."""
    try:
        with open(name, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None or tuple(cell.strip() for cell in header) != HEADER:
                found = "an empty file" if header is None else repr(",".join(header))
                raise FormatError(name, 1, f"expected the header 'item,annotator,label', found {found}")
            rows = list(reader)
            if reader.line_num == len(rows) + 1:
                lines = np.arange(2, len(rows) + 2)
            else:  # a quoted field spans lines: ask the reader for each row's line
                handle.seek(0)
                reader = csv.reader(handle)
                next(reader)
                rows_and_lines = [(row, reader.line_num) for row in reader]
                rows = [row for row, _ in rows_and_lines]
                lines = np.array([line for _, line in rows_and_lines], dtype=np.int64)
    except UnicodeDecodeError as error:
        raise FormatError(name, None, f"not UTF-8 text ({error.reason})") from error
    except csv.Error as error:
        raise FormatError(name, reader.line_num, f"malformed CSV: {error}") from error
    blank = np.array([not row or (len(row) == 1 and not row[0].strip()) for row in rows], dtype=bool)
    if blank.any():
        rows = [row for row, skip in zip(rows, blank.tolist(), strict=True) if not skip]
        lines = lines[~blank]
    if not rows:
        raise FormatError(name, None, "the file holds the header but no labels: nothing to measure")
    return _labels_from_rows(name, rows, lines)


def _labels_from_rows(name: str, rows: list[list[str]], lines: IntArray) -> LongLabels:
    """Check the rows column-wise; raise for the earliest bad row, else encode them."""
    problems: list[tuple[int, str]] = []  # (row index, reason)

    widths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    well_formed = np.flatnonzero(widths == len(HEADER))  # row index of each row checked further
    if well_formed.size < len(rows):
        first = int(np.flatnonzero(widths != len(HEADER))[0])
        problems.append((first, f"expected 3 columns (item,annotator,label), found {widths[first]}"))
        rows = [rows[i] for i in well_formed]

    items = np.array([row[0].strip() for row in rows], dtype=str)
    annotators = np.array([row[1].strip() for row in rows], dtype=str)
    empty = np.flatnonzero((items == "") | (annotators == ""))
    if empty.size:
        problems.append((int(well_formed[empty[0]]), "the item and the annotator must not be empty"))

    raw_labels = [row[2] for row in rows]
    try:
        values = np.array(list(map(float, raw_labels)), dtype=np.float64)
    except ValueError:
        values = np.array([_parse_label(text) for text in raw_labels], dtype=np.float64)
    not_finite = np.flatnonzero(~np.isfinite(values))
    if not_finite.size:
        first = int(not_finite[0])
        reason = f"the label {raw_labels[first].strip()!r} is not a finite number"
        problems.append((int(well_formed[first]), reason))

    unique_items, item_codes = np.unique(items, return_inverse=True)
    unique_annotators, annotator_codes = np.unique(annotators, return_inverse=True)
    repeat = _first_repeated_cell(item_codes * max(1, unique_annotators.size) + annotator_codes)
    if repeat is not None:
        later, earlier = repeat
        reason = (
            f"item {str(items[later])!r} already has a label from annotator {str(annotators[later])!r} "
            f"(line {lines[well_formed[earlier]]})"
        )
        problems.append((int(well_formed[later]), reason))

    if problems:
        index, reason = min(problems)
        raise FormatError(name, int(lines[index]), reason)
    return LongLabels.from_codes(
        item_codes, annotator_codes, values, items=unique_items, annotators=unique_annotators
    )


def _first_repeated_cell(cell: IntArray) -> tuple[int, int] | None:
    """The first row (in file order) whose cell an earlier row already holds, and that earlier row."""
    order = np.argsort(cell, kind="stable")
    ordered = cell[order]
    repeated = ordered[1:] == ordered[:-1]
    if not repeated.any():
        return None
    later = int(order[1:][repeated].min())
    earlier = int(order[np.searchsorted(ordered, cell[later])])
    return later, earlier


def _parse_label(text: str) -> float:
    try:
        label = float(text)
    except ValueError:
        return math.nan
    return label
