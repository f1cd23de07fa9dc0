"""Readers for qrels, runs and topics: formats, whitespace, and errors that name the file and line."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from evalcore.errors import FormatError
from evalcore.retrieval import Qrels, Run, evaluate
from evalcore.trec import detect_format, read_qrels, read_run, read_topics

ROOT = Path(__file__).resolve().parents[2]
QRELS = {"401": {"FBIS3-1": 1, "FBIS3-2": 0, "LA-7": 2}, "402": {"d1": -1, "d2": 3}}
RUN = {"401": {"FBIS3-1": 12.5, "LA-7": 12.5, "X": 3.0}, "402": {"d2": 0.25, "d9": -1.0}}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def trec_qrels(judgments: dict[str, dict[str, int]]) -> str:
    return "".join(f"{q} 0 {d} {r}\n" for q, docs in judgments.items() for d, r in docs.items())


def trec_run(rankings: dict[str, dict[str, float]]) -> str:
    lines = []
    for q, docs in rankings.items():
        for rank, (d, s) in enumerate(sorted(docs.items(), key=lambda x: -x[1]), start=1):
            lines.append(f"{q} Q0 {d} {rank} {s!r} tag\n")
    return "".join(lines)


def assert_format_error(
    exc: pytest.ExceptionInfo[FormatError], path: Path, line: int | None, text: str
) -> None:
    assert exc.value.path == str(path)
    assert exc.value.line == line
    assert text in exc.value.reason
    assert str(exc.value).startswith(f"{path}:{line}: " if line else f"{path}: ")


class TestReadQrels:
    def test_it_reads_trec_qrels(self, tmp_path: Path) -> None:
        qrels = read_qrels(write(tmp_path / "q.txt", trec_qrels(QRELS)))
        assert qrels.to_dict() == QRELS
        assert list(qrels.qids) == ["401", "402"]
        assert qrels.rels.dtype == np.int64

    def test_it_tolerates_tabs_repeated_spaces_crlf_and_blank_lines(self, tmp_path: Path) -> None:
        text = "\n401\t0\tFBIS3-1\t1  \r\n  401   0 FBIS3-2 0\n\n   \n401 0 LA-7 2\n402 0 d1 -1\n402 0 d2 3\n\n\n"
        assert read_qrels(write(tmp_path / "q.txt", text)).to_dict() == QRELS

    def test_it_reads_tsv_qrels_with_or_without_a_header(self, tmp_path: Path) -> None:
        rows = "".join(f"{q}\t{d}\t{r}\n" for q, docs in QRELS.items() for d, r in docs.items())
        assert read_qrels(write(tmp_path / "q.tsv", rows)).to_dict() == QRELS
        headed = write(tmp_path / "h.tsv", "query-id\tcorpus-id\tscore\n" + rows)
        assert read_qrels(headed).to_dict() == QRELS

    def test_it_reads_jsonl_qrels_with_either_field_name(self, tmp_path: Path) -> None:
        lines = [
            {"qid": "401", "docno": "FBIS3-1", "rel": 1},
            {"qid": "401", "doc_id": "FBIS3-2", "relevance": 0},
            {"qid": 401, "docno": "LA-7", "rel": 2},
            {"qid": "402", "doc_id": "d1", "rel": -1},
            {"qid": "402", "docno": "d2", "relevance": 3.0},
        ]
        path = write(tmp_path / "q.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n\n")
        assert read_qrels(path).to_dict() == QRELS

    @pytest.mark.parametrize(
        ("text", "line", "reason"),
        [
            ("401 0 d1 1\n401 0 d2\n", 2, "expected 4 columns"),
            ("401 0 d1 1\n\n401 0 d2 1 extra\n", 3, "found 5"),
            ("401 0 d1 high\n", 1, "relevance 'high' is not an integer"),
            ("401 0 d1 1\n401 0 d2 .5\n", 2, "relevance '.5' is not an integer"),
        ],
    )
    def test_it_names_the_line_of_a_malformed_row(
        self, tmp_path: Path, text: str, line: int, reason: str
    ) -> None:
        path = write(tmp_path / "q.txt", text)
        with pytest.raises(FormatError) as exc:
            read_qrels(path)
        assert_format_error(exc, path, line, reason)

    def test_it_reads_relevance_as_trec_eval_does(self, tmp_path: Path) -> None:
        # trec_eval reads a grade with C's atol: its leading integer.
        path = write(
            tmp_path / "q.txt", "1 0 a 1.0\n1 0 b 2.7\n1 0 c 1e+8\n1 0 d 0x37\n1 0 e 1.1.11\n1 0 f -1.5\n"
        )
        assert read_qrels(path).to_dict() == {"1": {"a": 1, "b": 2, "c": 1, "d": 0, "e": 1, "f": -1}}

    def test_it_refuses_a_relevance_that_is_no_integer_when_strict(self, tmp_path: Path) -> None:
        path = write(tmp_path / "q.txt", "401 0 d1 1\n401 0 d2 1.0\n")
        with pytest.raises(FormatError) as exc:
            read_qrels(path, strict=True)
        assert_format_error(exc, path, 2, "relevance '1.0' is not an integer")

    def test_it_skips_comment_lines(self, tmp_path: Path) -> None:
        path = write(tmp_path / "q.txt", "# judged by the assessors\n401 0 d1 1\n# 401 0 d2 1\n401 0 d3 0\n")
        assert read_qrels(path).to_dict() == {"401": {"d1": 1, "d3": 0}}

    def test_it_rejects_a_document_judged_twice_for_a_query(self, tmp_path: Path) -> None:
        path = write(tmp_path / "q.txt", "401 0 d1 1\n402 0 d1 1\n\n401 0 d1 0\n")
        with pytest.raises(FormatError) as exc:
            read_qrels(path)
        assert_format_error(exc, path, 4, "document 'd1' appears twice for query '401' (first on line 1)")

    def test_it_keeps_the_first_judgment_when_asked(self, tmp_path: Path) -> None:
        path = write(tmp_path / "q.txt", "401 0 d1 1\n401 0 d2 0\n401 0 d1 0\n")
        assert read_qrels(path, on_duplicate="first").to_dict() == {"401": {"d1": 1, "d2": 0}}

    @pytest.mark.parametrize(
        ("lines", "line", "reason"),
        [
            (
                ['{"qid": "1", "docno": "a", "rel": 1}', '{"qid": "1", "rel": 1}'],
                2,
                'missing field "docno" or "doc_id"',
            ),
            (['{"qid": "1", "docno": "a", "rel": 1.5}'], 1, "relevance 1.5 is not an integer"),
            (
                ['{"qid": "1", "docno": "a", "rel": 1}', "", "{not json"],
                3,
                "invalid JSON: expecting property name enclosed in double quotes at column 2",
            ),
            (['{"qid": "1", "docno": "a", "rel": "x"}'], 1, 'relevance "x" is not a number'),
        ],
    )
    def test_it_names_the_line_of_a_malformed_jsonl_row(
        self, tmp_path: Path, lines: list[str], line: int, reason: str
    ) -> None:
        path = write(tmp_path / "q.jsonl", "\n".join(lines) + "\n")
        with pytest.raises(FormatError) as exc:
            read_qrels(path)
        assert_format_error(exc, path, line, reason)

    def test_it_names_the_line_of_a_malformed_tsv_row(self, tmp_path: Path) -> None:
        path = write(tmp_path / "q.tsv", "1\ta\t1\n1\tb\n")
        with pytest.raises(FormatError) as exc:
            read_qrels(path)
        assert_format_error(exc, path, 2, "expected 3 columns")


class TestIds:
    @pytest.mark.parametrize(
        ("name", "text", "line", "reason"),
        [
            ("q.tsv", "q1\td1\t1\nq 1\td2\t1\n", 2, "query id 'q 1' contains whitespace; TREC ids cannot"),
            ("q.tsv", "q1\td1\t1\nq1\t\t1\n", 2, "empty document id"),
            (
                "q.jsonl",
                '{"qid": "q1", "docno": "d1", "rel": 1}\n\n{"qid": "q1", "docno": "has space", "rel": 0}\n',
                3,
                "document id 'has space' contains whitespace; TREC ids cannot",
            ),
            (
                "q.jsonl",
                '{"qid": "q1", "docno": "d1", "rel": 1}\n{"qid": "q\\t2", "docno": "d1", "rel": 0}\n',
                2,
                "query id 'q\\t2' contains whitespace",
            ),
            ("q.qrels", "q1 0 d1 1\nq1 0 d\u00a02 1\n", 2, "document id 'd\\xa02' contains whitespace"),
            ("q.qrels", "q1 0 d1 1\nq\udce9 0 d1 1\n", 2, "query id 'q\\udce9' is not UTF-8 text"),
        ],
    )
    def test_it_refuses_ids_a_trec_file_cannot_hold(
        self, tmp_path: Path, name: str, text: str, line: int, reason: str
    ) -> None:
        path = tmp_path / name
        path.write_bytes(text.encode("utf-8", "surrogateescape"))  # \udce9: the byte 0xe9, not UTF-8
        with pytest.raises(FormatError) as exc:
            read_qrels(path)
        assert_format_error(exc, path, line, reason)

    def test_it_refuses_a_run_with_whitespace_in_an_id(self, tmp_path: Path) -> None:
        path = write(tmp_path / "r.tsv", "q1\td1\t2.0\nq1\td 2\t1.0\n")
        with pytest.raises(FormatError) as exc:
            read_run(path)
        assert_format_error(exc, path, 2, "document id 'd 2' contains whitespace")

    @pytest.mark.parametrize("name", ["r.run", "r.tsv", "r.jsonl"])
    def test_it_bounds_ids_only_when_asked_naming_the_line(self, tmp_path: Path, name: str) -> None:
        docno = "é" * 1001
        lines = {
            "r.run": f"q1 Q0 d1 1 2.0 t\nq1 Q0 {docno} 2 1.0 t\n",
            "r.tsv": f"q1\td1\t2.0\nq1\t{docno}\t1.0\n",
            "r.jsonl": f'{{"qid": "q1", "docno": "d1", "score": 2}}\n{{"qid": "q1", "docno": "{docno}", "score": 1}}\n',
        }
        path = write(tmp_path / name, lines[name])
        assert read_run(path).docno_strings()[1] == docno  # trec_eval reads ids of any length
        assert len(read_run(path, max_id_chars=1001)) == 2  # characters, not bytes
        with pytest.raises(FormatError) as exc:
            read_run(path, max_id_chars=1000)
        reason = f"document id {'é' * 40!r}... is 1,001 characters long, more than the 1,000 an id may have"
        assert_format_error(exc, path, 2, reason)
        qrels = write(tmp_path / "q.qrels", "q1 0 d1 1\n" + "q" * 20 + " 0 d1 1\n")
        with pytest.raises(FormatError) as exc:
            read_qrels(qrels, max_id_chars=10)
        assert_format_error(exc, qrels, 2, "query id 'qqqqqqqqqqqqqqqqqqqq'... is 20 characters long")


class TestHostileInput:
    def test_it_survives_json_nested_100000_deep(self, tmp_path: Path) -> None:
        """Arrow's JSON reader, left to infer types, crashed the process (SIGSEGV) on such a line."""
        deep = "[" * 100_000 + "]" * 100_000
        lines = {
            "in a field nobody reads": f'{{"qid": "q1", "docno": "d2", "score": 1.0, "x": {deep}}}',
            "in the query id": f'{{"qid": {deep}, "docno": "d2", "score": 1.0}}',
        }
        for where, line in lines.items():
            path = write(tmp_path / "r.jsonl", '{"qid": "q1", "docno": "d1", "score": 2.0}\n' + line + "\n")
            script = (
                "import sys\nfrom evalcore.errors import FormatError\nfrom evalcore.trec import read_run\n"
                f"try:\n    print(len(read_run({str(path)!r})))\nexcept FormatError as error:\n    print(error)\n"
            )
            done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
            assert done.returncode == 0, f"{where}: exit status {done.returncode}"
            assert done.stdout.strip() in ("2", f"{path}:2: JSON nested too deeply"), where

    def test_it_refuses_a_gzipped_file_and_never_decompresses_one_by_its_name(self, tmp_path: Path) -> None:
        zipped = tmp_path / "q.qrels.gz"
        zipped.write_bytes(gzip.compress(b"q1 0 d1 1\n" * 10))
        with pytest.raises(FormatError) as exc:
            read_qrels(zipped)
        assert_format_error(exc, zipped, 1, "the file is gzip-compressed; decompress it first")
        bz2_named = write(tmp_path / "q.qrels.bz2", "q1 0 d1 1\n")  # plain text: read as it is
        assert len(read_qrels(bz2_named)) == 1

    def test_it_reads_integer_ids_from_jsonl_on_the_fast_path(self, tmp_path: Path) -> None:
        path = write(tmp_path / "q.jsonl", '{"qid": 401, "doc_id": "d", "relevance": 1, "extra": [1]}\n')
        qrels = read_qrels(path)
        assert (list(qrels.qids), qrels.docno_strings(), qrels.rels.tolist()) == (["401"], ["d"], [1])

    @pytest.mark.parametrize(
        "line",
        [
            "q1 Q0 " + "d" * 10_000_000 + " 1 2.0 bm25",
            "q1 Q0 d1 1 2.0 " + "t" * 10_000_000,
            "q1\t" + "d" * 10_000_000 + "\t2.0",
        ],
    )
    def test_it_reads_a_run_that_is_one_10_mb_line(self, tmp_path: Path, line: str) -> None:
        """A line longer than Arrow's block was refused with its internal "straddling object" message."""
        path = write(tmp_path / ("r.tsv" if "\t" in line else "r.run"), line)  # no newline
        run = read_run(path)
        assert (len(run), run.scores.tolist()) == (1, [2.0])


