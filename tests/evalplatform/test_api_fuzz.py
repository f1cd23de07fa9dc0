"""The REST API fuzzed with schemathesis: every operation of `/api/schema/`, with requests hypothesis
generates from the schema (valid ones, then ones that break it), answers without a server error.

The schema is loaded from the Django app in process (WSGI). Two personas send the requests with a token:
a project lead who edits the team, and an annotator of the project. Path parameters that name an object
(project, build version, annotator, team, stream, id) are fixed to real objects, so the requests reach
the views' code rather than stop at a 404; the rest (query, body, `fmt`, `role`, a metric's `name`) is
generated; a valid body's references to the team's objects are real ones too. Nothing is excluded.

Each request runs inside a savepoint that is rolled back after it, so every example meets the same
objects (a DELETE removes nothing the next one needs). Jobs a request starts stay pending without a
worker: most are sent on commit, which the test never reaches; a quality recompute is sent at once to
the real broker and waits in its queue.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from typing import Any

import pytest
import schemathesis
from django.contrib.auth.models import User
from django.core import signals
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import close_old_connections, transaction
from django.test import override_settings
from django.utils import timezone
from hypothesis import HealthCheck, Phase, given, settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode

from annotations import imports
from annotations import qrels as qrels_builds
from annotations.machine_judges.imports import judge_import_create
from annotations.models import LLMJudgeJob, MachineJudge, MachineLabel, Project, QualityRecompute, Task
from annotations.quality import services as quality
from evalcore.fraud import FraudOptions
from evalcore.recsys import RecsysOptions
from evalplatform.models import Team
from evalplatform.teams import team_create
from evalplatform.wsgi import application
from monitoring.alerts import services as alerts
from monitoring.demo import demo_fraud_text, demo_recsys_texts
from monitoring.embeddings import services as monitors
from monitoring.evaluations import services as evaluations
from monitoring.files import uploads
from monitoring.fusion import services as fusions
from monitoring.models import AlertEvent, GapsRequest, NotificationChannel, ReuseAnalysis
from monitoring.pooling import services as pooling
from monitoring.recsys_fraud import comparisons as recsys_fraud_comparisons
from monitoring.recsys_fraud import services as recsys_fraud
from series.models import Series
from series.subjects import stream_series
from tests.annotations.conftest import build_project, record_answers
from tests.conftest import ALICE, BOB, LENA, make_user
from tests.monitoring.conftest import alerts_checked, synthetic_collection, upload
from tests.monitoring.test_streams import embeddings, make_stream, npy_upload

#: Examples per operation and generation mode: enough to hit each field with odd values, few enough that
#: the whole file runs in about a minute on a 2-core machine. `API_FUZZ_EXAMPLES=50` digs deeper.
DEEPER = int(os.environ.get("API_FUZZ_EXAMPLES", "0"))
EXAMPLES = {GenerationMode.POSITIVE: DEEPER or 8, GenerationMode.NEGATIVE: DEEPER or 6}

SETTINGS = settings(
    max_examples=1,  # replaced per mode below
    deadline=None,
    derandomize=True,  # the same requests on every run, so CI is reproducible
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: the failure report shows the request as sent
    suppress_health_check=list(HealthCheck),  # slow generation of multipart bodies is expected here
)


@cache
def api_schema() -> Any:
    with override_settings(ALLOWED_HOSTS=["localhost"]):
        return schemathesis.openapi.from_wsgi("/api/schema/", application)


@pytest.fixture
def wsgi_requests_in_the_test_transaction() -> Iterator[None]:
    """Requests sent straight to the WSGI app would close the test's connection (Django's test client
    disconnects the same handlers)."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        with override_settings(ALLOWED_HOSTS=["localhost"]):
            yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@dataclass(frozen=True)
class World:
    lead: User
    annotator: User
    project: Project
    team: Team
    ids: dict[str, int]  # the path's collection (`runs`, `qrels`, ...) -> an object's id
    stream: str


