"""`eval_retrieval` on real TREC files: trec_eval's output, the JSON contract, and clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from django.core.management import call_command, load_command_class
from django.core.management.base import CommandError

ROOT = Path(__file__).resolve().parents[2]


def write_files(tmp_path: Path, seed: int = 7) -> tuple[Path, Path, dict, dict]:  # type: ignore[type-arg]
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(1, 31):
        qid = f"q{q}"
        docs = [f"doc{d}" for d in rng.choice(200, size=40, replace=False)]
        qrels[qid] = {doc: int(rng.integers(0, 4)) for doc in docs[:15]}
        # Coarse scores make ties, which trec_eval breaks by docno descending.
        run[qid] = {doc: float(rng.integers(0, 5)) for doc in docs[5:]}
    run["q_unjudged"] = {"doc1": 1.0}
    qrels["q_missing_from_run"] = {"doc3": 1}
    qrels_path = tmp_path / "qrels.txt"
    run_path = tmp_path / "run.txt"
    qrels_path.write_text(
        "".join(f"{qid} 0 {doc} {rel}\n" for qid, docs in qrels.items() for doc, rel in docs.items())
    )
    run_path.write_text(
        "".join(
            f"{qid} Q0 {doc} {rank} {score} system\n"
            for qid, docs in run.items()
            for rank, (doc, score) in enumerate(docs.items(), start=1)
        )
    )
    return qrels_path, run_path, qrels, run


def run_command(*args: str) -> str:
    out = StringIO()
    call_command("eval_retrieval", *args, stdout=out)
    return out.getvalue()


class TestEvalRetrieval:
    def test_it_prints_trec_evals_three_columns_for_the_standard_set(self, tmp_path: Path) -> None:
        qrels_path, run_path, qrels, run = write_files(tmp_path)
        lines = run_command("--qrels", str(qrels_path), "--run", str(run_path)).splitlines()
        rows = {line.split("\t")[0].strip(): line.split("\t") for line in lines}
        assert lines[:2] == ["runid                 \tall\tsystem", "num_q                 \tall\t30"]
        assert rows["map"][1] == "all"
        reference = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P_10", "bpref"}).evaluate(run)
        expected_map = np.mean([values["map"] for values in reference.values()])
        assert rows["map"][2] == f"{expected_map:.4f}"
        assert rows["P_10"][2] == f"{np.mean([v['P_10'] for v in reference.values()]):.4f}"
        assert "iprec_at_recall_0.00" in rows

    def test_it_matches_pytrec_eval_per_query_in_json(self, tmp_path: Path) -> None:
        qrels_path, run_path, qrels, run = write_files(tmp_path)
        output = run_command(
            "--qrels", str(qrels_path), "--run", str(run_path), "-m", "map", "-m", "ndcg_cut_10",
            "-m", "P_5", "-m", "recip_rank", "--per-query", "--json",
        )  # fmt: skip
        data = json.loads(output)
        assert set(data) == {"aggregate", "per_query"}
        reference = pytrec_eval.RelevanceEvaluator(
            qrels, {"map", "ndcg_cut_10", "P_5", "recip_rank"}
        ).evaluate(run)
        assert set(data["per_query"]) == set(reference)
        for qid, values in reference.items():
            for measure in ("map", "ndcg_cut_10", "P_5", "recip_rank"):
                assert data["per_query"][qid][measure] == pytest.approx(values[measure], abs=1e-12)

    def test_it_keys_output_by_the_names_as_given(self, tmp_path: Path) -> None:
        qrels_path, run_path, qrels, run = write_files(tmp_path)
        data = json.loads(
            run_command(
                "--qrels", str(qrels_path), "--run", str(run_path), "-m", "nDCG@10", "-m", "AP", "--json"
            )
        )
        assert data == {
            "aggregate": {
                "nDCG@10": pytest.approx(data["aggregate"]["nDCG@10"]),
                "AP": data["aggregate"]["AP"],
            }
        }
        reference = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"}).evaluate(run)
        assert data["aggregate"]["nDCG@10"] == pytest.approx(
            np.mean([v["ndcg_cut_10"] for v in reference.values()])
        )

    def test_it_counts_missing_queries_as_zero_with_c(self, tmp_path: Path) -> None:
        qrels_path, run_path, qrels, run = write_files(tmp_path)
        plain = json.loads(
            run_command("--qrels", str(qrels_path), "--run", str(run_path), "-m", "map", "--json")
        )
        complete = json.loads(
            run_command("--qrels", str(qrels_path), "--run", str(run_path), "-m", "map", "-c", "--json")
        )
        assert complete["aggregate"]["map"] == pytest.approx(plain["aggregate"]["map"] * 30 / 31)

    def test_it_applies_the_relevance_level(self, tmp_path: Path) -> None:
        qrels_path, run_path, qrels, run = write_files(tmp_path)
        data = json.loads(
            run_command("--qrels", str(qrels_path), "--run", str(run_path), "-m", "P_10", "-l", "2", "--json")
        )
        reference = pytrec_eval.RelevanceEvaluator(qrels, {"P_10"}, relevance_level=2).evaluate(run)
        assert data["aggregate"]["P_10"] == pytest.approx(np.mean([v["P_10"] for v in reference.values()]))

    def test_it_prints_integers_for_counts(self, tmp_path: Path) -> None:
        qrels_path, run_path, _, _ = write_files(tmp_path)
        data = json.loads(
            run_command("--qrels", str(qrels_path), "--run", str(run_path), "-m", "num_rel_ret", "--json")
        )
        assert isinstance(data["aggregate"]["num_rel_ret"], int)

    def test_it_names_the_file_and_line_of_a_malformed_run(self, tmp_path: Path) -> None:
        qrels_path, _, _, _ = write_files(tmp_path)
        bad = tmp_path / "bad.run"
        bad.write_text("q1 Q0 doc1 1 2.5 sys\nq1 Q0 doc2 2 high sys\n")
        with pytest.raises(CommandError, match=r"bad\.run:2: .*'high'"):
            run_command("--qrels", str(qrels_path), "--run", str(bad))

    def test_it_names_the_file_and_line_of_a_short_qrels_line(self, tmp_path: Path) -> None:
        _, run_path, _, _ = write_files(tmp_path)
        bad = tmp_path / "bad.qrels"
        bad.write_text("q1 0 doc1 1\nq1 0 doc2\n")
        with pytest.raises(CommandError, match=r"bad\.qrels:2: "):
            run_command("--qrels", str(bad), "--run", str(run_path))

    def test_it_refuses_a_duplicate_docno_unless_asked_to_keep_the_first(self, tmp_path: Path) -> None:
        qrels_path, _, _, _ = write_files(tmp_path)
        dup = tmp_path / "dup.run"
        dup.write_text("q1 Q0 doc1 1 2.5 sys\nq1 Q0 doc2 2 2.0 sys\nq1 Q0 doc1 3 1.0 sys\n")
        with pytest.raises(CommandError, match=r"dup\.run:3: .*doc1"):
            run_command("--qrels", str(qrels_path), "--run", str(dup))
        data = json.loads(
            run_command(
                "--qrels",
                str(qrels_path),
                "--run",
                str(dup),
                "--on-duplicate",
                "first",
                "-m",
                "num_ret",
                "--json",
            )
        )
        assert data["aggregate"]["num_ret"] == 2

    def test_it_reports_a_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(CommandError, match="nope.txt: no such file"):
            run_command("--qrels", str(tmp_path / "nope.txt"), "--run", str(tmp_path / "nope.txt"))

    def test_it_rejects_an_unknown_measure_and_suggests_the_closest_names(self, tmp_path: Path) -> None:
        qrels_path, run_path, _, _ = write_files(tmp_path)
        with pytest.raises(CommandError, match="unknown measure 'mapp'; did you mean 'map'"):
            run_command("--qrels", str(qrels_path), "--run", str(run_path), "-m", "mapp")
        with pytest.raises(CommandError, match="did you mean 'ndcg_cut_10'"):
            run_command("--qrels", str(qrels_path), "--run", str(run_path), "-m", "ndcg_cutt_10")
        with pytest.raises(CommandError, match=r"did you mean 'ndcg_cut_10' or 'ndcg_exp_cut_10'\?$"):
            run_command("--qrels", str(qrels_path), "--run", str(run_path), "-m", "ndgc_cut_10")

    def test_it_says_a_directory_is_not_a_file(self, tmp_path: Path) -> None:
        _, run_path, _, _ = write_files(tmp_path)
        with pytest.raises(CommandError, match=r": is a directory, not a file"):
            run_command("--qrels", str(tmp_path), "--run", str(run_path))

    def test_it_prints_all_trec_per_query_with_relstring_and_runid_in_json(self, tmp_path: Path) -> None:
        qrels_path, run_path, _, _ = write_files(tmp_path)
        data = json.loads(
            run_command("--qrels", str(qrels_path), "--run", str(run_path), "-m", "all_trec", "-q", "--json")
        )
        assert data["aggregate"]["runid"] == "system"
        assert "relstring" not in data["aggregate"]  # trec_eval prints it per query only
        assert len(data["per_query"]["q1"]["relstring"]) == 10
        assert isinstance(data["aggregate"]["num_nonrel_judged_ret"], int)
        assert {"infAP", "gm_bpref", "Rndcg", "set_F", "utility", "11pt_avg"} <= set(data["aggregate"])

    def test_it_ignores_extra_run_columns_unless_strict(self, tmp_path: Path) -> None:
        qrels_path, _, _, _ = write_files(tmp_path)
        wide = tmp_path / "wide.run"
        wide.write_text("q1 Q0 doc1 1 2.5 sys extra\nq1 Q0 doc2 2 2.0 sys extra\n")
        data = json.loads(
            run_command("--qrels", str(qrels_path), "--run", str(wide), "-m", "num_ret", "--json")
        )
        assert data["aggregate"]["num_ret"] == 2
        with pytest.raises(CommandError, match=r"wide\.run:1: .*found 7; trec_eval ignores the columns"):
            run_command("--qrels", str(qrels_path), "--run", str(wide), "--strict")

    def test_it_reads_relevance_written_as_a_float(self, tmp_path: Path) -> None:
        qrels = tmp_path / "floats.qrels"
        qrels.write_text("q1 0 doc1 1.0\nq1 0 doc2 0.0\n")
        run = tmp_path / "r.run"
        run.write_text("q1 Q0 doc2 1 2.0 s\nq1 Q0 doc1 2 1.0 s\n")
        data = json.loads(run_command("--qrels", str(qrels), "--run", str(run), "-m", "recip_rank", "--json"))
        assert data["aggregate"]["recip_rank"] == 0.5
        with pytest.raises(CommandError, match=r"floats\.qrels:1: relevance '1\.0' is not an integer"):
            run_command("--qrels", str(qrels), "--run", str(run), "--strict")

    def test_it_skips_system_checks(self) -> None:
        assert load_command_class("monitoring", "eval_retrieval").requires_system_checks == []


def manage(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python manage.py ...` in a fresh process, as a user runs it."""
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args], capture_output=True, text=True, env=env, cwd=ROOT
    )


