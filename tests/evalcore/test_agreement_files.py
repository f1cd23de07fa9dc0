"""`read_annotations_csv` reads every file as a plain row-by-row reader with the `csv` module would.

The reader parses with Arrow and falls back to the `csv` module for the files Arrow refuses or whose
columns make no valid labels. `reference_read` below is the contract written row by row: generated
files (quoted fields, line breaks inside quotes, spaces and NULs around ids, odd numbers, blank lines,
bad rows) must give the same labels, or the same error at the same line.
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcore.agreement import read_annotations_csv
from evalcore.agreement._files import WHITESPACE
from evalcore.errors import FormatError

FILES = settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
HEADER = "expected the header 'item,annotator,label', found "


def reference_read(path: Path) -> tuple[int | None, str] | dict[str, Any]:
    """The labels as {"items", "annotators", "cells": {(item, annotator): label}}, or (line, reason)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                return 1, HEADER + "an empty file"
            if [cell.strip() for cell in header] != ["item", "annotator", "label"]:
                return 1, HEADER + repr(",".join(header))
            rows = [(reader.line_num, row) for row in reader]
    except UnicodeDecodeError as error:
        return None, f"not UTF-8 text ({error.reason})"
    except csv.Error as error:
        return reader.line_num, f"malformed CSV: {error}"
    cells: dict[tuple[str, str], tuple[int, float]] = {}
    for line, row in rows:
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != 3:
            return line, f"expected 3 columns (item,annotator,label), found {len(row)}"
        # A NumPy string drops trailing NULs: the ids are NumPy strings.
        item, annotator = row[0].strip().rstrip("\0"), row[1].strip().rstrip("\0")
        if not item or not annotator:
            return line, "the item and the annotator must not be empty"
        if (item, annotator) in cells:
            earlier = cells[item, annotator][0]
            return line, f"item {item!r} already has a label from annotator {annotator!r} (line {earlier})"
        try:
            label = float(row[2])
        except ValueError:
            label = math.nan
        if not math.isfinite(label):
            return line, f"the label {row[2].strip()!r} is not a finite number"
        cells[item, annotator] = (line, label)
    if not cells:
        return None, "the file holds the header but no labels: nothing to measure"
    return {
        "items": sorted({item for item, _ in cells}),
        "annotators": sorted({annotator for _, annotator in cells}),
        "cells": {cell: label for cell, (_, label) in cells.items()},
    }


def read(path: Path) -> tuple[int | None, str] | dict[str, Any]:
    try:
        labels = read_annotations_csv(path)
    except FormatError as error:
        assert error.path == str(path)
        return error.line, error.reason
    items, annotators = labels.items.tolist(), labels.annotators.tolist()
    assert labels.items.dtype.kind == labels.annotators.dtype.kind == "U"
    return {
        "items": items,
        "annotators": annotators,
        "cells": {
            (items[i], annotators[a]): v
            for i, a, v in zip(
                labels.item.tolist(), labels.annotator.tolist(), labels.value.tolist(), strict=True
            )
        },
    }


GOOD_IDS = ["q1", "q2", " q1", "q3 ", "\tq4\u3000", "a\x00", "b\x00c", "é", "z", "Z", "\ufeffq", "q\u200b",
            '"q,5"', '"q6"', '"two\nlines"', '"x""y"', '"r\r\nn"', '"a"b', 'a"b', '"c" ']  # fmt: skip
BAD_IDS = ["", " ", '""', "\x1c", "\xa0"]
GOOD_LABELS = ["0", "1", "2", "2.5", " 3", "3 ", "+1", "1e0", "-0", ".5", "5.", '"4"', "\xa01", "1\u3000", "\t2",
               "1_0", "\u0661"]  # fmt: skip
BAD_LABELS = ["x", "", "nan", "inf", "-Infinity", "1e999", "0x1", "1e", " "]
ENDINGS = ["\n", "\r\n", "\r"]