def csv_file(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="text/csv")


def judged_project(lead: User, annotator: User) -> Project:
    """A project with two annotators' labels, a quality snapshot and a finished qrels build v1."""
    other = make_user(BOB)
    project = build_project(lead=lead, annotators=[annotator, other], slug="web", topics=2, docs_per_topic=3)
    tasks = list(Task.objects.filter(project=project).order_by("pk")[:4])
    record_answers(project, [(person, task, 2) for person in (annotator, other) for task in tasks])
    for person in (annotator, other):
        quality.annotator_override_set(project=project, annotator=person.pk, decision="include", by=lead)
    job = QualityRecompute.objects.create(project=project, reason="lead")
    assert quality.quality_recompute_run(job_id=job.pk).status == "done"
    build = qrels_builds.qrels_build_create(project=project, created_by=None, enqueue=False)
    assert qrels_builds.qrels_build_run(build_id=build.pk).status == "done"
    return project


def team_objects(team: Team, lead: User) -> dict[str, int]:
    """One of everything a team holds, evaluated in this process."""
    qrels_text, run_text = synthetic_collection(queries=5, docs=8)
    qrels = uploads.qrels_upload(team=team, upload=upload("judged.qrels", qrels_text), uploaded_by=lead)
    run = uploads.run_upload(team=team, upload=upload("bm25.run", run_text(1, 1.0)), uploaded_by=lead)
    other = uploads.run_upload(team=team, upload=upload("dense.run", run_text(2, 0.5)), uploaded_by=lead)
    evaluation = evaluations.evaluation_create(run=run, qrels=qrels, enqueue=False)
    evaluations.evaluation_run(evaluation_id=evaluation.pk)
    comparison = evaluations.comparison_create(qrels=qrels, runs=[run, other], enqueue=False)
    evaluations.comparison_run(comparison_id=comparison.pk)
    fusion = fusions.fusion_create(team=team, runs=[run, other], method="sum", enqueue=False)
    recsys = recsys_fraud.recommendation_set_upload(
        team=team, uploaded_by=lead,
        **{role: csv_file(f"{role}.csv", text) for role, text in demo_recsys_texts().items()},
    )  # fmt: skip
    recsys_evaluation = recsys_fraud.recommendation_evaluation_create(
        recommendation_set=recsys, enqueue=False
    )
    recsys_fraud.recommendation_evaluation_run(evaluation_id=recsys_evaluation.pk)
    scores = recsys_fraud.fraud_score_set_upload(
        team=team, scores=csv_file("scores.csv", demo_fraud_text()), uploaded_by=lead
    )
    fraud_evaluation = recsys_fraud.fraud_evaluation_create(score_set=scores, enqueue=False)
    recsys_fraud.fraud_evaluation_run(evaluation_id=fraud_evaluation.pk)
    other_fraud = recsys_fraud.fraud_evaluation_create(
        score_set=scores, options=FraudOptions(fp_cost=2.0), enqueue=False
    )
    recsys_fraud.fraud_evaluation_run(evaluation_id=other_fraud.pk)
    other_recsys = recsys_fraud.recommendation_evaluation_create(
        recommendation_set=recsys, options=RecsysOptions(k=5), enqueue=False
    )
    recsys_fraud.recommendation_evaluation_run(evaluation_id=other_recsys.pk)
    fraud_comparison = recsys_fraud_comparisons.fraud_comparison_create(
        a=fraud_evaluation, b=other_fraud, enqueue=False
    )
    recsys_fraud_comparisons.fraud_comparison_run(comparison_id=fraud_comparison.pk)
    recsys_comparison = recsys_fraud_comparisons.recommendation_comparison_create(
        a=recsys_evaluation, b=other_recsys, enqueue=False
    )
    channel = NotificationChannel.objects.create(
        team=team, name="ops", kind="webhook", target="https://x.test/"
    )
    return {
        "runs": run.pk, "other-run": other.pk, "qrels": qrels.pk, "leaderboard": qrels.pk,
        "evaluations": evaluation.pk, "comparisons": comparison.pk, "fusions": fusion.pk, "recommendation-sets": recsys.pk,
        "recommendation-evaluations": recsys_evaluation.pk, "fraud-score-sets": scores.pk,
        "fraud-evaluations": fraud_evaluation.pk, "channels": channel.pk,
        "other-fraud-evaluation": other_fraud.pk, "fraud-comparisons": fraud_comparison.pk,
        "recommendation-comparisons": recsys_comparison.pk,
        **stream_objects(team, channel),
    }  # fmt: skip


