"""`eval_recsys` on CSV files: seed 004's worked example, the JSON contract and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "recsys"
ROOT = Path(__file__).resolve().parent.parent.parent
SEED = {
    "--recs": FIXTURES / "seed004_recs.csv",
    "--interactions": FIXTURES / "seed004_interactions.csv",
    "--items": FIXTURES / "seed004_items.csv",
    "--history": FIXTURES / "seed004_history.csv",
}


def run_command(*args: str) -> str:
    out = StringIO()
    call_command("eval_recsys", *args, stdout=out)
    return out.getvalue()


def seed_args(*extra: str, leave_out: tuple[str, ...] = ()) -> list[str]:
    args = [str(part) for option, path in SEED.items() if option not in leave_out for part in (option, path)]
    return [*args, *extra]


class TestEvalRecsys:
    def test_it_reproduces_seed_004s_worked_example(self) -> None:
        data = json.loads(run_command(*seed_args("--json")))
        assert f"{data['catalog_coverage']:.2f}" == "0.60"
        assert f"{data['category_coverage']:.2f}" == "1.00"
        assert f"{data['popularity_bias']:.2f}" == "1.60"
        assert f"{data['gini_recommended']:.2f}" == "0.24"
        assert f"{data['hit_rate']:.2f}" == "1.00"
        assert data["unique_items_recommended"] == 6
        assert data["k"] == 3 and data["n_users"] == 3 and data["n_items"] == 10
        assert data["popularity_from"] == "history"

    def test_it_keys_json_by_metric_name_and_writes_nan_as_null(self) -> None:
        from evalcore.recsys import METRICS

        data = json.loads(run_command(*seed_args("--json", leave_out=("--items",))))
        assert set(METRICS) <= set(data)
        assert data["category_coverage"] is None  # no item table, no categories
        assert data["catalog"] == "every item seen" and data["n_items"] == 9  # item_10: never seen
        assert data["gini"] is not None and data["gini_recommended"] == pytest.approx(13 / 54)

    def test_it_takes_popularity_from_the_interactions_without_a_history(self) -> None:
        data = json.loads(run_command(*seed_args("--json", leave_out=("--history",))))
        assert data["popularity_from"] == "interactions"
        assert data["unexpectedness"] is None and data["serendipity_history"] is None
        assert data["catalog_coverage"] == pytest.approx(0.6)

    def test_it_cuts_lists_at_k(self) -> None:
        data = json.loads(run_command(*seed_args("-k", "1", "--json")))
        assert data["k"] == 1 and data["unique_items_recommended"] == 1
        assert data["catalog_coverage"] == pytest.approx(0.1) and data["hit_rate"] == 0.0

    def test_it_prints_a_readable_table(self) -> None:
        lines = run_command(*seed_args()).splitlines()
        rows = {line.split()[0]: line.split()[-1] for line in lines}
        assert rows["catalog_coverage"] == "0.6000" and rows["gini_recommended"] == "0.2407"

    def test_it_counts_users_without_a_list_with_complete(self, tmp_path: Path) -> None:
        interactions = tmp_path / "interactions.csv"
        interactions.write_text((FIXTURES / "seed004_interactions.csv").read_text() + "user_4,item_1\n")
        args = seed_args("--json", leave_out=("--interactions",)) + ["--interactions", str(interactions)]
        plain = json.loads(run_command(*args))
        complete = json.loads(run_command(*args, "--complete"))
        assert plain["n_users_without_list"] == 1 and plain["hit_rate"] == 1.0
        assert complete["n_users"] == 4 and complete["hit_rate"] == pytest.approx(0.75)

    def test_it_stops_on_a_malformed_file_with_file_and_line(self, tmp_path: Path) -> None:
        recs = tmp_path / "recs.csv"
        recs.write_text("user,item,rank\nu1,item_1,1\nu1,item_2,first\n")
        with pytest.raises(CommandError, match=rf"^{recs}:3: rank 'first' is not an integer$"):
            run_command(*seed_args(leave_out=("--recs",)), "--recs", str(recs))
        with pytest.raises(CommandError, match="no such file"):
            run_command(*seed_args(leave_out=("--recs",)), "--recs", str(tmp_path / "missing.csv"))
        with pytest.raises(CommandError, match="head-share"):
            run_command(*seed_args("--head-share", "0"))

    def test_it_fails_in_one_line_without_a_traceback_and_needs_no_database(self, tmp_path: Path) -> None:
        recs = tmp_path / "recs.csv"
        recs.write_text("user,item\nu1,item_1\n")
        args = seed_args(leave_out=("--recs",)) + ["--recs", str(recs)]
        env = {"PATH": "/usr/bin:/bin", "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none", "DEBUG": "true"}
        done = subprocess.run(
            [sys.executable, "manage.py", "eval_recsys", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=env,
        )
        assert done.returncode == 1 and done.stdout == ""
        assert (
            done.stderr.strip()
            == f"CommandError: {recs}:1: missing column 'rank'; expected the header user,item,rank"
        )
        ok = subprocess.run(
            [sys.executable, "manage.py", "eval_recsys", *seed_args("--json")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=env,
        )
        assert ok.returncode == 0, ok.stderr
        assert json.loads(ok.stdout)["catalog_coverage"] == pytest.approx(0.6)

    def test_it_has_help(self) -> None:
        done = subprocess.run(
            [sys.executable, "manage.py", "eval_recsys", "--help"], cwd=ROOT, capture_output=True, text=True,
            env={"PATH": "/usr/bin:/bin", "DEBUG": "true"},
        )  # fmt: skip
        assert done.returncode == 0 and "--interactions" in done.stdout and "--history" in done.stdout
