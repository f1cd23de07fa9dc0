"""Editing what a team made: rename, tag, archive and delete runs, qrels sources, evaluations,
recommendation sets and fraud score sets, from the web (with a confirmation naming what goes, with counts)
and the API (PATCH, DELETE); the metric table, the leaderboards and the lists kept consistent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from evalplatform.models import Team
from monitoring.alerts import services as alerts
from monitoring.demo import FRAUD_OPTIONS, demo_fraud_text, demo_recsys_texts
from monitoring.editing import services as editing
from monitoring.evaluations import selectors
from monitoring.evaluations import services as evaluations
from monitoring.files import uploads
from monitoring.models import (
    AlertRule,
    Comparison,
    Evaluation,
    FraudComparison,
    FraudScoreEvaluation,
    FraudScoreSet,
    QrelsSource,
    RecommendationEvaluation,
    RecommendationSet,
    Run,
)
from monitoring.recsys_fraud import comparisons as recsys_fraud_comparisons
from monitoring.recsys_fraud import services as recsys_fraud
from series.models import MetricValue, Series
from series.subjects import recsys_series, run_series
from tests.conftest import THEO, browser_log_in, screenshot_path
from tests.monitoring.conftest import synthetic_collection, upload

QRELS, RUN = synthetic_collection(queries=6, docs=10)


def csv_file(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="text/csv")


def logged_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


def evaluated(run: Run, qrels: QrelsSource, measures: tuple[str, ...] = ("map", "P_5")) -> Evaluation:
    evaluation = evaluations.evaluation_create(run=run, qrels=qrels, measures=measures, enqueue=False)
    evaluations.evaluation_run(evaluation_id=evaluation.pk)
    evaluation.refresh_from_db()
    assert evaluation.status == "done", evaluation.error
    return evaluation


@pytest.fixture
def world(team: Team) -> dict[str, Any]:
    """Qrels, two runs (bm25 evaluated twice on them, dense once) and a comparison of both."""
    qrels = uploads.qrels_upload(team=team, upload=upload("judged.qrels", QRELS))
    bm25 = uploads.run_upload(team=team, upload=upload("bm25.run", RUN(1, 1.0, "bm25")))
    dense = uploads.run_upload(team=team, upload=upload("dense.run", RUN(2, 0.5, "dense")))
    first = evaluated(bm25, qrels)
    second = evaluated(bm25, qrels, ("map",))
    other = evaluated(dense, qrels)
    comparison = evaluations.comparison_create(
        qrels=qrels, runs=[bm25, dense], measures=("map",), enqueue=False
    )
    evaluations.comparison_run(comparison_id=comparison.pk)
    return {"qrels": qrels, "bm25": bm25, "dense": dense, "first": first, "second": second, "other": other,
            "comparison": comparison}  # fmt: skip


def values_of(*jobs: Evaluation) -> int:
    return MetricValue.objects.filter(
        job_type="monitoring.evaluation", job_id__in=[job.pk for job in jobs]
    ).count()


def counts(item: Any) -> dict[str, int]:
    return {line.what: line.count for line in editing.delete_consequences(item)}


@pytest.mark.django_db
class TestServices:
    def test_it_counts_what_goes_with_a_run(self, world: dict[str, Any]) -> None:
        assert counts(world["bm25"]) == {
            "evaluations": 2, "leaderboards": 1, "comparisons": 1, "pools": 0, "files": 1
        }  # fmt: skip
        lines = [line.text for line in editing.delete_consequences(world["bm25"])]
        values = values_of(world["first"], world["second"])
        assert values > 3  # map, P_5 and map, with the coverage measures every evaluation stores
        assert (
            lines[0] == f"2 evaluations of it, with {values} metric values in the team's series and charts."
        )

    def test_it_counts_what_goes_with_a_qrels_source(self, world: dict[str, Any], team: Team) -> None:
        series = run_series(world["qrels"], "bm25")
        alerts.alert_rule_create(
            team=team, series=series, name="low", metric="map", comparator="<", threshold=0.1
        )
        assert counts(world["qrels"]) == {
            "evaluations": 3, "leaderboards": 1, "comparisons": 1, "analyses": 0, "series": 2, "files": 1
        }  # fmt: skip

    def test_it_deletes_a_qrels_source_with_its_evaluations_series_rules_and_file(
        self, world: dict[str, Any], team: Team, django_capture_on_commit_callbacks: Any
    ) -> None:
        series = run_series(world["qrels"], "bm25")
        alerts.alert_rule_create(
            team=team, series=series, name="low", metric="map", comparator="<", threshold=0.1
        )
        stored = Path(world["qrels"].file.path)
        with django_capture_on_commit_callbacks(execute=True):
            editing.item_delete(item=world["qrels"])
        assert not stored.exists() and not QrelsSource.objects.exists()
        assert not Evaluation.objects.exists() and not Comparison.objects.exists()
        assert not MetricValue.objects.exists() and not AlertRule.objects.exists()
        assert not Series.objects.filter(kind="run").exists()
        assert Run.objects.count() == 2 and Path(world["bm25"].file.path).exists()

    def test_it_deletes_an_evaluation_and_the_leaderboard_falls_back_to_the_older_one(
        self, world: dict[str, Any]
    ) -> None:
        assert counts(world["second"]) == {"values": values_of(world["second"]), "leaderboards": 1, "run": 0}
        assert counts(world["first"])["leaderboards"] == 0  # the leaderboard shows the newer one
        editing.item_delete(item=world["second"])
        assert not MetricValue.objects.filter(
            job_type="monitoring.evaluation", job_id=world["second"].pk
        ).exists()
        rows = {row.run.name: row.evaluation.pk for row in selectors.leaderboard(qrels=world["qrels"]).rows}
        assert rows == {"bm25": world["first"].pk, "dense": world["other"].pk}

    def test_it_moves_a_renamed_runs_values_to_the_series_of_its_new_name(
        self, world: dict[str, Any]
    ) -> None:
        editing.item_update(
            item=world["bm25"], name="bm25-tuned", tags=[" a", "b", "a", ""], description=" x "
        )
        run = Run.objects.get(pk=world["bm25"].pk)
        assert (run.name, run.tags, run.description) == ("bm25-tuned", ["a", "b"], "x")
        new = run_series(world["qrels"], "bm25-tuned")
        assert set(new.values.values_list("job_id", flat=True)) == {world["first"].pk, world["second"].pk}
        assert not run_series(world["qrels"], "bm25").values.exists()

    def test_it_relabels_the_series_of_a_renamed_qrels_source(self, world: dict[str, Any]) -> None:
        editing.item_update(item=world["qrels"], name="trec-2024")
        labels = set(Series.objects.filter(kind="run").values_list("label", flat=True))
        assert labels == {"run bm25 on trec-2024", "run dense on trec-2024"}

    def test_it_refuses_a_blank_name_and_too_many_tags(self, world: dict[str, Any]) -> None:
        with pytest.raises(editing.InputError, match="Give a name"):
            editing.item_update(item=world["bm25"], name="  ")
        with pytest.raises(editing.InputError, match="At most 50 tags"):
            editing.item_update(item=world["bm25"], tags=[str(i) for i in range(51)])
        assert Run.objects.get(pk=world["bm25"].pk).name == "bm25"

    def test_it_hides_archived_runs_and_evaluations_from_the_lists_and_the_leaderboard(
        self, world: dict[str, Any], team: Team
    ) -> None:
        editing.item_update(item=world["dense"], archived=True)
        editing.item_update(item=world["second"], archived=True)
        assert list(selectors.team_runs(team=team, archived=False)) == [world["bm25"]]
        assert set(selectors.team_evaluations(team=team, archived=False)) == {world["first"]}
        rows = {row.run.name: row.evaluation.pk for row in selectors.leaderboard(qrels=world["qrels"]).rows}
        assert rows == {"bm25": world["first"].pk}
        every = selectors.leaderboard(qrels=world["qrels"], archived=True).rows
        assert {row.evaluation.pk for row in every} == {world["second"].pk, world["other"].pk}
        assert Evaluation.objects.count() == 3
        assert MetricValue.objects.filter(series__isnull=False).count() == values_of(
            *Evaluation.objects.all()
        )


@pytest.fixture
def sets(team: Team) -> tuple[RecommendationSet, FraudScoreSet]:
    files = {role: csv_file(f"{role}.csv", text) for role, text in demo_recsys_texts().items()}
    recs = recsys_fraud.recommendation_set_upload(team=team, name="popular", **files)
    evaluation = recsys_fraud.recommendation_evaluation_create(recommendation_set=recs, enqueue=False)
    recsys_fraud.recommendation_evaluation_run(evaluation_id=evaluation.pk)
    scores = recsys_fraud.fraud_score_set_upload(
        team=team, name="cards", scores=csv_file("s.csv", demo_fraud_text())
    )
    fraud = recsys_fraud.fraud_evaluation_create(score_set=scores, options=FRAUD_OPTIONS, enqueue=False)
    recsys_fraud.fraud_evaluation_run(evaluation_id=fraud.pk)
    return recs, scores


@pytest.mark.django_db
class TestSets:
    def test_it_renames_a_recommendation_set_with_its_series_and_deletes_it_with_its_files(
        self,
        sets: tuple[RecommendationSet, FraudScoreSet],
        team: Team,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        recs, _ = sets
        values = MetricValue.objects.filter(job_type="monitoring.recommendationevaluation").count()
        assert values > 0 and counts(recs) == {"evaluations": 1, "files": len(recs.stored())}
        editing.item_update(item=recs, name="popular-v2")
        assert recsys_series(team.pk, "popular-v2").values.count() == values
        paths = [Path(stored.path) for stored in recs.stored().values()]
        with django_capture_on_commit_callbacks(execute=True):
            editing.item_delete(item=recs)
        assert not any(path.exists() for path in paths) and not RecommendationSet.objects.exists()
        assert not MetricValue.objects.filter(job_type="monitoring.recommendationevaluation").exists()

    def test_the_api_patches_and_deletes_a_fraud_score_set(
        self, client: Client, theo: User, vera: User, sets: tuple[RecommendationSet, FraudScoreSet]
    ) -> None:
        _, scores = sets
        url = f"/api/teams/search/fraud-score-sets/{scores.pk}/"
        assert (
            logged_in(client, vera)
            .patch(url, {"archived": True}, content_type="application/json")
            .status_code
            == 403
        )
        editor = logged_in(client, theo)
        body = editor.patch(url, {"tags": ["v1"], "archived": True}, content_type="application/json").json()
        assert (body["name"], body["tags"], body["archived"]) == ("cards", ["v1"], True)
        listed = "/api/teams/search/fraud-score-sets/"
        assert editor.get(listed).json()["count"] == 0
        assert [row["id"] for row in editor.get(listed + "?archived=true").json()["results"]] == [scores.pk]
        refused = editor.patch(url, {"name": ""}, content_type="application/json")
        assert refused.status_code == 400 and refused.json() == {"name": ["Give a name."]}
        assert editor.delete(url).status_code == 204
        assert not FraudScoreSet.objects.exists() and not FraudScoreEvaluation.objects.exists()


@pytest.mark.django_db
class TestSetEvaluations:
    """A recommendation or fraud evaluation is renamed and deleted on its own (never archived): its
    comparisons go with it, its set and the set's other evaluations stay."""

    def test_it_renames_and_deletes_a_fraud_evaluation_with_its_comparisons_from_the_web(
        self, client: Client, theo: User, sets: tuple[RecommendationSet, FraudScoreSet]
    ) -> None:
        _, scores = sets
        first = FraudScoreEvaluation.objects.get(score_set=scores)
        second = recsys_fraud.fraud_evaluation_create(score_set=scores, enqueue=False)
        recsys_fraud.fraud_evaluation_run(evaluation_id=second.pk)
        recsys_fraud_comparisons.fraud_comparison_create(a=first, b=second, enqueue=False)
        editor = logged_in(client, theo)
        base = f"/teams/search/fraud-scores/evaluations/{first.pk}/"
        page = editor.get(base).content.decode()
        assert 'id="fraud-evaluation-edit"' in page and 'id="fraud-evaluation-archive"' not in page
        assert editor.post(base + "edit/", {"name": "fpr 1%", "tags": "prod"}).status_code == 302
        assert "(fpr 1%)</h1>" in editor.get(base).content.decode()
        values = MetricValue.objects.filter(
            job_type="monitoring.fraudscoreevaluation", job_id=first.pk
        ).count()
        confirm = editor.get(base + "delete/").content.decode()
        assert "Delete the fraud evaluation fpr 1%?" in confirm
        assert (
            f"{values} metric values in the series of cards" in confirm and "1 comparison it takes" in confirm
        )
        assert editor.post(base + "delete/").status_code == 400
        done = editor.post(base + "delete/", {"confirm": f"delete fraud-scores/evaluations {first.pk}"})
        assert done.status_code == 302 and not FraudScoreEvaluation.objects.filter(pk=first.pk).exists()
        assert not FraudComparison.objects.exists() and FraudScoreEvaluation.objects.get() == second
        assert not MetricValue.objects.filter(job_type="monitoring.fraudscoreevaluation", job_id=first.pk)

    def test_the_api_patches_and_deletes_a_recommendation_evaluation(
        self, client: Client, theo: User, vera: User, sets: tuple[RecommendationSet, FraudScoreSet]
    ) -> None:
        recs, _ = sets
        evaluation = RecommendationEvaluation.objects.get(recommendation_set=recs)
        url = f"/api/teams/search/recommendation-evaluations/{evaluation.pk}/"
        assert logged_in(Client(), vera).delete(url).status_code == 403
        editor = logged_in(client, theo)
        body = editor.patch(
            url, {"name": "k=10", "description": "weekly"}, content_type="application/json"
        ).json()
        assert (body["name"], body["description"], body["tags"]) == ("k=10", "weekly", [])
        assert editor.patch(url, {"archived": True}, content_type="application/json").status_code == 400
        assert editor.delete(url).status_code == 204
        assert not RecommendationEvaluation.objects.exists() and RecommendationSet.objects.get() == recs


