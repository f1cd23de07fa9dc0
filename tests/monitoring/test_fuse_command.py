"""`fuse_runs`: the file it writes is evalcore's fused run, --json, --optimize, --help, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evalcore import trec
from evalcore.fusion import FusionParams, fuse, optimize_fusion

ROOT = Path(__file__).resolve().parents[2]
RUN_A = "q1 Q0 d1 1 3.0 a\nq1 Q0 d2 2 1.0 a\nq1 Q0 d3 3 1.0 a\nq2 Q0 x 1 5.5 a\nq2 Q0 y 2 0.5 a\n"
RUN_B = "q1 Q0 d2 1 4.0 b\nq1 Q0 d4 2 2.0 b\nq2 Q0 y 1 1.0 b\nq3 Q0 z 1 1.0 b\n"
QRELS = "q1 0 d1 1\nq1 0 d2 1\nq1 0 d4 0\nq2 0 y 1\nq2 0 x 0\nq3 0 z 1\n"


def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    a, b, q = tmp_path / "a.run", tmp_path / "b.run", tmp_path / "q.qrels"
    a.write_text(RUN_A)
    b.write_text(RUN_B)
    q.write_text(QRELS)
    return a, b, q


def fuse_runs(*args: str) -> str:
    out = StringIO()
    call_command("fuse_runs", *args, stdout=out)
    return out.getvalue()


def lines_of(run: object, tag: str) -> list[str]:
    from evalcore.fusion.output import ranked_rows

    order, ranks = ranked_rows(run)  # type: ignore[arg-type]
    docs = run.docno_strings(order)  # type: ignore[attr-defined]
    return [
        f"{run.qids[run.qid_codes[i]]} Q0 {d} {r} {float(run.scores[i])!r} {tag}"  # type: ignore[attr-defined]
        for i, d, r in zip(order, docs, ranks, strict=True)
    ]


class TestFuseRuns:
    @pytest.mark.parametrize(
        ("method", "extra"),
        [("CombMNZ", []), ("rrf", ["--param", "k=10"]), ("wsum", ["--weights", "0.3,0.7", "--norm", "zmuv"]),
         ("bordafuse", ["--norm", "none"]), ("med", ["--norm", "rank"])],
    )  # fmt: skip
    def test_it_writes_evalcores_fused_run(self, tmp_path: Path, method: str, extra: list[str]) -> None:
        a, b, _ = files(tmp_path)
        out = tmp_path / "fused.run"
        fuse_runs("--run", str(a), "--run", str(b), "--method", method, *extra, "--out", str(out))
        options = {"k": 10.0} if method == "rrf" else {}
        norm = next((extra[i + 1] for i, x in enumerate(extra) if x == "--norm"), "min-max")
        weights = (0.3, 0.7) if method == "wsum" else None
        params = FusionParams(method, norm=norm, weights=weights, **options)
        runs = [trec.read_run(a), trec.read_run(b)]
        expected = fuse(runs, params)
        tag = f"fused-{params.method}"
        written = out.read_text().splitlines()
        assert [line.split()[:4] for line in written] == [
            line.split()[:4] for line in lines_of(expected, tag)
        ]
        assert [float(line.split()[4]) for line in written] == [
            float(x.split()[4]) for x in lines_of(expected, tag)
        ]
        assert {line.split()[5] for line in written} == {tag}
        back = trec.read_run(out)
        assert back.to_dict() == expected.to_dict()

    def test_it_cuts_each_query_at_depth_and_takes_the_tag(self, tmp_path: Path) -> None:
        a, b, _ = files(tmp_path)
        out = tmp_path / "fused.run"
        fuse_runs(
            "--run",
            str(a),
            "--run",
            str(b),
            "--method",
            "sum",
            "--depth",
            "2",
            "--tag",
            "mine",
            "--out",
            str(out),
        )
        rows = [line.split() for line in out.read_text().splitlines()]
        assert [(r[0], r[3]) for r in rows] == [
            ("q1", "1"),
            ("q1", "2"),
            ("q2", "1"),
            ("q2", "2"),
            ("q3", "1"),
        ]
        assert {r[5] for r in rows} == {"mine"}

    def test_it_prints_a_json_summary(self, tmp_path: Path) -> None:
        a, b, _ = files(tmp_path)
        out = tmp_path / "fused.run"
        data = json.loads(
            fuse_runs("--run", str(a), "--run", str(b), "--method", "rrf", "--out", str(out), "--json")
        )
        assert data == {
            "method": "rrf", "norm": "min-max", "weights": None, "k": 60.0, "runs": [str(a), str(b)],
            "queries": 3, "lines": 7, "out": str(out), "optimization": None,
        }  # fmt: skip

    def test_it_optimises_the_weights_with_held_out_folds(self, tmp_path: Path) -> None:
        a, b, q = files(tmp_path)
        out = tmp_path / "fused.run"
        args = ["--run", str(a), "--run", str(b), "--method", "wsum", "--optimize", "--qrels", str(q)]
        data = json.loads(
            fuse_runs(*args, "-m", "map", "--folds", "3", "--step", "0.25", "--out", str(out), "--json")
        )
        expected = optimize_fusion(
            [trec.read_run(a), trec.read_run(b)], trec.read_qrels(q), FusionParams("wsum"),
            measure="map", folds=3, step=0.25,
        )  # fmt: skip
        opt = data["optimization"]
        assert opt["trials"] == 5 and len(opt["folds"]) == 3
        assert opt["mean_test_score"] == pytest.approx(expected.mean_test_score)
        assert [f["test_score"] for f in opt["folds"]] == pytest.approx(
            [f.test_score for f in expected.folds]
        )
        assert data["weights"] == list(expected.params.weights or ())
        text = fuse_runs(*args, "--folds", "3", "--step", "0.25", "--out", str(out))
        assert "mean held-out map" in text

    def test_it_names_the_file_and_line_of_a_bad_run(self, tmp_path: Path) -> None:
        a, _, _ = files(tmp_path)
        bad = tmp_path / "bad.run"
        bad.write_text("q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 notanumber t\n")
        with pytest.raises(CommandError, match=r"bad\.run:2: "):
            fuse_runs("--run", str(a), "--run", str(bad), "--method", "sum", "--out", str(tmp_path / "o.run"))

    def test_it_refuses_unknown_methods_and_bad_options(self, tmp_path: Path) -> None:
        a, b, _ = files(tmp_path)
        base = ["--run", str(a), "--run", str(b), "--out", str(tmp_path / "o.run")]
        for extra, message in [
            (["--method", "combfoo"], "unknown fusion method"),
            (["--method", "sum", "--norm", "l2"], "unknown normalisation"),
            (["--method", "wsum", "--weights", "1"], "1 weights for 2 runs"),
            (["--method", "rrf", "--param", "q=3"], "NAME=VALUE"),
            (["--method", "wsum", "--optimize"], "needs --qrels"),
        ]:
            with pytest.raises(CommandError, match=message):
                fuse_runs(*base, *extra)

    def test_it_exits_1_with_one_line_from_the_shell(self, tmp_path: Path) -> None:
        a, _, _ = files(tmp_path)
        bad = tmp_path / "bad.run"
        bad.write_text("q1 Q0 d1 1 x t\n")
        done = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "fuse_runs", "--run", str(a), "--run", str(bad),
             "--method", "sum", "--out", str(tmp_path / "o.run")],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 1
        assert done.stderr.strip().count("\n") == 0 and "bad.run:1: " in done.stderr
        helped = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "fuse_runs", "--help"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert helped.returncode == 0 and "--method" in helped.stdout and "CombSUM" in helped.stdout
