"""Hostile input for every upload parser, generated with hypothesis (issue 13).

Each reader is handed generated files: well-formed lines mixed with targeted corruptions (NUL bytes, bad
UTF-8, huge lines, NaN and infinite scores, negative and fractional grades, ids with whitespace, wrong
column counts, JSON of the wrong shape, truncation, gzip where plain text is read and the reverse) and
plain garbage. The property is the same for all: a clean parse, or the project's error naming the file
(and, where the problem sits on a line, a line of the file), never another exception. `.npy` embeddings
get wrong dtypes and shapes, Fortran order, corrupt headers, truncation and a pickled object array, which
is refused without being unpickled.
"""

from __future__ import annotations

import gzip
import io
import json
import pickle
import re
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from evalcore.agreement import read_annotations_csv
from evalcore.documents import read_documents
from evalcore.embeddings import EmbeddingInputError, open_npy
from evalcore.errors import EvalCoreError, FormatError
from evalcore.fraud import read_scores
from evalcore.recsys import read_recsys_files
from evalcore.trec import read_qrels, read_run, read_topics

FUZZ = settings(
    max_examples=150,
    deadline=None,
    database=None,  # no .hypothesis folder in the work tree
    # tmp_path is shared by the examples: each writes its file afresh before reading it.
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.function_scoped_fixture,
    ],  # fmt: skip
)

# --- building blocks ------------------------------------------------------------------------------------

HOSTILE_BYTES = [
    b"\x00", b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xc0\xaf", b"\xe2\x80\xa8", b"\xc2\xa0",
    b"\x1c", b"\r", b"\x0b", b"#", b'"', b"{", b"<top>", b"\x1f\x8b",
]  # fmt: skip
IDS = [b"q1", b"401", b"d1", b"FBIS3-1", b"LA-7", b"caf\xc3\xa9", b"\xe4\xb8\xad", b"x" * 300]
NUMBERS = [
    b"0", b"1", b"2", b"-1", b"-7", b"3", b"1.0", b"1.5", b"-0", b"+2", b"nan", b"NaN", b"inf", b"-inf",
    b"Infinity", b"1e999", b"-1e999", b"1e-400", b"99999999999999999999999", b"0x10", b"1_000", b"", b"one",
]  # fmt: skip

hostile = st.sampled_from(HOSTILE_BYTES)


def mostly(valid: st.SearchStrategy[bytes], other: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """`valid` three times in four: a hostile line is mostly well formed, so its one bad field is reached."""
    return st.integers(0, 3).flatmap(lambda n: other if n == 0 else valid)


token_id = mostly(st.sampled_from(IDS), st.one_of(hostile, st.binary(max_size=6)))
token_number = mostly(
    st.sampled_from(NUMBERS[:4]), st.one_of(st.sampled_from(NUMBERS), hostile, st.binary(max_size=4))
)
separator = st.sampled_from([b" ", b"\t", b"  ", b" \t ", b"\t\t", b"\xc2\xa0"])
ending = st.sampled_from([b"\n", b"\r\n", b"\n\n", b"\r", b""])


@st.composite
def corrupted(draw: st.DrawFn, line: bytes) -> bytes:
    """The line, or the line with hostile bytes spliced in, cut short, or made huge."""
    choice = draw(st.integers(0, 9))
    if choice <= 4 or not line:
        return line
    at = draw(st.integers(0, len(line)))
    if choice <= 6:
        return line[:at] + draw(hostile) + line[at:]
    if choice == 7:
        return line[:at]
    if choice == 8:
        return line + b"x" * draw(st.sampled_from([70_000, 300_000]))
    return draw(st.binary(max_size=30))


def delimited_line(fields: st.SearchStrategy[list[bytes]]) -> st.SearchStrategy[bytes]:
    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        values = draw(fields)
        sep = draw(separator)
        return draw(corrupted(sep.join(values) + draw(ending)))

    return build()


def columns(*kinds: st.SearchStrategy[bytes], extra: int = 2) -> st.SearchStrategy[list[bytes]]:
    """The columns of a row, sometimes with columns missing or added."""

    @st.composite
    def build(draw: st.DrawFn) -> list[bytes]:
        values = [draw(kind) for kind in kinds]
        change = draw(st.integers(-2, 4))
        if change < 0:
            return values[: len(values) + change]
        if change > 2:
            values += [draw(token_id) for _ in range(draw(st.integers(1, extra)))]
        return values

    return build()


JSON_VALUES = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["", "q 1", "d\x00", "\ud800", "a\u2028b", "1", "NaN"]),
    st.none(),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def json_line(keys: list[str]) -> st.SearchStrategy[bytes]:
    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        record = draw(st.dictionaries(st.sampled_from(keys), JSON_VALUES, max_size=len(keys)))
        if draw(st.integers(0, 9)) == 0:
            text = draw(st.sampled_from(["[1, 2]", '"text"', "null", "{", "[" * 5000, '{"a": ' * 3000]))
        else:
            text = json.dumps(record, allow_nan=True, ensure_ascii=draw(st.booleans()))
        return draw(corrupted(text.encode("utf-8", errors="surrogatepass") + b"\n"))

    return build()


