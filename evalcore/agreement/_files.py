"""Read annotations from CSV (``item,annotator,label``), reporting bad rows by file and line."""

from __future__ import annotations

import csv
import math
from os import PathLike

import numpy as np

from evalcore.agreement._labels import LongLabels
from evalcore.errors import FormatError
from evalcore.stats._validation import IntArray

HEADER = ("item", "annotator", "label")


def read_annotations_csv(path: str | PathLike[str]) -> LongLabels:
    """The labels of a CSV file with the header ``item,annotator,label`` and numeric labels.

    Item and annotator ids are strings (surrounding spaces stripped), encoded
    in sorted order; an (item, annotator) cell that is not in the file is a
    missing label. Blank lines are skipped; a file with no label at all is an
    error, since there is nothing to measure. A bad row raises ``FormatError``
    naming the file, the 1-based line and the reason: a wrong header, a wrong
    column count, an empty id, a label that is not a finite number, or an
    (item, annotator) cell labelled twice. When several rows are bad, the first
    in the file is reported.

    The rows are split by the ``csv`` module and checked column-wise with
    NumPy (a million rows take one to two seconds, mostly in ``csv``).
    """
    name = str(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
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