class TestReadRun:
    def test_it_reads_a_trec_run_and_ignores_the_rank_column(self, tmp_path: Path) -> None:
        text = "401 Q0 FBIS3-1 9 12.5 tag\n401 Q0 LA-7 1 12.5 tag\n401 Q0 X 2 3 tag\n402 Q0 d2 1 0.25 t\n402 Q0 d9 2 -1 t\n"
        run = read_run(write(tmp_path / "r.txt", text))
        assert run.to_dict() == RUN
        assert run.scores.dtype == np.float64

    def test_it_reads_tsv_and_jsonl_runs(self, tmp_path: Path) -> None:
        tsv = "".join(f"{q}\t{d}\t{s}\n" for q, docs in RUN.items() for d, s in docs.items())
        assert read_run(write(tmp_path / "r.tsv", tsv)).to_dict() == RUN
        jsonl = "".join(
            json.dumps({"qid": q, "docno": d, "score": s}) + "\n"
            for q, docs in RUN.items()
            for d, s in docs.items()
        )
        assert read_run(write(tmp_path / "r.jsonl", jsonl)).to_dict() == RUN
        assert read_run(write(tmp_path / "r.data", jsonl), fmt="jsonl").to_dict() == RUN

    @pytest.mark.parametrize(
        ("text", "line", "reason"),
        [
            (
                "1 Q0 a 1 0.5 t\n1 Q0 b 2 0.4\n",
                2,
                "expected 6 columns (qid Q0 docno rank score tag), found 5",
            ),
            ("1 Q0 a 1 0.5 t\n\n\n1 Q0 b 2 abc t\n", 4, "score 'abc' is not a number"),
            ("1 Q0 a 1 nan t\n", 1, "not a number"),
        ],
    )
    def test_it_names_the_line_of_a_malformed_row(
        self, tmp_path: Path, text: str, line: int, reason: str
    ) -> None:
        path = write(tmp_path / "r.txt", text)
        with pytest.raises(FormatError) as exc:
            read_run(path)
        assert_format_error(exc, path, line, reason)

    def test_it_rejects_a_document_retrieved_twice_for_a_query(self, tmp_path: Path) -> None:
        path = write(tmp_path / "r.txt", "1 Q0 a 1 0.5 t\n1 Q0 b 2 0.4 t\n2 Q0 a 1 0.3 t\n1 Q0 a 3 0.1 t\n")
        with pytest.raises(FormatError) as exc:
            read_run(path)
        assert_format_error(exc, path, 4, "document 'a' appears twice for query '1' (first on line 1)")

    def test_it_keeps_the_first_occurrence_when_asked(self, tmp_path: Path) -> None:
        path = write(tmp_path / "r.txt", "1 Q0 a 1 0.5 t\n1 Q0 b 2 0.4 t\n1 Q0 a 3 0.9 t\n1 Q0 b 4 0.1 t\n")
        assert read_run(path, on_duplicate="first").to_dict() == {"1": {"a": 0.5, "b": 0.4}}

    def test_it_finds_duplicates_of_long_and_non_ascii_ids(self, tmp_path: Path) -> None:
        path = write(
            tmp_path / "r.txt", "1 Q0 clueweb09-en0000-00-00001 1 0.5 t\n1 Q0 é 2 0.4 t\n1 Q0 é 3 0.3 t\n"
        )
        with pytest.raises(FormatError) as exc:
            read_run(path)
        assert_format_error(exc, path, 3, "document 'é' appears twice")

    def test_it_scores_the_file_as_pytrec_eval_does(self, tmp_path: Path) -> None:
        rng = np.random.default_rng(11)
        qrels_path = write(
            tmp_path / "qrels",
            "".join(
                f"q{q} 0 doc{d} {rng.integers(-1, 4)}\n"
                for q in range(30)
                for d in rng.choice(400, 25, replace=False)
            ),
        )
        run_path = write(
            tmp_path / "run",
            "".join(
                f"q{q} Q0 doc{d} {i} {rng.integers(0, 30) / 4} sys\n"
                for q in range(3, 35)
                for i, d in enumerate(rng.choice(400, 100, replace=False))
            ),
        )
        with open(qrels_path) as f:
            reference_qrels = pytrec_eval.parse_qrel(f)
        with open(run_path) as f:
            reference_run = pytrec_eval.parse_run(f)
        reference = pytrec_eval.RelevanceEvaluator(reference_qrels, {"official", "ndcg_cut"}).evaluate(
            reference_run
        )
        measures = ["map", "P", "ndcg_cut", "bpref", "iprec_at_recall", "recip_rank", "Rprec", "gm_map"]
        result = evaluate(read_qrels(qrels_path), read_run(run_path), measures)
        for qid, values in reference.items():
            for key in result.per_query[qid]:
                assert result.per_query[qid][key] == pytest.approx(values[key], abs=1e-9), (qid, key)

    @pytest.mark.parametrize("text", ["", "\n  \n\n"])
    def test_it_rejects_a_file_without_rows(self, tmp_path: Path, text: str) -> None:
        path = write(tmp_path / "r.txt", text)
        with pytest.raises(FormatError) as exc:
            read_run(path)
        assert_format_error(exc, path, None, "the file holds no run")

    def test_it_reads_a_tab_separated_trec_run(self, tmp_path: Path) -> None:
        path = write(tmp_path / "r.txt", "1\tQ0\td1\t1\t0.5\tx\n1\tQ0\td2\t2\t0.4\tx\n")
        assert read_run(path).to_dict() == {"1": {"d1": 0.5, "d2": 0.4}}

    def test_it_ignores_columns_after_the_sixth_as_trec_eval_does(self, tmp_path: Path) -> None:
        path = write(tmp_path / "r.txt", "1 Q0 d1 1 0.5 x extra\n1 Q0 d2 2 0.4 x more fields here\n")
        assert read_run(path).to_dict() == {"1": {"d1": 0.5, "d2": 0.4}}

    def test_it_refuses_extra_columns_when_strict_and_says_trec_eval_ignores_them(
        self, tmp_path: Path
    ) -> None:
        path = write(tmp_path / "r.txt", "1 Q0 d1 1 0.5 x\n1 Q0 d2 2 0.4 x extra\n")
        with pytest.raises(FormatError) as exc:
            read_run(path, strict=True)
        assert_format_error(exc, path, 2, "found 7; trec_eval ignores the columns after the sixth")

    def test_it_skips_comment_lines_even_one_shaped_like_a_row(self, tmp_path: Path) -> None:
        text = "# a b c 1 2.5 d\n1 Q0 d1 1 0.5 x\n  # indented\n1 Q0 d2 2 0.4 x\n"
        assert read_run(write(tmp_path / "r.txt", text)).to_dict() == {"1": {"d1": 0.5, "d2": 0.4}}

    def test_it_takes_the_run_id_from_the_last_line(self, tmp_path: Path) -> None:
        # trec_eval keeps the run_id of the last content line.
        text = "1 Q0 d1 1 0.5 first\n1 Q0 d2 2 0.4 last\n# trailing comment\n\n"
        assert read_run(write(tmp_path / "r.txt", text)).run_id == "last"
        assert read_run(write(tmp_path / "bm25.tsv", "1\td1\t0.5\n")).run_id == "bm25"

    def test_it_reads_a_run_in_random_row_order(self, tmp_path: Path) -> None:
        rng = np.random.default_rng(5)
        rows = [f"q{q} Q0 d{d} 0 {rng.integers(0, 9)} t\n" for q in range(40) for d in range(30)]
        shuffled = write(tmp_path / "r.txt", "".join(rng.permutation(rows)))
        ordered = write(tmp_path / "o.txt", "".join(rows))
        assert read_run(shuffled).to_dict() == read_run(ordered).to_dict()