def _row_key(line: bytes) -> bytes:
    """What a row is keyed by (its first fields): clean rows repeat no (query, document) pair or id."""
    fields = re.split(rb"[ \t,]+", line)
    return b" ".join(fields[:4] if line.startswith(b"{") else fields[:2])


def file_of(
    lines: st.SearchStrategy[bytes], clean: st.SearchStrategy[bytes] | None = None, *, max_lines: int = 12
) -> st.SearchStrategy[bytes]:
    """Lines joined into a file, sometimes with a file-level corruption: cut, gzipped, or garbage. A quarter
    of the files are made of `clean` lines only, so that clean parses are tried as well as refusals, and a
    quarter are clean but for one hostile line."""

    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        mode = draw(st.integers(0, 3)) if clean is not None else 2
        if clean is not None and mode < 2:
            lines_ = draw(st.lists(clean, min_size=1, max_size=max_lines, unique_by=_row_key))
            if mode == 1:  # one hostile line among clean ones: what a single bad row does to a good file
                lines_.insert(draw(st.integers(0, len(lines_))), draw(lines))
            return b"".join(lines_)
        mixed = lines if clean is None else st.one_of(clean, lines)
        data = b"".join(draw(st.lists(mixed, max_size=max_lines)))
        choice = draw(st.integers(0, 19))
        if choice == 0:
            return data[: draw(st.integers(0, len(data)))]
        if choice == 1:
            return gzip.compress(data)
        if choice == 2:
            return draw(st.binary(max_size=200))
        return data

    return build()


def clean_line(*fields: st.SearchStrategy[bytes], sep: bytes) -> st.SearchStrategy[bytes]:
    return st.tuples(*fields).map(lambda values: sep.join(values) + b"\n")


QID = st.sampled_from([b"q1", b"401", b"q2", b"caf\xc3\xa9"])
DOCNO = st.sampled_from([b"d1", b"d2", b"FBIS3-1", b"LA-7", b"\xe4\xb8\xad", b"d9"])
GRADE = st.sampled_from([b"0", b"1", b"2", b"-1", b"3"])
SCORE = st.sampled_from([b"0", b"1.5", b"-2.25", b"1e3", b"7"])
CLEAN = {
    "qrels_trec": clean_line(QID, st.just(b"0"), DOCNO, GRADE, sep=b" "),
    "qrels_tsv": clean_line(QID, DOCNO, GRADE, sep=b"\t"),
    "run_trec": clean_line(QID, st.just(b"Q0"), DOCNO, st.just(b"1"), SCORE, st.just(b"tag"), sep=b" "),
    "run_tsv": clean_line(QID, DOCNO, SCORE, sep=b"\t"),
    "qrels_jsonl": st.tuples(QID, DOCNO, GRADE).map(
        lambda v: b'{"qid": "%s", "docno": "%s", "rel": %s}\n' % v
    ),
    "run_jsonl": st.tuples(QID, DOCNO, SCORE).map(
        lambda v: b'{"qid": "%s", "doc_id": "%s", "score": %s}\n' % v
    ),
    "topics_tsv": clean_line(QID, st.sampled_from([b"python snakes", b"caf\xc3\xa9 au lait"]), sep=b"\t"),
    "topics_jsonl": st.tuples(QID, st.sampled_from([b"a query", b"x"])).map(
        lambda v: b'{"qid": "%s", "text": "%s"}\n' % v
    ),
    "docs_jsonl": st.tuples(DOCNO, st.sampled_from([b"some text", b""])).map(
        lambda v: b'{"doc_id": "%s", "text": "%s"}\n' % v
    ),
    "docs_tsv": clean_line(DOCNO, st.sampled_from([b"Title"]), st.sampled_from([b"some text"]), sep=b"\t"),
    "csv": clean_line(DOCNO, st.sampled_from([b"ann1", b"ann2"]), GRADE, sep=b","),
}