def stream_objects(team: Team, channel: NotificationChannel) -> dict[str, int]:
    """A monitored stream, with a rule that fires on its run and so an open alert."""
    stream = make_stream(team)
    rule = alerts.alert_rule_create(
        team=team, series=stream_series(stream), channels=[channel], name="always", metric="avg_cosine_similarity",
        comparator=">", threshold=-2.0,
    )  # fmt: skip
    reference = monitors.snapshot_upload(
        stream=stream, upload=npy_upload(embeddings(300, seed=1), "ref.npy"),
        observed_at=timezone.now() - timedelta(hours=2),
    )  # fmt: skip
    monitors.stream_reference_set(stream=stream, snapshot=reference, enqueue=False)
    snapshot = monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(300, seed=2), "now.npy"))
    runs = monitors.stream_monitor_now(stream=stream, enqueue=False)
    for run in runs:
        with alerts_checked():
            monitors.monitor_run(run_id=run.pk)
    event = AlertEvent.objects.filter(rule=rule).first()
    assert event is not None, "the rule meant to fire did not"
    return {
        "alert-rules": rule.pk,
        "alerts": event.pk,
        "stream-snapshots": snapshot.pk,
        "stream-runs": runs[-1].pk,
    }


@pytest.fixture
def world(db: None, wsgi_requests_in_the_test_transaction: None) -> World:
    lead, annotator = make_user(LENA), make_user(ALICE)
    project = judged_project(lead, annotator)
    team = team_create(slug="search", name="Search", creator=lead)
    project.team = team
    project.save(update_fields=["team"])
    ids = team_objects(team, lead)
    ids["imports"] = imports.import_job_create(
        project=project, kind="documents", upload=csv_file("docs.jsonl", '{"doc_id": "x", "text": "y"}\n'),
        enqueue=False,
    ).pk  # fmt: skip
    ids["series"] = Series.objects.filter(team=team, kind="stream").values_list("pk", flat=True).get()
    judge = MachineJudge.objects.create(project=project, name="gpt", kind="llm")
    MachineLabel.objects.bulk_create(
        MachineLabel(judge=judge, topic_id=t.topic_id, document_id=t.document_id, grade=1, confidence=0.4)
        for t in Task.objects.filter(project=project)
    )
    ids["machine-judges"] = judge.pk
    ids["llm-judge-jobs"] = LLMJudgeJob.objects.create(project=project, judge=judge, limit=5).pk
    ids["import-jobs"] = judge_import_create(
        project=project, source="click_log", upload=csv_file("clicks.csv", "session,query,doc,position,clicked\n"),
        parameters={"model": "dbn", "version": "1"}, enqueue=False,
    ).pk  # fmt: skip
    ids["reuse-analyses"] = ReuseAnalysis.objects.create(
        team=team, qrels_id=ids["qrels"], kind="reusability", params={}
    ).pk
    pool = pooling.pool_create(
        project=project, runs=list(team.runs.order_by("pk")[:2]), strategy="mtf", budget=5, enqueue=False
    )
    assert pooling.pool_build_run(pool_id=pool.pk).status == "done"
    ids["pools"] = pool.pk
    ids["members"] = team.memberships.get(user=lead).pk
    ids["gaps-requests"] = GapsRequest.objects.create(
        team=team, run_id=ids["runs"], qrels_id=ids["qrels"], depth=10
    ).pk
    return World(lead=lead, annotator=annotator, project=project, team=team, ids=ids, stream="query-encoder")


