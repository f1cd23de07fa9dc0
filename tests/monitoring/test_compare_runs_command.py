"""`compare_runs`: the JSON contract, and statistics equal to scipy's on pytrec_eval's per-query values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from django.core.management import call_command, load_command_class
from django.core.management.base import CommandError
from scipy import stats
from statsmodels.formula.api import ols
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.multitest import multipletests

from evalcore.comparison_extras import many_systems_json

ROOT = Path(__file__).resolve().parents[2]


def write_run(path: Path, run: dict[str, dict[str, float]]) -> Path:
    path.write_text(
        "".join(
            f"{qid} Q0 {doc} {rank} {score} {path.stem}\n"
            for qid, docs in run.items()
            for rank, (doc, score) in enumerate(docs.items(), start=1)
        )
    )
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, object]:
    rng = np.random.default_rng(3)
    qrels = {f"q{q}": {f"d{d}": int(rng.integers(0, 3)) for d in range(20)} for q in range(40)}
    runs = {}
    for name, noise in (("bm25.run", 1.0), ("dense.run", 0.6), ("random.run", 50.0)):
        runs[name] = {
            qid: {doc: float(rel + rng.normal(0, noise)) for doc, rel in docs.items()}
            for qid, docs in qrels.items()
        }
    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text("".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items()))
    paths = [write_run(tmp_path / name, run) for name, run in runs.items()]
    return {"qrels": qrels, "runs": runs, "qrels_path": qrels_path, "run_paths": paths}


def compare(files: dict[str, object], *extra: str) -> dict:  # type: ignore[type-arg]
    args = ["--qrels", str(files["qrels_path"])]
    for path in files["run_paths"]:  # type: ignore[attr-defined]
        args += ["--run", str(path)]
    out = StringIO()
    call_command("compare_runs", *args, *extra, stdout=out)
    return json.loads(out.getvalue()) if "--json" in extra else {"text": out.getvalue()}


class TestCompareRuns:
    def test_it_prints_the_json_contract(self, files: dict[str, object]) -> None:
        data = compare(files, "-m", "map", "-m", "P@10", "--json")
        assert set(data) == {"means_over", "pairs_over", "n_queries_paired", "runs", "pairs", "many_systems"}
        assert set(data["runs"]) == {"bm25.run", "dense.run", "random.run"}
        assert set(data["runs"]["bm25.run"]) == {"map", "P@10"}
        assert set(data["runs"]["bm25.run"]["map"]) == {"mean", "ci_low", "ci_high", "n_queries"}
        assert len(data["pairs"]) == 6  # 3 pairs x 2 measures
        assert set(data["pairs"][0]) == {"a", "b", "measure", "diff", "p_value", "p_adjusted", "significant"}

    def test_it_matches_pytrec_eval_means_and_scipys_t_test(self, files: dict[str, object]) -> None:
        data = compare(files, "-m", "map", "--json", "--correction", "holm")
        qrels = files["qrels"]
        per_query = {
            name: pytrec_eval.RelevanceEvaluator(qrels, {"map"}).evaluate(run)  # type: ignore[arg-type]
            for name, run in files["runs"].items()  # type: ignore[attr-defined]
        }
        qids = sorted(qrels)  # type: ignore[arg-type]
        vectors = {name: np.array([values[q]["map"] for q in qids]) for name, values in per_query.items()}
        for name, vector in vectors.items():
            summary = data["runs"][name]["map"]
            assert summary["mean"] == pytest.approx(vector.mean(), abs=1e-12)
            assert summary["ci_low"] <= summary["mean"] <= summary["ci_high"]
        p_values = []
        for pair in data["pairs"]:
            expected = stats.ttest_rel(vectors[pair["a"]], vectors[pair["b"]]).pvalue
            assert pair["p_value"] == pytest.approx(expected, rel=1e-9)
            assert pair["diff"] == pytest.approx(
                vectors[pair["a"]].mean() - vectors[pair["b"]].mean(), abs=1e-12
            )
            p_values.append(pair["p_value"])
        reject, adjusted, _, _ = multipletests(p_values, alpha=0.05, method="holm")
        assert [pair["p_adjusted"] for pair in data["pairs"]] == pytest.approx(list(adjusted), rel=1e-12)
        assert [pair["significant"] for pair in data["pairs"]] == list(reject)
        by_pair = {(pair["a"], pair["b"]): pair for pair in data["pairs"]}
        assert by_pair[("bm25.run", "random.run")]["significant"] is True

    def test_it_adds_the_statistics_of_many_systems_as_the_web_computes_them(
        self, files: dict[str, object]
    ) -> None:
        """Per measure: the ANOVA equal to statsmodels' on pytrec_eval's per-query values, and every figure
        `many_systems_json` gives for them (the comparison job's), with the runs named."""
        data = compare(files, "-m", "map", "-m", "P@10", "--json")
        assert set(data["many_systems"]) == {"map", "P@10"}
        qrels = files["qrels"]
        names = ["bm25.run", "dense.run", "random.run"]
        per_query = {
            name: pytrec_eval.RelevanceEvaluator(qrels, {"map"}).evaluate(files["runs"][name])  # type: ignore[arg-type,index]
            for name in names
        }
        qids = sorted(qrels)  # type: ignore[arg-type]
        scores = np.array([[per_query[name][q]["map"] for q in qids] for name in names])
        frame = pd.DataFrame(
            {"score": scores.ravel(), "system": np.repeat(names, len(qids)), "topic": qids * len(names)}
        )
        expected = anova_lm(ols("score ~ C(system) + C(topic)", data=frame).fit())
        stats_map = data["many_systems"]["map"]
        assert stats_map["anova"]["systems"]["f"] == pytest.approx(expected.loc["C(system)", "F"], rel=1e-9)
        assert stats_map["anova"]["systems"]["p_value"] == pytest.approx(
            expected.loc["C(system)", "PR(>F)"], rel=1e-6
        )
        assert stats_map["anova"]["topics"]["df"] == len(qids) - 1
        reference = many_systems_json(scores, [0, 1, 2], alpha=0.05)
        assert [(pair["run_a"], pair["run_b"]) for pair in stats_map["tukey"]["pairs"]] == [
            ("bm25.run", "dense.run"), ("bm25.run", "random.run"), ("dense.run", "random.run"),
        ]  # fmt: skip
        for got, want in zip(stats_map["tukey"]["pairs"], reference["tukey"]["pairs"], strict=True):
            assert got["p_value"] == pytest.approx(want["p_value"], rel=1e-9)
            assert got["mean_difference"] == pytest.approx(want["mean_difference"], abs=1e-12)
            assert got["significant"] == want["significant"]
        power = stats_map["discriminative_power"]
        assert (power["pairs"], power["significant"]) == (3, reference["discriminative_power"]["significant"])
        assert {pair["run_a"] for pair in power["p_values"]} == {"bm25.run", "dense.run"}
        assert stats_map["notes"] == []

    def test_it_says_why_a_statistic_of_many_systems_is_missing(self, files: dict[str, object]) -> None:
        """Two runs: no ANOVA or Tukey (they need three), discriminative power over the one pair."""
        args = ["--qrels", str(files["qrels_path"]), "-m", "map"]
        for path in files["run_paths"][:2]:  # type: ignore[index]
            args += ["--run", str(path)]
        out = StringIO()
        call_command("compare_runs", *args, "--json", stdout=out)
        stats_map = json.loads(out.getvalue())["many_systems"]["map"]
        assert (stats_map["anova"], stats_map["tukey"]) == (None, None)
        assert stats_map["discriminative_power"]["pairs"] == 1
        out = StringIO()
        call_command("compare_runs", *args, stdout=out)
        assert "statistics of many systems, map" in out.getvalue() and "two-way ANOVA" not in out.getvalue()
        assert "of 1 pairs significant" in out.getvalue()

    def test_it_is_deterministic_with_the_randomization_test(self, files: dict[str, object]) -> None:
        first = compare(files, "-m", "ndcg_cut_10", "--test", "randomization", "--json", "--seed", "5")
        second = compare(files, "-m", "ndcg_cut_10", "--test", "randomization", "--json", "--seed", "5")
        assert first == second

    def test_it_prints_a_readable_table(self, files: dict[str, object]) -> None:
        text = compare(files, "-m", "map", "--correction", "bh")["text"]
        assert "means over the qrels queries the run answered (trec_eval's default)" in text
        assert "95% bootstrap confidence intervals" in text and "over 40 queries" in text
        assert "paired t test, bh correction" in text
        assert "bm25.run" in text
        assert "statistics of many systems, map" in text and "two-way ANOVA" in text
        assert "Tukey's HSD (" in text and "discriminative power (bootstrap test, alpha 0.05" in text

    def test_it_needs_two_runs_with_distinct_names(self, files: dict[str, object]) -> None:
        path = str(files["run_paths"][0])  # type: ignore[index]
        with pytest.raises(CommandError, match="at least two runs"):
            call_command("compare_runs", "--qrels", str(files["qrels_path"]), "--run", path, "-m", "map")
        with pytest.raises(CommandError, match="must differ"):
            call_command(
                "compare_runs", "--qrels", str(files["qrels_path"]), "--run", path, "--run", path, "-m", "map"
            )

    def test_it_compares_numeric_measures_of_a_set_and_refuses_text_alone(
        self, files: dict[str, object]
    ) -> None:
        data = compare(files, "-m", "official", "--json")
        measures = {pair["measure"] for pair in data["pairs"]}
        assert "map" in measures and "runid" not in measures
        with pytest.raises(CommandError, match="numeric measure"):
            compare(files, "-m", "relstring", "--json")

    def test_it_runs_from_the_shell_without_secret_key(self, files: dict[str, object]) -> None:
        env = {
            k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE"}
        }
        args = ["--qrels", str(files["qrels_path"])]
        for path in files["run_paths"]:  # type: ignore[attr-defined]
            args += ["--run", str(path)]
        done = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "compare_runs", *args, "-m", "map", "--json"],
            capture_output=True, text=True, env=env, cwd=ROOT,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert set(json.loads(done.stdout)) == {
            "means_over",
            "pairs_over",
            "n_queries_paired",
            "runs",
            "pairs",
            "many_systems",
        }
        assert load_command_class("monitoring", "compare_runs").requires_system_checks == []