QRELS_TREC = delimited_line(columns(token_id, st.sampled_from([b"0", b"Q0"]), token_id, token_number))
QRELS_TSV = delimited_line(columns(token_id, token_id, token_number))
RUN_TREC = delimited_line(
    columns(token_id, st.sampled_from([b"Q0"]), token_id, token_number, token_number, token_id)
)
RUN_TSV = delimited_line(columns(token_id, token_id, token_number))
QRELS_JSON = json_line(["qid", "query_id", "docno", "doc_id", "rel", "relevance", "score"])
RUN_JSON = json_line(["qid", "query_id", "docno", "doc_id", "score", "rel"])
TOPICS_TSV = delimited_line(columns(token_id, token_id))
TOPICS_JSON = json_line(["qid", "query_id", "text", "title"])
DOCS_JSON = json_line(["doc_id", "docno", "id", "_id", "text", "title"])
DOCS_TSV = delimited_line(columns(token_id, token_id, token_id))


@st.composite
def trec_topic(draw: st.DrawFn) -> bytes:
    qid, title, desc = draw(token_id), draw(token_id), draw(token_id)
    if draw(st.booleans()):
        block = b"<top>\n<num> Number: " + qid + b"\n<title> " + title + b"\n<desc> Description:\n" + desc
        block += draw(st.sampled_from([b"\n</top>\n", b"\n", b"</top>"]))
    else:
        block = b'<topic number="' + qid + b'">\n<query>' + title + b"</query>\n<description>" + desc
        block += draw(st.sampled_from([b"</description>\n</topic>\n", b"\n"]))
    return draw(corrupted(block))


CSV_HEADER = st.sampled_from([b"item,annotator,label\n", b"\xef\xbb\xbfitem,annotator,label\n",
                              b"item,annotator\n", b"", b"item;annotator;label\n"])  # fmt: skip
CSV_ROW = delimited_line(columns(token_id, token_id, token_number)).map(lambda line: line.replace(b" ", b","))


@st.composite
def annotations_csv(draw: st.DrawFn) -> bytes:
    quoted = draw(st.sampled_from([b"", b'"a,b",x,1\n', b'"unclosed,x,1\n', b'"multi\nline",x,2\n']))
    return draw(CSV_HEADER) + quoted + draw(file_of(CSV_ROW, CLEAN["csv"]))


# --- the property --------------------------------------------------------------------------------------


