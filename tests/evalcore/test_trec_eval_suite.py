"""trec_eval's own test suite: on its test files our text output equals its expected output, line for
line (the files and their provenance are in tests/fixtures/trec_eval)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcore.retrieval import evaluate, format_trec
from evalcore.trec import read_qrels, read_run

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "trec_eval"
QRELS = FIXTURES / "qrels.test"
RESULTS = FIXTURES / "results.test"
# What trec_eval's Makefile gives for its nine measures with parameters (out.test.meas_params).
MEAS_PARAMS = [
    "iprec_at_recall..10,.20,.25,.75,.50",
    "P.5,7,3",
    "recall.20,2000",
    "Rprec_mult.5.0,0.2,0.35",
    "utility.2,-1,0,0",
    "11pt_avg..25,.5,.75",
    "ndcg.1=3,2=9,4=4.5",
    "ndcg_cut.10,20,23.4",
    "success.2,5,20",
]


def trec_eval(
    qrels: Path, run: Path, measures: list[str], *, q: bool = False, level: int = 1, c: bool = False
) -> list[str]:
    """Our `trec_eval [-q] [-l level] [-c] -m ... qrels run`, as lines."""
    result = evaluate(read_qrels(qrels), read_run(run), measures, rel_level=level, complete=c)
    return format_trec(result, per_query=q).splitlines()


def expected(name: str) -> list[str]:
    return (FIXTURES / name).read_text().splitlines()


def lines_of(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


class TestTrecEvalSuite:
    def test_it_prints_out_test_for_the_default_set(self) -> None:
        assert trec_eval(QRELS, RESULTS, ["official"]) == expected("out.test")

    def test_it_prints_out_test_a_for_all_trec(self) -> None:
        assert trec_eval(QRELS, RESULTS, ["all_trec"]) == expected("out.test.a")

    def test_it_prints_out_test_aq_per_query(self) -> None:
        assert trec_eval(QRELS, RESULTS, ["all_trec"], q=True) == expected("out.test.aq")

    def test_it_prints_out_test_aqc_counting_every_qrels_query(self, tmp_path: Path) -> None:
        # results.trunc (not in the index): query 301 whole, the first 84 lines of 303, no 302.
        rows = lines_of(RESULTS)
        trunc = tmp_path / "results.trunc"
        trunc.write_text(
            "".join(r for r in rows if r.startswith("301\t"))
            + "".join([r for r in rows if r.startswith("303\t")][:84])
        )
        out = trec_eval(QRELS, trunc, ["all_trec"], q=True, c=True)
        assert out == expected("out.test.aqc")
        assert "num_q                 \tall\t3" in out and "num_rel               \tall\t561" in out

    def test_it_prints_out_test_meas_params(self) -> None:
        assert trec_eval(QRELS, RESULTS, MEAS_PARAMS, q=True) == expected("out.test.meas_params")

    def test_it_prints_out_test_aql_at_level_2(self, tmp_path: Path) -> None:
        # qrels.rel_level (not in the index) is judgment group 0 of qrels.comments.123 (see the README).
        graded = tmp_path / "qrels.rel_level"
        graded.write_text(
            "".join(
                line
                for line in lines_of(FIXTURES / "qrels.comments.123")
                if not line.startswith("#") and line.split()[1] == "0"
            )
        )
        out = trec_eval(graded, RESULTS, ["all_trec", "relstring.20"], q=True, level=2)
        assert out == expected("out.test.aql")

    def test_it_reads_the_files_with_comments_as_the_plain_ones(self) -> None:
        # trec_eval's Makefile: qrels.comment.test results.comment.test | diff - out.test
        commented = trec_eval(
            FIXTURES / "qrels.comment.test", FIXTURES / "results.comment.test", ["official"]
        )
        assert commented == expected("out.test")

    def test_it_reads_relevance_written_as_floats_as_trec_eval_does(self, tmp_path: Path) -> None:
        # qrels.test.with-floats: five judgments of 301 written as trec_eval's atol reads them.
        written = {"CR93E-1282": "1.5", "CR93E-1850": "0.3", "CR93E-5796": "1e+8", "CR93E-5799": "1.1.11",
                   "CR93E-6879": "0x37"}  # fmt: skip
        floats = tmp_path / "qrels.test.with-floats"
        floats.write_text(
            "".join(
                f"{line.split()[0]} 0 {line.split()[2]} {written[line.split()[2]]}\n"
                if line.startswith("301 ") and line.split()[2] in written
                else line
                for line in lines_of(QRELS)
            )
        )
        assert len(floats.read_text()) == 75_057  # the length of trec_eval's own file
        assert trec_eval(floats, RESULTS, ["official"]) == expected("out.test")

    def test_it_evaluates_query_302_alone(self, tmp_path: Path) -> None:
        # qrels-302.test and results-302.test, trec_eval's files of query 302 alone.
        qrels, run = tmp_path / "qrels-302.test", tmp_path / "results-302.test"
        qrels.write_text("".join(line for line in lines_of(QRELS) if line.startswith("302 ")))
        run.write_text("".join(line for line in lines_of(RESULTS) if line.startswith("302\t")))
        assert (len(qrels.read_text()), len(run.read_text())) == (21_632, 21_874)  # as trec_eval's files
        per_query = [line for line in expected("out.test.aq") if "\t302\t" in line]
        assert [
            line for line in trec_eval(qrels, run, ["all_trec"], q=True) if "\t302\t" in line
        ] == per_query

    @pytest.mark.parametrize("name", ["qrels.comment.test", "results.comment.test"])
    def test_it_keeps_the_source_files_verbatim(self, name: str) -> None:
        text = (FIXTURES / name).read_text()
        plain = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#"))
        assert len(text) == {"qrels.comment.test": 75_085, "results.comment.test": 65_596}[name]
        assert plain == (FIXTURES / name.replace(".comment", "")).read_text()
