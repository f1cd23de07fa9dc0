"""The demo's search team (`monitoring.demo`, loaded by `load_demo`): its members, its two real runs (BM25 and
LSA) evaluated on the demo project's qrels v1, their comparison, and a second load that changes nothing."""

from __future__ import annotations

import json
import time
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.http import HttpRequest
from django.test import Client

from annotations.demo import SIMULATED_TOPICS
from annotations.models import Annotation, Project, QrelsBuild
from annotations.qrels import qrels_export
from evalcore import trec
from evalcore.comparison import DEFAULT_MEASURES
from evalcore.retrieval import evaluate
from evalplatform.models import Team, TeamMembership
from monitoring import demo
from monitoring.evaluations import selectors
from monitoring.evaluations.diffs import leaderboard_diff
from monitoring.evaluations.services import with_coverage
from monitoring.models import (
    Comparison,
    ComparisonPair,
    Evaluation,
    QrelsSource,
    Run,
)
from monitoring.pooling.models import JudgingPool
from series.models import MetricValue
from tests.conftest import WorkerProcess
from tests.monitoring.stored import comparison_rows


@pytest.fixture
def loaded(demo_loaded: dict[str, Any], db: None) -> dict[str, Any]:
    """The demo as `load_demo --json` leaves it, loaded once per class (`demo_loaded`), and its summary."""
    return demo_loaded


@pytest.mark.django_db
class TestDemoSearchTeamLoadedHere:
    """The tests that load the demo themselves, on an empty database."""

    def test_it_ships_two_runs_evaluated_as_evalcore_evaluates_them(self, tmp_path: Path) -> None:
        call_command("load_demo", stdout=StringIO())
        source = QrelsSource.objects.get(team__slug="search", build__version=1)
        qrels_file = tmp_path / "v1.qrels"
        qrels_file.write_text(qrels_export(source.build, fmt="trec"))
        runs = {run.name: run for run in Run.objects.filter(team__slug="search")}
        assert sorted(runs) == ["bm25", "dense-lsa"]
        assert "Latent semantic analysis" in runs["dense-lsa"].description
        assert "Not a neural model" in runs["dense-lsa"].description
        assert "k1 = 0.9, b = 0.4" in runs["bm25"].description
        for run in runs.values():
            assert run.uploaded_by.username == "analyst" and run.num_queries == 10
            evaluation = Evaluation.objects.get(run=run, qrels=source)
            assert (evaluation.status, evaluation.qrels, evaluation.measures) == (
                "done", source, with_coverage(DEFAULT_MEASURES)
            )  # fmt: skip
            want = evaluate(
                trec.read_qrels(qrels_file), trec.read_run(run.file.path), with_coverage(DEFAULT_MEASURES)
            )
            got = {row.measure: row.value for row in evaluation.results}
            assert got == pytest.approx(want.aggregate, abs=1e-12)
            assert 0.2 < got["map"] < 0.9  # real rankings, far from random and from perfect

    def test_it_says_what_the_analyst_finds(self) -> None:
        out = StringIO()
        call_command("load_demo", stdout=out)
        line = out.getvalue().splitlines()[-1]
        source, comparison = QrelsSource.objects.get(build__version=1), Comparison.objects.get()
        assert line.startswith("Demo search team 'search': runs bm25 (map 0.")
        assert (
            "dense-lsa (map 0." in line
            and f"Holm's correction at /teams/search/comparisons/{comparison.pk}/" in line
        )
        assert line.endswith(
            f"Log in as analyst and open /teams/search/ (leaderboard: {source.get_absolute_url()})."
        )


