"""The evaluation pages' forms: uploading runs and qrels, picking a build, starting evaluations and
comparisons; their errors, and what they store and queue."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from annotations.models import QrelsBuild
from evalplatform.models import Team
from monitoring.evaluations.selectors import measure_column
from monitoring.evaluations.services import with_coverage
from monitoring.models import Comparison, Evaluation, QrelsSource, Run
from tests.annotations.conftest import build_project
from tests.conftest import LENA, QueuedTasks, make_user
from tests.monitoring.conftest import upload
from tests.monitoring.test_pages import QRELS, RUN, add_sources, logged_in


@pytest.fixture
def editor(client: Client, team: Team, theo: User) -> Client:
    return logged_in(client, theo)


@pytest.fixture
def sources(team: Team, theo: User) -> tuple[QrelsSource, Run, Run]:
    return add_sources(team, theo)


@pytest.mark.django_db
class TestRunUpload:
    def test_it_stores_an_uploaded_run_and_shows_it(self, editor: Client, team: Team, theo: User) -> None:
        response = editor.post(
            "/teams/search/runs/new/",
            {"file": upload("bm25.run", RUN(1, 1.0, "bm25")), "name": "", "description": "Lucene, default k1",
             "tags": "bm25, baseline , ", "evaluate_on": ""},
        )  # fmt: skip
        run = Run.objects.get(team=team)
        assert response.status_code == 302 and response["Location"] == f"/teams/search/runs/{run.pk}/"
        assert (run.name, run.tags, run.uploaded_by, run.num_queries) == (
            "bm25",
            ["baseline", "bm25"],
            theo,
            20,
        )
        page = editor.get(response["Location"]).content.decode()
        assert "Uploaded bm25: bm25.run." in page and "Not evaluated yet" in page

    def test_it_evaluates_on_upload_when_asked(
        self, editor: Client, sources: Any, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        qrels = sources[0]
        with django_capture_on_commit_callbacks(execute=True):
            response = editor.post(
                "/teams/search/runs/new/",
                {"file": upload("new.run", RUN(5, 1.0, "new")), "name": "new one", "evaluate_on": qrels.pk},
            )
        evaluation = Evaluation.objects.get(run__name="new one")
        assert response["Location"] == evaluation.get_absolute_url()
        assert evaluation.qrels == qrels and evaluation.status == "pending"
        assert queued.names() == ["monitoring.tasks.evaluation_run"]
        page = editor.get(response["Location"]).content.decode()
        assert "Evaluating it on judged" in page and "data-reload-when-done" in page

    def test_it_offers_the_newest_qrels_to_evaluate_on(self, editor: Client, sources: Any) -> None:
        page = editor.get("/teams/search/runs/new/").content.decode()
        assert f'<option value="{sources[0].pk}" selected>' in page and "Do not evaluate yet" in page

    def test_it_refuses_a_malformed_run_naming_the_line_and_stores_nothing(
        self, editor: Client, team: Team
    ) -> None:
        broken = "q1 Q0 d1 1 2.0 tag\nq1 Q0 d2 2 high tag\n"
        response = editor.post("/teams/search/runs/new/", {"file": upload("broken.run", broken)})
        assert response.status_code == 400
        page = response.content.decode()
        assert "The run was not uploaded." in page and "broken.run:2:" in page
        assert not Run.objects.exists()

    def test_it_asks_for_a_file(self, editor: Client) -> None:
        response = editor.post("/teams/search/runs/new/", {"name": "nothing"})
        assert response.status_code == 400 and "This field is required." in response.content.decode()

    def test_it_refuses_another_teams_qrels(self, editor: Client, other_team: Team) -> None:
        foreign = add_sources(other_team)[0]
        response = editor.post(
            "/teams/search/runs/new/", {"file": upload("a.run", RUN(1, 1.0)), "evaluate_on": foreign.pk}
        )
        assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
        assert not Run.objects.filter(team__slug="search").exists()


@pytest.mark.django_db
class TestQrels:
    def test_it_stores_an_uploaded_qrels_file(self, editor: Client, team: Team) -> None:
        response = editor.post(
            "/teams/search/qrels/new/", {"file": upload("judged.qrels", QRELS), "name": "pilot judgments"}
        )
        assert response.status_code == 302 and response["Location"] == "/teams/search/"
        source = QrelsSource.objects.get(team=team)
        assert (source.name, source.kind, source.num_queries) == ("pilot judgments", "upload", 20)
        assert "Uploaded the qrels pilot judgments" in editor.get("/teams/search/").content.decode()

    def test_it_refuses_a_malformed_qrels_file(self, editor: Client, team: Team) -> None:
        response = editor.post("/teams/search/qrels/new/", {"file": upload("bad.qrels", "q1 0 d1 high\n")})
        assert response.status_code == 400
        assert (
            "Nothing was added." in response.content.decode() and "bad.qrels:1:" in response.content.decode()
        )
        assert not QrelsSource.objects.exists()

    def test_it_uses_a_finished_build_of_a_linked_project(self, editor: Client, team: Team) -> None:
        project = build_project(lead=make_user(LENA), slug="judged")
        project.team = team
        project.save()
        build = QrelsBuild.objects.create(
            project=project, version=1, status="done", pairs_kept=3, content_hash="h"
        )
        response = editor.post("/teams/search/qrels/from-build/", {"build": build.pk})
        assert response.status_code == 302
        source = QrelsSource.objects.get(team=team)
        assert (source.kind, source.build, source.name) == ("build", build, "judged v1")
        editor.post("/teams/search/qrels/from-build/", {"build": build.pk})
        assert QrelsSource.objects.count() == 1  # picking it again finds the same source

    def test_it_refuses_builds_of_projects_not_linked_to_the_team(self, editor: Client, team: Team) -> None:
        project = build_project(lead=make_user(LENA), slug="elsewhere")
        build = QrelsBuild.objects.create(project=project, version=1, status="done", content_hash="h")
        page = editor.get("/teams/search/qrels/new/").content.decode()
        assert "No finished qrels build of a judging project linked to Search" in page
        response = editor.post("/teams/search/qrels/from-build/", {"build": build.pk})
        assert response.status_code == 400 and not QrelsSource.objects.exists()


@pytest.mark.django_db
class TestEvaluationForm:
    def test_it_queues_an_evaluation_with_the_chosen_options(
        self, editor: Client, sources: Any, theo: User, queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:  # fmt: skip
        qrels, good, _ = sources
        form = {"run": good.pk, "qrels": qrels.pk, "measures": ["map", "P_10"], "more_measures": "nDCG@5, RR(rel=2) RBP(p=0.9, rel=2)",
                "rel_level": "2", "complete": "on"}  # fmt: skip
        with django_capture_on_commit_callbacks(execute=True):
            response = editor.post("/teams/search/evaluations/new/", form)
        evaluation = Evaluation.objects.get()
        assert response.status_code == 302 and response["Location"] == evaluation.get_absolute_url()
        assert evaluation.measures == with_coverage(
            ["map", "P_10", "nDCG@5", "RR(rel=2)", "RBP(p=0.9, rel=2)"]
        )
        assert (evaluation.rel_level, evaluation.complete, evaluation.created_by) == (2, True, theo)
        assert queued.sent == [
            ("monitoring.tasks.evaluation_run", (evaluation.pk,), {"countdown": 0, "retry": False})
        ]
        # The same request again finds the same evaluation.
        editor.post("/teams/search/evaluations/new/", form)
        assert Evaluation.objects.count() == 1

    def test_it_preselects_the_run_and_the_default_measures(self, editor: Client, sources: Any) -> None:
        page = editor.get(f"/teams/search/evaluations/new/?run={sources[2].pk}").content.decode()
        assert f'<option value="{sources[2].pk}" selected>dense (#{sources[2].pk})</option>' in page
        assert 'value="map" id="id_measures_0" checked' in page and 'value="ndcg" id="id_measures_2">' in page
        assert f" {measure_column('ndcg_cut_10').title}</label>" in page  # labels from the registry
        assert f'<option value="{sources[0].pk}" selected>' in page  # the newest qrels

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            ({"more_measures": "mpa"}, "unknown measure &#x27;mpa&#x27;"),
            ({"measures": [], "more_measures": ""}, "Choose at least one measure."),
            ({"rel_level": "x"}, "Enter a whole number."),
        ],
    )
    def test_it_shows_what_is_wrong(
        self, editor: Client, sources: Any, change: dict[str, Any], message: str
    ) -> None:
        qrels, good, _ = sources
        form = {"run": good.pk, "qrels": qrels.pk, "measures": ["map"], "rel_level": "1", **change}
        response = editor.post("/teams/search/evaluations/new/", form)
        assert response.status_code == 400 and message in response.content.decode()
        assert not Evaluation.objects.exists()

    def test_it_refuses_another_teams_run(self, editor: Client, sources: Any, other_team: Team) -> None:
        foreign = add_sources(other_team)[1]
        response = editor.post(
            "/teams/search/evaluations/new/",
            {"run": foreign.pk, "qrels": sources[0].pk, "measures": ["map"], "rel_level": "1"},
        )
        assert response.status_code == 400 and not Evaluation.objects.exists()


@pytest.mark.django_db
class TestComparisonForm:
    def test_it_queues_a_comparison_with_the_chosen_test(
        self, editor: Client, sources: Any, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        qrels, good, weak = sources
        form = {"qrels": qrels.pk, "runs": [good.pk, weak.pk], "measures": ["map"], "more_measures": "P@10",
                "test": "randomization", "correction": "bh", "alpha": "0.01", "rel_level": "1"}  # fmt: skip
        with django_capture_on_commit_callbacks(execute=True):
            response = editor.post("/teams/search/comparisons/new/", form)
        comparison = Comparison.objects.get()
        assert (
            response.status_code == 302
            and response["Location"] == f"/teams/search/comparisons/{comparison.pk}/"
        )
        assert (comparison.test, comparison.correction, comparison.alpha) == ("randomization", "bh", 0.01)
        assert comparison.measures == ["map", "P@10"] and set(comparison.runs.all()) == {good, weak}
        assert queued.names() == ["monitoring.tasks.comparison_run"]
        page = editor.get(response["Location"]).content.decode()
        assert f'data-job-url="/teams/search/jobs/comparison/{comparison.pk}.json"' in page

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            ({"runs": "first"}, "Choose at least two runs to compare."),
            ({"alpha": "1.5"}, "α must lie strictly between 0 and 1."),
            ({"test": "anova"}, "Select a valid choice."),
            ({"correction": "none"}, "Select a valid choice."),
        ],
    )
    def test_it_shows_what_is_wrong(
        self, editor: Client, sources: Any, change: dict[str, Any], message: str
    ) -> None:
        qrels, good, weak = sources
        form = {"qrels": qrels.pk, "runs": [good.pk, weak.pk], "measures": ["map"], "test": "t",
                "correction": "holm", "alpha": "0.05", "rel_level": "1", **change}  # fmt: skip
        if form["runs"] == "first":
            form["runs"] = [good.pk]
        response = editor.post("/teams/search/comparisons/new/", form)
        assert response.status_code == 400 and message in response.content.decode()
        assert not Comparison.objects.exists()

    def test_it_preselects_the_leaderboards_runs(self, editor: Client, sources: Any) -> None:
        qrels, good, weak = sources
        page = editor.get(f"/teams/search/comparisons/new/?qrels={qrels.pk}&runs={good.pk}&runs={weak.pk}")
        text = page.content.decode()
        assert text.count('name="runs"') == 2 and text.count('name="runs" value') == 2
        assert f'value="{good.pk}" id="id_runs_' in text and "checked" in text
