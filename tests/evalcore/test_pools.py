"""evalcore.pools: pooling runs to a depth with trec_eval's ordering, and pair lists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalcore.errors import FormatError
from evalcore.pools import find_line, pool_run, read_pairs
from evalcore.retrieval.data import Run


class TestPoolRun:
    def test_it_keeps_each_querys_top_documents_by_score(self) -> None:
        run = Run.from_dict({"q1": {"a": 0.1, "b": 0.9, "c": 0.5}, "q2": {"x": 3.0, "y": 2.0}})
        assert pool_run(run, 2) == [("q1", "b"), ("q1", "c"), ("q2", "x"), ("q2", "y")]

    def test_it_breaks_ties_at_the_cut_by_document_id_descending(self) -> None:
        run = Run.from_dict({"q1": {"a": 1.0, "c": 1.0, "b": 1.0, "top": 2.0}})
        assert pool_run(run, 3) == [("q1", "top"), ("q1", "c"), ("q1", "b")]

    def test_it_takes_everything_when_the_depth_exceeds_the_ranking(self) -> None:
        run = Run.from_dict({"q1": {"a": 1.0}})
        assert pool_run(run, 100) == [("q1", "a")]

    def test_it_refuses_a_depth_below_one(self) -> None:
        with pytest.raises(ValueError, match="depth"):
            pool_run(Run.from_dict({"q1": {"a": 1.0}}), 0)


class TestReadPairs:
    def test_it_reads_pairs_and_skips_a_header(self, tmp_path: Path) -> None:
        path = tmp_path / "pool.tsv"
        path.write_text("qid\tdoc_id\nq1\td1\n\nq1\td2\n")
        assert list(read_pairs(path)) == [("q1", "d1", 2), ("q1", "d2", 4)]

    def test_it_names_a_bad_line(self, tmp_path: Path) -> None:
        path = tmp_path / "pool.tsv"
        path.write_text("q1\td1\nq1 d2 extra\n")
        with pytest.raises(FormatError, match=r"pool.tsv:2: expected qid<TAB>doc_id, found 1 columns"):
            list(read_pairs(path))

    def test_it_refuses_a_repeated_pair(self, tmp_path: Path) -> None:
        path = tmp_path / "pool.tsv"
        path.write_text("q1\td1\nq1\td1\n")
        with pytest.raises(FormatError, match=r"pool.tsv:2: pair q1 d1 appears twice"):
            list(read_pairs(path))

    @pytest.mark.parametrize(
        ("data", "reason"),
        [
            (b"q1\td1\nq 1\td2\n", "pool.tsv:2: query id 'q 1' contains whitespace; TREC ids cannot"),
            (b"q1\td1\nq1\thas space\n", "pool.tsv:2: document id 'has space' contains whitespace"),
            (b"q1\td1\nq1\td\xc2\xa02\n", "pool.tsv:2: document id 'd\\xa02' contains whitespace"),
            (b"q1\td1\nq1\tcaf\xe9\n", "pool.tsv:2: not UTF-8 text"),
        ],
    )
    def test_it_names_the_line_of_an_id_a_trec_file_cannot_hold(
        self, tmp_path: Path, data: bytes, reason: str
    ) -> None:
        path = tmp_path / "pool.tsv"
        path.write_bytes(data)
        with pytest.raises(FormatError, match=re.escape(reason)):
            list(read_pairs(path))


class TestFindLine:
    def test_it_finds_a_pair_in_trec_and_json_lines(self, tmp_path: Path) -> None:
        trec = tmp_path / "run.trec"
        trec.write_text("q1 Q0 d1 1 2.0 r\nq2 Q0 d10 1 1.0 r\n")
        jsonl = tmp_path / "run.jsonl"
        jsonl.write_text(
            '{"qid": "q1", "docno": "d1", "score": 1}\n{"qid": "q2", "docno": "d1", "score": 1}\n'
        )
        assert find_line(trec, "q2", "d10") == 2
        assert find_line(trec, "q2", "d1") is None
        assert find_line(jsonl, "q2", "d1") == 2
