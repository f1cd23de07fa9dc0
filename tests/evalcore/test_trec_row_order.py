"""A run read in any row order: the same rows, the same trec_eval ranking and the same duplicate error.

Each property writes a run's lines to a file in a drawn order, with blank lines among them, reads it
with `read_run`, and compares the result with a line-by-line reading of the same file in Python.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.errors import FormatError
from evalcore.retrieval import Run
from evalcore.retrieval.ranking import _ranks
from evalcore.trec import read_run

# Ids of 8 bytes or fewer are compared through exact keys, longer ones through hashes.
QIDS = ["1", "10", "2", "401", "q7", "topic-000000012"]
DOCS = [
    "a",
    "b",
    "D1",
    "D10",
    "D2",
    "é",
    "abcdefgh",
    "clueweb09-en0000-00-00001",
    "clueweb09-en0000-00-00002",
]
# Few distinct values, so that ties are common; -0.0 ties with 0.0; 1 + 2^-30 ties with 1 as a float32.
SCORES = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, 1.0 + 2**-30, 2.5, -3.0, 1e-40]),
    st.floats(min_value=-1e38, max_value=1e38, width=64),  # within float32, which trec_eval compares
)
ROW = st.tuples(st.sampled_from(QIDS), st.sampled_from(DOCS), SCORES)

Line = tuple[int, str, str, float]  # line number, query id, document id, score


def _text(rows: list[tuple[str, str, float]], blank_before: list[bool]) -> str:
    return "".join(
        ("\n" if blank else "") + f"{q} Q0 {d} {rank} {s!r} tag\n"
        for rank, ((q, d, s), blank) in enumerate(zip(rows, blank_before, strict=True), start=1)
    )


def _reference_lines(text: str) -> list[Line]:
    """The file's rows as a straightforward reader sees them: one line at a time."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if fields:
            out.append((number, fields[0], fields[2], float(fields[4])))
    return out


def _reference_ranks(lines: list[Line]) -> dict[tuple[str, str], int]:
    """trec_eval's order: each query's rows by score (a C float) descending, then document id descending."""
    ranks = {}
    for qid in {q for _, q, _, _ in lines}:
        rows = [(d, s) for _, q, d, s in lines if q == qid]
        rows.sort(key=lambda r: r[0].encode(), reverse=True)
        rows.sort(key=lambda r: -np.float32(r[1]))  # stable: ties keep the document id order
        ranks.update({(qid, d): rank for rank, (d, _) in enumerate(rows, start=1)})
    return ranks


def _read(text: str, **options: str) -> Run:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "run.txt"
        path.write_text(text, encoding="utf-8")
        return read_run(path, **options)  # type: ignore[arg-type]


def _rows(run: Run) -> list[tuple[str, str, str]]:
    """Every row as (query id, document id, score in hex: -0.0 and 0.0 differ)."""
    qids = [str(run.qids[c]) for c in run.qid_codes.tolist()]
    return list(zip(qids, run.docno_strings(), [s.hex() for s in run.scores.tolist()], strict=True))


def _ranking(run: Run) -> dict[tuple[str, str], int]:
    ranks = _ranks(run, np.arange(len(run))).tolist()
    return {(q, d): rank for (q, d, _), rank in zip(_rows(run), ranks, strict=True)}


class TestRowOrder:
    @settings(max_examples=150, deadline=None)
    @given(st.lists(ROW, min_size=1, max_size=60, unique_by=lambda r: (r[0], r[1])), st.data())
    def test_it_reads_a_shuffled_run_as_the_same_rows_in_the_same_ranking(
        self, rows: list[tuple[str, str, float]], data: st.DataObject
    ) -> None:
        order = data.draw(st.permutations(range(len(rows))))
        shuffled = [rows[i] for i in order]
        text = _text(shuffled, data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows))))
        lines = _reference_lines(text)
        run = _read(text)
        assert run.qids.tolist() == sorted({q for _, q, _, _ in lines})
        assert _rows(run) == [(q, d, s.hex()) for _, q, d, s in lines]
        assert _ranking(run) == _reference_ranks(lines)
        as_written = _read(_text(rows, [False] * len(rows)))
        assert _ranking(as_written) == _ranking(run)
        counts = dict(zip(run.qids.tolist(), run.layout.counts.tolist(), strict=True))
        assert counts == dict(zip(as_written.qids.tolist(), as_written.layout.counts.tolist(), strict=True))

    @settings(max_examples=150, deadline=None)
    @given(st.lists(ROW, min_size=1, max_size=40), st.data())
    def test_it_names_the_same_duplicate_and_keeps_the_same_first_rows_in_any_order(
        self, rows: list[tuple[str, str, float]], data: st.DataObject
    ) -> None:
        again = data.draw(st.sampled_from(rows))  # at least one document twice for its query
        rows = [*rows, (again[0], again[1], data.draw(SCORES))]
        order = data.draw(st.permutations(range(len(rows))))
        shuffled = [rows[i] for i in order]
        text = _text(shuffled, data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows))))
        lines = _reference_lines(text)

        seen: dict[tuple[str, str], int] = {}
        kept = []
        duplicate = None
        for number, q, d, s in lines:
            if (q, d) in seen:
                duplicate = duplicate or (number, q, d, seen[(q, d)])
                continue
            seen[(q, d)] = number
            kept.append((q, d, s.hex()))
        assert duplicate is not None
        number, q, d, first = duplicate
        with pytest.raises(FormatError) as caught:
            _read(text)
        assert caught.value.line == number
        assert caught.value.reason == f"document {d!r} appears twice for query {q!r} (first on line {first})"

        run = _read(text, on_duplicate="first")
        assert _rows(run) == kept
        kept_lines = [line for line in lines if seen.get((line[1], line[2])) == line[0]]
        assert _ranking(run) == _reference_ranks(kept_lines)
