"""trec_eval 9.0.8's `make quicktest`, line for line, through `manage.py eval_retrieval` with the exact
arguments of trec_eval's Makefile; trec_eval's own option spellings; the preference and z-score readers'
errors. The files and their provenance are in tests/fixtures/trec_eval/README.md."""

from __future__ import annotations

import json
import shlex
import shutil
from io import StringIO
from pathlib import Path

import numpy as np
import pytest

from evalcore.errors import FormatError
from evalcore.retrieval import PreferenceError, Prefs, Qrels, Run, evaluate, evaluate_prefs
from evalcore.retrieval.evaluation import evaluate_jg
from evalcore.retrieval.judgment_groups import QrelsJG
from evalcore.trec import read_qrels, read_run
from evalcore.trec_prefs import read_prefs, read_qrels_jg, read_qrels_prefs, read_zscores
from monitoring.common import cli
from monitoring.management.commands.eval_retrieval import Program

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "trec_eval"


def trec_eval(argv: str) -> list[str]:
    """`manage.py eval_retrieval ARGV`, parsed and run as the shell runs it (without Django)."""
    out = StringIO()
    command = Program(stdout=cli.Output(out))
    options = vars(cli.command_parser(command, "manage.py", "eval_retrieval").parse_args(shlex.split(argv)))
    command.handle(**options)
    return out.getvalue().splitlines()


def expected(name: str) -> list[str]:
    return (FIXTURES / name).read_text().splitlines()


@pytest.fixture(scope="module")
def test_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """trec_eval's `test/` folder: the fixtures, and the three inputs the index lacks, rebuilt."""
    root = tmp_path_factory.mktemp("trec_eval")
    folder = root / "test"
    shutil.copytree(FIXTURES, folder)
    rows = (FIXTURES / "results.test").read_text().splitlines(keepends=True)
    of_query = {q: [r for r in rows if r.startswith(q + "\t")] for q in ("301", "302", "303")}
    # results.trunc: query 301 whole and the first 84 lines of 303 (see the README).
    (folder / "results.trunc").write_text("".join(of_query["301"] + of_query["303"][:84]))
    # prefs.results.test: results.test's ranking of 301 under each of prefs.test's 24 query ids.
    qids = sorted({line.split()[0] for line in (FIXTURES / "prefs.test").read_text().splitlines()})
    (folder / "prefs.results.test").write_text("".join(q + r[3:] for q in qids for r in of_query["301"]))
    # qrels.123: qrels.comments.123 without its comment lines; qrels.rel_level: its judgment group 0.
    judged = (FIXTURES / "qrels.comments.123").read_text().splitlines(keepends=True)
    (folder / "qrels.123").write_text("".join(line for line in judged if not line.startswith("#")))
    (folder / "qrels.rel_level").write_text(
        "".join(line for line in judged if not line.startswith("#") and line.split()[1] == "0")
    )
    return root


# Each line of trec_eval 9.0.8's `make quicktest`, with `./trec_eval` read as `manage.py eval_retrieval`
# (out.test.aqZ, from a later trec_eval, has its own test below).
QUICKTEST = [
    ("test/qrels.test test/results.test", "out.test"),
    ("-m all_trec test/qrels.test test/results.test", "out.test.a"),
    ("-m all_trec -q test/qrels.test test/results.test", "out.test.aq"),
    ("-m all_trec -q -c test/qrels.test test/results.trunc", "out.test.aqc"),
    ("-m all_trec -q -c -M100 test/qrels.test test/results.trunc", "out.test.aqcM"),
    ("-m all_trec -mrelstring.20 -q -l2 test/qrels.rel_level test/results.test", "out.test.aql"),
    ("-m all_prefs -q -R prefs test/prefs.test test/prefs.results.test", "out.test.prefs"),
    ("-m all_prefs -q -R qrels_prefs test/qrels.test test/results.test", "out.test.qrels_prefs"),
    ("-m qrels_jg -q -R qrels_jg  test/qrels.123 test/results.test", "out.test.qrels_jg"),
    (
        "-q -miprec_at_recall..10,.20,.25,.75,.50 -m P.5,7,3 -m recall.20,2000 -m Rprec_mult.5.0,0.2,0.35 "
        "-mutility.2,-1,0,0 -m 11pt_avg..25,.5,.75 -mndcg.1=3,2=9,4=4.5 -mndcg_cut.10,20,23.4 "
        "-msuccess.2,5,20 test/qrels.test test/results.test",
        "out.test.meas_params",
    ),
]


