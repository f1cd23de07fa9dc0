"""evalcore.ids: the ids TREC files can hold, checked one at a time and over Arrow columns."""

from __future__ import annotations

import pyarrow as pa
import pytest

from evalcore.ids import first_bad_row, id_problem
from evalcore.judging import Judgment, QrelsError
from evalcore.judging._qrels import check_trec_safe

WHITESPACE = [chr(c) for c in range(0x110000) if chr(c).isspace()]


class TestIdProblem:
    @pytest.mark.parametrize("value", ["q1", "401", "clueweb09-en0000-00-00000", "caf\u00e9", "\u6587\u66f8"])
    def test_it_accepts_ids_trec_files_can_hold(self, value: str) -> None:
        assert id_problem(value, "query id") is None

    @pytest.mark.parametrize(
        ("value", "reason"),
        [
            ("q 1", "query id 'q 1' contains whitespace; TREC ids cannot"),
            ("a\tb", "query id 'a\\tb' contains whitespace; TREC ids cannot"),
            ("a\nb", "query id 'a\\nb' contains whitespace; TREC ids cannot"),
            ("", "empty query id"),
            ("q\udce9", "query id 'q\\udce9' is not UTF-8 text"),
        ],
    )
    def test_it_says_why_an_id_cannot_be_written(self, value: str, reason: str) -> None:
        assert id_problem(value, "query id") == reason

    def test_it_refuses_exactly_what_the_qrels_writer_refuses(self) -> None:
        for char in WHITESPACE:
            assert id_problem(f"d{char}1", "document id") is not None
            with pytest.raises(QrelsError):
                check_trec_safe([Judgment("q1", f"d{char}1", 1, 1.0)])


class TestFirstBadRow:
    def test_it_finds_nothing_in_ordinary_ids(self) -> None:
        ids = pa.chunked_array([pa.array([f"doc{i}".encode() for i in range(1000)], pa.binary())] * 3)
        assert first_bad_row(ids) is None

    def test_it_finds_every_kind_of_whitespace_in_binary_and_string_chunks(self) -> None:
        for char in WHITESPACE:
            bad = f"d{char}x"
            binary = pa.chunked_array([pa.array([b"a", b"b"]), pa.array([b"c", bad.encode()])])
            assert first_bad_row(binary) == 3, repr(char)
            assert first_bad_row(pa.chunked_array([pa.array(["a", bad, "c"])])) == 1, repr(char)

    def test_it_finds_an_empty_id_and_counts_rows_across_sliced_chunks(self) -> None:
        whole = pa.array([b"x y", b"a", b"b", b"", b"c"], pa.binary())
        ids = pa.chunked_array([whole.slice(1, 2), whole.slice(3, 2)])
        assert first_bad_row(ids) == 2
        large = pa.chunked_array([pa.array(["a", "b c"], pa.large_string())])
        assert first_bad_row(large) == 1

    def test_it_does_not_mistake_other_non_ascii_ids_for_whitespace(self) -> None:
        ids = pa.chunked_array(
            [pa.array(["caf\u00e9", "\u00a9", "\u2019s", "\u6587", b"\xff\xfe".decode("latin-1")])]
        )
        assert first_bad_row(ids) is None
