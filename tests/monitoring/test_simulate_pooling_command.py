"""`simulate_pooling`: the JSON contract of issue 23, the text table, --help and a bad file in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evalcore.pooling import PoolParams, simulate_pooling
from evalcore.pooling.synthetic import synthetic_collection
from evalcore.retrieval import Run

ROOT = Path(__file__).resolve().parents[2]


def write_collection(directory: Path) -> tuple[list[Path], Path, list[Run]]:
    runs, qrels = synthetic_collection(topics=4, runs=5, documents=200, depth=20, seed=11)
    qrels_path = directory / "full.qrels"
    qrels_path.write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.to_dict().items() for d, r in docs.items())
    )
    paths = []
    for run in runs:
        path = directory / f"{run.run_id}.run"
        rows = []
        for qid, docs in run.to_dict().items():
            for rank, (doc, score) in enumerate(sorted(docs.items(), key=lambda item: -item[1]), start=1):
                rows.append(f"{qid} Q0 {doc} {rank} {score} {run.run_id}\n")
        path.write_text("".join(rows))
        paths.append(path)
    return paths, qrels_path, runs


def simulate(*args: str) -> str:
    out = StringIO()
    call_command("simulate_pooling", *args, stdout=out)
    return out.getvalue()


def run_arguments(paths: list[Path]) -> list[str]:
    return [arg for path in paths for arg in ("--run", str(path))]


class TestSimulatePooling:
    def test_it_prints_the_json_contract_with_the_library_numbers(self, tmp_path: Path) -> None:
        paths, qrels_path, _ = write_collection(tmp_path)
        args = ["--qrels", str(qrels_path), *run_arguments(paths), "--strategy", "bandit-mm-ns"]
        data = json.loads(simulate(*args, "--budget", "50", "--step", "20", "--depth", "20", "--json"))
        assert {"strategy", "budget", "steps"} <= set(data)
        assert (data["strategy"], data["budget"]) == ("bandit-mm-ns", 50)
        assert [set(step) for step in data["steps"]] == [{"judged", "relevant_found", "kendall_tau"}] * 3
        from evalcore import trec

        qrels = trec.read_qrels(qrels_path)
        runs = [trec.read_run(path) for path in paths]
        expected = simulate_pooling(runs, qrels, PoolParams("bandit-mm-ns", budget=50, depth=20), step=20)
        assert data["steps"] == [
            {"judged": s.judged, "relevant_found": s.relevant_found, "kendall_tau": s.kendall_tau}
            for s in expected
        ]
        assert [s["judged"] for s in data["steps"]] == [20, 40, 50]

    def test_it_prints_a_table_a_step_every_tenth_of_the_budget_by_default(self, tmp_path: Path) -> None:
        paths, qrels_path, _ = write_collection(tmp_path)
        text = simulate(
            "--qrels", str(qrels_path), *run_arguments(paths), "--strategy", "depth", "--budget", "30"
        )
        lines = text.splitlines()
        assert lines[0] == "strategy depth, budget 30, 5 runs ranked by map"
        assert lines[1].split() == ["judged", "relevant", "kendall_tau"]
        assert [int(line.split()[0]) for line in lines[2:]] == list(range(3, 31, 3))

    def test_it_rejects_a_measure_with_several_columns_and_a_negative_budget(self, tmp_path: Path) -> None:
        paths, qrels_path, _ = write_collection(tmp_path)
        base = ["--qrels", str(qrels_path), *run_arguments(paths[:2]), "--strategy", "mtf"]
        with pytest.raises(CommandError, match="one numeric measure"):
            simulate(*base, "--budget", "10", "-m", "P.5,10")
        with pytest.raises(CommandError, match="budget"):
            simulate(*base, "--budget", "-1")

    def test_it_takes_rrf_k_and_rbp_p_as_a_pool_stores_them(self, tmp_path: Path) -> None:
        from evalcore import trec

        paths, qrels_path, _ = write_collection(tmp_path)
        runs, qrels = [trec.read_run(path) for path in paths], trec.read_qrels(qrels_path)
        base = ["--qrels", str(qrels_path), *run_arguments(paths), "--budget", "40", "--step", "10",
                "--depth", "20", "--json"]  # fmt: skip
        for strategy, option, value, field in (
            ("take-rrf", "--rrf-k", "1", "rrf_k"),
            ("take-rbp", "--rbp-p", "0.5", "rbp_p"),
        ):
            data = json.loads(simulate(*base, "--strategy", strategy, option, value))
            params = PoolParams(
                strategy, budget=40, depth=20, **{field: type(getattr(PoolParams, field))(value)}
            )
            expected = simulate_pooling(runs, qrels, params, step=10)
            assert data[field] == getattr(params, field)
            assert [step["relevant_found"] for step in data["steps"]] == [s.relevant_found for s in expected]
            default = json.loads(simulate(*base, "--strategy", strategy))
            assert default[field] == getattr(PoolParams, field)
        with pytest.raises(CommandError, match="rbp_p must lie in"):
            simulate(*base, "--strategy", "take-rbp", "--rbp-p", "1.5")
        with pytest.raises(CommandError, match="rrf_k must be at least 0"):
            simulate(*base, "--strategy", "take-rrf", "--rrf-k", "-1")

    def test_it_answers_a_bad_run_file_with_its_line_and_a_failing_exit(self, tmp_path: Path) -> None:
        paths, qrels_path, _ = write_collection(tmp_path)
        bad = tmp_path / "bad.run"
        bad.write_text("401 Q0 D1 1 2.0 t\n401 Q0 D2\n")
        env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "DATABASE_URL"}}
        done = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "simulate_pooling", "--qrels", str(qrels_path),
             "--run", str(paths[0]), "--run", str(bad), "--strategy", "mtf", "--budget", "10"],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
        assert done.returncode != 0
        assert done.stderr.strip().splitlines() == [
            f"CommandError: {bad}:2: expected 6 columns (qid Q0 docno rank score tag), found 3"
        ]

    def test_it_explains_itself_in_help(self) -> None:
        done = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "simulate_pooling", "--help"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0
        for word in ("--strategy", "--budget", "--step", "--seed", "bandit-mm-ns", "Kendall"):
            assert word in done.stdout