@pytest.mark.django_db
class TestPages:
    def test_it_confirms_a_run_deletion_naming_what_goes_and_refuses_an_empty_post(
        self, client: Client, theo: User, world: dict[str, Any]
    ) -> None:
        editor = logged_in(client, theo)
        url = f"/teams/search/runs/{world['bm25'].pk}/delete/"
        page = editor.get(url).content.decode()
        assert "Delete the run bm25?" in page
        assert (
            f"2 evaluations of it, with {values_of(world['first'], world['second'])} metric values" in page
            and "1 comparison it took part in" in page
        )
        assert "Its row on 1 leaderboard." in page and "bm25.run" in page
        assert editor.post(url).status_code == 400 and Run.objects.filter(pk=world["bm25"].pk).exists()
        done = editor.post(url, {"confirm": f"delete runs {world['bm25'].pk}"})
        assert done.status_code == 302 and done["Location"] == "/teams/search/#run-table"
        assert not Run.objects.filter(pk=world["bm25"].pk).exists() and Evaluation.objects.count() == 1

    def test_it_edits_with_the_message_beside_the_field(
        self, client: Client, theo: User, world: dict[str, Any]
    ) -> None:
        editor = logged_in(client, theo)
        url = f"/teams/search/qrels/{world['qrels'].pk}/edit/"
        assert 'value="judged"' in editor.get(url).content.decode()
        refused = editor.post(url, {"name": "", "tags": "a"})
        assert refused.status_code == 400 and "This field is required." in refused.content.decode()
        saved = editor.post(url, {"name": "trec-2024", "description": "pooled", "tags": "trec, 2024"})
        assert saved.status_code == 302
        source = QrelsSource.objects.get(pk=world["qrels"].pk)
        assert (source.name, source.description, source.tags) == ("trec-2024", "pooled", ["trec", "2024"])

    def test_it_names_an_evaluation_and_archives_it_from_the_web(
        self, client: Client, theo: User, world: dict[str, Any]
    ) -> None:
        editor = logged_in(client, theo)
        pk = world["second"].pk
        assert (
            editor.post(f"/teams/search/evaluations/{pk}/edit/", {"name": "", "tags": ""}).status_code == 302
        )
        assert editor.post(f"/teams/search/evaluations/{pk}/edit/", {"name": "baseline"}).status_code == 302
        assert editor.post(f"/teams/search/evaluations/{pk}/archive/").status_code == 400
        assert editor.post(f"/teams/search/evaluations/{pk}/archive/", {"archived": "1"}).status_code == 302
        found = Evaluation.objects.get(pk=pk)
        assert (found.name, found.archived) == ("baseline", True)
        hidden = editor.get("/teams/search/").content.decode()
        assert f'id="evaluation-{pk}"' not in hidden and f'id="evaluation-{world["first"].pk}"' in hidden
        shown = editor.get("/teams/search/?archived=1").content.decode()
        assert f'id="evaluation-{pk}"' in shown and "baseline" in shown and "Hide them" in shown

    def test_a_viewer_may_not_edit_archive_or_delete(
        self, client: Client, vera: User, world: dict[str, Any]
    ) -> None:
        viewer = logged_in(client, vera)
        pk = world["bm25"].pk
        for action in ("edit", "delete"):
            assert viewer.get(f"/teams/search/runs/{pk}/{action}/").status_code == 403
        assert viewer.post(f"/teams/search/runs/{pk}/archive/", {"archived": "1"}).status_code == 403
        assert 'id="run-delete"' not in viewer.get(f"/teams/search/runs/{pk}/").content.decode()

    def test_the_team_page_and_leaderboard_keep_their_query_ceilings_with_archived_shown(
        self,
        client: Client,
        theo: User,
        world: dict[str, Any],
        team: Team,
        django_assert_max_num_queries: Any,
    ) -> None:
        editor = logged_in(client, theo)
        for path in ("/teams/search/", f"/teams/search/leaderboard/{world['qrels'].pk}/"):
            with django_assert_max_num_queries(20) as few:
                editor.get(path + "?archived=1")
            for i in range(4):
                run = uploads.run_upload(team=team, upload=upload(f"r{i}.run", RUN(i + 3, 0.2, f"r{i}")))
                editing.item_update(item=evaluated(run, world["qrels"], ("map",)), archived=i % 2 == 0)
            with django_assert_max_num_queries(len(few.captured_queries)):
                page = editor.get(path + "?archived=1").content.decode()
            assert "r0" in page and "r3" in page


