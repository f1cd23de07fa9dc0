"""Alert rules on any series of any family: made through the API by series id or by subject, refused when
their metric is of another family (API and form), and firing on values written into the one table, whose
`series_observed` signal queues one check per series (run here synchronously; the real worker's path is
`test_it_checks_a_nightly_run_and_a_stream_through_the_worker_end_to_end`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import models
from django.utils import timezone

from annotations.models import Project, ProjectMembership, QualityRecompute
from evalplatform.models import Team
from monitoring.alerts import services as alerts
from monitoring.evaluations import services as evaluations
from monitoring.files import uploads
from monitoring.models import (
    AlertEvent,
    AlertRule,
    EmbeddingSnapshot,
    EmbeddingStream,
    FraudScoreEvaluation,
    FraudScoreSet,
    MonitorRun,
    RecommendationEvaluation,
    RecommendationSet,
)
from monitoring.tasks import alerts_check_series
from series.models import MetricValue, Series
from series.services import MetricValueIn, metric_values_write
from tests.conftest import QueuedTasks, WorkerProcess, client_for
from tests.monitoring.conftest import synthetic_collection, upload
from tests.monitoring.test_streams import PARAMS

API = "/api/teams/search"
TASK = "monitoring.tasks.alerts_check_series"


@dataclass(frozen=True)
class Case:
    """A family's subject as the API names it, a job of that family, and a metric value that fires."""

    fields: dict[str, Any]
    job: models.Model
    metric: str
    comparator: str
    threshold: float
    value: float
    label: str
    #: Values the job writes beside the metric (an annotator's gold count: `alerts.services.GOLD_SUPPORT`).
    also: tuple[tuple[str, float], ...] = ()


def _project(team: Team, annotator: User) -> Project:
    project = Project.objects.create(slug="python-help", name="Python help", team=team)
    ProjectMembership.objects.create(project=project, user=annotator, role="annotator")
    return project


def _retrieval(team: Team, theo: User) -> Case:
    qrels_text, make_run = synthetic_collection(queries=4, docs=6)
    qrels = uploads.qrels_upload(team=team, upload=upload("judged.qrels", qrels_text))
    run = uploads.run_upload(team=team, upload=upload("n.run", make_run(0, 1.0)), name="nightly")
    job = evaluations.evaluation_create(run=run, qrels=qrels, measures=["ndcg_cut_10"], enqueue=False)
    fields = {"kind": "run", "qrels": qrels.pk, "run_name": "nightly"}
    return Case(fields, job, "ndcg_cut_10", "<", 0.5, 0.2, "run nightly on judged")


def _embedding(team: Team, theo: User) -> Case:
    stream = EmbeddingStream.objects.create(team=team, slug="docs", name="Doc embeddings", dimension=8)
    observed = timezone.now() - timedelta(hours=1)
    snapshot = EmbeddingSnapshot.objects.create(
        stream=stream, file="x.npy", rows=10, dimension=8, observed_at=observed
    )
    job = MonitorRun.objects.create(stream=stream, snapshot=snapshot, observed_at=observed, status="done")
    return Case({"kind": "stream", "stream": "docs"}, job, "avg_cosine_similarity", ">", 0.3, 0.6,
                "stream Doc embeddings")  # fmt: skip


def _recsys(team: Team, theo: User) -> Case:
    chosen = RecommendationSet.objects.create(team=team, name="homepage", recs="recs.csv")
    job = RecommendationEvaluation.objects.create(team=team, recommendation_set=chosen, options_key="a")
    return Case({"kind": "recsys", "set_name": "homepage"}, job, "catalog_coverage", "<", 0.3, 0.1,
                "recommendations homepage")  # fmt: skip


def _fraud(team: Team, theo: User) -> Case:
    chosen = FraudScoreSet.objects.create(team=team, name="cards", file="scores.csv")
    job = FraudScoreEvaluation.objects.create(team=team, score_set=chosen, options_key="a")
    return Case({"kind": "fraud", "set_name": "cards"}, job, "detection_rate", "<", 0.5, 0.25,
                "fraud scores cards")  # fmt: skip


def _agreement(team: Team, theo: User) -> Case:
    project = _project(team, theo)
    job = QualityRecompute.objects.create(project=project)
    return Case({"kind": "project", "project": project.slug}, job, "krippendorff_alpha_ordinal", "<", 0.667,
                0.41, "project Python help")  # fmt: skip