@pytest.mark.django_db
class TestDemoSearchTeam:
    def test_it_gives_the_analyst_a_team_with_the_demo_projects_qrels(self, loaded: dict[str, Any]) -> None:
        team = Team.objects.get(slug="search")
        assert team.name == "Search team"
        roles = dict(TeamMembership.objects.filter(team=team).values_list("user__username", "role"))
        assert roles == {"analyst": "editor", "lead": "viewer"}
        assert Project.objects.get(slug="python-help").team == team
        source = QrelsSource.objects.get(team=team, build__version=1)
        assert (source.kind, source.build.version, source.name) == ("build", 1, "python-help v1")
        assert loaded["team"]["slug"] == "search" and loaded["team"]["qrels"] == "python-help v1"

    def test_it_compares_the_two_runs_with_a_randomization_test_and_holm(
        self, loaded: dict[str, Any]
    ) -> None:
        comparison = Comparison.objects.get(team__slug="search")
        assert (comparison.status, comparison.test, comparison.correction) == (
            "done",
            "randomization",
            "holm",
        )
        assert sorted(comparison.runs.values_list("name", flat=True)) == ["bm25", "dense-lsa"]
        measures = list(demo.COMPARISON_MEASURES)
        assert sorted(
            ComparisonPair.objects.filter(comparison=comparison).values_list("measure", flat=True)
        ) == (sorted(measures))
        assert len(comparison_rows(comparison)) == 2 * len(measures)
        assert loaded["team"]["comparison"]["status"] == "done"

    def test_it_changes_nothing_when_loaded_again(self, loaded: dict[str, Any]) -> None:
        def snapshot() -> dict[str, list[Any]]:
            return {
                "teams": list(Team.objects.values_list("pk", "slug", "name")),
                "members": list(TeamMembership.objects.order_by("pk").values_list("pk", "user_id", "role")),
                "sources": list(QrelsSource.objects.values_list("pk", "build_id")),
                "runs": list(Run.objects.order_by("pk").values_list("pk", "name", "sha256", "file")),
                "evaluations": list(
                    Evaluation.objects.order_by("pk").values_list("pk", "status", "attempts", "finished_at")
                ),
                "results": list(
                    MetricValue.objects.filter(
                        job_type__in=["monitoring.evaluation", "monitoring.comparison"]
                    )
                    .order_by("pk")
                    .values_list("pk", "value", "ci_low")
                ),
                "comparisons": list(Comparison.objects.values_list("pk", "status", "finished_at")),
                "pairs": list(ComparisonPair.objects.order_by("pk").values_list("pk", "p_adjusted")),
            }

        before = snapshot()
        out = StringIO()
        call_command("load_demo", "--json", stdout=out)
        assert snapshot() == before
        assert json.loads(out.getvalue())["team"] == loaded["team"]

    def test_its_leaderboard_shows_ppi_intervals_and_the_judges_page_the_ranking(
        self, loaded: dict[str, Any]
    ) -> None:
        from django.contrib.auth.models import User

        from monitoring.machine_judges.models import MachineJudgeEvaluation

        job = MachineJudgeEvaluation.objects.get(judge__name="umbrela-sim")
        assert job.status == "done" and job.qrels.build.version == 2, job.error
        sample = job.human_sample
        assert (
            len(sample["queries"]) == demo.DEMO_PPI_SAMPLE
            and sample["random"]
            and sample["random_over_machine"]
        )
        assert loaded["team"]["loop"]["machine_judge"]["human_queries"] == demo.DEMO_PPI_SAMPLE
        client = Client()
        client.force_login(User.objects.get(username="lead"))  # a viewer of the team, the project's lead
        url = loaded["team"]["loop"]["machine_judge"]["leaderboard"] + "&sort=ndcg_cut_10"
        board = client.get(url).content.decode()
        assert 'id="ppi-table"' in board and "chosen at random" in board
        for entry in job.results:
            ppi = entry["estimates"]["ndcg_cut_10"]["ppi"]
            assert ppi["ci_low"] < ppi["estimate"] < ppi["ci_high"] and f"{ppi['estimate']:.4f}" in board
        page = client.get(job.judge.get_absolute_url()).content.decode()
        assert 'id="ranking-table"' in page and "qrels v2" in page


