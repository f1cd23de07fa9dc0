"""`eval_retrieval` on real TREC files: trec_eval's output, the JSON contract, and clear errors."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from django.core.management import call_command
from django.core.management.base import CommandError


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
        assert lines[0] == "num_q                 \tall\t30"
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

    def test_it_rejects_an_unknown_measure(self, tmp_path: Path) -> None:
        qrels_path, run_path, _, _ = write_files(tmp_path)
        with pytest.raises(CommandError, match="mapp"):
            run_command("--qrels", str(qrels_path), "--run", str(run_path), "-m", "mapp")
