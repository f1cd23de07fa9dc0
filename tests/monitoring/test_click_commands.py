"""`derive_click_judgments`: qrels and a summary from a search log, in CSV, JSON Lines and UBI events."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evalcore.clicks import ClickLog, ClickModelParams, fit, simulate_log


def run_command(*args: str) -> str:
    out = StringIO()
    call_command("derive_click_judgments", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def simulated_csv(tmp_path: Path) -> tuple[Path, ClickLog]:
    sim = simulate_log(model="dbn", sessions=3000, queries=5, docs_per_query=8, depth=6, seed=2)
    log = sim.log
    rows = (
        f"{log.sessions[s]},{log.queries[q]},{log.docs[d]},{p},{int(c)}\n"
        for s, q, d, p, c in zip(log.session, log.query, log.doc, log.position, log.clicked, strict=True)
    )
    path = tmp_path / "log.csv"
    path.write_text("session,query,doc,position,clicked\n" + "".join(rows))
    return path, log


class TestDeriveClickJudgments:
    @pytest.mark.parametrize("model", ["coec", "pbm", "dbn"])
    def test_it_writes_the_models_grades_as_qrels(
        self, simulated_csv: tuple[Path, ClickLog], tmp_path: Path, model: str
    ) -> None:
        path, log = simulated_csv
        out = tmp_path / "clicks.qrels"
        summary = json.loads(
            run_command(
                "--log", str(path), "--model", model, "--min-impressions", "50", "--out", str(out), "--json"
            )
        )
        expected = fit(log, ClickModelParams(model, min_impressions=50))  # type: ignore[arg-type]
        assert out.read_text().splitlines() == expected.qrels_lines()
        assert summary["model"] == model
        assert summary["sessions"] == 3000 and summary["impressions"] == 18000
        assert summary["pairs"] == 40 and summary["judged_pairs"] == int(expected.judged.sum())
        assert summary["grades"] == {str(g): n for g, n in expected.grade_counts().items()}
        assert summary["clicks"] == int(np.asarray(log.clicked).sum())
        assert summary["positions"] == {k: pytest.approx(v) for k, v in expected.positions.items()}

    def test_it_prints_a_summary_as_text(self, simulated_csv: tuple[Path, ClickLog]) -> None:
        path, _ = simulated_csv
        text = run_command("--log", str(path), "--model", "pbm")
        assert "model pbm: 3000 sessions, 18000 impressions" in text
        assert "examination: 1.0000 " in text and "EM: " in text

    def test_it_reads_ubi_events(self, tmp_path: Path) -> None:
        def event(action: str, query_id: str, doc: str, ordinal: int) -> str:
            return json.dumps({
                "action_name": action, "query_id": query_id, "user_query": "laptop",
                "event_attributes": {"object": {"object_id": doc}, "position": {"ordinal": ordinal}},
            })  # fmt: skip

        lines = [
            event("impression", "u1", "p1", 1),
            event("impression", "u1", "p2", 2),
            event("click", "u1", "p2", 2),
        ]
        path = tmp_path / "ubi.jsonl"
        path.write_text("\n".join(lines) + "\n")
        out = tmp_path / "ubi.qrels"
        summary = json.loads(
            run_command("--log", str(path), "--format", "ubi", "--model", "coec", "--min-impressions", "1",
                        "--out", str(out), "--json")
        )  # fmt: skip
        assert summary["sessions"] == 1 and summary["impressions"] == 2 and summary["clicks"] == 1
        # ctr_1 = 0 and ctr_2 = 1: p2 is clicked as expected (COEC 1, grade 2), p1 was never expected to be.
        assert out.read_text() == "laptop 0 p1 0\nlaptop 0 p2 2\n"

    def test_it_refuses_a_bad_line_and_writes_nothing(self, tmp_path: Path) -> None:
        path = tmp_path / "log.csv"
        path.write_text("session,query,doc,position,clicked\ns1,q,a,1,1\ns1,q,b,1,0\n")
        out = tmp_path / "out.qrels"
        with pytest.raises(CommandError, match=r"log\.csv:3: session 's1' shows position 1 twice"):
            run_command("--log", str(path), "--model", "coec", "--out", str(out))
        assert not out.exists()

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["--thresholds", "0.1,0.2"], "four increasing"),
            (["--thresholds", "a,b,c,d"], "four numbers"),
            (["--min-impressions", "0"], "min_impressions"),
        ],
    )
    def test_it_refuses_bad_options(
        self, simulated_csv: tuple[Path, ClickLog], args: list[str], message: str
    ) -> None:
        path, _ = simulated_csv
        with pytest.raises(CommandError, match=message):
            run_command("--log", str(path), "--model", "pbm", *args)

    def test_it_uses_given_thresholds(self, simulated_csv: tuple[Path, ClickLog], tmp_path: Path) -> None:
        path, log = simulated_csv
        out = tmp_path / "t.qrels"
        run_command(
            "--log", str(path), "--model", "dbn", "--thresholds", "0.05,0.1,0.2,0.4", "--out", str(out)
        )
        expected = fit(log, ClickModelParams("dbn", thresholds=(0.05, 0.1, 0.2, 0.4)))  # type: ignore[arg-type]
        assert out.read_text().splitlines() == expected.qrels_lines()

    def test_it_gives_null_for_a_position_never_shown(self, tmp_path: Path) -> None:
        path = tmp_path / "gap.csv"
        path.write_text("session,query,doc,position,clicked\ns1,q,a,1,1\ns1,q,b,3,0\ns2,q,b,1,0\n")
        summary = json.loads(run_command("--log", str(path), "--model", "coec", "--json"))
        assert summary["positions"] == {"ctr": [0.5, None, 0.0]}
        assert "ctr: 0.5000 - 0.0000" in run_command("--log", str(path), "--model", "coec")