def line_count(data: bytes) -> int:
    """The most lines a reader can number in `data` (a gzipped document collection's, once expanded)."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = zlib.decompressobj(31).decompress(data)  # what comes out before any damage
        except zlib.error:
            return len(data) * 1032  # a damaged stream: no tighter bound than gzip's ratio
    return data.count(b"\n") + data.count(b"\r") + 1


def parses_or_refuses(
    read: Callable[[Path], Any], path: Path, data: bytes, *, error: type[Exception] = FormatError
) -> Any:
    """Write `data` to `path` and read it: the result, or None after checking the refusal names the file."""
    path.write_bytes(data)
    try:
        result = read(path)
    except error as exc:
        event("refused")
        message = str(exc)
        assert str(path) in message, message
        line = getattr(exc, "line", None)
        assert line is None or 1 <= line <= line_count(data) + 1, (line, message)
        assert getattr(exc, "reason", "x").strip(), message
        return None
    event("parsed")
    return result


def check_run(run: Any) -> None:
    if run is not None:
        assert not np.isnan(run.scores).any()


def _reads(kind: str, fmt: str | None) -> Callable[[Path], Any]:
    reader = {"qrels": read_qrels, "run": read_run, "topics": read_topics}[kind]
    return lambda path: reader(path, fmt=fmt)  # type: ignore[operator]


class TestQrels:
    @FUZZ
    @given(data=file_of(QRELS_TREC, CLEAN["qrels_trec"]), fmt=st.sampled_from(["trec", None]))
    def test_it_reads_or_refuses_any_trec_qrels(self, tmp_path: Path, data: bytes, fmt: str | None) -> None:
        qrels = parses_or_refuses(_reads("qrels", fmt), tmp_path / "qrels.txt", data)
        if qrels is not None:
            assert len(qrels) > 0

    @FUZZ
    @given(data=file_of(QRELS_TSV, CLEAN["qrels_tsv"]))
    def test_it_reads_or_refuses_any_tsv_qrels(self, tmp_path: Path, data: bytes) -> None:
        parses_or_refuses(_reads("qrels", "tsv"), tmp_path / "qrels.tsv", data)

    @FUZZ
    @given(data=file_of(QRELS_JSON, CLEAN["qrels_jsonl"]))
    def test_it_reads_or_refuses_any_jsonl_qrels(self, tmp_path: Path, data: bytes) -> None:
        parses_or_refuses(_reads("qrels", "jsonl"), tmp_path / "qrels.jsonl", data)

    @pytest.mark.parametrize(
        "fmt,data,second",
        [("tsv", b"q1\td1\t2\nq1\td2\t0\xffq1 q1 0\n", 0), ("trec", b"q1 0 d1 2\nq1 0 d2 1\xff\n", 1)],
    )
    def test_it_reads_a_relevance_with_bytes_that_are_not_utf8_after_its_integer(
        self, tmp_path: Path, fmt: str, data: bytes, second: int
    ) -> None:
        # Found by the fuzzer: the relevance column was cast to text to find its leading integer, and a
        # byte that is not UTF-8 after it raised Arrow's "Invalid UTF8 payload" instead of reading it.
        path = tmp_path / "qrels.txt"
        path.write_bytes(data)
        qrels = read_qrels(path, fmt=fmt)  # type: ignore[arg-type]
        assert sorted(qrels.rels.tolist()) == sorted([2, second])  # the leading integer, as trec_eval

    @pytest.mark.parametrize(
        "fmt,strict,data",
        [
            ("trec", False, b"q1 0 d1 1\nq1 0 d2 99999999999999999999999\n"),
            ("trec", True, b"q1 0 d1 1\nq1 0 d2 99999999999999999999999\n"),
            ("tsv", False, b"q1\td1\t1\nq1\td2\t-9223372036854775809\n"),
            ("trec", False, b"q1 0 d1 1\nq1 0 d2 " + b"7" * 5000 + b"\n"),
            (
                "jsonl",
                False,
                b'{"qid": "q1", "docno": "d1", "rel": 1}\n{"qid": "q1", "docno": "d2", "rel": 1e20}\n',
            ),
            (
                "jsonl",
                False,
                b'{"qid": "q1", "docno": "d1", "rel": 1}\n{"qid": "q1", "docno": "d2", "rel": 99999999999999999999}\n',
            ),
        ],
    )
    def test_it_refuses_a_relevance_past_64_bits_naming_the_line(
        self, tmp_path: Path, fmt: str, strict: bool, data: bytes
    ) -> None:
        # Found by probing past the fuzzer: Arrow's cast raised ArrowInvalid, and the JSON path an
        # OverflowError, instead of a FormatError.
        path = tmp_path / "qrels.txt"
        path.write_bytes(data)
        with pytest.raises(FormatError) as caught:
            read_qrels(path, fmt=fmt, strict=strict)  # type: ignore[arg-type]
        assert caught.value.line == 2 and "out of range" in caught.value.reason

    def test_it_reads_the_64_bit_extremes_and_a_plus_sign(self, tmp_path: Path) -> None:
        # A `+2` relevance raised ArrowInvalid (Arrow's integer cast takes no plus sign); trec_eval reads 2.
        path = tmp_path / "qrels.txt"
        path.write_bytes(b"q1 0 d1 9223372036854775807\nq1 0 d2 -9223372036854775808\nq1 0 d3 +2\n")
        assert read_qrels(path).rels.tolist() == [2**63 - 1, -(2**63), 2]

    def test_it_refuses_a_relevance_that_is_not_utf8_and_has_no_integer(self, tmp_path: Path) -> None:
        path = tmp_path / "qrels.tsv"
        path.write_bytes(b"q1\td1\t1\nq1\td2\t\xff\n")
        with pytest.raises(FormatError) as caught:
            read_qrels(path, fmt="tsv")
        assert caught.value.line == 2 and "is not an integer" in caught.value.reason


class TestRuns:
    @FUZZ
    @given(data=file_of(RUN_TREC, CLEAN["run_trec"]), fmt=st.sampled_from(["trec", None]))
    def test_it_reads_or_refuses_any_trec_run(self, tmp_path: Path, data: bytes, fmt: str | None) -> None:
        check_run(parses_or_refuses(_reads("run", fmt), tmp_path / "run.txt", data))

    @FUZZ
    @given(data=file_of(RUN_TSV, CLEAN["run_tsv"]))
    def test_it_reads_or_refuses_any_tsv_run(self, tmp_path: Path, data: bytes) -> None:
        check_run(parses_or_refuses(_reads("run", "tsv"), tmp_path / "run.tsv", data))

    @FUZZ
    @given(data=file_of(RUN_JSON, CLEAN["run_jsonl"]))
    def test_it_reads_or_refuses_any_jsonl_run(self, tmp_path: Path, data: bytes) -> None:
        check_run(parses_or_refuses(_reads("run", "jsonl"), tmp_path / "run.jsonl", data))

    @pytest.mark.parametrize("score", ["nan", "NaN", "-nan"])
    def test_it_refuses_a_nan_score_naming_the_line(self, tmp_path: Path, score: str) -> None:
        path = tmp_path / "run.txt"
        path.write_text(f"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 {score} t\n")
        with pytest.raises(FormatError) as caught:
            read_run(path)
        assert caught.value.line == 2 and "not a number" in caught.value.reason


class TestTopics:
    @FUZZ
    @given(data=file_of(trec_topic(), max_lines=4))
    def test_it_reads_or_refuses_any_trec_topics(self, tmp_path: Path, data: bytes) -> None:
        topics = parses_or_refuses(_reads("topics", "trec"), tmp_path / "topics.txt", data)
        for qid, text in (topics or {}).items():
            assert qid and text and qid.strip() == qid

    @FUZZ
    @given(data=file_of(TOPICS_TSV, CLEAN["topics_tsv"]))
    def test_it_reads_or_refuses_any_tsv_topics(self, tmp_path: Path, data: bytes) -> None:
        parses_or_refuses(_reads("topics", "tsv"), tmp_path / "topics.tsv", data)

    @FUZZ
    @given(data=file_of(TOPICS_JSON, CLEAN["topics_jsonl"]))
    def test_it_reads_or_refuses_any_jsonl_topics(self, tmp_path: Path, data: bytes) -> None:
        parses_or_refuses(_reads("topics", "jsonl"), tmp_path / "topics.jsonl", data)


def _documents(path: Path) -> list[Any]:
    return list(read_documents(path, max_decompressed_bytes=1 << 20))


class TestDocuments:
    @FUZZ
    @given(data=file_of(DOCS_JSON, CLEAN["docs_jsonl"]), gz=st.booleans())
    def test_it_reads_or_refuses_any_jsonl_documents(self, tmp_path: Path, data: bytes, gz: bool) -> None:
        parses_or_refuses(_documents, tmp_path / ("docs.jsonl.gz" if gz else "docs.jsonl"), data)

    @FUZZ
    @given(data=file_of(DOCS_TSV, CLEAN["docs_tsv"]), gz=st.booleans())
    def test_it_reads_or_refuses_any_tsv_documents(self, tmp_path: Path, data: bytes, gz: bool) -> None:
        parses_or_refuses(_documents, tmp_path / ("docs.tsv.gz" if gz else "docs.tsv"), data)


class TestAnnotationsCsv:
    @FUZZ
    @given(data=annotations_csv())
    def test_it_reads_or_refuses_any_annotations_csv(self, tmp_path: Path, data: bytes) -> None:
        labels = parses_or_refuses(read_annotations_csv, tmp_path / "labels.csv", data)
        if labels is not None:
            assert np.isfinite(labels.values).all()


# --- recommendation and fraud CSV files ----------------------------------------------------------------

FRAUD_HEADER = st.sampled_from([b"id,score,label\n", b"id,score,label,amount\n", b"id,score,label,entity,timestamp\n",
                                b"score,label\n", b"id,score,label,colour\n", b"id,score,label,entity\n"])  # fmt: skip
FRAUD_CLEAN = clean_line(
    st.sampled_from([b"t1", b"t2", b"t3"]), SCORE, st.sampled_from([b"0", b"1", b"true"]), sep=b","
)
FRAUD_ROW = delimited_line(columns(token_id, token_number, token_number, token_number)).map(
    lambda line: line.replace(b" ", b",").replace(b"\t", b",")
)
RECS_CLEAN = clean_line(st.sampled_from([b"u1", b"u2"]), DOCNO, st.sampled_from([b"1", b"2", b"3"]), sep=b",")
RECS_ROW = delimited_line(columns(token_id, token_id, token_number)).map(
    lambda line: line.replace(b" ", b",").replace(b"\t", b",")
)


@st.composite
def csv_with(draw: st.DrawFn, header: st.SearchStrategy[bytes], rows: Any, clean: Any) -> bytes:
    return draw(header) + draw(file_of(rows, clean))


class TestRecsysAndFraudCsv:
    @FUZZ
    @given(data=csv_with(FRAUD_HEADER, FRAUD_ROW, FRAUD_CLEAN))
    def test_it_reads_or_refuses_any_fraud_scores(self, tmp_path: Path, data: bytes) -> None:
        examples = parses_or_refuses(read_scores, tmp_path / "scores.csv", data)
        if examples is not None:
            assert np.isfinite(examples.scores).all()

    @FUZZ
    @given(
        recs=csv_with(
            st.sampled_from([b"user,item,rank\n", b"user,item\n", b"rank,item,user\n"]), RECS_ROW, RECS_CLEAN
        ),
        interactions=csv_with(st.sampled_from([b"user,item\n", b"user\n"]), RECS_ROW, RECS_CLEAN),
    )
    def test_it_reads_or_refuses_any_recommendation_files(
        self, tmp_path: Path, recs: bytes, interactions: bytes
    ) -> None:
        paths = (tmp_path / "recs.csv", tmp_path / "interactions.csv")
        for path, data in zip(paths, (recs, interactions), strict=True):
            path.write_bytes(data)
        try:
            files = read_recsys_files(*paths)
        except EvalCoreError as exc:
            assert any(str(path) in str(exc) for path in paths), str(exc)
            event("refused")
        else:
            assert files.data.lists.items.shape[0] == files.data.lists.n_users  # a header alone: no users
            event("parsed")


# --- .npy embeddings ------------------------------------------------------------------------------------

DTYPES = ["<f2", "<f4", ">f4", "<f8", "<i4", "|b1", "<c8", "<U3", "|O", "<f4,<f4", "|V4"]


@st.composite
def npy_file(draw: st.DrawFn) -> bytes:
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=0, max_size=3)))
    array = np.zeros(shape, dtype=dtype)
    if dtype.kind == "f" and array.size:
        array.flat[0] = draw(st.sampled_from([np.nan, np.inf, -np.inf, 1.0]))
    if dtype.kind == "O":
        array = np.empty(shape, dtype=object)
    if draw(st.booleans()) and array.ndim == 2:
        array = np.asfortranarray(array)
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    data = buffer.getvalue()
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return data[: draw(st.integers(0, len(data)))]
    if choice == 1 and len(data) > 10:
        at = draw(st.integers(0, min(len(data), 128) - 1))
        return data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
    if choice == 2:
        return data + draw(st.binary(min_size=1, max_size=16))
    if choice == 3:
        return draw(st.binary(max_size=80))
    return data


def _read_all_rows(path: Path) -> Any:
    npy = open_npy(path)
    rows = sum(len(chunk) for chunk in npy.chunks(0, npy.rows, 3))
    assert rows == npy.rows
    return npy


class TestNpy:
    @FUZZ
    @given(data=npy_file())
    def test_it_opens_or_refuses_any_npy_file(self, tmp_path: Path, data: bytes) -> None:
        npy = parses_or_refuses(_read_all_rows, tmp_path / "emb.npy", data, error=EmbeddingInputError)
        if npy is not None:
            assert npy.dtype.kind == "f" and npy.rows >= 2 and npy.dim >= 1

    def test_it_refuses_a_pickled_object_array_without_unpickling_it(self, tmp_path: Path) -> None:
        path = tmp_path / "evil.npy"
        array = np.empty((3, 2), dtype=object)
        array[0, 0] = _Bomb()
        np.save(path, array, allow_pickle=True)
        _Bomb.unpickled = False
        with pytest.raises(EmbeddingInputError, match="pickled Python objects") as caught:
            _read_all_rows(path)
        assert str(path) in str(caught.value)
        assert _Bomb.unpickled is False

    def test_it_refuses_a_header_python_cannot_tokenize(self, tmp_path: Path) -> None:
        # Found by the fuzzer: numpy runs Python's tokenizer on the header text, and an unclosed bracket
        # there raised tokenize.TokenError, which escaped as a crash instead of "not a .npy file".
        path = tmp_path / "emb.npy"
        header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), "
        header += b" " * (63 - len(header) - 10) + b"\n"
        path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + bytes(16))
        with pytest.raises(EmbeddingInputError, match="not a .npy file"):
            open_npy(path)


class _Bomb:
    """Records being unpickled: a pickle inside a `.npy` file runs code when loaded."""

    unpickled = False

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Bomb._explode, ())

    @staticmethod
    def _explode() -> None:
        _Bomb.unpickled = True


def test_a_pickle_payload_really_runs_code_when_loaded() -> None:
    """The premise of the test above: loading the object array's pickle would run `_explode`."""
    _Bomb.unpickled = False
    pickle.loads(pickle.dumps(_Bomb()))
    assert _Bomb.unpickled is True
    _Bomb.unpickled = False