def _annotator(team: Team, theo: User) -> Case:
    project = _project(team, theo)
    job = QualityRecompute.objects.create(project=project)
    return Case({"kind": "annotator", "project": project.slug, "username": theo.username}, job,
                "gold_accuracy", "<", project.min_gold_accuracy, 0.55, f"annotator {theo.username} in Python help",
                also=(("gold_seen", project.min_gold_items),))  # fmt: skip


CASES: dict[str, Callable[[Team, User], Case]] = {
    "retrieval": _retrieval, "embedding": _embedding, "recsys": _recsys, "fraud": _fraud,
    "agreement": _agreement, "annotator": _annotator,
}  # fmt: skip

#: Per kind, a metric of another family: a rule on it would never fire.
OTHER_FAMILY = {
    "run": "avg_cosine_similarity", "stream": "ndcg_cut_10", "recsys": "detection_rate",
    "fraud": "catalog_coverage", "project": "gold_accuracy", "annotator": "krippendorff_alpha_ordinal",
}  # fmt: skip


def observe(case: Case, series: Series, queued: QueuedTasks, capture: Any, value: float) -> list[Any]:
    """Write the job's value into the table, as the job's completion does, and run the check the
    `series_observed` signal queued (one per series), here."""
    queued.sent.clear()
    with capture(execute=True):
        metric_values_write(job=case.job, series=series, observed_at=timezone.now(),
                            values=[MetricValueIn(case.metric, value), *(MetricValueIn(*pair) for pair in case.also)])  # fmt: skip
    checks = [args for name, args, _ in queued.sent if name == TASK]
    assert checks == [(series.pk, case.job._meta.label_lower, case.job.pk)]
    return [alerts_check_series(*args) for args in checks]


