"""`calibrate_judge` and `ppi_evaluate`: the JSON contracts of issue 24 against sklearn, the krippendorff
package and the library, the text tables, --help, and a bad line answered with file:line: reason."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from sklearn.metrics import cohen_kappa_score

from evalcore import trec
from evalcore.machine_judges import ppi_compare, ppi_evaluate, read_machine_labels

ROOT = Path(__file__).resolve().parents[2]
DOCS = [f"d{i}" for i in range(25)]


class Collection:
    """40 topics graded 0-2 by people; a lenient noisy machine copy as JSON Lines; 12 topics judged by
    people; three runs of growing quality."""

    def __init__(self, directory: Path, seed: int = 3) -> None:
        rng = np.random.default_rng(seed)
        self.truth = {f"t{q:02d}": {d: int(rng.integers(0, 3)) for d in DOCS} for q in range(40)}
        self.machine = {
            q: {d: min(2, g + int(rng.choice([-1, 0, 1, 1]))) if g else int(rng.integers(0, 2)) for d, g in docs.items()}
            for q, docs in self.truth.items()
        }  # fmt: skip
        self.human_topics = sorted(rng.choice(sorted(self.truth), 12, replace=False).tolist())
        self.human_path = directory / "human.qrels"
        self.human_path.write_text(
            "".join(f"{q} 0 {d} {g}\n" for q in self.human_topics for d, g in self.truth[q].items())
        )
        self.machine_path = directory / "judge.jsonl"
        self.machine_path.write_text(
            "".join(
                json.dumps({"qid": q, "doc_id": d, "label": g, "confidence": 0.8, "rationale": "why"}) + "\n"
                for q, docs in self.machine.items()
                for d, g in docs.items()
            )
        )
        self.runs = []
        for r in range(3):
            path = directory / f"sys{r}.run"
            rows = []
            for q, docs in self.truth.items():
                scores = rng.random(len(DOCS)) + 0.4 * r * np.array(list(docs.values()))
                rows += [
                    f"{q} Q0 {d} {i + 1} {s:.5f} sys{r}\n"
                    for i, (d, s) in enumerate(zip(DOCS, scores, strict=True))
                ]
            path.write_text("".join(rows))
            self.runs.append(path)

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        human = [self.truth[q][d] for q in self.human_topics for d in DOCS]
        machine = [self.machine[q][d] for q in self.human_topics for d in DOCS]
        return np.array(human), np.array(machine)


def command(name: str, *args: str) -> str:
    out = StringIO()
    call_command(name, *args, stdout=out)
    return out.getvalue()


def manage(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "DATABASE_URL"}}
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args], capture_output=True, text=True, env=env, timeout=120
    )


class TestCalibrateJudge:
    def test_it_prints_the_json_contract_with_sklearns_and_krippendorffs_numbers(
        self, tmp_path: Path
    ) -> None:
        data = Collection(tmp_path)
        out = json.loads(command("calibrate_judge", "--human", str(data.human_path), "--machine", str(data.machine_path), "--json"))  # fmt: skip
        human, machine = data.pairs()
        assert {"pairs", "cohen_kappa", "cohen_kappa_linear", "cohen_kappa_quadratic", "krippendorff_alpha_ordinal",
                "confusion", "bias", "per_grade", "per_topic"} <= set(out)  # fmt: skip
        assert (
            out["pairs"] == 12 * 25 and out["machine_only_pairs"] == 28 * 25 and out["human_only_pairs"] == 0
        )
        assert out["grades"] == [0, 1, 2]
        for key, weights in (("cohen_kappa", None), ("cohen_kappa_linear", "linear"), ("cohen_kappa_quadratic", "quadratic")):  # fmt: skip
            assert out[key] == pytest.approx(
                cohen_kappa_score(human, machine, labels=[0, 1, 2], weights=weights)
            )
        alpha = krippendorff.alpha(reliability_data=np.vstack([human, machine]).astype(float), level_of_measurement="ordinal")  # fmt: skip
        assert out["krippendorff_alpha_ordinal"] == pytest.approx(alpha)
        confusion = [[0] * 3 for _ in range(3)]
        for h, m in zip(human.tolist(), machine.tolist(), strict=True):
            confusion[h][m] += 1
        assert out["confusion"] == confusion
        assert (
            out["bias"] == pytest.approx(float(np.mean(machine - human))) and out["leaning"] == "more lenient"
        )
        grade_one = next(row for row in out["per_grade"] if row["grade"] == 1)
        ones = human == 1
        assert grade_one["pairs"] == ones.sum()
        assert grade_one["bias"] == pytest.approx(float(np.mean(machine[ones] - 1)))
        assert grade_one["stricter"] == pytest.approx(float(np.mean(machine[ones] < 1)))
        assert [row["topic"] for row in out["per_topic"]] == data.human_topics
        first = out["per_topic"][0]
        mine = slice(0, 25)
        assert first["cohen_kappa"] == pytest.approx(
            cohen_kappa_score(human[mine], machine[mine], labels=[0, 1, 2])
        )
        assert first["exact_agreement"] == pytest.approx(float(np.mean(human[mine] == machine[mine])))
        assert [band["pairs"] for band in out["per_confidence"]] == [
            0,
            0,
            0,
            0,
            300,
        ]  # every confidence is 0.8
        assert out["per_confidence"][4]["exact_agreement"] == pytest.approx(out["exact_agreement"])

    def test_it_ranks_the_runs_on_both_judges_labels(self, tmp_path: Path) -> None:
        data = Collection(tmp_path)
        args = ["--human", str(data.human_path), "--machine", str(data.machine_path)]
        runs = [arg for path in data.runs for arg in ("--run", str(path))]
        out = json.loads(command("calibrate_judge", *args, *runs, "-m", "P_5", "--json"))
        ranking = out["ranking"]
        assert (ranking["measure"], ranking["topics"]) == ("P_5", 12)
        assert [run["name"] for run in ranking["runs"]] == ["sys0", "sys1", "sys2"]
        from evalcore.retrieval import evaluate

        human = trec.read_qrels(data.human_path)
        expected = [evaluate(human, trec.read_run(path), ["P_5"]).aggregate["P_5"] for path in data.runs]
        assert [run["human"] for run in ranking["runs"]] == pytest.approx(expected)
        assert ranking["kendall_tau"] is not None and -1.0 <= ranking["kendall_tau"] <= 1.0
        assert ranking["tau_ap"] is not None and -1.0 <= ranking["tau_ap"] <= 1.0
        text = command("calibrate_judge", *args, *runs)
        assert "3 runs ranked by ndcg_cut_10 on the 12 topics both judged: Kendall's tau" in text

    def test_it_prints_a_readable_report(self, tmp_path: Path) -> None:
        data = Collection(tmp_path)
        text = command(
            "calibrate_judge", "--human", str(data.human_path), "--machine", str(data.machine_path)
        )
        lines = text.splitlines()
        assert lines[0] == "pairs graded by both: 300 (human only: 0, machine only: 700)"
        assert any(line.split()[:2] == ["Cohen's", "kappa"] for line in lines)
        assert "more lenient" in text and "confusion (rows: human grade, columns: machine grade)" in text
        assert lines[lines.index("per topic") + 2].split()[0] == data.human_topics[0]

    def test_it_writes_null_for_undefined_figures(self, tmp_path: Path) -> None:
        (tmp_path / "h.qrels").write_text("q1 0 a 1\nq1 0 b 1\n")
        (tmp_path / "m.qrels").write_text("q1 0 a 1\nq1 0 b 1\nq2 0 c 0\n")
        out = command("calibrate_judge", "--human", str(tmp_path / "h.qrels"), "--machine", str(tmp_path / "m.qrels"), "--json")  # fmt: skip
        assert "NaN" not in out
        data = json.loads(out)
        assert data["cohen_kappa"] is None and data["krippendorff_alpha_ordinal"] is None
        assert "per_confidence" not in data  # qrels carry no confidence
        assert (data["pairs"], data["machine_only_pairs"], data["bias"]) == (2, 1, 0.0)

    def test_it_refuses_files_without_a_shared_pair(self, tmp_path: Path) -> None:
        (tmp_path / "h.qrels").write_text("q1 0 a 1\n")
        (tmp_path / "m.qrels").write_text("q2 0 a 1\n")
        with pytest.raises(CommandError, match="share no graded"):
            command(
                "calibrate_judge",
                "--human",
                str(tmp_path / "h.qrels"),
                "--machine",
                str(tmp_path / "m.qrels"),
            )

    @pytest.mark.parametrize(
        ("line", "reason"),
        [
            ('{"qid": "q1", "doc_id": "b", "label": "relevant"}', "\"label\" must be an integer grade, got 'relevant'"),
            ('{"qid": "q1", "doc_id": "b", "label": 1, "confidence": -0.5}', '"confidence" must be a number from 0 to 1, got -0.5'),
            ('{"qid": "q1", "doc_id": "b", "label": 1', "invalid JSON: expecting ',' delimiter at the end of the line"),
        ],
    )  # fmt: skip
    def test_it_answers_a_bad_machine_line_with_file_line_and_reason(self, tmp_path: Path, line: str, reason: str) -> None:  # fmt: skip
        (tmp_path / "h.qrels").write_text("q1 0 a 1\n")
        bad = tmp_path / "judge.jsonl"
        bad.write_text('{"qid": "q1", "doc_id": "a", "label": 1}\n' + line + "\n")
        done = manage(
            "calibrate_judge", "--human", str(tmp_path / "h.qrels"), "--machine", str(bad), "--json"
        )
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.strip().splitlines() == [f"CommandError: {bad}:2: {reason}"]

    def test_it_answers_a_bad_human_line_with_file_line_and_reason(self, tmp_path: Path) -> None:
        bad = tmp_path / "h.qrels"
        bad.write_text("q1 0 a 1\nq1 0 b\n")
        (tmp_path / "m.qrels").write_text("q1 0 a 1\n")
        done = manage("calibrate_judge", "--human", str(bad), "--machine", str(tmp_path / "m.qrels"))
        assert done.returncode == 1
        assert done.stderr.strip().splitlines() == [f"CommandError: {bad}:2: expected 4 columns (qid iter docno rel), found 3"]  # fmt: skip

    def test_it_explains_itself_in_help(self) -> None:
        done = manage("calibrate_judge", "--help")
        assert done.returncode == 0
        for word in ("--human", "--machine", "--run", "--json", "kappa", "Krippendorff", "confidence"):
            assert word in done.stdout


class TestPPIEvaluate:
    def test_it_prints_the_json_contract_with_the_librarys_numbers(self, tmp_path: Path) -> None:
        data = Collection(tmp_path)
        args = [
            "--run",
            str(data.runs[1]),
            "--machine",
            str(data.machine_path),
            "--human",
            str(data.human_path),
        ]
        out = json.loads(command("ppi_evaluate", *args, "-m", "ndcg_cut_10", "--json"))
        assert {"measure", "queries", "human_queries", "ppi", "human_only", "machine_only"} <= set(out)
        assert (out["measure"], out["queries"], out["human_queries"], out["run"]) == (
            "ndcg_cut_10",
            40,
            12,
            "sys1",
        )
        for key in ("ppi", "ppi_plus_plus", "human_only", "machine_only"):
            assert {"estimate", "ci_low", "ci_high"} <= set(out[key])
            assert out[key]["ci_low"] < out[key]["estimate"] < out[key]["ci_high"]
        machine = read_machine_labels(data.machine_path).qrels
        expected = ppi_evaluate(
            trec.read_run(data.runs[1]), machine, trec.read_qrels(data.human_path), "ndcg_cut_10"
        )
        assert out["ppi"]["estimate"] == pytest.approx(expected.ppi.estimate)
        assert (out["ppi"]["ci_low"], out["ppi"]["ci_high"]) == pytest.approx((expected.ppi.ci_low, expected.ppi.ci_high))  # fmt: skip
        assert out["ppi_plus_plus"]["lambda"] == pytest.approx(expected.tuning)

    def test_it_corrects_the_machine_with_the_per_query_values_of_both_judges(self, tmp_path: Path) -> None:
        data = Collection(tmp_path)
        from evalcore.retrieval import Qrels, evaluate

        run = trec.read_run(data.runs[2])
        per_machine = evaluate(Qrels.from_dict(data.machine), run, ["P_10"]).per_query
        per_human = evaluate(
            Qrels.from_dict({q: data.truth[q] for q in data.human_topics}), run, ["P_10"]
        ).per_query
        f_all = [float(per_machine[q]["P_10"]) for q in sorted(data.machine)]
        y = [float(per_human[q]["P_10"]) for q in data.human_topics]
        f = [float(per_machine[q]["P_10"]) for q in data.human_topics]
        expected = ppi_compare(f_all, y, f, alpha=0.1)
        args = [
            "--run",
            str(data.runs[2]),
            "--machine",
            str(data.machine_path),
            "--human",
            str(data.human_path),
        ]
        out = json.loads(command("ppi_evaluate", *args, "-m", "P_10", "--alpha", "0.1", "--json"))
        assert out["ppi"]["estimate"] == pytest.approx(float(np.mean(f_all) + np.mean(np.subtract(y, f))))
        assert out["human_only"]["estimate"] == pytest.approx(float(np.mean(y)))
        assert out["machine_only"]["estimate"] == pytest.approx(float(np.mean(f_all)))
        assert out["ppi"]["ci_high"] == pytest.approx(expected.ppi.ci_high) and out["alpha"] == 0.1

    def test_it_gives_intervals_for_the_judged_queries_mean_with_estimand_queries(
        self, tmp_path: Path
    ) -> None:
        data = Collection(tmp_path)
        args = [
            "--run",
            str(data.runs[1]),
            "--machine",
            str(data.machine_path),
            "--human",
            str(data.human_path),
        ]
        population = json.loads(command("ppi_evaluate", *args, "-m", "map", "--json"))
        queries = json.loads(command("ppi_evaluate", *args, "-m", "map", "--estimand", "queries", "--json"))
        assert (population["estimand"], queries["estimand"]) == ("population", "queries")
        assert queries["ppi"]["estimate"] == pytest.approx(population["ppi"]["estimate"])
        machine = read_machine_labels(data.machine_path).qrels
        expected = ppi_evaluate(
            trec.read_run(data.runs[1]), machine, trec.read_qrels(data.human_path), "map", estimand="queries"
        )
        assert queries["ppi"]["ci_low"] == pytest.approx(expected.ppi.ci_low)
        assert (
            queries["ppi"]["ci_high"] - queries["ppi"]["ci_low"]
            < population["ppi"]["ci_high"] - population["ppi"]["ci_low"]
        )
        assert queries["machine_only"]["ci_low"] == queries["machine_only"]["estimate"]
        text = command("ppi_evaluate", *args, "-m", "map", "--estimand", "queries")
        assert text.splitlines()[0].endswith("95% intervals for the mean over these queries")

    def test_it_prints_a_table(self, tmp_path: Path) -> None:
        data = Collection(tmp_path)
        args = [
            "--run",
            str(data.runs[0]),
            "--machine",
            str(data.machine_path),
            "--human",
            str(data.human_path),
        ]
        lines = command("ppi_evaluate", *args, "-m", "map").splitlines()
        assert (
            lines[0]
            == "map of sys0 over the 40 queries the machine judged, 12 of them judged by people; 95% intervals"
        )
        assert lines[1].split() == ["estimate", "ci_low", "ci_high"]
        assert [line[:22].strip() for line in lines[2:]][::2] == ["PPI", "human only"]
        assert lines[3].startswith("PPI++ (lambda ")

    def test_it_writes_null_for_the_interval_of_one_human_query(self, tmp_path: Path) -> None:
        (tmp_path / "m.qrels").write_text("q1 0 a 1\nq2 0 a 0\nq3 0 a 1\n")
        (tmp_path / "h.qrels").write_text("q2 0 a 1\n")
        (tmp_path / "r.run").write_text("q1 Q0 a 1 1.0 r\nq2 Q0 a 1 1.0 r\nq3 Q0 a 1 1.0 r\n")
        args = ["--run", str(tmp_path / "r.run"), "--machine", str(tmp_path / "m.qrels"), "--human", str(tmp_path / "h.qrels")]  # fmt: skip
        out = command("ppi_evaluate", *args, "-m", "P_1", "--json")
        data = json.loads(out)
        assert "NaN" not in out and "Infinity" not in out
        assert data["ppi"]["estimate"] == pytest.approx(2 / 3 + 1)
        assert data["ppi"]["ci_low"] is None and data["human_only"]["ci_high"] is None
        assert not math.isnan(data["machine_only"]["ci_low"])

    def test_it_refuses_human_queries_outside_the_machines_and_bad_options(self, tmp_path: Path) -> None:
        (tmp_path / "m.qrels").write_text("q1 0 a 1\n")
        (tmp_path / "h.qrels").write_text("q9 0 a 1\n")
        (tmp_path / "empty.qrels").write_text("")
        (tmp_path / "r.run").write_text("q1 Q0 a 1 1.0 r\n")
        base = ["--run", str(tmp_path / "r.run"), "--machine", str(tmp_path / "m.qrels")]
        with pytest.raises(CommandError, match="not among the machine's"):
            command("ppi_evaluate", *base, "--human", str(tmp_path / "h.qrels"), "-m", "map")
        with pytest.raises(CommandError, match="empty.qrels: the file holds no qrels"):
            command("ppi_evaluate", *base, "--human", str(tmp_path / "empty.qrels"), "-m", "map")
        with pytest.raises(CommandError, match="averaged over queries"):
            command("ppi_evaluate", *base, "--human", str(tmp_path / "m.qrels"), "-m", "num_rel")
        with pytest.raises(CommandError, match="Unknown|unknown"):
            command("ppi_evaluate", *base, "--human", str(tmp_path / "m.qrels"), "-m", "ndgc_cut_10")
        with pytest.raises(CommandError, match="--alpha"):
            command("ppi_evaluate", *base, "--human", str(tmp_path / "m.qrels"), "-m", "map", "--alpha", "2")

    def test_it_answers_a_bad_machine_line_with_file_line_and_reason(self, tmp_path: Path) -> None:
        bad = tmp_path / "m.jsonl"
        bad.write_text('{"qid": "q1", "doc_id": "a", "label": 1}\n{"qid": "q1", "doc_id": "a", "label": 0}\n')
        (tmp_path / "h.qrels").write_text("q1 0 a 1\n")
        (tmp_path / "r.run").write_text("q1 Q0 a 1 1.0 r\n")
        done = manage("ppi_evaluate", "--run", str(tmp_path / "r.run"), "--machine", str(bad), "--human", str(tmp_path / "h.qrels"), "-m", "map")  # fmt: skip
        assert done.returncode == 1
        assert done.stderr.strip().splitlines() == [
            f"CommandError: {bad}:2: document 'a' appears twice for query 'q1' (first on line 1)"
        ]

    def test_it_explains_itself_in_help(self) -> None:
        done = manage("ppi_evaluate", "--help")
        assert done.returncode == 0
        for word in (
            "--run",
            "--machine",
            "--human",
            "--alpha",
            "--estimand",
            "--json",
            "prediction-powered",
            "PPI++",
        ):
            assert word in done.stdout