@pytest.mark.django_db
class TestComparisons:
    """A comparison is renamed, described, tagged and deleted on its own (never archived); its runs, qrels
    and their evaluations stay."""

    def test_it_names_what_goes_with_a_comparison_with_counts(self, world: dict[str, Any]) -> None:
        comparison = world["comparison"]
        lines = {line.what: line for line in editing.delete_consequences(comparison)}
        pairs = comparison.pairs.count()
        assert pairs == 1 and lines["pairs"].text.startswith("1 paired test (every pair of runs")
        values = MetricValue.objects.filter(job_type="monitoring.comparison", job_id=comparison.pk).count()
        assert lines["values"].count == values == 2  # each run's mean of map
        assert lines["runs"].text == "The runs (bm25, dense) and the qrels judged stay."

    def test_it_renames_and_deletes_a_comparison_from_the_web(
        self, client: Client, theo: User, world: dict[str, Any], django_capture_on_commit_callbacks: Any
    ) -> None:
        editor = logged_in(client, theo)
        pk = world["comparison"].pk
        base = f"/teams/search/comparisons/{pk}/"
        page = editor.get(base).content.decode()
        assert 'id="comparison-edit"' in page and 'id="comparison-delete"' in page
        assert 'id="comparison-archive"' not in page
        saved = editor.post(
            base + "edit/", {"name": "bm25 vs dense", "description": "week 48", "tags": "a, b"}
        )
        assert saved.status_code == 302 and saved["Location"] == base
        assert "<h1>Comparison bm25 vs dense</h1>" in editor.get(base).content.decode()
        assert editor.post(base + "archive/", {"archived": "1"}).status_code == 404
        confirm = editor.get(base + "delete/").content.decode()
        assert "Delete the comparison bm25 vs dense?" in confirm and "1 paired test" in confirm
        assert editor.post(base + "delete/").status_code == 400 and Comparison.objects.filter(pk=pk).exists()
        with django_capture_on_commit_callbacks(execute=True):
            done = editor.post(base + "delete/", {"confirm": f"delete comparisons {pk}"})
        assert done.status_code == 302 and done["Location"] == "/teams/search/#comparison-table"
        assert (
            not Comparison.objects.exists()
            and not MetricValue.objects.filter(job_type="monitoring.comparison").exists()
        )
        assert Run.objects.count() == 2 and Evaluation.objects.count() == 3

    def test_the_api_patches_and_deletes_a_comparison_but_never_archives_it(
        self, client: Client, theo: User, vera: User, world: dict[str, Any]
    ) -> None:
        url = f"/api/teams/search/comparisons/{world['comparison'].pk}/"
        viewer = logged_in(Client(), vera)
        assert viewer.patch(url, {"name": "x"}, content_type="application/json").status_code == 403
        editor = logged_in(client, theo)
        patched = editor.patch(url, {"name": "weekly", "tags": ["t"]}, content_type="application/json")
        assert patched.status_code == 200 and (patched.json()["name"], patched.json()["tags"]) == (
            "weekly",
            ["t"],
        )
        refused = editor.patch(url, {"archived": True}, content_type="application/json")
        assert refused.status_code == 400 and list(refused.json()) == ["archived"]
        assert editor.delete(url).status_code == 204 and not Comparison.objects.exists()
        assert Run.objects.count() == 2


