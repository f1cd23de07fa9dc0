"""evalcore.documents: JSONL and TSV collections, streamed, with file/line/reason errors."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest

from evalcore.documents import DocumentRecord, detect_document_format, read_documents
from evalcore.errors import FormatError
from tests.evalcore.test_textfiles import gzip_bomb


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


class TestJsonl:
    def test_it_reads_ids_titles_and_texts(self, tmp_path: Path) -> None:
        path = write(
            tmp_path,
            "docs.jsonl",
            '{"doc_id": "d1", "title": "Try", "text": "The try statement"}\n\n{"doc_id": 7, "text": "No title"}\n',
        )
        assert list(read_documents(path)) == [
            DocumentRecord("d1", "The try statement", "Try", 1),
            DocumentRecord("7", "No title", "", 3),
        ]

    def test_it_accepts_docno_and_id_for_the_id(self, tmp_path: Path) -> None:
        path = write(tmp_path, "docs.jsonl", '{"docno": "a", "text": "x"}\n{"_id": "b", "text": "y"}\n')
        assert [r.doc_id for r in read_documents(path)] == ["a", "b"]

    @pytest.mark.parametrize(
        ("line", "reason"),
        [
            ('{"doc_id": "d2", "text": "ok"', "invalid JSON: expecting ',' delimiter at the end of the line"),
            ('["d2", "text"]', "each line must be a JSON object"),
            ('{"text": "no id"}', 'missing field "doc_id"'),
            ('{"doc_id": "", "text": "empty id"}', '"doc_id" is empty'),
            ('{"doc_id": "d2"}', 'missing field "text"'),
            ('{"doc_id": "d2", "text": 5}', '"text" must be a string'),
            ('{"doc_id": "d1", "text": "again"}', "doc_id 'd1' appears twice (first on line 1)"),
        ],
    )
    def test_it_names_the_file_line_and_reason_of_a_bad_line(
        self, tmp_path: Path, line: str, reason: str
    ) -> None:
        path = write(
            tmp_path,
            "docs.jsonl",
            f'{{"doc_id": "d1", "text": "fine"}}\n{line}\n{{"doc_id": "d3", "text": "x"}}\n',
        )
        with pytest.raises(FormatError) as error:
            list(read_documents(path))
        assert (error.value.path, error.value.line) == (str(path), 2)
        assert reason in error.value.reason

    def test_it_reads_gzipped_files(self, tmp_path: Path) -> None:
        path = tmp_path / "docs.jsonl.gz"
        with gzip.open(path, "wt", encoding="utf-8") as out:
            out.write('{"doc_id": "z", "text": "zipped"}\n')
        assert detect_document_format(path) == "jsonl"
        assert [r.text for r in read_documents(path)] == ["zipped"]

    def test_it_stops_reading_a_gzipped_file_that_expands_past_the_cap(self, tmp_path: Path) -> None:
        path = gzip_bomb(tmp_path / "bomb.jsonl.gz", gibibytes=1)
        started = time.perf_counter()
        with pytest.raises(FormatError) as error:
            list(read_documents(path, max_decompressed_bytes=1 << 20))
        assert time.perf_counter() - started < 0.5
        assert (error.value.path, error.value.line) == (str(path), 1)
        assert error.value.reason == "decompresses to more than 1 MiB, the most accepted"

    def test_it_stops_at_the_cap_in_a_file_of_good_lines_too(self, tmp_path: Path) -> None:
        path = tmp_path / "docs.tsv.gz"
        path.write_bytes(gzip.compress("".join(f"d{i}\t{'word ' * 20}\n" for i in range(10_000)).encode()))
        assert len(list(read_documents(path, max_decompressed_bytes=2 << 20))) == 10_000
        with pytest.raises(FormatError, match=r"docs.tsv.gz:\d+: decompresses to more than 64 KiB"):
            list(read_documents(path, max_decompressed_bytes=64 << 10))

    def test_it_refuses_a_file_named_gz_that_is_not_gzip(self, tmp_path: Path) -> None:
        path = write(tmp_path, "docs.jsonl.gz", '{"doc_id": "d1", "text": "plain"}\n')
        with pytest.raises(
            FormatError, match=r"docs.jsonl.gz:1: not a readable gzip file \(Not a gzipped file"
        ):
            list(read_documents(path))

    def test_it_refuses_a_gzipped_file_not_named_gz(self, tmp_path: Path) -> None:
        path = tmp_path / "docs.jsonl"
        path.write_bytes(gzip.compress(b'{"doc_id": "d1", "text": "x"}\n'))
        with pytest.raises(FormatError, match=r"docs.jsonl:1: the file is gzip-compressed; name it .gz"):
            list(read_documents(path))

    def test_it_refuses_a_line_nested_too_deeply(self, tmp_path: Path) -> None:
        deep = "[" * 100_000 + "]" * 100_000
        path = write(
            tmp_path, "docs.jsonl", f'{{"doc_id": "d1", "text": "ok"}}\n{{"doc_id": "d2", "text": {deep}}}\n'
        )
        with pytest.raises(FormatError, match=r"docs.jsonl:2: JSON nested too deeply"):
            list(read_documents(path))

    @pytest.mark.parametrize(
        ("doc_id", "reason"),
        [
            ('"has space"', "document id 'has space' contains whitespace; TREC ids cannot"),
            ('"a\\tb"', "document id 'a\\tb' contains whitespace; TREC ids cannot"),
            ('"a\\nb"', "document id 'a\\nb' contains whitespace; TREC ids cannot"),
            ('"a\\u3000b"', "document id 'a\\u3000b' contains whitespace; TREC ids cannot"),
        ],
    )
    def test_it_refuses_an_id_with_whitespace(self, tmp_path: Path, doc_id: str, reason: str) -> None:
        path = write(
            tmp_path, "docs.jsonl", f'{{"doc_id": "d1", "text": "ok"}}\n{{"doc_id": {doc_id}, "text": "x"}}\n'
        )
        with pytest.raises(FormatError) as error:
            list(read_documents(path))
        assert (error.value.line, error.value.reason) == (2, reason)


class TestTsv:
    def test_it_reads_two_and_three_column_files(self, tmp_path: Path) -> None:
        two = write(tmp_path, "two.tsv", 'd1\tfirst text\nd2\tsecond "quoted" text\n')
        three = write(tmp_path, "three.tsv", "d1\tA title\tthe text\n")
        assert [(r.doc_id, r.title, r.text) for r in read_documents(two)] == [
            ("d1", "", "first text"),
            ("d2", "", 'second "quoted" text'),
        ]
        assert [(r.doc_id, r.title, r.text) for r in read_documents(three)] == [("d1", "A title", "the text")]

    def test_it_skips_a_header_row(self, tmp_path: Path) -> None:
        path = write(tmp_path, "docs.tsv", "doc_id\ttitle\ttext\nd1\tT\tbody\n")
        assert [(r.doc_id, r.line) for r in read_documents(path)] == [("d1", 2)]

    def test_it_refuses_a_line_with_another_column_count(self, tmp_path: Path) -> None:
        path = write(tmp_path, "docs.tsv", "d1\tT\tbody\nd2\tbody only\n")
        with pytest.raises(FormatError) as error:
            list(read_documents(path))
        assert error.value.line == 2
        assert "found 2 columns; earlier lines have 3" in error.value.reason

    def test_it_refuses_an_empty_id_and_a_duplicate(self, tmp_path: Path) -> None:
        empty = write(tmp_path, "empty.tsv", "d1\tx\n\ty\n")
        twice = write(tmp_path, "twice.tsv", "d1\tx\nd2\ty\nd1\tz\n")
        with pytest.raises(FormatError, match=r"empty.tsv:2: empty doc_id"):
            list(read_documents(empty))
        with pytest.raises(FormatError, match=r"twice.tsv:3: doc_id 'd1' appears twice \(first on line 1\)"):
            list(read_documents(twice))

    def test_it_refuses_an_id_with_whitespace(self, tmp_path: Path) -> None:
        path = write(tmp_path, "docs.tsv", "d1\tx\nhas space\ty\n")
        with pytest.raises(FormatError, match=r"docs.tsv:2: document id 'has space' contains whitespace"):
            list(read_documents(path))

    def test_it_names_the_line_that_is_not_utf8(self, tmp_path: Path) -> None:
        path = tmp_path / "latin1.tsv"
        good = "".join(f"d{i}\tfine\n" for i in range(5000)).encode()
        path.write_bytes(good + "last\tcaf\u00e9\n".encode("latin-1"))
        with pytest.raises(FormatError) as error:
            list(read_documents(path))
        assert error.value.line == 5001
        assert "not UTF-8" in error.value.reason


class TestDetection:
    def test_it_detects_the_format_from_the_extension_then_the_first_line(self, tmp_path: Path) -> None:
        assert detect_document_format(write(tmp_path, "a.jsonl", "")) == "jsonl"
        assert detect_document_format(write(tmp_path, "a.tsv", "")) == "tsv"
        assert detect_document_format(write(tmp_path, "a.dat", '\n{"doc_id": "x", "text": "y"}\n')) == "jsonl"
        assert detect_document_format(write(tmp_path, "b.dat", "x\ty\n")) == "tsv"


class TestSpeed:
    def test_it_reads_100k_documents_in_well_under_a_few_seconds(self, tmp_path: Path) -> None:
        path = tmp_path / "big.jsonl"
        with path.open("w") as out:
            for i in range(100_000):
                out.write(
                    json.dumps({"doc_id": f"doc{i}", "title": f"Title {i}", "text": "word " * 40}) + "\n"
                )
        started = time.perf_counter()
        count = sum(1 for _ in read_documents(path))
        elapsed = time.perf_counter() - started
        assert count == 100_000
        assert elapsed < 3.0, f"took {elapsed:.2f} s"
