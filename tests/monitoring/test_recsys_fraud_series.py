"""Recommendation and fraud evaluations in the one metric table: one series per set name, a re-run that
updates, undefined values as NULL, the migration that carried the old result rows, and the set pages'
over-time chart of the evaluations of sets of one name."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.utils import timezone

from evalcore.fraud import FraudOptions
from evalplatform.jobs import JobStatus
from evalplatform.models import Team
from monitoring.models import FraudScoreEvaluation, FraudScoreSet, RecommendationEvaluation, RecommendationSet
from monitoring.recsys_fraud import services as recsys_fraud
from series.models import MetricValue, Series
from series.selectors import job_values

SMALL = {
    "recs": "user,item,rank\nu1,a,1\nu1,b,2\nu2,c,1\nu2,a,2\n",
    "interactions": "user,item\nu1,b\nu2,d\nu3,a\n",
    "items": "item,category\na,x\nb,x\nc,y\nd,z\ne,z\n",
}
SCORES = "id,score,label\nt1,0.9,1\nt2,0.8,0\nt3,0.7,1\nt4,0.2,0\nt5,0.1,0\n"


def upload_recsys(team: Team, name: str, recs: str = SMALL["recs"]) -> RecommendationSet:
    texts = {**SMALL, "recs": recs}
    files = {role: SimpleUploadedFile(f"{role}.csv", text.encode()) for role, text in texts.items()}
    return recsys_fraud.recommendation_set_upload(team=team, name=name, **files)


def evaluated(job: RecommendationEvaluation | FraudScoreEvaluation) -> Any:
    run = (
        recsys_fraud.recommendation_evaluation_run
        if isinstance(job, RecommendationEvaluation)
        else recsys_fraud.fraud_evaluation_run
    )
    assert run(evaluation_id=job.pk).status == "done"
    job.refresh_from_db()
    return job


def scores_upload(team: Team, name: str = "model") -> FraudScoreSet:
    return recsys_fraud.fraud_score_set_upload(
        team=team, name=name, scores=SimpleUploadedFile("s.csv", SCORES.encode())
    )


@pytest.mark.django_db
class TestWrites:
    def test_it_writes_into_the_series_of_the_set_name_and_updates_on_a_rerun(self, team: Team) -> None:
        chosen = upload_recsys(team, "nightly")
        evaluation = evaluated(
            recsys_fraud.recommendation_evaluation_create(recommendation_set=chosen, enqueue=False)
        )
        series = Series.objects.get(kind="recsys")
        assert (series.key, series.team_id, series.family) == (f"{team.pk}:nightly", team.pk, "recsys")
        assert series.url == chosen.get_absolute_url()
        before = list(MetricValue.objects.order_by("position").values_list("metric", "value", "series_id"))
        assert len(before) == 17 and {row[2] for row in before} == {series.pk}
        observed = {row.observed_at for row in job_values(evaluation)}
        assert len(observed) == 1 and evaluation.started_at <= min(observed) <= evaluation.finished_at
        RecommendationEvaluation.objects.filter(pk=evaluation.pk).update(status=JobStatus.PENDING)
        again = evaluated(evaluation)
        after = list(MetricValue.objects.order_by("position").values_list("metric", "value", "series_id"))
        assert after == before and Series.objects.count() == 1  # the job's rows replaced, none added
        assert job_values(again)[0].observed_at > min(observed)  # observed when the re-run finished

    def test_it_stores_undefined_values_as_null(self, team: Team) -> None:
        fraud = evaluated(
            recsys_fraud.fraud_evaluation_create(
                score_set=scores_upload(team), options=FraudOptions(target_fpr=0.5), enqueue=False
            )
        )
        rows = {row.metric: row for row in job_values(fraud)}
        assert rows["precision_at_budget"].value is None  # no alert budget
        assert rows["mean_ttd"].value is None  # no entity and timestamp columns
        assert rows["roc_auc"].value == pytest.approx(5 / 6) and rows["roc_auc"].family == "fraud"
        recsys = evaluated(
            recsys_fraud.recommendation_evaluation_create(
                recommendation_set=upload_recsys(team, "lists"), enqueue=False
            )
        )
        nulls = MetricValue.objects.filter(job_type="monitoring.recommendationevaluation", job_id=recsys.pk)
        assert nulls.filter(metric="serendipity_history", value__isnull=True).exists()  # no history file
        assert recsys.metric_values()["serendipity_history"] is None

    def test_it_deletes_the_values_with_the_evaluation(self, team: Team) -> None:
        chosen = upload_recsys(team, "gone")
        evaluated(recsys_fraud.recommendation_evaluation_create(recommendation_set=chosen, enqueue=False))
        assert MetricValue.objects.exists()
        chosen.delete()
        assert not MetricValue.objects.exists()


@pytest.mark.django_db
class TestOverTime:
    def test_it_charts_two_evaluations_of_the_same_set_name(
        self, client: Client, team: Team, theo: User
    ) -> None:
        first = upload_recsys(team, "weekly")
        evaluated(recsys_fraud.recommendation_evaluation_create(recommendation_set=first, enqueue=False))
        # A week later, a new upload of the same name with another list for u2.
        second = upload_recsys(team, "weekly", recs="user,item,rank\nu1,b,1\nu1,a,2\nu2,d,1\nu2,e,2\n")
        evaluated(recsys_fraud.recommendation_evaluation_create(recommendation_set=second, enqueue=False))
        other = upload_recsys(team, "another name")
        evaluated(recsys_fraud.recommendation_evaluation_create(recommendation_set=other, enqueue=False))
        client.force_login(theo)

        page = client.get(second.get_absolute_url()).content.decode()
        found = re.search(r'<script id="figure-history" type="application/json">(.*?)</script>', page, re.S)
        assert found
        traces = json.loads(found[1])["data"]
        assert [trace["name"] for trace in traces][:2] == ["Hit rate@k", "nDCG@k"]
        assert all(len(trace["x"]) == 2 for trace in traces)
        hit_rates = traces[0]["y"]
        assert hit_rates[0] < hit_rates[1]  # the second lists hit u1 and u2
        table = page[
            page.index('id="history-table"') : page.index("</table>", page.index('id="history-table"'))
        ]
        assert table.count("<tr>") == 3  # the header and two evaluations

        url = f"/teams/search/recommendations/{second.pk}/history.csv"
        rows = list(csv.reader(io.StringIO(client.get(url).content.decode())))
        assert rows[0] == [
            "evaluated_at",
            "hit_rate",
            "ndcg_at_k",
            "catalog_coverage",
            "gini",
            "popularity_bias",
        ]
        assert [float(row[1]) for row in rows[1:]] == hit_rates
        # The first upload's page shows the same series: it is the set name's.
        assert client.get(first.get_absolute_url()).content.decode().count('id="figure-history"') == 1

    def test_it_charts_a_fraud_set_name_and_says_when_nothing_finished(
        self, client: Client, team: Team, theo: User
    ) -> None:
        client.force_login(theo)
        scores = scores_upload(team)
        assert (
            "No evaluation of a set named model has finished yet."
            in client.get(scores.get_absolute_url()).content.decode()
        )
        for fpr in (0.0, 0.5):
            evaluated(
                recsys_fraud.fraud_evaluation_create(
                    score_set=scores, options=FraudOptions(target_fpr=fpr), enqueue=False
                )
            )
        rows = list(
            csv.reader(
                io.StringIO(
                    client.get(f"/teams/search/fraud-scores/{scores.pk}/history.csv").content.decode()
                )
            )
        )
        assert rows[0][1:] == ["detection_rate", "roc_auc", "pr_auc", "total_cost", "savings"]
        assert len(rows) == 3 and [float(row[2]) for row in rows[1:]] == [pytest.approx(5 / 6)] * 2


@pytest.mark.django_db(transaction=True)
def test_it_carries_the_old_result_rows_into_the_metric_table() -> None:
    """Migrate back to before the move, write old-style rows, migrate forward: the values are in the table,
    in the series of each set's name, observed at the evaluation's finish; then back again, and forward."""
    executor = MigrationExecutor(connection)
    (move,) = [
        key
        for key in executor.loader.disk_migrations
        if key[1].endswith("_recsys_fraud_results_to_metric_table")
    ]
    before = [dep for dep in executor.loader.get_migration(*move).dependencies if dep[0] == "monitoring"]
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    team = old.get_model("evalplatform", "Team").objects.create(slug="old", name="Old")
    finished = timezone.now()
    recs = old.get_model("monitoring", "RecommendationSet").objects.create(
        team=team, name="legacy", recs="r", interactions="i"
    )
    recs_eval = old.get_model("monitoring", "RecommendationEvaluation").objects.create(
        team=team, recommendation_set=recs, options_key="a", status="done", finished_at=finished
    )
    old.get_model("monitoring", "RecommendationResult").objects.bulk_create(
        [
            old.get_model("monitoring", "RecommendationResult")(
                evaluation=recs_eval, metric=metric, position=i, value=value
            )
            for i, (metric, value) in enumerate([("hit_rate", 0.5), ("serendipity_history", None)])
        ]
    )
    scores = old.get_model("monitoring", "FraudScoreSet").objects.create(team=team, name="card", file="f")
    fraud_eval = old.get_model("monitoring", "FraudScoreEvaluation").objects.create(
        team=team, score_set=scores, options_key="b", status="done", finished_at=finished
    )
    old.get_model("monitoring", "FraudScoreResult").objects.create(
        evaluation=fraud_eval, metric="roc_auc", value=0.9
    )

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    rows = MetricValue.objects.order_by("job_type", "position")
    assert [(r.job_type, r.job_id, r.metric, r.value, r.family, r.series.key, r.observed_at) for r in rows] == [
        ("monitoring.fraudscoreevaluation", fraud_eval.pk, "roc_auc", 0.9, "fraud", f"{team.pk}:card", finished),
        ("monitoring.recommendationevaluation", recs_eval.pk, "hit_rate", 0.5, "recsys", f"{team.pk}:legacy", finished),
        ("monitoring.recommendationevaluation", recs_eval.pk, "serendipity_history", None, "recsys",
         f"{team.pk}:legacy", finished),
    ]  # fmt: skip
    assert Series.objects.get(kind="recsys").url == f"/teams/old/recommendations/{recs.pk}/"
    assert RecommendationEvaluation.objects.get(pk=recs_eval.pk).metric_values() == {
        "hit_rate": 0.5, "serendipity_history": None
    }  # fmt: skip

    executor = MigrationExecutor(connection)
    executor.migrate(before)
    back = executor.loader.project_state(before).apps
    assert back.get_model("monitoring", "RecommendationResult").objects.count() == 2
    assert not MetricValue.objects.exists()
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert MetricValue.objects.count() == 3