@pytest.mark.django_db
class TestArchivedChoices:
    """Archived runs and qrels sources are offered for no new work: the forms list those not archived, and
    the forms and the API refuse one chosen anyway, saying why."""

    @pytest.fixture
    def archived(self, world: dict[str, Any], team: Team) -> dict[str, Any]:
        old = uploads.qrels_upload(team=team, upload=upload("old.qrels", QRELS))
        editing.item_update(item=world["dense"], archived=True)
        editing.item_update(item=old, archived=True)  # the newest source, archived
        return {**world, "old": old}

    def test_the_forms_list_only_what_is_not_archived(
        self, client: Client, theo: User, archived: dict[str, Any]
    ) -> None:
        editor = logged_in(client, theo)
        bm25, dense, qrels, old = archived["bm25"], archived["dense"], archived["qrels"], archived["old"]
        for path in ("evaluations/new/", "comparisons/new/", "fusions/new/", "runs/new/"):
            page = editor.get(f"/teams/search/{path}").content.decode()
            assert f'value="{old.pk}"' not in page and f"old (#{old.pk}" not in page, path
            if path != "runs/new/":
                assert f"bm25 (#{bm25.pk})" in page and f"dense (#{dense.pk})" not in page, path
        evaluation = editor.get("/teams/search/evaluations/new/").content.decode()
        # The newest source not archived is the one chosen first.
        assert f'<option value="{qrels.pk}" selected>judged (#{qrels.pk}' in evaluation

    def test_the_forms_refuse_an_archived_run_or_qrels_source_saying_why(
        self, client: Client, theo: User, archived: dict[str, Any]
    ) -> None:
        editor = logged_in(client, theo)
        dense, old = archived["dense"], archived["old"]
        refused = editor.post(
            "/teams/search/evaluations/new/",
            {"run": dense.pk, "qrels": old.pk, "measures": ["map"], "rel_level": 1},
        )
        page = refused.content.decode()
        assert refused.status_code == 400
        assert f"The run dense (#{dense.pk}) is archived: unarchive it" in page
        assert f"The qrels source old (#{old.pk}) is archived" in page
        compared = editor.post(
            "/teams/search/comparisons/new/",
            {"qrels": archived["qrels"].pk, "runs": [archived["bm25"].pk, dense.pk], "measures": ["map"],
             "rel_level": 1, "test": "t", "correction": "holm", "alpha": 0.05},
        )  # fmt: skip
        assert compared.status_code == 400 and "The run dense" in compared.content.decode()
        assert Evaluation.objects.count() == 3 and Comparison.objects.count() == 1

    def test_the_api_refuses_an_archived_run_or_qrels_source_naming_the_field(
        self, client: Client, theo: User, archived: dict[str, Any]
    ) -> None:
        editor = logged_in(client, theo)
        dense, qrels, old = archived["dense"], archived["qrels"], archived["old"]
        evaluation = editor.post(
            "/api/teams/search/evaluations/",
            {"run": dense.pk, "qrels": old.pk},
            content_type="application/json",
        )
        assert evaluation.status_code == 400
        assert evaluation.json() == {
            "run": [editing.archived_refusal(dense, "run")],
            "qrels": [editing.archived_refusal(old, "qrels source")],
        }
        assert 'PATCH {"archived": false}' in evaluation.json()["run"][0]
        runs = [archived["bm25"].pk, dense.pk]
        comparison = editor.post(
            "/api/teams/search/comparisons/",
            {"qrels": qrels.pk, "runs": runs},
            content_type="application/json",
        )
        assert comparison.status_code == 400
        assert comparison.json() == {"runs": {"1": [editing.archived_refusal(dense, "run")]}}
        # Unarchived, it is taken again.
        editing.item_update(item=dense, archived=False)
        taken = editor.post(
            "/api/teams/search/evaluations/",
            {"run": dense.pk, "qrels": qrels.pk},
            content_type="application/json",
        )
        assert taken.status_code in (200, 202), taken.json()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_editor_renames_archives_and_deletes_a_run_in_chromium(
    page: Any, live_server: Any, team: Team, theo: User
) -> None:
    qrels = uploads.qrels_upload(team=team, upload=upload("judged.qrels", QRELS))
    run = uploads.run_upload(team=team, upload=upload("bm25.run", RUN(1, 1.0, "bm25")))
    evaluated(run, qrels)
    stored = Path(run.file.path)
    browser_log_in(page, live_server, THEO.username, THEO.password)
    page.goto(f"{live_server.url}/teams/search/runs/{run.pk}/")

    # Rename and tag: a tag too long is refused by the server, beside the field.
    page.locator("#run-edit").click()
    page.get_by_label("Tags", exact=True).fill("x" * 101)
    page.get_by_role("button", name="Save").click()
    assert "A tag has at most 100 characters." in page.locator("#item-edit-form [role=alert]").inner_text()
    page.get_by_label("Name", exact=True).fill("bm25-tuned")
    page.get_by_label("Tags", exact=True).fill("baseline, 2024")
    page.get_by_role("button", name="Save").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Run bm25-tuned"

    # Archive: gone from the team's runs and the leaderboard until "show archived".
    page.locator("#run-archive").click()
    assert page.locator("#run-archived").inner_text() == "archived"
    page.get_by_role("link", name="Search", exact=True).click()
    assert "bm25-tuned" not in page.locator("body").inner_text()
    page.locator("#archived-toggle").get_by_role("link", name="Show them").click()
    assert "archived=1" in page.url and "bm25-tuned" in page.locator("#run-table").inner_text()
    page.goto(f"{live_server.url}/teams/search/leaderboard/{qrels.pk}/")
    assert page.locator("#leaderboard-table").count() == 0
    page.locator("#archived-toggle").get_by_role("link", name="Show them").click()
    assert "bm25-tuned" in page.locator("#leaderboard-table").inner_text()

    # Delete: the confirmation names what goes, with counts.
    page.goto(f"{live_server.url}/teams/search/runs/{run.pk}/")
    page.locator("#run-delete").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Delete the run bm25-tuned?"
    consequences = page.locator("#consequences").inner_text()
    assert "1 evaluation of it" in consequences and "Its row on 1 leaderboard." in consequences
    page.screenshot(path=str(screenshot_path("delete-run.png")), full_page=True)
    page.get_by_role("button", name="Delete the run").click()
    assert page.get_by_role("status").inner_text().startswith("Deleted the run bm25-tuned")
    assert not Run.objects.exists() and not Evaluation.objects.exists() and not stored.exists()