# --- the uploads that use them: a refused file leaves the database as it was ----------------------------


class _RolledBack(Exception):
    """Ends an example's transaction: each example starts from the same rows."""


def _counts() -> dict[str, int]:
    from annotations.models import Document, GoldLabel, Task, Topic
    from monitoring.models import EmbeddingSnapshot, FraudScoreSet, QrelsSource, RecommendationSet, Run

    models = [Topic, Document, Task, GoldLabel, Run, QrelsSource, EmbeddingSnapshot, RecommendationSet,
              FraudScoreSet]  # fmt: skip
    return {model.__name__: model.objects.count() for model in models}


def refused_or_stored(store: Callable[[], Any], refusal: type[Exception], name: str) -> None:
    """Run an upload in a transaction that is rolled back afterwards; a refusal names the file and changes
    no row (the rows are counted before and after, inside the transaction)."""
    from django.db import transaction

    try:
        with transaction.atomic():
            before = _counts()
            try:
                store()
            except refusal as exc:
                assert name in str(exc), str(exc)
                assert _counts() == before, (str(exc), before, _counts())
                event("refused")
            else:
                event("stored")
            raise _RolledBack
    except _RolledBack:
        pass


@pytest.fixture
def judging_project(db: None) -> Any:
    """A project holding the topics and documents the generated pools and qrels name."""
    from django.contrib.auth.models import User

    from annotations import services
    from annotations.models import Document, Topic

    lead = User.objects.create_user("fuzz-lead")
    project = services.project_create(creator=lead, slug="fuzz", name="Fuzz", min_seconds_per_task=0)
    Topic.objects.bulk_create(
        [Topic(project=project, qid=qid, title=f"topic {qid}") for qid in ("q1", "q2", "401", "café")]
    )
    Document.objects.bulk_create(
        [
            Document(project=project, doc_id=d, text=f"text {d}")
            for d in ("d1", "d2", "FBIS3-1", "LA-7", "中", "d9")
        ]
    )
    return project


