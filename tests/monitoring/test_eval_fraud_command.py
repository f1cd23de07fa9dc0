"""`eval_fraud` on a scores CSV: seed 004's worked example, costs at a threshold, time to detection,
the JSON contract and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from sklearn import metrics as sk

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "fraud"
ROOT = Path(__file__).resolve().parent.parent.parent


def run_command(*args: str) -> str:
    out = StringIO()
    call_command("eval_fraud", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def seed_scores(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    """Seed 004's generated data (section 21.4.3), written as the command's CSV."""
    np.random.seed(42)  # noqa: NPY002 - the seed's own generator
    labels = (np.random.random(10000) < 0.01).astype(int)  # noqa: NPY002
    scores = np.random.random(10000)  # noqa: NPY002
    scores[labels == 1] += 0.3
    scores = np.clip(scores, 0, 1)
    path = tmp_path / "scores.csv"
    rows = (f"tx{i},{float(s)!r},{y}\n" for i, (s, y) in enumerate(zip(scores, labels, strict=True)))
    path.write_text("id,score,label\n" + "".join(rows))
    return path, labels, scores


class TestEvalFraud:
    def test_it_reproduces_seed_004s_worked_example(
        self, seed_scores: tuple[Path, np.ndarray, np.ndarray]
    ) -> None:
        path, labels, scores = seed_scores
        data = json.loads(
            run_command(
                "--scores",
                str(path),
                "--threshold",
                "0.5",
                "--fp-cost",
                "100",
                "--fn-cost",
                "10000",
                "--json",
            )
        )
        assert f"{data['detection_rate']:.1%}" == "24.2%"
        assert f"{data['savings']:.1%}" == "23.0%"
        assert data["confusion"] == {"tp": 72, "fp": 5019, "tn": 4886, "fn": 23}
        assert data["realised_fpr"] <= 0.01 and data["target_fpr"] == 0.01
        assert data["roc_auc"] == pytest.approx(sk.roc_auc_score(labels, scores), abs=1e-12)
        assert data["pr_auc"] == pytest.approx(sk.average_precision_score(labels, scores), abs=1e-12)
        assert data["total_cost"] == 731900 and data["cost_per_prediction"] == pytest.approx(73.19)

    def test_it_costs_the_detection_point_without_a_threshold(
        self, seed_scores: tuple[Path, np.ndarray, np.ndarray]
    ) -> None:
        path, labels, scores = seed_scores
        args = ("--scores", str(path), "--fpr", "0.05", "--budget", "100", "--json")
        data = json.loads(run_command(*args, "--fn-cost", "100"))
        assert data["operating_threshold"] == data["threshold"] and data["operating_rule"] == "target_fpr"
        # At equal costs the detection point's false positives cost more than the frauds it catches.
        cheap = json.loads(run_command(*args))
        assert cheap["operating_rule"] == "flag_nothing" and cheap["total_cost"] == cheap["flag_nothing_cost"]
        assert "more than flagging nothing" in cheap["operating_note"]
        flagged = scores >= data["threshold"]
        assert data["confusion"]["fp"] == int((flagged & (labels == 0)).sum())
        assert data["realised_fpr"] <= 0.05 and data["detection_rate_interpolated"] >= data["detection_rate"]
        assert data["budget"] == 100 and 0 <= data["precision_at_budget"] <= 1
        assert "mean_ttd" not in data

    def test_it_times_detection_per_entity_with_amounts(self) -> None:
        data = json.loads(
            run_command(
                "--scores",
                str(FIXTURES / "transactions.csv"),
                "--threshold",
                "0.5",
                "--fp-cost",
                "10",
                "--json",
            )
        )
        assert data["confusion"] == {"tp": 2, "fp": 2, "tn": 3, "fn": 3}
        assert data["total_cost"] == pytest.approx(20 + 80 + 250 + 60)  # missed frauds cost their amount
        assert data["flag_nothing_cost"] == pytest.approx(1010) and data["flag_everything_cost"] == 50
        assert data["savings"] == pytest.approx(1 - 410 / 1010)
        assert data["savings_vs_best_trivial"] == pytest.approx(1 - 410 / 50)
        # acct_a: fraud from 08:30, flagged 09:00; acct_c: from 11:00, flagged 12:00; acct_e never.
        assert (
            data["mean_ttd"] == 2700 and data["median_ttd"] == 2700 and data["p95_ttd"] == pytest.approx(3510)
        )
        assert data["entity_detection_rate"] == pytest.approx(2 / 3)
        assert data["undetected_entities"] == ["acct_e"] and data["n_entities_anomalous"] == 3

    def test_it_writes_curves_and_an_unreachable_threshold_as_null(self, tmp_path: Path) -> None:
        path = tmp_path / "scores.csv"
        path.write_text("id,score,label\na,0.9,0\nb,0.9,1\nc,0.1,0\n")
        data = json.loads(run_command("--scores", str(path), "--fpr", "0.1", "--curves", "--json"))
        assert data["threshold"] is None and data["detection_rate"] == 0.0  # +inf: flag nothing
        assert data["roc_curve"]["thresholds"][0] is None and data["roc_curve"]["fpr"] == [0.0, 0.5, 1.0]
        assert data["pr_curve"]["recall"][-1] == 0.0

    def test_it_prints_a_readable_table(self) -> None:
        text = run_command("--scores", str(FIXTURES / "transactions.csv"), "--threshold", "0.5")
        rows = {line.split()[0]: line.split(maxsplit=1)[1] for line in text.splitlines()}
        assert rows["confusion"] == "tp=2 fp=2 tn=3 fn=3" and rows["undetected_entities"] == "acct_e"

    @pytest.mark.parametrize(
        ("text", "args", "message"),
        [
            ("id,score,label\na,0.5,yes\n", (), r":2: label 'yes' is not 0 or 1$"),
            ("id,score\n", (), r":1: missing column 'label'"),
            ("id,score,label\na,0.5,1\n", ("--fpr", "2"), r"--fpr must lie in \[0, 1\]"),
            ("id,score,label\na,0.5,1\n", ("--fp-cost", "-1"), "--fp-cost must be"),
        ],
    )
    def test_it_stops_with_one_line_errors(
        self, tmp_path: Path, text: str, args: tuple[str, ...], message: str
    ) -> None:
        path = tmp_path / "scores.csv"
        path.write_text(text)
        with pytest.raises(CommandError, match=message):
            run_command("--scores", str(path), *args)

    def test_it_fails_without_a_traceback_and_needs_no_database(self, tmp_path: Path) -> None:
        path = tmp_path / "scores.csv"
        path.write_text("id,score,label\na,high,1\n")
        env = {"PATH": "/usr/bin:/bin", "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none", "DEBUG": "true"}
        done = subprocess.run(
            [sys.executable, "manage.py", "eval_fraud", "--scores", str(path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=env,
        )
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.strip() == f"CommandError: {path}:2: score 'high' is not a number"
        helped = subprocess.run(
            [sys.executable, "manage.py", "eval_fraud", "--help"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=env,
        )
        assert helped.returncode == 0 and "--fn-cost" in helped.stdout


class TestOperatingPoint:
    def test_it_flags_nothing_and_says_so_when_the_target_catches_no_fraud(self, tmp_path: Path) -> None:
        path = tmp_path / "ten.csv"
        scores = np.linspace(0.9, 0.1, 10)
        path.write_text(
            "id,score,label\n" + "".join(f"t{i},{float(s)!r},{int(i == 9)}\n" for i, s in enumerate(scores))
        )
        data = json.loads(run_command("--scores", str(path), "--fpr", "0.25", "--json"))
        assert data["total_cost"] == 1.0 == data["flag_nothing_cost"] and data["confusion"]["fp"] == 0
        assert data["operating_threshold"] is None and data["operating_rule"] == "flag_nothing"
        assert (
            data["operating_note"] == "flagging nothing: no threshold within the target FPR catches a fraud"
        )
        assert "catches a fraud" in run_command("--scores", str(path), "--fpr", "0.25")

    def test_it_costs_nothing_on_a_file_without_frauds(self, tmp_path: Path) -> None:
        path = tmp_path / "legit.csv"
        path.write_text("id,score,label\n" + "".join(f"t{i},0.{i},0\n" for i in range(1, 10)))
        data = json.loads(run_command("--scores", str(path), "--fpr", "0.5", "--json"))
        assert data["total_cost"] == 0.0 and data["confusion"]["fp"] == 0
        assert data["operating_rule"] == "flag_nothing"