class TestDetectFormat:
    def test_it_detects_by_extension_then_by_content(self, tmp_path: Path) -> None:
        assert detect_format(write(tmp_path / "a.jsonl", ""), "run") == "jsonl"
        assert detect_format(write(tmp_path / "a.tsv", ""), "run") == "tsv"
        assert detect_format(write(tmp_path / "a", '\n{"qid": "1"}\n'), "qrels") == "jsonl"
        assert detect_format(write(tmp_path / "b", "1\td\t0.5\n"), "run") == "tsv"
        assert detect_format(write(tmp_path / "c", "1\t0\td\t1\n"), "qrels") == "trec"
        assert detect_format(write(tmp_path / "d", "1 Q0 d 1 0.5 t\n"), "run") == "trec"
        assert detect_format(write(tmp_path / "e", "<top>\n"), "topics") == "trec"
        assert detect_format(write(tmp_path / "f", "1\ttext\n"), "topics") == "tsv"

    def test_it_rejects_an_unknown_format(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="unknown format"):
            read_run(write(tmp_path / "r", "1 Q0 d 1 0.5 t\n"), fmt="csv")  # type: ignore[arg-type]


TREC_TOPICS = """<top>
<num> Number: 401
<title> foreign minorities, Germany

<desc> Description:
What language and cultural differences impede the integration
of foreign minorities in Germany?

<narr> Narrative:
A relevant document will focus on the causes.
</top>

<top>
<num> Number: 402 <title> behavioral genetics
<desc> Description: What is happening in the field?
</top>
"""