@pytest.mark.django_db
class TestEveryFamily:
    @pytest.mark.parametrize("family", list(CASES))
    def test_it_opens_an_alert_on_a_rule_made_through_the_api(
        self, family: str, team: Team, theo: User, queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:  # fmt: skip
        case = CASES[family](team, theo)
        editor = client_for(theo)
        body = {"name": f"{family}_floor", "metric": case.metric, "comparator": case.comparator,
                "threshold": case.threshold, **case.fields}  # fmt: skip
        created = editor.post(f"{API}/alert-rules/", body, content_type="application/json")
        assert created.status_code == 201, created.json()
        assert (created.json()["family"], created.json()["series"]) == (family, case.label)
        rule = AlertRule.objects.select_related("series").get(pk=created.json()["id"])
        assert observe(case, rule.series, queued, django_capture_on_commit_callbacks, case.value) == [1]
        event = AlertEvent.objects.get(rule=rule)
        assert (event.status, event.value, event.threshold) == ("open", case.value, case.threshold)
        assert str(case.job) in event.source and case.label in event.source
        page = editor.get("/teams/search/alerts/").content.decode()
        assert f"{family}_floor" in page and case.label in page
        listed = editor.get(f"{API}/alerts/").json()["results"]
        assert [(e["rule_name"], e["status"]) for e in listed] == [(f"{family}_floor", "open")]
        # Back on the right side of the threshold: the event resolves.
        good = case.threshold + 0.1 if case.comparator == "<" else case.threshold - 0.1
        observe(case, rule.series, queued, django_capture_on_commit_callbacks, good)
        assert AlertEvent.objects.get(rule=rule).status == "resolved"

    def test_an_annotators_accuracy_on_too_few_gold_items_decides_nothing(
        self, team: Team, theo: User, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        """One gold answer wrong is an accuracy of 0, but the quality gate judges nobody on fewer gold items
        than the project's minimum: a rule reads it as not computed (no alert, none resolved), and the
        rule's page says so; once the annotator has seen enough, it fires. The series keeps the value."""
        case = CASES["annotator"](team, theo)
        minimum = Project.objects.get(slug="python-help").min_gold_items
        editor = client_for(theo)
        body = {
            "name": "gold_floor",
            "metric": case.metric,
            "comparator": "<",
            "threshold": 0.7,
            **case.fields,
        }
        rule = AlertRule.objects.select_related("series").get(
            pk=editor.post(f"{API}/alert-rules/", body, content_type="application/json").json()["id"]
        )
        few = Case(**{**case.__dict__, "also": (("gold_seen", 1),)})
        assert observe(few, rule.series, queued, django_capture_on_commit_callbacks, 0.0) == [0]
        assert not AlertEvent.objects.exists()
        (check,) = alerts.rule_recent_checks(rule)
        assert (check.verdict, check.fires) == ("not judged", False) and "too few gold items" in check.reason
        assert "not judged" in editor.get(f"/teams/search/alerts/rules/{rule.pk}/settings/").content.decode()
        enough = Case(**{**case.__dict__, "also": (("gold_seen", minimum),)})
        assert observe(enough, rule.series, queued, django_capture_on_commit_callbacks, 0.4) == [1]
        assert AlertEvent.objects.get(rule=rule).status == "open"
        # Back to too few (a gold answer taken back): the open alert stays as it was.
        observe(few, rule.series, queued, django_capture_on_commit_callbacks, 0.9)
        assert AlertEvent.objects.get(rule=rule).status == "open"
        assert MetricValue.objects.get(series=rule.series, metric="gold_accuracy").value == 0.9  # kept

    def test_it_loses_only_the_check_when_the_broker_is_down(
        self, team: Team, theo: User, queued: QueuedTasks, django_capture_on_commit_callbacks: Any,
        caplog: pytest.LogCaptureFixture,
    ) -> None:  # fmt: skip
        case = _recsys(team, theo)
        series = alerts.rule_series_resolve(team=team, kind="recsys", set_name="homepage")
        alerts.alert_rule_create(team=team, series=series, name="c", metric="catalog_coverage", comparator="<",
                                 threshold=0.3)  # fmt: skip
        queued.broker_down = True
        with django_capture_on_commit_callbacks(execute=True):
            metric_values_write(job=case.job, series=series, observed_at=timezone.now(),
                                values=[MetricValueIn("catalog_coverage", 0.1)])  # fmt: skip
        assert series.values.count() == 1 and not queued.sent
        assert "could not queue the alert check" in caplog.text

    def test_it_takes_a_series_of_the_team_by_id_and_refuses_another_teams(
        self, team: Team, other_team: Team, theo: User
    ) -> None:
        case = _recsys(team, theo)
        editor = client_for(theo)
        body = {
            "name": "coverage",
            "metric": "catalog_coverage",
            "comparator": "<",
            "threshold": 0.3,
            **case.fields,
        }
        first = editor.post(f"{API}/alert-rules/", body, content_type="application/json").json()
        by_id = {**body, "kind": "", "set_name": "", "series": first["series_id"]}
        again = editor.post(f"{API}/alert-rules/", by_id, content_type="application/json")
        assert again.status_code == 201 and again.json()["series_id"] == first["series_id"]
        theirs = Series.objects.create(team=other_team, kind="recsys", key=f"{other_team.pk}:x", label="x")
        refused = editor.post(
            f"{API}/alert-rules/", {**by_id, "series": theirs.pk}, content_type="application/json"
        )
        assert refused.status_code == 400 and list(refused.json()) == ["series"]

    def test_it_refuses_a_project_of_another_team_and_an_annotator_who_is_no_member(
        self, team: Team, other_team: Team, theo: User, vera: User
    ) -> None:
        _project(team, theo)
        Project.objects.create(slug="elsewhere", name="Elsewhere", team=other_team)
        editor = client_for(theo)
        body = {
            "name": "r",
            "metric": "gold_accuracy",
            "comparator": "<",
            "threshold": 0.7,
            "kind": "annotator",
        }
        cases = [({"project": "elsewhere", "username": theo.username}, "project"),
                 ({"project": "python-help", "username": vera.username}, "username"),
                 ({"project": "python-help"}, "username")]  # fmt: skip
        for fields, named in cases:
            refused = editor.post(f"{API}/alert-rules/", {**body, **fields}, content_type="application/json")
            assert refused.status_code == 400 and list(refused.json()) == [named], refused.json()
        assert not Series.objects.exists()


@pytest.mark.django_db
class TestAnotherFamilysMetric:
    @pytest.mark.parametrize("family", list(CASES))
    def test_it_refuses_it_through_the_api_naming_the_field(
        self, family: str, team: Team, theo: User
    ) -> None:
        case = CASES[family](team, theo)
        wrong = OTHER_FAMILY[case.fields["kind"]]
        body = {"name": "never", "metric": wrong, "comparator": "<", "threshold": 0.5, **case.fields}
        refused = client_for(theo).post(f"{API}/alert-rules/", body, content_type="application/json")
        assert refused.status_code == 400 and list(refused.json()) == ["metric"], refused.json()
        assert f"reports {family} metrics" in refused.json()["metric"][0]
        assert not AlertRule.objects.exists() and not Series.objects.exists()  # nothing made for it

    def test_it_suggests_close_names_of_the_series_family(self, team: Team, theo: User) -> None:
        _embedding(team, theo)
        body = {
            "name": "r",
            "metric": "avg_cosine_similarty",
            "comparator": ">",
            "threshold": 0.3,
            "stream": "docs",
        }
        refused = client_for(theo).post(f"{API}/alert-rules/", body, content_type="application/json")
        assert "did you mean 'avg_cosine_similarity'" in refused.json()["metric"][0]
        effect = {**body, "metric": "mmd_p_value", "effect_metric": "ndcg_cut_10"}
        refused = client_for(theo).post(f"{API}/alert-rules/", effect, content_type="application/json")
        assert list(refused.json()) == ["effect_metric"]

    def test_it_refuses_it_on_the_alerts_page_form(self, team: Team, theo: User) -> None:
        case = _embedding(team, theo)
        editor = client_for(theo)
        form = {"name": "never", "metric": "ndcg_cut_10", "comparator": "<", "threshold": "0.5", "severity": "warning",
                "consecutive": "1", "cooldown_minutes": "60", "stream": case.job.stream_id}  # type: ignore[attr-defined]  # fmt: skip
        page = editor.post("/teams/search/alerts/rules/", form)
        assert page.status_code == 200 and not AlertRule.objects.exists()
        assert "is a retrieval metric" in page.context["rule_form"].errors["metric"][0]
        fraud = {**form, "stream": "", "kind": "fraud", "set_name": "cards", "metric": "catalog_coverage"}
        page = editor.post("/teams/search/alerts/rules/", fraud)
        assert "reports fraud metrics" in page.context["rule_form"].errors["metric"][0]
        made = editor.post("/teams/search/alerts/rules/", {**fraud, "metric": "detection_rate"})
        assert made.status_code == 302
        assert AlertRule.objects.get().series.label == "fraud scores cards"

    def test_it_offers_the_team_series_grouped_by_kind_and_each_family_metrics(
        self, team: Team, theo: User
    ) -> None:
        _recsys(team, theo)
        client_for(theo).post(f"{API}/alert-rules/", {"name": "c", "metric": "catalog_coverage", "comparator": "<",
                              "threshold": 0.3, "kind": "recsys", "set_name": "homepage"}, content_type="application/json")  # fmt: skip
        page = client_for(theo).get("/teams/search/alerts/")
        form = page.context["rule_form"]
        series = Series.objects.get()
        assert form.fields["series"].choices[1] == (
            "Recommendation set name",
            [(series.pk, "recommendations homepage")],
        )
        choosing = form.choosing()
        assert (
            choosing["series"] == {str(series.pk): "recsys"}
            and "catalog_coverage" in choosing["metrics"]["recsys"]
        )
        assert (
            'id="rule-form-choosing"' in page.content.decode()
            and "alert_rule_form.js" in page.content.decode()
        )


def wait_until(predicate: Callable[[], bool], *, timeout: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_checks_a_nightly_run_and_a_stream_through_the_worker_end_to_end(
    celery_worker_process: WorkerProcess, team: Team, theo: User
) -> None:
    """A real evaluation and a real monitor run, each done by the worker: their values announce their
    series, and the worker's `alerts_check_series` opens the alerts the rules made through the API ask."""
    import numpy as np

    editor = client_for(theo)
    qrels_text, make_run = synthetic_collection(queries=6, docs=8)
    qrels = uploads.qrels_upload(team=team, upload=upload("judged.qrels", qrels_text))
    rules = [
        {"name": "ndcg_floor", "metric": "ndcg_cut_10", "comparator": "<", "threshold": 0.99, "kind": "run",
         "qrels": qrels.pk, "run_name": "nightly"},
        {"name": "rank_floor", "metric": "effective_rank", "comparator": ">", "threshold": 0.0, "kind": "stream",
         "stream": "vectors"},
    ]  # fmt: skip
    stream = editor.post(f"{API}/streams/", {"slug": "vectors", "name": "Vectors", "dimension": 4, "params": PARAMS},
                         content_type="application/json")  # fmt: skip
    assert stream.status_code == 201, stream.json()
    for body in rules:
        assert editor.post(f"{API}/alert-rules/", body, content_type="application/json").status_code == 201
    run = uploads.run_upload(team=team, upload=upload("n.run", make_run(0, 0.0)), name="nightly")
    evaluations.evaluation_create(run=run, qrels=qrels, measures=["ndcg_cut_10"])  # queued for the worker
    vectors = np.random.default_rng(0).normal(size=(40, 4)).tolist()
    sent = editor.post(f"{API}/streams/vectors/snapshots/", {"vectors": vectors, "reference": True},
                       content_type="application/json")  # fmt: skip
    assert sent.status_code == 201, sent.json()
    opened = lambda: set(AlertEvent.objects.values_list("rule__name", flat=True))  # noqa: E731
    assert wait_until(lambda: opened() >= {"ndcg_floor", "rank_floor"}), (
        opened(), celery_worker_process.log()[-4000:])  # fmt: skip
    assert "alerts_check_series" in celery_worker_process.log()
    sources = dict(AlertEvent.objects.values_list("rule__name", "source"))
    assert "run nightly on judged" in sources["ndcg_floor"] and "stream Vectors" in sources["rank_floor"]


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_checks_recommendation_fraud_agreement_and_annotator_series_through_the_worker(
    celery_worker_process: WorkerProcess, team: Team, theo: User
) -> None:
    """The four other families end to end: rules made through the API on a recommendation set name, a
    fraud score set name, a judging project and one of its annotators; the worker evaluates the sets and
    recomputes the project's quality, their values announce the series, and its checks open the alerts."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotations.quality import services as quality
    from monitoring.demo import FRAUD_OPTIONS, demo_fraud_text, demo_recsys_texts
    from monitoring.recsys_fraud import jobs as recsys_jobs
    from monitoring.recsys_fraud import uploads as recsys_uploads
    from tests.annotations.conftest import build_project
    from tests.annotations.test_quality import answer_gold

    people = [User.objects.create_user(f"ann{i}", password="ann-password-123") for i in range(2)]
    project = build_project(lead=theo, annotators=people, slug="judged", topics=2, docs_per_topic=10,
                            gold_per_topic=5, team=team)  # fmt: skip
    editor = client_for(theo)
    rules = [
        {"name": "coverage", "metric": "catalog_coverage", "comparator": "<", "threshold": 0.99, "kind": "recsys",
         "set_name": "homepage"},
        {"name": "detection", "metric": "detection_rate", "comparator": "<", "threshold": 0.99, "kind": "fraud",
         "set_name": "cards"},
        {"name": "alpha", "metric": "krippendorff_alpha_ordinal", "comparator": "<", "threshold": 0.99,
         "kind": "project", "project": "judged"},
        {"name": "gold", "metric": "gold_accuracy", "comparator": "<", "threshold": 0.5, "kind": "annotator",
         "project": "judged", "username": "ann1"},
    ]  # fmt: skip
    for body in rules:
        made = editor.post(f"{API}/alert-rules/", body, content_type="application/json")
        assert made.status_code == 201, made.json()
    files = {
        role: SimpleUploadedFile(f"{role}.csv", text.encode()) for role, text in demo_recsys_texts().items()
    }
    recs = recsys_uploads.recommendation_set_upload(team=team, name="homepage", **files)
    recsys_jobs.recommendation_evaluation_create(recommendation_set=recs)  # queued for the worker
    scores = recsys_uploads.fraud_score_set_upload(
        team=team, name="cards", scores=SimpleUploadedFile("s.csv", demo_fraud_text().encode())
    )
    recsys_jobs.fraud_evaluation_create(score_set=scores, options=FRAUD_OPTIONS)
    answer_gold(project, people)  # ann1 gets 3 of 10 gold items right
    assert quality.quality_recompute_request(project_id=project.pk, force=True)
    opened = lambda: set(AlertEvent.objects.values_list("rule__name", flat=True))  # noqa: E731
    assert wait_until(lambda: opened() >= {"coverage", "detection", "alpha", "gold"}, timeout=180), (
        opened(), celery_worker_process.log()[-4000:])  # fmt: skip
    families = dict(AlertEvent.objects.values_list("rule__name", "rule__series__family"))
    assert families == {"coverage": "recsys", "detection": "fraud", "alpha": "agreement", "gold": "annotator"}
    gold = AlertEvent.objects.get(rule__name="gold")
    assert gold.value == pytest.approx(0.3) and "annotator ann1 in" in gold.source