def bare_environment() -> dict[str, str]:
    """The environment without the project's settings: no SECRET_KEY, DEBUG or settings module."""
    unset = {"SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE", "DATABASE_URL"}
    return {key: value for key, value in os.environ.items() if key not in unset}


class TestFromTheShell:
    def test_it_runs_without_secret_key_or_debug(self, tmp_path: Path) -> None:
        qrels_path, run_path, qrels, run = write_files(tmp_path)
        done = manage(
            "eval_retrieval", "--qrels", str(qrels_path), "--run", str(run_path), "-m", "map", "--json",
            env=bare_environment(),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        reference = pytrec_eval.RelevanceEvaluator(qrels, {"map"}).evaluate(run)
        assert json.loads(done.stdout)["aggregate"]["map"] == pytest.approx(
            np.mean([v["map"] for v in reference.values()])
        )

    def test_it_reports_an_error_in_one_line_without_a_traceback(self, tmp_path: Path) -> None:
        qrels_path, run_path, _, _ = write_files(tmp_path)
        for args in (["-m", "mapp"], ["--qrels", str(tmp_path)], ["--run", str(tmp_path / "absent.run")]):
            command = ["eval_retrieval", "--qrels", str(qrels_path), "--run", str(run_path), *args]
            done = manage(*command, env=bare_environment())
            assert done.returncode == 1
            assert done.stdout == ""
            assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
            assert done.stderr.startswith("CommandError: ")

    def test_it_loads_neither_the_web_stack_nor_scipy(self, tmp_path: Path) -> None:
        qrels_path, run_path, _, _ = write_files(tmp_path)
        argv = [
            "manage.py",
            "eval_retrieval",
            "--qrels",
            str(qrels_path),
            "--run",
            str(run_path),
            "-m",
            "P_5",
        ]
        script = (
            f"import sys; sys.argv = {argv!r}; import manage; manage.main(); "
            "loaded = [m for m in ('scipy', 'django.urls', 'rest_framework', 'evalplatform.settings', "
            "'annotations.models', 'celery') if m in sys.modules]; print('loaded:', loaded, file=sys.stderr)"
        )
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=bare_environment(), cwd=ROOT
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr.strip() == "loaded: []"