def one_in(n: int, rare: st.SearchStrategy[Any], usual: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.integers(1, n).flatmap(lambda k: rare if k == n else usual)  # hypothesis favours 1


@st.composite
def annotation_files(draw: st.DrawFn) -> bytes:
    """Mostly files that read (ids and labels in every form the contract allows), some with one bad row."""
    header = draw(one_in(8, st.sampled_from(["item,annotator", "item;annotator;label", '"item",annotator,label', ""]),
                         st.sampled_from(["item,annotator,label", "\ufeffitem,annotator,label", " item , annotator,label "])))  # fmt: skip
    ids = one_in(40, st.sampled_from(BAD_IDS), st.sampled_from(GOOD_IDS))
    label = one_in(30, st.sampled_from(BAD_LABELS), st.sampled_from(GOOD_LABELS))
    row = one_in(
        12,
        st.one_of(
            st.lists(ids, min_size=2, max_size=4).map(lambda c: [*c[:2], *c[3:]]),  # 2 or 3 columns
            st.lists(ids, min_size=4, max_size=4),
            st.sampled_from([[], [" "], ['""'], ["\t"]]),  # blank lines
        ),
        st.tuples(ids, ids, label).map(list),
    )
    rows = draw(st.lists(row, max_size=8))
    lines = [header] + [",".join(cells) for cells in rows]
    endings = draw(st.lists(st.sampled_from(ENDINGS), min_size=len(lines), max_size=len(lines)))
    text = "".join(line + ending for line, ending in zip(lines, endings, strict=True))
    if draw(st.booleans()):
        text = text.rstrip("\r\n")  # no line break at the end
    tail = one_in(
        10, st.sampled_from([b'"open,x,1', b"q9,ann,\xff\n", b"\xed\xa0\x80,ann,1\n"]), st.just(b"")
    )
    return text.encode() + draw(tail)


@given(data=annotation_files())
@FILES
def test_it_reads_every_file_like_the_row_by_row_reader(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "labels.csv"
    path.write_bytes(data)
    assert read(path) == reference_read(path)


def test_it_reads_a_large_file_like_the_row_by_row_reader(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    items = [f"q{q}-d{d}" for q, d in zip(rng.integers(0, 300, 5000), rng.integers(0, 50, 5000), strict=True)]
    annotators = [f"annotator-{a}" for a in rng.integers(0, 40, 5000)]
    rows = {
        (i, a): f"{g}" for i, a, g in zip(items, annotators, rng.integers(0, 5, 5000).tolist(), strict=True)
    }
    path = tmp_path / "labels.csv"
    path.write_text("item,annotator,label\n" + "".join(f"{i},{a},{g}\n" for (i, a), g in rows.items()))
    result = read(path)
    assert result == reference_read(path) and isinstance(result, dict) and len(result["cells"]) == len(rows)


def test_it_refuses_an_id_longer_than_the_csv_module_reads(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    # The limit is the csv module's, process-wide (reading a documents file raises it): the current one.
    limit = csv.field_size_limit()
    path.write_text(f"item,annotator,label\nq1,ann,1\n{'q' * (limit + 1)},ann,1\n")
    assert (
        read(path) == reference_read(path) == (3, f"malformed CSV: field larger than field limit ({limit})")
    )


def test_it_strips_exactly_what_str_strip_strips() -> None:
    assert "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()) == WHITESPACE


@pytest.mark.parametrize(
    ("rows", "line", "reason"),
    [
        (["q1,ann,1", " q1 ,ann,2"], 3, "item 'q1' already has a label from annotator 'ann' (line 2)"),
        # A row over several lines is named by its last line, as the csv module counts.
        (
            ['"q1\n",ann,1', "q2,ann,1", "q1,ann,2"],
            5,
            "item 'q1' already has a label from annotator 'ann' (line 3)",
        ),
        (["q1,ann,1", "q1,ann,nan"], 3, "item 'q1' already has a label from annotator 'ann' (line 2)"),
        (['"a\nb",ann,1', "q2,\u3000,1"], 4, "the item and the annotator must not be empty"),
        (["q1,ann,1", "q2,ann,1,", "q3,ann,x"], 3, "expected 3 columns (item,annotator,label), found 4"),
        (["q1,ann,1", "q2,ann,1e999"], 3, "the label '1e999' is not a finite number"),
    ],
)
def test_it_names_the_first_bad_line(tmp_path: Path, rows: list[str], line: int, reason: str) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("\n".join(["item,annotator,label", *rows]) + "\n")
    with pytest.raises(FormatError) as error:
        read_annotations_csv(path)
    assert (error.value.line, error.value.reason) == (line, reason)


def test_it_reads_labels_with_any_spaces_around_them(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("item,annotator,label\nq1,ann, 1\nq1,bob,\xa02\u3000\nq2,ann,\t3\n")
    labels = read_annotations_csv(path)
    assert labels.to_matrix().tolist()[0] == [1.0, 2.0] and labels.value.tolist() == [1.0, 2.0, 3.0]


def test_it_sorts_ids_by_code_point(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("item,annotator,label\né,b,1\nz,a,1\nZ,a,1\n\U0001f600,a,1\nä,a,1\n")
    assert read_annotations_csv(path).items.tolist() == ["Z", "z", "ä", "é", "\U0001f600"]