class TestReadTopics:
    def test_it_reads_trec_topics(self, tmp_path: Path) -> None:
        path = write(tmp_path / "topics.401-402", TREC_TOPICS)
        assert read_topics(path) == {"401": "foreign minorities, Germany", "402": "behavioral genetics"}
        described = read_topics(path, field="description")
        assert (
            described["401"]
            == "What language and cultural differences impede the integration of foreign minorities in Germany?"
        )
        assert read_topics(path, field="narrative") == {
            "401": "A relevant document will focus on the causes."
        }

    def test_it_reads_web_track_xml_topics(self, tmp_path: Path) -> None:
        text = '<webtrack2009>\n<topic number="1" type="faceted">\n  <query>obama family tree</query>\n  <description>Find information on President Barack Obama\'s family history.</description>\n</topic>\n</webtrack2009>\n'
        assert read_topics(write(tmp_path / "wt.xml", text)) == {"1": "obama family tree"}

    def test_it_reads_tsv_and_jsonl_topics(self, tmp_path: Path) -> None:
        assert read_topics(write(tmp_path / "t.tsv", "1\tfirst query\n\n2\tsecond\tpart\n")) == {
            "1": "first query",
            "2": "second\tpart",
        }
        jsonl = '{"qid": "1", "text": "first"}\n{"qid": 2, "text": "second"}\n'
        assert read_topics(write(tmp_path / "t.jsonl", jsonl)) == {"1": "first", "2": "second"}

    @pytest.mark.parametrize(
        ("name", "text", "line", "reason"),
        [
            (
                "t.txt",
                "<top>\n<num> Number: 1\n<title> a\n</top>\n<top>\n<title> b\n</top>\n",
                5,
                "has no <num>",
            ),
            (
                "t.txt",
                "<top>\n<num> Number: 1\n<title> a\n</top>\n\n<top><num> Number: 1 <title> b </top>\n",
                6,
                "topic 1 appears twice",
            ),
            (
                "t.txt",
                "<top>\n<num> Number: 7\n<desc> only a description\n</top>\n",
                1,
                "topic 7 has no title",
            ),
            ("t.tsv", "1\tok\n2 no tab\n", 2, "expected qid<TAB>text"),
            ("t.tsv", "1\tok\n1\tagain\n", 2, "topic 1 appears twice"),
            ("t.jsonl", '{"qid": "1", "text": "a"}\n{"qid": "2"}\n', 2, 'missing field "text"'),
        ],
    )
    def test_it_names_the_line_of_a_bad_topic(
        self, tmp_path: Path, name: str, text: str, line: int, reason: str
    ) -> None:
        path = write(tmp_path / name, text)
        with pytest.raises(FormatError) as exc:
            read_topics(path)
        assert_format_error(exc, path, line, reason)

    @pytest.mark.parametrize(
        ("name", "data", "line", "reason"),
        [
            ("t.tsv", b"q1\tfine\nq2\tcaf\xe9\n", 2, "not UTF-8 text (invalid continuation byte)"),
            ("t.jsonl", b'{"qid": "q1", "text": "caf\xe9"}\n', 1, "not UTF-8 text"),
            ("t.txt", b"<top>\n<num> Number: 1\n<title> caf\xe9\n</top>\n", 3, "not UTF-8 text"),
            ("t.tsv", b"q1\tfine\nq 1\tspaced\n", 2, "query id 'q 1' contains whitespace; TREC ids cannot"),
            ("t.jsonl", b'{"qid": "", "text": "a"}\n', 1, "empty query id"),
            ("t.jsonl", b'{"qid": "q\\n1", "text": "a"}\n', 1, "query id 'q\\n1' contains whitespace"),
            ("t.jsonl", b'{"qid": "q1", "text": "caf\\udce9"}\n', 1, "unpaired surrogate escape"),
            (
                "t.jsonl",
                b'{"qid": "q1", "text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
                1,
                "nested too deeply",
            ),
            ("t.tsv", gzip.compress(b"q1\ttext\n"), 1, "the file is gzip-compressed"),
        ],
    )
    def test_it_refuses_topics_that_are_not_text_or_have_unwritable_ids(
        self, tmp_path: Path, name: str, data: bytes, line: int, reason: str
    ) -> None:
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(FormatError) as exc:
            read_topics(path)
        assert_format_error(exc, path, line, reason)

    def test_it_rejects_a_file_without_topics(self, tmp_path: Path) -> None:
        path = write(tmp_path / "t.txt", "<nothing here>\n")
        with pytest.raises(FormatError) as exc:
            read_topics(path, fmt="trec")
        assert_format_error(exc, path, None, "no <top> or <topic> element found")


class TestContainers:
    def test_it_builds_from_codes_with_an_unsorted_vocabulary(self) -> None:
        run = Run.from_codes(["b", "a", "c"], [0, 1, 0], ["x", "y", "z"], [1.0, 2.0, 3.0])
        assert list(run.qids) == ["a", "b"]
        assert run.to_dict() == {"b": {"x": 1.0, "z": 3.0}, "a": {"y": 2.0}}

    def test_it_rejects_bad_columns(self) -> None:
        with pytest.raises(ValueError):
            Run.from_codes(["a"], [0, 0], ["x"], [1.0, 2.0])
        with pytest.raises(ValueError, match="NaN"):
            Run.from_codes(["a"], [0], ["x"], [float("nan")])
        with pytest.raises(ValueError, match="integer"):
            Qrels.from_codes(["a"], [0], ["x"], [1.5])  # type: ignore[list-item]
