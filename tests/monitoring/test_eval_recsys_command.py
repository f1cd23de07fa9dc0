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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


def write_small(tmp_path: Path, recs: str, interactions: str, items: str | None = None) -> list[str]:
    (tmp_path / "recs.csv").write_text(recs)
    (tmp_path / "interactions.csv").write_text(interactions)
    args = ["--recs", str(tmp_path / "recs.csv"), "--interactions", str(tmp_path / "interactions.csv")]
    if items is not None:
        (tmp_path / "items.csv").write_text(items)
        args += ["--items", str(tmp_path / "items.csv")]
    return args


class TestCutoffBeyondTheLists:
    def test_it_scores_at_k_when_k_is_longer_than_every_list(self, tmp_path: Path) -> None:
        # docs/recsys-fraud.md's definitions: P@5 = 1/5, nDCG@5 = 1 / (1 + 1/log2(3)) with min(5, 2) ideal hits.
        args = write_small(tmp_path, "user,item,rank\nu1,a,1\n", "user,item\nu1,a\nu1,b\n")
        data = json.loads(run_command(*args, "-k", "5", "--json"))
        assert data["k"] == 5
        assert data["precision_at_k"] == pytest.approx(0.2, abs=1e-12)
        assert data["ndcg_at_k"] == pytest.approx(0.6131471927654584, abs=1e-12)
        assert data["recall_at_k"] == 0.5 and data["hit_rate"] == 1.0

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(
        lists=st.lists(st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=3, unique=True), min_size=1, max_size=4),
        relevant=st.lists(st.sets(st.sampled_from("abcdefg"), min_size=1, max_size=4), min_size=4, max_size=4),
        k=st.integers(1, 8),
    )  # fmt: skip
    def test_it_gives_the_cores_and_ranxs_numbers_at_any_k(
        self, tmp_path: Path, lists: list[list[str]], relevant: list[set[str]], k: int
    ) -> None:
        from ranx import Qrels, Run, evaluate

        from evalcore.recsys import evaluate_recommendations, read_recsys_files

        recs = "user,item,rank\n" + "".join(
            f"u{u},{item},{rank}\n" for u, items in enumerate(lists) for rank, item in enumerate(items, 1)
        )
        truth = "user,item\n" + "".join(f"u{u},{i}\n" for u in range(len(lists)) for i in sorted(relevant[u]))
        args = write_small(tmp_path, recs, truth)
        data = json.loads(run_command(*args, "-k", str(k), "--json"))
        files = read_recsys_files(tmp_path / "recs.csv", tmp_path / "interactions.csv", k=k)
        core = evaluate_recommendations(files.data, k=k)
        for name in ("precision_at_k", "recall_at_k", "ndcg_at_k", "hit_rate", "serendipity_baseline"):
            assert data[name] == pytest.approx(core[name], abs=1e-12), name
        qrels = Qrels({f"u{u}": {i: 1 for i in relevant[u]} for u in range(len(lists))})
        run = Run(
            {f"u{u}": {item: 10.0 - r for r, item in enumerate(items)} for u, items in enumerate(lists)}
        )
        want = evaluate(qrels, run, [f"precision@{k}", f"ndcg@{k}"])
        assert data["precision_at_k"] == pytest.approx(want[f"precision@{k}"], abs=1e-12)
        assert data["ndcg_at_k"] == pytest.approx(want[f"ndcg@{k}"], abs=1e-12)


class TestItemsWithoutACategory:
    def test_it_leaves_an_item_with_an_empty_category_out_of_category_metrics(self, tmp_path: Path) -> None:
        args = write_small(
            tmp_path,
            "user,item,rank\nu1,a,1\nu1,b,2\nu2,c,1\n",
            "user,item\nu1,a\nu2,d\n",
            "item,category\na,x\nb,\nc,y\nd,x\ne,z\n",
        )
        data = json.loads(run_command(*args, "--json"))
        # Categories x, y and z; the lists show x (a) and y (c); b has none and counts for no category.
        assert data["category_coverage"] == pytest.approx(2 / 3, abs=1e-12)
        assert data["n_items"] == 5 and data["catalog_coverage"] == pytest.approx(3 / 5)
        # Similarity: b is like nothing else, so u1's pair (a, b) is at distance 1.
        assert data["intra_list_diversity"] == pytest.approx(1.0)