def collection(path: str) -> str:
    """The key in `World.ids` of the object a path's `{id}` names: the segment before it."""
    segments = path.strip("/").split("/")
    name = segments[segments.index("{id}") - 1]
    return f"stream-{name}" if "{stream}" in segments else name


def path_parameters(operation: Any, world: World) -> dict[str, Any]:
    names = {parameter.name for parameter in operation.path_parameters}
    values: dict[str, Any] = {
        "slug": world.project.slug, "version": 1, "username": world.annotator.username,
        "team": world.team.slug, "stream": world.stream,
    }  # fmt: skip
    if "id" in names:
        key = collection(operation.path)
        assert key in world.ids, f"{operation.label}: give the world a {key} object"
        values["id"] = world.ids[key]
    return {name: value for name, value in values.items() if name in names}


def body_references(world: World) -> dict[str, Any]:
    """Body fields that name one of the team's objects, and a real one, so that a valid body gets past the
    lookup to the options behind it."""
    ids = world.ids
    return {
        "run": ids["runs"], "runs": [ids["runs"], ids["other-run"]], "qrels": ids["qrels"], "optimize_on": ids["qrels"],
        "recommendation_set": ids["recommendation-sets"], "score_set": ids["fraud-score-sets"],
        "channels": [ids["channels"]], "stream": world.stream,
        "evaluation_a": ids["fraud-evaluations"], "evaluation_b": ids["other-fraud-evaluation"],
        "score_set_b": ids["fraud-score-sets"], "recommendation_set_b": ids["recommendation-sets"],
    }  # fmt: skip


def cases(operation: Any, mode: GenerationMode, world: World) -> Any:
    """Requests for the operation at the world's objects; valid bodies name real objects too."""
    strategy = operation.as_strategy(generation_mode=mode, path_parameters=path_parameters(operation, world))
    if mode is not GenerationMode.POSITIVE:
        return strategy
    references = body_references(world)

    def with_references(case: Any) -> Any:
        if isinstance(case.body, dict):
            case.body.update({name: value for name, value in references.items() if name in case.body})
        return case

    return strategy.map(with_references)


def server_errors(operation: Any, *, world: World, headers: dict[str, str]) -> list[str]:
    """What each generation mode's examples of one operation found: a line per failing mode."""
    found = []
    for mode, examples in EXAMPLES.items():
        if mode is GenerationMode.NEGATIVE and not (len(operation.query) or len(operation.body)):
            continue  # nothing to break: every parameter is a fixed path parameter

        @settings(SETTINGS, max_examples=examples)
        @given(case=cases(operation, mode, world))
        def answers(case: Any) -> None:
            savepoint = transaction.savepoint()
            try:
                response = case.call(headers=headers)
            finally:
                transaction.savepoint_rollback(savepoint)
            case.validate_response(response, checks=[not_a_server_error], headers=headers)

        try:
            answers()
        except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 (every operation is tried, each reported)
            found.append(f"{operation.label} [{mode.value}]: {type(exc).__name__}: {exc}")
    return found


@pytest.mark.django_db
@pytest.mark.parametrize("persona", ["lead", "annotator"])
def test_it_answers_every_operation_without_a_server_error(
    world: World, persona: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="django.request")  # the 4xx lines would bury a 500's traceback
    user = world.lead if persona == "lead" else world.annotator
    headers = {"Authorization": f"Token {Token.objects.create(user=user).key}"}
    operations = [result.ok() for result in api_schema().get_all_operations()]
    failures = [
        line for operation in operations for line in server_errors(operation, world=world, headers=headers)
    ]
    assert len(operations) >= 78  # every operation of the schema as written, none left out
    assert not failures, "\n\n".join(failures)