def eval_retrieval(qrels: Path, run: Path, *extra: str) -> dict:  # type: ignore[type-arg]
    out = StringIO()
    call_command("eval_retrieval", "--qrels", str(qrels), "--run", str(run), *extra, "--json", stdout=out)
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


class TestQueriesAveragedOver:
    @pytest.fixture
    def partial(self, files: dict[str, object], tmp_path: Path) -> dict[str, object]:
        """bm25 answers only 30 of the 40 qrels queries."""
        runs = dict(files["runs"])  # type: ignore[call-overload]
        runs["bm25.run"] = {qid: docs for qid, docs in runs["bm25.run"].items() if int(qid[1:]) < 30}
        (tmp_path / "partial").mkdir()
        paths = [write_run(tmp_path / "partial" / name, run) for name, run in runs.items()]
        return {**files, "runs": runs, "run_paths": paths}

    def test_it_averages_a_run_over_the_queries_it_answered_as_eval_retrieval(
        self, partial: dict[str, object]
    ) -> None:
        data = compare(partial, "-m", "map", "-m", "P_10", "--json")
        qrels_path, bm25 = partial["qrels_path"], partial["run_paths"][0]  # type: ignore[index]
        plain = eval_retrieval(qrels_path, bm25, "-m", "map", "-m", "P_10")  # type: ignore[arg-type]
        for measure in ("map", "P_10"):
            summary = data["runs"]["bm25.run"][measure]
            assert summary["mean"] == plain["aggregate"][measure] and summary["n_queries"] == 30
            assert data["runs"]["dense.run"][measure]["n_queries"] == 40
        assert data["means_over"] == "the qrels queries the run answered (trec_eval's default)"
        assert data["n_queries_paired"] == 40 and "missing ones as 0" in data["pairs_over"]

    def test_it_counts_missing_queries_as_zero_with_c_as_eval_retrieval_c(
        self, partial: dict[str, object]
    ) -> None:
        data = compare(partial, "-m", "map", "-c", "--json")
        qrels_path, bm25 = partial["qrels_path"], partial["run_paths"][0]  # type: ignore[index]
        complete = eval_retrieval(qrels_path, bm25, "-m", "map", "-c")  # type: ignore[arg-type]
        assert data["runs"]["bm25.run"]["map"]["mean"] == complete["aggregate"]["map"]
        assert data["runs"]["bm25.run"]["map"]["n_queries"] == 40
        assert data["means_over"].startswith("every qrels query")
        text = compare(partial, "-m", "map")["text"]
        assert (
            "over 40 queries: the qrels queries any of the runs answered, a run's missing ones as 0" in text
        )
