"""An alert rule on a retrieval measure reads the values of every spelling of that measure, as the leaderboard
and the series charts do (`evalcore.retrieval.canonical_measure`, through `series.selectors.metric_names`):
a rule on `ndcg_cut_10` fires on the values an evaluation asked for as `nDCG@10` stored, and the reverse.
The rule keeps the name it was given; its page names the other stored spellings it reads, and the API gives
the one name it reads the metric by (`metric_key`). Other families' names are matched as given."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evalplatform.models import Team
from monitoring.alerts import services as alerts
from monitoring.evaluations import services as evaluations
from monitoring.files import uploads
from monitoring.models import AlertEvent, AlertRule, Evaluation, QrelsSource, Run
from series.models import MetricValue, Series
from series.selectors import metric_names, series_observations
from series.services import MetricValueIn, metric_values_write
from series.subjects import run_series
from tests.conftest import client_for
from tests.monitoring.conftest import alerts_checked, synthetic_collection, upload
from tests.monitoring.test_alerts_series import _recsys

pytestmark = pytest.mark.django_db

API = "/api/teams/search"


@pytest.fixture
def nightly(team: Team) -> tuple[QrelsSource, Run]:
    qrels_text, make_run = synthetic_collection(queries=4, docs=6)
    qrels = uploads.qrels_upload(team=team, upload=upload("judged.qrels", qrels_text))
    run = uploads.run_upload(team=team, upload=upload("n.run", make_run(0, 1.0)), name="nightly")
    return qrels, run


def _rule(team: Team, series: Series, metric: str, threshold: float = 1.01, **extra: Any) -> AlertRule:
    return alerts.alert_rule_create(
        team=team,
        series=series,
        name="ndcg floor",
        metric=metric,
        comparator="<",
        threshold=threshold,
        **extra,
    )


def _evaluated(qrels: QrelsSource, run: Run, measures: list[str]) -> Evaluation:
    """An evaluation of the run asking for `measures` (stored under the names asked), computed as the worker
    does, with the series' alert rules checked as its values commit."""
    evaluation = evaluations.evaluation_create(run=run, qrels=qrels, measures=measures, enqueue=False)
    with alerts_checked():
        assert evaluations.evaluation_run(evaluation_id=evaluation.pk).status == "done"
    evaluation.refresh_from_db()
    return evaluation


@pytest.mark.parametrize(
    ("rule_metric", "asked"),
    [
        ("ndcg_cut_10", "nDCG@10"),
        ("nDCG@10", "ndcg_cut_10"),
        ("ndcg_cut_10", "ndcg_cut.10"),
        ("P_10", "P@10"),
    ],
)
def test_a_rule_on_a_measure_fires_on_the_values_stored_under_another_spelling(
    team: Team, nightly: tuple[QrelsSource, Run], rule_metric: str, asked: str
) -> None:
    qrels, run = nightly
    series = run_series(qrels, "nightly")
    rule = _rule(team, series, rule_metric)
    evaluation = _evaluated(qrels, run, [asked])
    stored = MetricValue.objects.get(series=series, metric=asked)
    assert not MetricValue.objects.filter(series=series, metric=rule_metric).exists()  # stored as asked
    event = AlertEvent.objects.get(rule=rule)
    assert (event.status, event.value) == ("open", stored.value)
    assert str(evaluation) in event.source
    (check,) = alerts.rule_recent_checks(rule)
    assert (check.verdict, check.fires, check.value) == ("breaks", True, stored.value)
    # The rule keeps the name it was given; its page says which stored names it reads.
    rule.refresh_from_db()
    assert rule.metric == rule_metric and alerts.rule_other_names(rule) == [asked]


def test_the_rule_resolves_on_the_other_spelling_and_counts_a_run_across_spellings(
    team: Team, nightly: tuple[QrelsSource, Run]
) -> None:
    """A run of `consecutive` breaking values may mix spellings; a job that stored the measure under two
    names counts once; a value back on the right side under either name resolves the alert."""
    qrels, run = nightly
    series = run_series(qrels, "nightly")
    rule = _rule(team, series, "ndcg_cut_10", threshold=0.5, consecutive=2)
    jobs = [
        evaluations.evaluation_create(run=run, qrels=qrels, measures=measures, enqueue=False)
        for measures in (["nDCG@10", "ndcg_cut_10"], ["nDCG@10"], ["ndcg_cut.10"], ["map", "nDCG@10"])
    ]
    start = timezone.now() - timedelta(hours=1)

    def observe(i: int, values: list[MetricValueIn]) -> None:
        with alerts_checked():
            metric_values_write(
                job=jobs[i], series=series, observed_at=start + timedelta(minutes=i), values=values
            )

    # One job, both spellings: one observation, not two in a row.
    observe(0, [MetricValueIn("nDCG@10", 0.2), MetricValueIn("ndcg_cut_10", 0.2)])
    assert not AlertEvent.objects.filter(rule=rule).exists()
    assert [o.values for o in series_observations(series, ["ndcg_cut_10"], last=5)] == [{"ndcg_cut_10": 0.2}]
    observe(1, [MetricValueIn("nDCG@10", 0.3)])
    event = AlertEvent.objects.get(rule=rule)
    assert (event.status, event.value) == ("open", 0.3)
    observe(2, [MetricValueIn("ndcg_cut.10", 0.1)])
    event.refresh_from_db()
    assert (event.status, event.observations, event.latest_value) == ("open", 2, 0.1)
    observe(3, [MetricValueIn("map", 0.4), MetricValueIn("nDCG@10", 0.9)])
    event.refresh_from_db()
    assert (event.status, event.latest_value) == ("resolved", 0.9)
    assert alerts.rule_other_names(rule) == ["nDCG@10", "ndcg_cut.10"]


