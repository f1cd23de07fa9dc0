"""`run_overlap`: text in trec_eval's layout, the JSON contract, -q, and errors in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evalcore.overlap import MEASURES, OverlapParams, run_overlap
from evalcore.trec import read_run

ROOT = Path(__file__).resolve().parents[2]


def write_runs(directory: Path) -> tuple[Path, Path]:
    a = directory / "a.run"
    b = directory / "b.run"
    a.write_text(
        "1 Q0 d1 1 3.0 alpha\n1 Q0 d2 2 2.0 alpha\n1 Q0 d3 3 1.0 alpha\n"
        "2 Q0 d1 1 1.0 alpha\n2 Q0 d2 2 1.0 alpha\n"  # a tie: trec_eval ranks d2 above d1
        "4 Q0 z 1 1.0 alpha\n"
    )
    b.write_text(
        "1 Q0 d1 1 3.0 beta\n1 Q0 d3 2 2.0 beta\n1 Q0 d2 3 1.0 beta\n"
        "2 Q0 d2 1 2.0 beta\n2 Q0 d9 2 1.0 beta\n"
        "3 Q0 y 1 1.0 beta\n"
    )
    return a, b


def overlap(*args: str) -> str:
    out = StringIO()
    call_command("run_overlap", *args, stdout=out)
    return out.getvalue()


class TestRunOverlapCommand:
    def test_it_prints_the_means_of_the_library(self, tmp_path: Path) -> None:
        a, b = write_runs(tmp_path)
        data = json.loads(overlap("--run", str(a), "--run", str(b), "-k", "3", "--rbo-p", "0.8", "--json"))
        expected = run_overlap(read_run(a), read_run(b), OverlapParams(k=3, p=0.8))
        assert data["runs"] == ["alpha", "beta"] and (data["k"], data["p"]) == (3, 0.8)
        assert data["num_q"] == 2 and data["only_a"] == ["4"] and data["only_b"] == ["3"]
        assert data["mean"] == {m: pytest.approx(expected.mean(m)) for m in MEASURES}
        assert data["defined"]["kendall_tau"] == 1  # query 2 shares one document only
        assert "per_query" not in data

    def test_it_gives_every_query_with_q(self, tmp_path: Path) -> None:
        a, b = write_runs(tmp_path)
        data = json.loads(overlap("--run", str(a), "--run", str(b), "-k", "2", "-q", "--json"))
        assert [row["qid"] for row in data["per_query"]] == ["1", "2"]
        two = data["per_query"][1]
        # query 2: alpha's top 2 is d2, d1 (tie broken by docno descending), beta's d2, d9
        assert two["shared"] == 1 and two["jaccard"] == pytest.approx(1 / 3)
        assert two["kendall_tau"] is None and two["tau_ap"] is None

    def test_it_writes_trec_eval_layout(self, tmp_path: Path) -> None:
        a, b = write_runs(tmp_path)
        lines = overlap("--run", str(a), "--run", str(b), "-k", "3", "-q").splitlines()
        rows = {tuple(line.split("\t")[:2]): line.split("\t")[2] for line in lines}
        assert rows[("jaccard", "1")] == "1.0000"
        assert rows[("kendall_tau", "1")] == "0.3333"
        assert rows[("kendall_tau", "2")] == "-"
        assert rows[("num_q", "all")] == "2" and rows[("only_a", "all")] == "4"
        assert all(len(line.split("\t")) == 3 for line in lines)

    def test_it_names_runs_by_file_when_their_tags_are_alike(self, tmp_path: Path) -> None:
        a, _ = write_runs(tmp_path)
        copy = tmp_path / "copy.run"
        copy.write_text(a.read_text())
        data = json.loads(overlap("--run", str(a), "--run", str(copy), "--json"))
        assert data["runs"] == [str(a), str(copy)]
        assert data["mean"]["jaccard"] == 1.0 and data["mean"]["rbo_ext"] == pytest.approx(1.0)

    def test_it_wants_exactly_two_runs(self, tmp_path: Path) -> None:
        a, _ = write_runs(tmp_path)
        with pytest.raises(CommandError, match="exactly two runs"):
            overlap("--run", str(a))

    def test_it_refuses_a_persistence_of_one(self, tmp_path: Path) -> None:
        a, b = write_runs(tmp_path)
        with pytest.raises(CommandError, match="persistence"):
            overlap("--run", str(a), "--run", str(b), "--rbo-p", "1")

    def test_it_runs_from_the_shell_without_settings(self, tmp_path: Path) -> None:
        a, b = write_runs(tmp_path)
        done = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "run_overlap", "--run", str(a), "--run", str(b), "--json"],
            capture_output=True, text=True, cwd=tmp_path, timeout=120,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["num_q"] == 2


def test_it_starts_without_django_or_scipy(tmp_path: Path) -> None:
    a, b = write_runs(tmp_path)
    argv = ["manage.py", "run_overlap", "--run", str(a), "--run", str(b), "-q"]
    script = (
        f"import sys; sys.argv = {argv!r}; sys.path.insert(0, {str(ROOT)!r})\n"
        "import manage\nmanage.main()\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'django', 'scipy', 'pandas', 'celery'})\n"
        "print('loaded:', heavy, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=120,
        env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "rbo_ext\tall\t" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "loaded: []"