@pytest.fixture
def team(db: None) -> Any:
    from evalplatform.teams import team_create

    return team_create(slug="fuzz", name="Fuzz")


@pytest.fixture
def stream(team: Any) -> Any:
    """A stream of 2-dimensional embeddings: the generated arrays have 0 to 5 columns."""
    from monitoring.embeddings import services as monitors

    return monitors.stream_create(team=team, slug="fuzz", name="Fuzz", dimension=2)


IMPORTS = {
    "topics": ("topics.tsv", file_of(TOPICS_TSV, CLEAN["topics_tsv"])),
    "documents": ("docs.jsonl", file_of(DOCS_JSON, CLEAN["docs_jsonl"])),
    "pool": ("pool.txt", file_of(RUN_TREC, CLEAN["run_trec"])),
    "gold": ("gold.txt", file_of(QRELS_TREC, CLEAN["qrels_trec"])),
}


@st.composite
def import_upload_case(draw: st.DrawFn) -> tuple[str, str, bytes]:
    kind = draw(st.sampled_from(sorted(IMPORTS)))
    name, files = IMPORTS[kind]
    return kind, name, draw(files)


class TestUploadsLeaveNothingBehind:
    @settings(FUZZ, max_examples=120)
    @given(case=import_upload_case())
    def test_a_refused_judging_import_changes_no_row(self, judging_project: Any, case: Any) -> None:
        from django.core.files.uploadedfile import SimpleUploadedFile

        from annotations.imports import import_request

        kind, name, data = case
        refused_or_stored(
            lambda: import_request(project=judging_project, kind=kind, upload=SimpleUploadedFile(name, data)),
            FormatError,
            name,
        )

    @settings(FUZZ, max_examples=100)
    @given(
        kind=st.sampled_from(["run", "qrels"]),
        data=st.one_of(file_of(RUN_TREC, CLEAN["run_trec"]), file_of(QRELS_TREC, CLEAN["qrels_trec"])),
    )
    def test_a_refused_run_or_qrels_upload_stores_nothing(self, team: Any, kind: str, data: bytes) -> None:
        from django.core.files.uploadedfile import SimpleUploadedFile

        from monitoring.files.uploads import UploadError, qrels_upload, run_upload

        store = run_upload if kind == "run" else qrels_upload
        name = f"{kind}.txt"
        refused_or_stored(lambda: store(team=team, upload=SimpleUploadedFile(name, data)), UploadError, name)

    @settings(FUZZ, max_examples=100)
    @given(
        scores=csv_with(FRAUD_HEADER, FRAUD_ROW, FRAUD_CLEAN),
        recs=csv_with(st.just(b"user,item,rank\n"), RECS_ROW, RECS_CLEAN),
        interactions=csv_with(st.just(b"user,item\n"), RECS_ROW, RECS_CLEAN),
    )
    def test_a_refused_fraud_or_recommendation_upload_stores_nothing(
        self, team: Any, scores: bytes, recs: bytes, interactions: bytes
    ) -> None:
        from django.core.files.uploadedfile import SimpleUploadedFile

        from monitoring.recsys_fraud.uploads import (
            UploadError,
            fraud_score_set_upload,
            recommendation_set_upload,
        )

        refused_or_stored(
            lambda: fraud_score_set_upload(team=team, scores=SimpleUploadedFile("scores.csv", scores)),
            UploadError,
            "scores.csv",
        )
        refused_or_stored(
            lambda: recommendation_set_upload(
                team=team,
                recs=SimpleUploadedFile("lists.csv", recs),
                interactions=SimpleUploadedFile("lists.csv", interactions),
            ),
            UploadError,
            "lists.csv",
        )

    @settings(FUZZ, max_examples=100)
    @given(data=npy_file())
    def test_a_refused_snapshot_upload_stores_nothing(self, stream: Any, data: bytes) -> None:
        from django.core.files.uploadedfile import SimpleUploadedFile

        from monitoring.embeddings import services as monitors
        from monitoring.embeddings.params import MonitorInputError

        upload = SimpleUploadedFile("emb.npy", data)
        refused_or_stored(
            lambda: monitors.snapshot_upload(stream=stream, upload=upload), MonitorInputError, "emb.npy"
        )

    def test_a_pickled_snapshot_is_refused_on_its_header(self, stream: Any) -> None:
        from django.core.files.uploadedfile import SimpleUploadedFile

        from monitoring.embeddings import services as monitors
        from monitoring.embeddings.params import MonitorInputError

        array = np.empty((3, 2), dtype=object)
        array[0, 0] = _Bomb()
        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=True)
        _Bomb.unpickled = False
        with pytest.raises(MonitorInputError, match="pickled Python objects"):
            monitors.snapshot_upload(stream=stream, upload=SimpleUploadedFile("evil.npy", buffer.getvalue()))
        assert _Bomb.unpickled is False

    def test_a_run_tag_with_a_nul_byte_is_refused_not_stored(self, team: Any) -> None:
        # Found by the fuzzer: the tag became the run's name, and PostgreSQL refused the NUL (a 500).
        from django.core.files.uploadedfile import SimpleUploadedFile

        from monitoring.files.uploads import UploadError, run_upload
        from monitoring.models import Run

        upload = SimpleUploadedFile("run.txt", b"q1 Q0 d1 1 2.5 ta\x00g\n")
        with pytest.raises(UploadError, match=r"run.txt:1: the run tag contains a NUL character"):
            run_upload(team=team, upload=upload)
        assert not Run.objects.exists()