def test_it_keeps_the_query_count_of_a_check_bounded(team: Team, nightly: tuple[QrelsSource, Run]) -> None:
    """The spellings are found in one query over the series' distinct names, not row by row: a check after
    thirty jobs costs what one after three does (the rule, its channels, the names, the anchor job, the
    window, its values, and resolving nothing in a savepoint)."""
    qrels, run = nightly
    series = run_series(qrels, "nightly")
    _rule(team, series, "ndcg_cut_10", threshold=0.0, consecutive=3)
    start = timezone.now() - timedelta(days=1)
    counts = []
    for i in range(30):
        name = "nDCG@10" if i % 2 else "ndcg_cut_10"
        job = evaluations.evaluation_create(
            run=run, qrels=qrels, measures=[name, "map"], rel_level=i + 1, enqueue=False
        )
        metric_values_write(job=job, series=series, observed_at=start + timedelta(minutes=i),
                            values=[MetricValueIn("map", 0.5), MetricValueIn(name, 0.4)])  # fmt: skip
        if i in (2, 29):
            with CaptureQueriesContext(connection) as queries:
                assert alerts.alerts_check_series(series_id=series.pk, job_type="monitoring.evaluation",
                                                  job_id=job.pk) == []  # fmt: skip
            counts.append(len(queries))
    assert counts[0] == counts[1] <= 9, counts
    window = series_observations(series, ["ndcg_cut_10"], last=3)
    assert [o.values for o in window] == [{"ndcg_cut_10": 0.4}] * 3


def test_the_rule_page_and_the_api_keep_the_name_given_and_say_what_it_reads(
    team: Team, theo: User, nightly: tuple[QrelsSource, Run]
) -> None:
    qrels, run = nightly
    editor = client_for(theo)
    body = {"name": "ndcg floor", "metric": "nDCG@10", "comparator": "<", "threshold": 1.01, "kind": "run",
            "qrels": qrels.pk, "run_name": "nightly"}  # fmt: skip
    created = editor.post(f"{API}/alert-rules/", body, content_type="application/json")
    assert created.status_code == 201, created.json()
    assert (created.json()["metric"], created.json()["metric_key"]) == ("nDCG@10", "ndcg_cut_10")
    _evaluated(qrels, run, ["ndcg_cut_10"])
    rule = AlertRule.objects.get(pk=created.json()["id"])
    page = editor.get(f"/teams/search/alerts/rules/{rule.pk}/settings/").content.decode()
    assert 'id="rule-metric-names"' in page and "<code>ndcg_cut_10</code>" in page
    assert "breaks" in page.split('id="rule-checks"')[1]
    listed = editor.get(f"{API}/alerts/").json()["results"]
    assert [(e["metric"], e["status"]) for e in listed] == [("nDCG@10", "open")]


def test_another_familys_metric_is_matched_as_given(
    team: Team, theo: User, django_assert_num_queries: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """No folding outside retrieval: a recommendation rule reads its metric's own name only, with no
    query for spellings, and its page and API say nothing more than before."""
    case = _recsys(team, theo)
    series = alerts.rule_series_resolve(team=team, kind="recsys", set_name="homepage")
    rule = alerts.alert_rule_create(team=team, series=series, name="ndcg", metric="ndcg_at_k", comparator="<",
                                    threshold=0.3)  # fmt: skip
    # A row under a name that folds in retrieval (written past the writer's family check): not read.
    MetricValue.objects.create(series=series, family="recsys", job_type="monitoring.recommendationevaluation",
                               job_id=case.job.pk + 1000, metric="nDCG@10", value=0.0, observed_at=timezone.now())  # fmt: skip
    with django_assert_num_queries(0):
        assert metric_names(series, ["ndcg_at_k", "ndcg_cut_10"]) == {
            "ndcg_at_k": ["ndcg_at_k"], "ndcg_cut_10": ["ndcg_cut_10"]
        }  # fmt: skip
    assert series_observations(series, ["ndcg_cut_10"], last=5) == []
    with alerts_checked():
        metric_values_write(job=case.job, series=series, observed_at=timezone.now(),
                            values=[MetricValueIn("ndcg_at_k", 0.1)])  # fmt: skip
    assert AlertEvent.objects.get(rule=rule).value == 0.1
    assert alerts.rule_other_names(rule) == []
    body = client_for(theo).get(f"{API}/alert-rules/{rule.pk}/").json()
    assert (body["metric"], body["metric_key"]) == ("ndcg_at_k", "ndcg_at_k")
    page = client_for(theo).get(f"/teams/search/alerts/rules/{rule.pk}/settings/").content.decode()
    assert 'id="rule-metric-names"' not in page