class TestQuicktest:
    @pytest.mark.parametrize(("argv", "name"), QUICKTEST, ids=[name for _, name in QUICKTEST])
    def test_it_prints_trec_evals_expected_file(
        self, argv: str, name: str, test_dir: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(test_dir)
        assert trec_eval(argv) == expected(name)

    def test_it_prints_out_test_aqz(self, test_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        # out.test.aqZ comes from a trec_eval later than 9.0.8 (the one its zscores_file was made with):
        # it prints rbp, rbp_resid and unj_k, which 9.0.8 lacks, and computes iprec_at_recall_0.30 of
        # 302 as 0.7059 where 9.0.8 prints 0.7419 (out.test.aq). Every other line is compared as it is;
        # those four lines are checked against 9.0.8's own value.
        monkeypatch.chdir(test_dir)
        out = trec_eval("-q -m all_trec -Z test/zscores_file test/qrels.test test/results.test")
        later_only = ("Zrbp ", "Zrbp_resid ", "Zunj_")
        wanted = [line for line in expected("out.test.aqZ") if not line.startswith(later_only)]
        assert len(out) == len(wanted) == 367
        differ = [(ours, theirs) for ours, theirs in zip(out, wanted, strict=True) if ours != theirs]
        assert [ours.split("\t")[:2] for ours, _ in differ] == [
            ["Ziprec_at_recall_0.30  ", "302"], ["Z11pt_avg              ", "302"],
            ["Ziprec_at_recall_0.30  ", "all"], ["Z11pt_avg              ", "all"],
        ]  # fmt: skip
        table = read_zscores(test_dir / "test" / "zscores_file")
        mean, stddev = table[("302", "iprec_at_recall_0.30")]
        assert float(differ[0][0].split("\t")[2]) == pytest.approx((0.7419 - mean) / stddev, abs=2e-3)
        mean, stddev = table[("302", "11pt_avg")]
        assert float(differ[1][0].split("\t")[2]) == pytest.approx((0.4360 - mean) / stddev, abs=2e-3)

    def test_it_keeps_z_scores_of_counts_decimal_in_json(
        self, test_dir: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(test_dir)
        out = json.loads(
            "".join(trec_eval("-q --json -m num_ret -Z test/zscores_file test/qrels.test test/results.test"))
        )
        # 301 retrieves 500 against a mean of 967.0 and a stddev of 169.1719.
        assert out["per_query"]["301"]["num_ret"] == pytest.approx((500 - 967.0) / 169.1719)
        assert out["aggregate"]["num_ret"] == pytest.approx(
            sum(v["num_ret"] for v in out["per_query"].values())
        )

    def test_it_reads_prefs_with_comments_as_the_plain_file(
        self, test_dir: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(test_dir)
        commented = trec_eval("-m all_prefs -q -R prefs test/prefs.comment.test test/prefs.results.test")
        assert commented == expected("out.test.prefs")

    def test_it_reads_qrels_jg_with_comments_as_the_plain_file(
        self, test_dir: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(test_dir)
        commented = trec_eval("-m qrels_jg -q -R qrels_jg test/qrels.comments.123 test/results.test")
        assert commented == expected("out.test.qrels_jg")

    def test_it_keeps_prefs_comment_test_verbatim(self) -> None:
        text = (FIXTURES / "prefs.comment.test").read_text()
        assert len(text) == 6_960
        plain = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#"))
        assert plain == (FIXTURES / "prefs.test").read_text()

    @pytest.mark.parametrize(
        ("name", "length"),
        [("out.test.prefs", 13_359), ("out.test.qrels_prefs", 1_963), ("out.test.aqcM", 9_355),
         ("out.test.aqZ", 13_830), ("zscores_file", 8_527), ("qrels.comments.123", 212_215),
         ("out.test.qrels_jg", 2_785), ("out.test.aql", 12_477)],
    )  # fmt: skip
    def test_it_keeps_the_expected_files_at_their_original_length(self, name: str, length: int) -> None:
        assert len((FIXTURES / name).read_text()) == length


class TestOptionSpellings:
    @pytest.mark.parametrize(
        "spellings",
        [
            ["-M100", "-M 100", "--Max_retrieved_per_topic 100", "--Max_retrieved_per_topic=100"],
            ["-l2", "-l 2", "--level 2"],
            ["-mP.5,10", "-m P.5,10", "--measure P.5,10", "-m P_5 -m P_10"],
            ["-q", "--per-query", "--query_eval_wanted"],
            ["-c", "--complete", "--complete_rel_info_wanted"],
            ["-l2", "--level_for_rel 2", "--level_for_rel=2"],
            ["-T trec_results", "--Results_format trec_results", "-D 0", "--Debug_level 0", ""],
        ],
    )
    def test_it_reads_every_spelling_of_an_option_alike(
        self, spellings: list[str], test_dir: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(test_dir)
        measures = "" if spellings[0].startswith("-m") else "-m P.5,10 -m num_ret "
        outputs = [trec_eval(f"{measures}{s} test/qrels.test test/results.trunc") for s in spellings]
        assert all(out == outputs[0] for out in outputs) and outputs[0]

    def test_it_leaves_out_the_summary_with_n(self, test_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(test_dir)
        per_query = trec_eval("-q -n -m all_trec test/qrels.test test/results.test")
        assert per_query == [line for line in expected("out.test.aq") if "\tall\t" not in line]
        assert trec_eval("-n --nosummary -m map test/qrels.test test/results.test") == []

    def test_it_takes_the_files_as_options_too(self, test_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(test_dir)
        positional = trec_eval("-q -m map test/qrels.test test/results.test")
        assert positional == trec_eval("-q -m map --qrels test/qrels.test --run test/results.test")

    @pytest.mark.parametrize(
        ("argv", "message"),
        [
            ("test/qrels.test", "expected two files, the qrels then the run, not 1"),
            ("a b c", "expected two files, the qrels then the run, not 3"),
            ("--qrels test/qrels.test test/qrels.test test/results.test", "either as trec_eval does"),
            (
                "-m prefs_simp test/qrels.test test/results.test",
                "prefs_simp: only with -R prefs or -R qrels_prefs",
            ),
            ("-R prefs -m map test/prefs.test test/prefs.results.test", "map: only with -R qrels"),
            ("-R prefs -c test/prefs.test test/prefs.results.test", "-c and -J apply to qrels only"),
        ],
    )
    def test_it_refuses_with_one_line(
        self, argv: str, message: str, test_dir: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(test_dir)
        with pytest.raises(cli.CommandError, match=message.replace(".", r"\.")):
            trec_eval(argv)

    def test_it_drops_unjudged_documents_with_j(self, tmp_path: Path) -> None:
        qrels, run = tmp_path / "qrels", tmp_path / "run"
        qrels.write_text("q1 0 a 1\nq1 0 b 0\nq1 0 c -1\n")
        run.write_text("q1 Q0 x 1 5.0 r\nq1 Q0 a 2 4.0 r\nq1 Q0 c 3 3.0 r\nq1 Q0 b 4 2.0 r\n")
        plain = trec_eval(f"-m P.1 -m num_ret -m map {qrels} {run}")
        judged = trec_eval(f"-J -m P.1 -m num_ret -m map {qrels} {run}")
        assert [line.split("\t")[2] for line in plain] == ["4", "0.5000", "0.0000"]
        assert [line.split("\t")[2] for line in judged] == ["2", "1.0000", "1.0000"]

    def test_it_counts_the_collection_of_n_in_utility_only(
        self, test_dir: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(test_dir)
        assert trec_eval("-N1000000 test/qrels.test test/results.test") == expected("out.test")
        # m_utility.c: d * (N + rel_ret - ret - rel): 301 retrieves 500, 71 of its 474 relevant: 10000 + 71 - 500 - 474.
        out = trec_eval("-q -N 10000 -m utility.0,0,0,1 test/qrels.test test/results.test")
        assert out[0] == "utility_0,0,0,1       \t301\t9097.0000"


class TestPreferenceFiles:
    def test_it_names_the_file_line_and_reason(self, tmp_path: Path) -> None:
        path = tmp_path / "prefs"
        path.write_text("# a comment\nq1 u s d1 2\nq1 u d2 1\n")
        with pytest.raises(FormatError) as caught:
            read_prefs(path)
        assert (caught.value.line, caught.value.reason) == (
            3,
            "expected 5 columns (qid jg jsg docno rel_level), found 4",
        )
        path.write_text("q1 u s d1 high\n")
        with pytest.raises(FormatError, match=r"prefs:1: rel_level 'high' is not a number"):
            read_prefs(path)
        path.write_text("q1 0 d1 1 extra\n")
        with pytest.raises(FormatError, match=r"prefs:1: expected 4 columns \(qid iter docno rel\), found 5"):
            read_qrels_prefs(path)
        path.write_text("\n# only a comment\n")
        with pytest.raises(FormatError, match="no lines"):
            read_prefs(path)

    def test_it_reads_rel_level_as_c_reads_a_double(self, tmp_path: Path) -> None:
        path = tmp_path / "prefs"
        path.write_text("q1 u s d1 5.5\nq1 u s d2 1e1\nq1 u s d3 2abc\n")
        assert read_prefs(path).rel_levels.tolist() == [5.5, 10.0, 2.0]

    def test_it_names_the_zscore_files_bad_line(self, tmp_path: Path) -> None:
        path = tmp_path / "z"
        path.write_text("301 map 0.1 0.2\n301 P_5 mean 0.1\n")
        with pytest.raises(FormatError, match=r"z:2: mean 'mean' is not a number"):
            read_zscores(path)

    def test_it_says_the_command_error_in_one_line(self, tmp_path: Path) -> None:
        prefs, run = tmp_path / "prefs", tmp_path / "run"
        prefs.write_text("q1 u s d1\n")
        run.write_text("q1 Q0 d1 1 1.0 r\n")
        with pytest.raises(cli.CommandError, match=rf"{prefs}:1: expected 5 columns"):
            trec_eval(f"-R prefs {prefs} {run}")

    @pytest.mark.parametrize(
        ("rows", "message"),
        [
            ([("u", "s", "d1", 2.0), ("u", "s", "d1", 1.0)], "two rel_levels in one judgment sub-group"),
            ([("u", "s1", "d1", 2.0), ("u", "s1", "d2", 1.0), ("u", "s2", "d2", 2.0), ("u", "s2", "d1", 1.0)],
             "inconsistent preferences"),
            ([("u", "s1", "d1", 0.0), ("u", "s1", "d2", 1.0), ("u", "s2", "d1", 2.0), ("u", "s2", "d3", 1.0)],
             "both non-relevant"),
        ],
    )  # fmt: skip
    def test_it_refuses_inconsistent_judgment_groups(self, rows: list[tuple], message: str) -> None:
        prefs = Prefs.from_rows(["q"] * len(rows), *(list(c) for c in zip(*rows, strict=True)))
        run = Run.from_dict({"q": {"d1": 2.0, "d2": 1.0}})
        with pytest.raises(PreferenceError, match=message):
            evaluate_prefs(prefs, run, ["prefs_simp"])

    def test_it_closes_a_partial_order_under_transitivity(self) -> None:
        # get_prefs.c's example: 1 > 2 > 3 in one JSG, 2 > 4 in another: 1 > 4 follows, 3 ? 4 does not.
        prefs = Prefs.from_rows(
            ["q"] * 5, ["u"] * 5, ["s1", "s1", "s1", "s2", "s2"], ["d1", "d2", "d3", "d2", "d4"],
            [3.0, 2.0, 1.0, 5.0, 4.0],
        )  # fmt: skip
        run = Run.from_dict({"q": {"d4": 4.0, "d3": 3.0, "d2": 2.0, "d1": 1.0}})
        result = evaluate_prefs(prefs, run, ["prefs_num_prefs_poss", "prefs_num_prefs_ful"])
        # Ranked 4, 3, 2, 1: of 1>2, 1>3, 2>3, 2>4, 1>4 none is fulfilled.
        assert result.aggregate == {"prefs_num_prefs_poss": 5.0, "prefs_num_prefs_ful": 0.0}
        reversed_run = Run.from_dict({"q": {"d1": 4.0, "d2": 3.0, "d3": 2.0, "d4": 1.0}})
        assert evaluate_prefs(prefs, reversed_run, ["prefs_num_prefs_ful"]).aggregate == {
            "prefs_num_prefs_ful": 5.0
        }


class TestJudgmentGroups:
    def test_it_averages_each_users_qrels_as_trec_eval_does(self, test_dir: Path) -> None:
        # Three users from qrels.test: as judged, with every third judgment dropped, and with the
        # grades of query 302 raised to 2; each user's values come from the plain evaluator.
        lines = [line.split() for line in (FIXTURES / "qrels.test").read_text().splitlines()]
        users = {
            "a": [(q, d, int(r)) for q, _, d, r in lines],
            "b": [(q, d, int(r)) for i, (q, _, d, r) in enumerate(lines) if i % 3],
            "c": [(q, d, 2 * int(r) if q == "302" else int(r)) for q, _, d, r in lines],
        }
        rows = [(q, user, d, r) for user, judged in users.items() for q, d, r in judged]
        groups = QrelsJG.from_rows(*(list(c) for c in zip(*rows, strict=True)))
        run = read_run(FIXTURES / "results.test")
        names = ["map_avgjg", "P_avgjg.5,100", "Rprec_mult_avgjg.0.5,1.0,2.0"]
        result = evaluate_jg(groups, run, names, rel_level=1)
        plain = {
            user: evaluate(
                Qrels.from_dict({q: {d: r for qq, d, r in judged if qq == q} for q in ("301", "302", "303")}),
                run,
                ["map", "P.5,100", "Rprec_mult.0.5,1.0,2.0"],
            )
            for user, judged in users.items()
        }
        for key, base in [("map_avgjg", "map"), ("P_avgjg_5", "P_5"), ("P_avgjg_100", "P_100"),
                          ("Rprec_mult_avgjg_0.50", "Rprec_mult_0.50"), ("Rprec_mult_avgjg_2.00", "Rprec_mult_2.00")]:  # fmt: skip
            expected_values = np.mean([plain[u].values[base] for u in users], axis=0)
            np.testing.assert_allclose(result.values[key], expected_values, rtol=1e-12)

    def test_it_computes_yaap_from_ap_and_r(self) -> None:
        qrels, run = read_qrels(FIXTURES / "qrels.test"), read_run(FIXTURES / "results.test")
        result = evaluate(qrels, run, ["yaap", "map", "num_rel"])
        total = result.values["map"] * result.values["num_rel"]
        expected_values = np.log((1 + total) / (1 + result.values["num_rel"] - total))
        np.testing.assert_allclose(result.values["yaap"], expected_values, rtol=1e-12)
        assert "yaap" not in " ".join(trec_eval_all_trec_names())

    def test_it_reads_qrels_jg_through_the_command(self, tmp_path: Path) -> None:
        groups, run = tmp_path / "qrels.jg", tmp_path / "run"
        groups.write_text("q1 u1 d1 1\nq1 u1 d3 0\n# a comment\nq1 u2 d1 1\nq1 u2 d3 1\n")
        run.write_text("q1 Q0 d1 1 0.9 r\nq1 Q0 d2 2 0.8 r\nq1 Q0 d3 3 0.7 r\n")
        out = trec_eval(f"-q -R qrels_jg -m map_avgjg -m P_avgjg.2 {groups} {run}")
        assert out == [
            "map_avgjg             \tq1\t0.9167", "P_avgjg_2             \tq1\t0.5000",
            "map_avgjg             \tall\t0.9167", "P_avgjg_2             \tall\t0.5000",
        ]  # fmt: skip

    def test_it_names_a_document_judged_twice_by_one_group(self, tmp_path: Path) -> None:
        path = tmp_path / "qrels.jg"
        path.write_text("q1 u1 d1 1\nq1 u2 d1 0\nq1 u1 d1 0\n")
        with pytest.raises(
            FormatError, match=r"qrels.jg:3: document 'd1' is judged twice by one judgment group \(line 1\)"
        ):
            read_qrels_jg(path)
        path.write_text("q1 u1 d1 high\n")
        with pytest.raises(FormatError, match=r"qrels.jg:1: relevance 'high' is not an integer"):
            read_qrels_jg(path)


def trec_eval_all_trec_names() -> list[str]:
    from evalcore.retrieval import NICKNAMES

    return list(NICKNAMES["all_trec"])