def wait_for(predicate: Any, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_lets_the_analyst_upload_two_runs_through_the_web_and_compare_them(
    celery_worker_process: WorkerProcess, client: Client
) -> None:
    """From a fresh demo: the analyst uploads two runs on the web, sees them on the leaderboard beside the
    demo's own, and compares all four with a randomization test, the significance table on the page."""
    call_command("load_demo", stdout=StringIO())
    assert client.login(request=HttpRequest(), username="analyst", password="demo-analyst-pass")
    team_page = client.get("/teams/search/").content.decode()
    assert "bm25" in team_page and "dense-lsa" in team_page
    project = Project.objects.get(slug="python-help")
    source = QrelsSource.objects.get(team__slug="search", build__version=1)
    tuned = {
        "bm25-tuned": lambda docs, queries: demo.bm25_scores(docs, queries, k1=1.2, b=0.75),
        "lsa-64": lambda docs, queries: demo.lsa_scores(docs, queries, dimensions=64),
    }
    systems = [demo.DemoSystem(name, name, "", (), rank) for name, rank in tuned.items()]
    for name, text in demo.demo_run_texts(project, systems=systems).items():
        response = client.post(
            "/teams/search/runs/new/",
            {"file": SimpleUploadedFile(f"{name}.run", text.encode()), "name": name, "description": "",
             "tags": "mine", "evaluate_on": source.pk},
        )  # fmt: skip
        assert response.status_code == 302, response.content.decode()[:2000]
    evaluations = Evaluation.objects.filter(team__slug="search", qrels=source)
    assert wait_for(lambda: evaluations.filter(status="done").count() == 4), celery_worker_process.log()

    leaderboard = client.get(source.get_absolute_url())
    assert leaderboard.status_code == 200
    assert all(name in leaderboard.content.decode() for name in ("bm25", "dense-lsa", "bm25-tuned", "lsa-64"))

    runs = list(Run.objects.filter(team__slug="search").values_list("pk", flat=True))
    response = client.post(
        "/teams/search/comparisons/new/",
        {"qrels": source.pk, "runs": runs, "measures": ["map", "ndcg_cut_10"], "more_measures": "",
         "test": "randomization", "correction": "holm", "alpha": "0.05", "rel_level": "1"},
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()[:2000]
    comparison = Comparison.objects.filter(team__slug="search").latest("pk")
    assert wait_for(lambda: Comparison.objects.get(pk=comparison.pk).status == "done"), (
        celery_worker_process.log()
    )
    assert ComparisonPair.objects.filter(comparison=comparison).count() == 6 * 2  # every pair, both measures
    page = client.get(response["Location"]).content.decode()
    assert 'id="significance-table"' in page and "Holm" in page


class TestRanking:
    def test_it_scores_bm25_as_the_formula_written_out_does(self) -> None:
        rng = np.random.default_rng(0)
        docs = rng.poisson(0.7, size=(12, 30)).astype(float)
        queries = rng.poisson(0.2, size=(4, 30)).astype(float)
        k1, b = 0.9, 0.4
        n, avgdl = docs.shape[0], docs.sum(axis=1).mean()
        expected = np.zeros((4, 12))
        for q in range(4):
            for d in range(12):
                for t in range(30):
                    df = np.count_nonzero(docs[:, t])
                    idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
                    tf, dl = docs[d, t], docs[d].sum()
                    expected[q, d] += (
                        queries[q, t] * idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
                    )
        np.testing.assert_allclose(demo.bm25_scores(docs, queries, k1=k1, b=b), expected, rtol=1e-12)

    def test_it_ranks_by_cosine_in_the_latent_space(self) -> None:
        rng = np.random.default_rng(1)
        docs = rng.poisson(0.8, size=(10, 40)).astype(float)
        # Keeping every dimension, the latent space preserves the documents' cosines: each is nearest to itself.
        full = demo.lsa_scores(docs, docs, dimensions=100)
        np.testing.assert_allclose(np.diag(full), 1.0, atol=1e-9)
        np.testing.assert_allclose(full, full.T, atol=1e-9)
        reduced = demo.lsa_scores(docs, docs[:3], dimensions=3)
        assert reduced.shape == (3, 10) and np.all(np.abs(reduced) <= 1 + 1e-9)

    def test_it_tokenizes_with_stop_words_and_the_s_stemmer(self) -> None:
        assert demo.tokenize("How do I catch multiple Exceptions?") == ["catch", "multiple", "exception"]
        assert [demo.s_stem(w) for w in ("queries", "classes", "class", "status", "goes", "is")] == [
            "query", "classe", "class", "status", "goe", "is"
        ]  # fmt: skip

    def test_it_writes_a_trec_run_breaking_ties_by_docno_descending(self) -> None:
        scores = np.array([[0.5, 0.9, 0.5, 0.0]])
        text = demo.run_text(["q1"], ["a", "b", "c", "d"], scores, tag="t", positive_only=True)
        assert text == "q1 Q0 b 1 0.900000 t\nq1 Q0 c 2 0.500000 t\nq1 Q0 a 3 0.500000 t\n"
        deep = demo.run_text(["q1"], ["a", "b", "c", "d"], scores, tag="t", depth=2)
        assert deep.count("\n") == 2


@pytest.mark.django_db
class TestDemoLoop:
    """The judging loop end to end in the demo (issue 23's "done when")."""

    def test_the_careful_annotators_answer_part_of_the_pool_on_their_topics_only(
        self, loaded: dict[str, Any]
    ) -> None:
        pool = JudgingPool.objects.get(project__slug="python-help")
        answered = Annotation.objects.filter(
            task__pool_links__pool=pool, created_at__gte=demo.DEMO_LOOP_START
        )
        assert set(answered.values_list("annotator__username", flat=True)) == {"carol", "dave"}
        assert answered.count() == 2 * demo.DEMO_LOOP_ANSWERS
        assert set(answered.values_list("task__topic__qid", flat=True)) <= set(SIMULATED_TOPICS)
        assert pool.judged > 0 and pool.pending > 0 and len(pool.yield_curve) == pool.judged
        assert loaded["team"]["pool"]["judged"] == pool.judged

    def test_v2_is_built_with_v1s_parameters_and_the_runs_are_rescored_on_it_with_coverage(
        self, loaded: dict[str, Any]
    ) -> None:
        v1, v2 = QrelsBuild.objects.filter(project__slug="python-help").order_by("version")
        params = ("tolerance", "aggregation", "min_accuracy", "min_gold", "min_labels", "use_adjudications")
        assert [getattr(v2, name) for name in params] == [getattr(v1, name) for name in params]
        assert v2.status == "done" and v2.pairs_kept > v1.pairs_kept
        source = QrelsSource.objects.get(team__slug="search", build=v2)
        board = selectors.leaderboard(qrels=source)
        assert sorted(row.run.name for row in board.rows) == ["bm25", "dense-lsa"]
        assert all(row.coverage.computed for row in board.rows)
        assert loaded["team"]["loop"]["qrels"] == "python-help v2"
        assert all(
            run["status"] == "done" and run["judged_10"] is not None for run in loaded["team"]["loop"]["runs"]
        )

    def test_the_diff_shows_changes_and_the_pool_page_the_yield_and_the_planner(
        self, loaded: dict[str, Any], client: Client
    ) -> None:
        source = QrelsSource.objects.get(team__slug="search", build__version=2)
        v1 = QrelsSource.objects.get(team__slug="search", build__version=1)
        diff = leaderboard_diff(old=v1, new=source)
        changed = [row for measure in diff.measures for row in measure.rows if row.change]
        assert changed, "v2 changed no score"
        assert client.login(request=HttpRequest(), username="analyst", password="demo-analyst-pass")
        page = client.get(f"/teams/search/leaderboard/{source.pk}/diff/")
        assert page.status_code == 200 and "python-help v1" in page.content.decode()
        pool = JudgingPool.objects.get(project__slug="python-help")
        assert pool.simulation["qrels"] == source.pk
        assert client.login(request=HttpRequest(), username="lead", password="demo-lead-pass")
        pool_page = client.get(f"/projects/python-help/pools/{pool.pk}/").content.decode()
        assert 'id="figure-yield"' in pool_page and 'id="planner-table"' in pool_page
        assert 'id="simulation-table"' in pool_page
