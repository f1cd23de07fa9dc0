"""Every URL of the site against every persona: who reads it, who changes through it, and what the rest get.

The URLs are enumerated from the resolver, so a new URL without a row in `MATRIX` fails the test. Each row
names who may read (GET) and who may write (POST with an empty body; a refused body is a 400, which still
counts as allowed), from these personas:

    anon     nobody signed in
    ann_a    alice, annotator of project A
    ann_b    bob, annotator of project B
    lead_a   lena, lead of project A (A is linked to team T)
    viewer   vera, viewer of team T
    editor   theo, editor of team T
    outsider otto, member of another team only
    admin    a superuser, member of nothing

A persona left out of a row is denied, with the code its view family uses for a denial (`expected`):
anonymous users go to the login page (HTML) or get 401 with a token challenge (API); a member of the project or team who lacks the
role gets 403, anyone else 404, so nothing tells an outsider that an object exists. The Django admin is one
row (`test_it_keeps_everyone_but_staff_out_of_the_admin`). Last, alice reads every URL she may and judges
her whole queue, and meets no gold label and no label of another annotator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from annotations import imports, qrels, services
from annotations.machine_judges.imports import judge_import_create
from annotations.models import (
    Annotation,
    GoldLabel,
    LLMJudgeJob,
    MachineJudge,
    MachineLabel,
    Project,
    ProjectMembership,
    Task,
)
from annotations.quality import services as quality
from evalcore.fraud import FraudOptions
from evalcore.recsys import RecsysOptions
from evalplatform.charts import plotly_js_version
from evalplatform.models import Team, TeamMembership
from evalplatform.teams import team_create, team_member_set
from monitoring.alerts import services as alerts
from monitoring.demo import FRAUD_OPTIONS, demo_fraud_text, demo_recsys_texts
from monitoring.embeddings import services as monitors
from monitoring.evaluations import services as evaluations
from monitoring.files import uploads
from monitoring.fusion import services as fusions
from monitoring.models import (
    AlertEvent,
    ComparisonPair,
    FraudScoreEvaluation,
    FraudScoreSet,
    GapsRequest,
    MonitorRun,
    NotificationChannel,
    QrelsSource,
    RecommendationEvaluation,
    RecommendationSet,
    ReuseAnalysis,
    Run,
)
from monitoring.pooling import services as pooling
from monitoring.pooling.models import JudgingPool
from monitoring.recsys_fraud import comparisons as recsys_fraud_comparisons
from monitoring.recsys_fraud import services as recsys_fraud
from series.models import Series
from series.subjects import stream_series
from tests.annotations.conftest import build_project, record_answers
from tests.conftest import ALICE, BOB, LENA, THEO, Persona, QueuedTasks, make_user
from tests.monitoring.conftest import OTTO, VERA, alerts_checked, synthetic_collection, upload
from tests.monitoring.test_streams import PARAMS as MONITOR_PARAMS
from tests.monitoring.test_streams import embeddings, npy_upload

DIM = 8

PERSONAS = ("anon", "ann_a", "ann_b", "lead_a", "viewer", "editor", "outsider", "admin")


def urls() -> dict[str, str]:
    """Every named URL pattern of the site as `namespace:name` -> its route; the admin's as one group."""
    found: dict[str, str] = {}

    def walk(patterns: list[Any], prefix: str, namespace: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                if pattern.namespace == "admin":
                    found["admin"] = route
                    continue
                inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                walk(pattern.url_patterns, route, inner)
            else:
                assert isinstance(pattern, URLPattern) and pattern.name, f"unnamed URL {route}"
                found[namespace + pattern.name] = route

    walk(get_resolver().url_patterns, "/", "")
    return found


@dataclass
class World:
    a: Project
    b: Project
    team: Team
    ids: dict[str, Any]
    users: dict[str, User | None]


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def personas_create() -> dict[str, User]:
    """The signed-in personas."""
    users: dict[str, User] = {}
    for key, persona in [("ann_a", ALICE), ("ann_b", BOB), ("lead_a", LENA), ("editor", THEO), ("viewer", VERA),
                         ("outsider", OTTO)]:  # fmt: skip
        users[key] = make_user(persona)
    users["admin"] = User.objects.create_superuser("root", "root@example.org", "root-password-123")
    return users


def world_build() -> World:
    """Projects A (linked to team T) and B; team T with one object of each kind; team fraud of otto's."""
    users = personas_create()
    lead_b = make_user(Persona("lars", "lars-password-123", "project_lead"))
    carol = make_user(Persona("carol", "carol-password-123", "annotator"))

    team = team_create(slug="search", name="Search", creator=users["editor"])
    team_member_set(team=team, user=users["viewer"], role="viewer")
    team_create(slug="fraud", name="Fraud", creator=users["outsider"])

    a = build_project(lead=users["lead_a"], annotators=[users["ann_a"], carol], slug="alpha", topics=2,
                      docs_per_topic=5, gold_per_topic=2, team=team)  # fmt: skip
    b = build_project(lead=lead_b, annotators=[users["ann_b"]], slug="beta", topics=1, docs_per_topic=3)
    tasks = list(Task.objects.filter(project=a).order_by("pk"))
    record_answers(a, [(carol, task, 2) for task in tasks])
    build = qrels.qrels_build_create(project=a, created_by=None, enqueue=False)
    qrels.qrels_build_run(build_id=build.pk)
    assert quality.quality_snapshot_refresh(project_id=a.pk) == "done"
    judge = MachineJudge.objects.create(project=a, name="gpt", kind="llm")
    MachineLabel.objects.bulk_create(
        [
            MachineLabel(judge=judge, topic_id=t.topic_id, document_id=t.document_id, grade=1, confidence=0.9)
            for t in tasks
        ]
    )
    import_job = imports.import_job_create(
        project=a,
        kind="documents",
        upload=csv_file("docs.jsonl", '{"doc_id": "x", "text": "y"}\n'),
        enqueue=False,
    )
    machine_import = judge_import_create(
        project=a, source="click_log", upload=csv_file("clicks.csv", "session,query,doc,position,clicked\n"),
        parameters={"model": "dbn", "version": "1"}, enqueue=False,
    )  # fmt: skip

    qrels_text, run_text = synthetic_collection(queries=5, docs=8)
    source = uploads.qrels_upload(team=team, upload=upload("judged.qrels", qrels_text), uploaded_by=None)
    run = uploads.run_upload(team=team, upload=upload("bm25.run", run_text(1, 1.5, "bm25")), uploaded_by=None)
    weak = uploads.run_upload(
        team=team, upload=upload("weak.run", run_text(2, 0.3, "weak")), uploaded_by=None
    )
    build.refresh_from_db()
    build_source = uploads.qrels_source_for_build(team=team, build=build)
    evaluation = evaluations.evaluation_create(run=run, qrels=source, measures=("map", "P_10"), enqueue=False)
    evaluations.evaluation_run(evaluation_id=evaluation.pk)
    comparison = evaluations.comparison_create(
        qrels=source, runs=[run, weak], measures=("map",), enqueue=False
    )
    evaluations.comparison_run(comparison_id=comparison.pk)
    fusion = fusions.fusion_create(team=team, runs=[run, weak], method="sum", enqueue=False)
    pool = pooling.pool_create(project=a, runs=[run, weak], strategy="mtf", budget=6, depth=4, enqueue=False)
    assert pooling.pool_build_run(pool_id=pool.pk).status == "done", JudgingPool.objects.get(pk=pool.pk).error

    files = {role: csv_file(f"{role}.csv", text) for role, text in demo_recsys_texts().items()}
    recs = recsys_fraud.recommendation_set_upload(team=team, name="popular", **files)
    recs_eval = recsys_fraud.recommendation_evaluation_create(recommendation_set=recs, enqueue=False)
    recsys_fraud.recommendation_evaluation_run(evaluation_id=recs_eval.pk)
    scores = recsys_fraud.fraud_score_set_upload(
        team=team, name="cards", scores=csv_file("s.csv", demo_fraud_text())
    )
    fraud_eval = recsys_fraud.fraud_evaluation_create(score_set=scores, options=FRAUD_OPTIONS, enqueue=False)
    recsys_fraud.fraud_evaluation_run(evaluation_id=fraud_eval.pk)
    # A second evaluation of each set (other options), each pair compared (the comparisons left pending).
    recs_eval_k5 = recsys_fraud.recommendation_evaluation_create(
        recommendation_set=recs, options=RecsysOptions(k=5), enqueue=False
    )
    recsys_fraud.recommendation_evaluation_run(evaluation_id=recs_eval_k5.pk)
    fraud_eval_default = recsys_fraud.fraud_evaluation_create(score_set=scores, enqueue=False)
    recsys_fraud.fraud_evaluation_run(evaluation_id=fraud_eval_default.pk)
    recs_comparison = recsys_fraud_comparisons.recommendation_comparison_create(
        a=recs_eval, b=recs_eval_k5, enqueue=False
    )
    fraud_comparison = recsys_fraud_comparisons.fraud_comparison_create(
        a=fraud_eval, b=fraud_eval_default, enqueue=False
    )

    stream = monitors.stream_create(
        team=team, slug="encoder", name="Encoder", dimension=DIM, params=MONITOR_PARAMS
    )
    reference = monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(300, seed=1, dim=DIM)))
    monitors.stream_reference_set(stream=stream, snapshot=reference, enqueue=False)
    snapshot = monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(300, seed=2, dim=DIM)))
    channel = NotificationChannel.objects.create(
        team=team, name="ops", kind="email", target="ops@example.org"
    )
    rule = alerts.alert_rule_create(team=team, series=stream_series(stream), channels=[channel], name="always",
                                    metric="avg_cosine_similarity", comparator=">", threshold=-2.0, consecutive=1)  # fmt: skip
    for pending in monitors.stream_monitor_now(stream=stream, enqueue=False):
        with alerts_checked():
            monitors.monitor_run(run_id=pending.pk, split=False)
    monitor = MonitorRun.objects.get(snapshot=snapshot)
    event = AlertEvent.objects.get(rule=rule)
    reuse_analysis = ReuseAnalysis.objects.create(team=team, qrels=source, kind="reusability", params={})
    ids = {
        "slug": "alpha", "team": "search", "stream": "encoder", "version": build.version, "fmt": "trec",
        "user_id": carol.pk, "username": "carol", "task_id": tasks[0].pk,
        "run": run.pk, "qrels": source.pk, "build_qrels": build_source.pk, "evaluation": evaluation.pk, "comparison": comparison.pk, "fusion": fusion.pk,
        "pair": ComparisonPair.objects.filter(comparison=comparison).values_list("pk", flat=True)[0],
        "recs": recs.pk, "recs_eval": recs_eval.pk, "scores": scores.pk, "fraud_eval": fraud_eval.pk,
        "recs_comparison": recs_comparison.pk, "fraud_comparison": fraud_comparison.pk,
        "snapshot": snapshot.pk, "monitor": monitor.pk, "rule": rule.pk, "channel": channel.pk, "event": event.pk,
        "membership": TeamMembership.objects.get(team=team, user=users["viewer"]).pk,
        "project_membership": a.memberships.get(user=carol).pk,
        "import_job": import_job.pk, "machine_judge": judge.pk, "machine_import": machine_import.pk, "reuse_analysis": reuse_analysis.pk, "pool": pool.pk, "series": Series.objects.get(kind="project", team=team).pk,
    }  # fmt: skip
    ids["llm_judge_job"] = LLMJudgeJob.objects.create(project=a, judge=judge, limit=5).pk
    ids["gaps_request"] = GapsRequest.objects.create(team=team, run=run, qrels=build_source, depth=10).pk
    return World(a=a, b=b, team=team, ids=ids, users={"anon": None, **users})


def csv_file(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="text/csv")


# --- the matrix -------------------------------------------------------------------------------------

ALL = frozenset(PERSONAS)
SIGNED = ALL - {"anon"}
ANNOTATOR = frozenset({"ann_a"})
LEAD = frozenset({"lead_a", "admin"})
MEMBERS = ANNOTATOR | LEAD
#: Project A is linked to team T: its members read A's quality and qrels builds.
QUALITY = LEAD | {"viewer", "editor"}
TEAM = frozenset({"viewer", "editor", "admin"})
EDITORS = frozenset({"editor", "admin"})
#: Editors of a team (theo of T, otto of fraud) and the admin start teams.
TEAM_CREATORS = frozenset({"editor", "outsider", "admin"})
#: Judging a run's gaps adds tasks to the judging project: editors of the team who lead the project (A's
#: lead is no member of T, T's editor leads no project: the admin alone here).
GAP_JUDGES = frozenset({"admin"})
#: Pools from runs: the project's leads read them; creating one also takes a member of the linked team
#: (lena leads A but is no member of T: only the admin, an editor of every team, may).
POOLERS = frozenset({"admin"})
#: Signed-in personas that a scope's views know: a denial tells them 403 (a role they lack), others 404.
KNOWN = {"project": MEMBERS, "team": TEAM}
#: Read-only HTML views that take any method: a POST renders what a GET does.
SAME = frozenset({"same"})
#: A 2xx, a redirect elsewhere than the login page, or a refusal of the empty body: the write got through.
WROTE = {"200", "201", "202", "204", "302>", "400", "409"}


@dataclass(frozen=True)
class Row:
    """Who may GET and who may POST (None: the method is not allowed, 405), what `<pk>` names, and other
    methods the URL takes. The family is `public`, or a scope (`site`, `project` A, `team` T) and a surface
    (`page`: anonymous users go to the login page; `api`: they get 401 and a `WWW-Authenticate: Token` challenge)."""

    family: str
    get: frozenset[str] | None
    post: frozenset[str] | None
    pk: str = ""
    other: tuple[tuple[str, frozenset[str]], ...] = ()


def page(scope: str, get: Any, post: Any = SAME, pk: str = "", **other: frozenset[str]) -> Row:
    return Row(f"{scope}-page", get, post, pk, tuple(other.items()))


def api(scope: str, get: Any, post: Any = None, pk: str = "", **other: frozenset[str]) -> Row:
    return Row(f"{scope}-api", get, post, pk, tuple(other.items()))


MATRIX: dict[str, Row] = {
    # The site: no membership needed.
    "home": page("site", SIGNED, post=None),
    "healthz": Row("public", ALL, None),
    "plotly-js": Row("public", ALL, None),
    "login": Row("public", ALL, ALL),
    "logout": Row("public", None, ALL),
    "password-set": Row("public", ALL, ALL),  # an invitation's link; this one is not valid: the page says so
    "password-set-done": Row("public", ALL, None),
    "api-me": api("site", SIGNED),
    "api-schema": Row("public", ALL, None),
    "api-docs": Row("public", ALL, None),
    "api-redoc": Row("public", ALL, None),
    "admin": Row("admin", None, None),  # the whole Django admin: `test_it_keeps_everyone_but_staff_out_of_the_admin`
    "annotations:project-list": page("site", SIGNED, post=None),
    "annotations:project-create": page("site", LEAD, LEAD),  # project leads (a group) and the admin
    "monitoring:team-list": page("site", SIGNED, post=None),
    "monitoring:team-create": page("site", TEAM_CREATORS, TEAM_CREATORS),
    "annotations-api:projects": api("site", SIGNED),
    "monitoring-api:teams": api("site", SIGNED, TEAM_CREATORS),
    "monitoring-api:metrics": api("site", SIGNED),
    "monitoring-api:metric": api("site", SIGNED),
    # Project A: its annotator judges, its lead (and the admin) runs it, team T reads quality and qrels.
    "annotations:project-detail": page("project", MEMBERS, post=None),
    "annotations:project-edit": page("project", LEAD, LEAD),
    "annotations:member-add": page("project", None, LEAD),
    "annotations:answers-csv": page("project", LEAD, None),
    "annotations:answers-jsonl": page("project", LEAD, None),
    "annotations:member-remove": page("project", LEAD, LEAD, pk="project_membership"),
    "annotations:project-import": page("project", LEAD, LEAD),
    "annotations:import-job": page("project", LEAD, None, pk="import_job"),
    "annotations:guidelines": page("project", MEMBERS, post=None),
    "annotations:project-comments": page("project", LEAD, post=None),
    "annotations:judge": page("project", ANNOTATOR, post=None),
    "annotations:judge-undo": page("project", None, ANNOTATOR),
    "annotations:judge-continue": page("project", None, ANNOTATOR),
    "annotations:judge-answer": page("project", None, ANNOTATOR),
    "annotations:judge-answer-next": page("project", None, ANNOTATOR),
    "annotations:judge-history": page("project", ANNOTATOR, post=None),
    "annotations:judge-change": page("project", None, ANNOTATOR),
    "annotations:judge-comment": page("project", None, ANNOTATOR),
    "annotations:quality": page("project", QUALITY, post=None),
    "annotations:quality-disagreements": page("project", QUALITY, None),
    "annotations:quality-disagreements-csv": page("project", QUALITY, None),
    "annotations:quality-status": page("project", QUALITY, None),
    "annotations:quality-recompute": page("project", None, LEAD),
    "annotations:annotator-override": page("project", None, LEAD),
    "annotations:adjudication": page("project", LEAD, post=None),
    "annotations:adjudicate": page("project", LEAD, LEAD),
    "annotations:adjudicator-allow": page("project", None, LEAD),
    "annotations:qrels-build": page("project", None, LEAD),
    # Machine judges: the project's leads only (annotators never see a machine's labels).
    "annotations:machine-judges": page("project", LEAD, LEAD),
    "annotations:machine-judge": page("project", LEAD, post=None, pk="machine_judge"),
    "annotations:machine-judge-csv": page("project", LEAD, post=None, pk="machine_judge"),
    "annotations:machine-judge-route": page("project", None, LEAD, pk="machine_judge"),
    # The LLM judge (off by default: a lead's POST is answered 409, which counts as let through).
    "annotations:llm-judge": page("project", LEAD, LEAD),
    "annotations:llm-judge-job": page("project", LEAD, None, pk="llm_judge_job"),
    "annotations:machine-judge-ranking-csv": page("project", LEAD, post=None, pk="machine_judge"),
    "annotations:machine-judge-click-log": page("project", LEAD, LEAD),
    "annotations:machine-judge-import": page("project", LEAD, post=None, pk="machine_import"),
    "annotations:qrels-diff": page("project", QUALITY, post=None),
    "annotations:qrels-download": page("project", QUALITY, post=None),
    "annotations-api:next": api("project", ANNOTATOR, ANNOTATOR),
    "annotations-api:submit": api("project", None, ANNOTATOR),
    "annotations-api:skip": api("project", None, ANNOTATOR),
    "annotations-api:undo": api("project", None, ANNOTATOR),
    "annotations-api:break": api("project", None, ANNOTATOR),
    "annotations-api:progress": api("project", ANNOTATOR),
    "annotations-api:imports": api("project", None, LEAD),
    "annotations-api:import-job": api("project", LEAD, pk="import_job"),
    "annotations-api:overview": api("project", LEAD),
    "annotations-api:members": api("project", LEAD, LEAD),
    "annotations-api:member": api("project", LEAD, pk="spare_project_membership", patch=LEAD, delete=LEAD),
    "annotations-api:comments": api("project", LEAD),
    "annotations-api:quality": api("project", QUALITY),
    "annotations-api:quality-recompute": api("project", None, LEAD),
    "annotations-api:annotator-override": api("project", None, LEAD),
    "annotations-api:adjudication": api("project", LEAD),
    "annotations-api:adjudicate": api("project", None, LEAD),
    "annotations-api:qrels-builds": api("project", QUALITY, LEAD),
    "annotations-api:qrels-diff": api("project", QUALITY),
    "annotations-api:qrels-build": api("project", QUALITY),
    "annotations-api:qrels-export": api("project", QUALITY),
    "monitoring:pool-list": page("project", LEAD, POOLERS),
    "monitoring:pool-detail": page("project", LEAD, None, pk="pool"),
    "monitoring:pool-yield-csv": page("project", LEAD, None, pk="pool"),
    "monitoring:pool-simulation-csv": page("project", LEAD, None, pk="pool"),
    "monitoring:pool-state": page("project", LEAD, None, pk="pool"),
    "monitoring:pool-refresh": page("project", None, LEAD, pk="pool"),
    "monitoring:pool-simulate": page("project", None, LEAD, pk="pool"),
    "monitoring:pool-delete": page("project", None, LEAD, pk="spare_pool"),
    "monitoring-api:pools": api("project", LEAD, POOLERS),
    "monitoring-api:pool": api("project", LEAD, pk="spare_pool", delete=LEAD),
    "monitoring-api:pool-progress": api("project", LEAD, pk="pool"),
    "monitoring-api:pool-simulation": api("project", None, LEAD, pk="pool"),
    "annotations-api:machine-judges": api("project", LEAD, LEAD),
    "annotations-api:machine-judge": api("project", LEAD, pk="machine_judge"),
    "annotations-api:machine-judge-route": api("project", None, LEAD, pk="machine_judge"),
    "annotations-api:machine-judge-routed": api("project", LEAD, pk="machine_judge"),
    "annotations-api:llm-judge-jobs": api("project", LEAD, LEAD),
    "annotations-api:llm-judge-job": api("project", LEAD, pk="llm_judge_job"),
    "annotations-api:machine-judge-click-logs": api("project", None, LEAD),
    "annotations-api:machine-judge-import": api("project", LEAD, pk="machine_import"),
    # Team T: its members read, its editors (and the admin) write.
    "monitoring:team": page("team", TEAM, post=None),
    "monitoring:team-edit": page("team", EDITORS, EDITORS),
    "monitoring:team-members": page("team", TEAM, EDITORS),
    "monitoring:team-member-role": page("team", None, EDITORS, pk="membership"),
    "monitoring:team-member-remove": page("team", EDITORS, EDITORS, pk="membership"),
    "monitoring:run-upload": page("team", EDITORS, EDITORS),
    # Editing what the team made: an empty POST to a deletion is refused (400) and deletes nothing.
    "monitoring:run-edit": page("team", EDITORS, EDITORS, pk="run"),
    "monitoring:run-archive": page("team", None, EDITORS, pk="run"),
    "monitoring:run-delete": page("team", EDITORS, EDITORS, pk="run"),
    "monitoring:qrels-edit": page("team", EDITORS, EDITORS, pk="qrels"),
    "monitoring:qrels-archive": page("team", None, EDITORS, pk="qrels"),
    "monitoring:qrels-delete": page("team", EDITORS, EDITORS, pk="qrels"),
    "monitoring:evaluation-edit": page("team", EDITORS, EDITORS, pk="evaluation"),
    "monitoring:evaluation-archive": page("team", None, EDITORS, pk="evaluation"),
    "monitoring:evaluation-delete": page("team", EDITORS, EDITORS, pk="evaluation"),
    "monitoring:comparison-edit": page("team", EDITORS, EDITORS, pk="comparison"),
    "monitoring:comparison-delete": page("team", EDITORS, EDITORS, pk="comparison"),
    "monitoring:recsys-evaluation-edit": page("team", EDITORS, EDITORS, pk="recs_eval"),
    "monitoring:recsys-evaluation-delete": page("team", EDITORS, EDITORS, pk="recs_eval"),
    "monitoring:fraud-evaluation-edit": page("team", EDITORS, EDITORS, pk="fraud_eval"),
    "monitoring:fraud-evaluation-delete": page("team", EDITORS, EDITORS, pk="fraud_eval"),
    "monitoring:recsys-edit": page("team", EDITORS, EDITORS, pk="recs"),
    "monitoring:recsys-archive": page("team", None, EDITORS, pk="recs"),
    "monitoring:recsys-delete": page("team", EDITORS, EDITORS, pk="recs"),
    "monitoring:fraud-edit": page("team", EDITORS, EDITORS, pk="scores"),
    "monitoring:fraud-archive": page("team", None, EDITORS, pk="scores"),
    "monitoring:fraud-delete": page("team", EDITORS, EDITORS, pk="scores"),
    "monitoring:run-detail": page("team", TEAM, pk="run", post=None),
    "monitoring:qrels-add": page("team", EDITORS, EDITORS),
    "monitoring:qrels-from-build": page("team", None, EDITORS),
    "monitoring:evaluation-create": page("team", EDITORS, EDITORS),
    "monitoring:evaluation-csv": page("team", TEAM, pk="evaluation", post=None),
    "monitoring:comparison-create": page("team", EDITORS, EDITORS),
    "monitoring:comparison-detail": page("team", TEAM, pk="comparison", post=None),
    "monitoring:comparison-csv": page("team", TEAM, pk="comparison", post=None),
    "monitoring:comparison-pair-csv": page("team", TEAM, pk="comparison", post=None),
    "monitoring:comparison-overlap-csv": page("team", TEAM, pk="comparison", post=None),
    "monitoring:comparison-tukey-csv": page("team", TEAM, pk="comparison", post=None),
    "monitoring:comparison-anova-csv": page("team", TEAM, pk="comparison", post=None),
    "monitoring:fusion-create": page("team", EDITORS, EDITORS),
    "monitoring:fusion-detail": page("team", TEAM, pk="fusion", post=None),
    "monitoring:evaluation-report": page("team", TEAM, pk="evaluation", post=None),
    "monitoring:comparison-report": page("team", TEAM, pk="comparison", post=None),
    "monitoring:comparison-latex": page("team", TEAM, pk="comparison", post=None),
    "monitoring:comparison-markdown": page("team", TEAM, pk="comparison", post=None),
    "monitoring:stream-run-report": page("team", TEAM, post=None),
    "monitoring:leaderboard": page("team", TEAM, pk="qrels", post=None),
    "monitoring:leaderboard-csv": page("team", TEAM, pk="qrels", post=None),
    "monitoring:qrels-reuse": page("team", TEAM, pk="qrels", post=None),
    "monitoring:qrels-reuse-run": page("team", None, EDITORS, pk="qrels"),
    "monitoring:qrels-reuse-csv": page("team", TEAM, pk="qrels", post=None),
    "monitoring:leaderboard-gaps": page("team", None, GAP_JUDGES, pk="build_qrels"),
    "monitoring:leaderboard-coverage": page("team", None, EDITORS, pk="qrels"),
    "monitoring:leaderboard-ppi": page("team", None, EDITORS, pk="build_qrels"),
    "monitoring:leaderboard-diff": page("team", TEAM, pk="qrels", post=None),
    "monitoring:leaderboard-diff-csv": page("team", TEAM, pk="qrels", post=None),
    "monitoring:job-state": page("team", TEAM, None, pk="evaluation"),
    "monitoring:alerts": page("team", TEAM, post=None),
    "monitoring:alert-rule-create": page("team", None, EDITORS),
    "monitoring:alert-rule-change": page("team", None, EDITORS, pk="rule"),
    "monitoring:channel-create": page("team", None, EDITORS),
    "monitoring:channel-delete": page("team", EDITORS, EDITORS, pk="spare_channel"),
    "monitoring:alert-rule-delete": page("team", EDITORS, EDITORS, pk="rule"),
    "monitoring:alert-rule-detail": page("team", TEAM, EDITORS, pk="rule"),
    "monitoring:channel-detail": page("team", TEAM, EDITORS, pk="channel"),
    "monitoring:channel-test": page("team", None, EDITORS, pk="channel"),
    "monitoring:alert-acknowledge": page("team", None, EDITORS, pk="event"),
    "monitoring:stream-create": page("team", EDITORS, EDITORS),
    "monitoring:stream-detail": page("team", TEAM, post=None),
    "monitoring:stream-edit": page("team", EDITORS, EDITORS),
    "monitoring:stream-delete": page("team", EDITORS, EDITORS),  # an empty POST deletes nothing (400)
    "monitoring:stream-upload": page("team", EDITORS, EDITORS),
    "monitoring:stream-monitor": page("team", None, EDITORS),
    "monitoring:stream-recompute": page("team", EDITORS, EDITORS),
    "monitoring:stream-series-csv": page("team", TEAM, post=None),
    "monitoring:stream-spectrum-csv": page("team", TEAM, post=None),
    "monitoring:stream-alerts-csv": page("team", TEAM, post=None),
    "monitoring:stream-run-state": page("team", TEAM, None, pk="monitor"),
    "monitoring:recsys-upload": page("team", EDITORS, EDITORS),
    "monitoring:recsys-set": page("team", TEAM, pk="recs", post=None),
    "monitoring:recsys-history-csv": page("team", TEAM, pk="recs", post=None),
    "monitoring:recsys-evaluate": page("team", None, EDITORS, pk="recs"),
    "monitoring:recsys-evaluation": page("team", TEAM, pk="recs_eval", post=None),
    "monitoring:recsys-csv": page("team", TEAM, pk="recs_eval", post=None),
    "monitoring:fraud-upload": page("team", EDITORS, EDITORS),
    "monitoring:fraud-set": page("team", TEAM, pk="scores", post=None),
    "monitoring:fraud-history-csv": page("team", TEAM, pk="scores", post=None),
    "monitoring:fraud-evaluate": page("team", None, EDITORS, pk="scores"),
    "monitoring:fraud-evaluation": page("team", TEAM, pk="fraud_eval", post=None),
    "monitoring:fraud-csv": page("team", TEAM, pk="fraud_eval", post=None),
    "monitoring:recsys-compare": page("team", None, EDITORS, pk="recs_eval"),
    "monitoring:recsys-comparison": page("team", TEAM, pk="recs_comparison", post=None),
    "monitoring:recsys-comparison-csv": page("team", TEAM, pk="recs_comparison", post=None),
    "monitoring:fraud-compare": page("team", None, EDITORS, pk="fraud_eval"),
    "monitoring:fraud-comparison": page("team", TEAM, pk="fraud_comparison", post=None),
    "monitoring:fraud-comparison-csv": page("team", TEAM, pk="fraud_comparison", post=None),
    "monitoring-api:team": api("team", TEAM),
    "monitoring-api:team-members": api("team", TEAM, EDITORS),
    "monitoring-api:team-member": api("team", TEAM, pk="spare_membership", patch=EDITORS, delete=EDITORS),
    "monitoring-api:runs": api("team", TEAM, EDITORS),
    "monitoring-api:run": api("team", TEAM, pk="spare_run", patch=EDITORS, delete=EDITORS),
    "monitoring-api:run-download": api("team", TEAM, pk="run"),
    "monitoring-api:qrels": api("team", TEAM, EDITORS),
    "monitoring-api:qrels-detail": api("team", TEAM, pk="spare_qrels", patch=EDITORS, delete=EDITORS),
    "monitoring-api:qrels-download": api("team", TEAM, pk="qrels"),
    "monitoring-api:leaderboard": api("team", TEAM, pk="qrels"),
    "monitoring-api:qrels-reuse": api("team", TEAM, EDITORS, pk="qrels"),
    "monitoring-api:reuse-analysis": api("team", TEAM, pk="reuse_analysis"),
    "monitoring-api:gaps-request": api("team", TEAM, pk="gaps_request"),
    "monitoring-api:leaderboard-diff": api("team", TEAM, pk="qrels"),
    "monitoring-api:leaderboard-gaps": api("team", None, GAP_JUDGES, pk="build_qrels"),
    "monitoring-api:leaderboard-coverage": api("team", None, EDITORS, pk="qrels"),
    "monitoring-api:leaderboard-ppi": api("team", TEAM, EDITORS, pk="build_qrels"),
    "monitoring-api:evaluations": api("team", TEAM, EDITORS),
    "monitoring-api:evaluation": api("team", TEAM, pk="spare_evaluation", patch=EDITORS, delete=EDITORS),
    "monitoring-api:evaluation-per-query": api("team", TEAM, pk="evaluation"),
    "monitoring-api:comparisons": api("team", TEAM, EDITORS),
    "monitoring-api:comparison": api("team", TEAM, pk="spare_comparison", patch=EDITORS, delete=EDITORS),
    "monitoring-api:fusions": api("team", TEAM, EDITORS),
    "monitoring-api:fusion": api("team", TEAM, pk="fusion"),
    "monitoring-api:evaluation-report": api("team", TEAM, pk="evaluation"),
    "monitoring-api:comparison-report": api("team", TEAM, pk="comparison"),
    "monitoring-api:stream-run-report": api("team", TEAM, pk="monitor"),
    "monitoring-api:alert-rules": api("team", TEAM, EDITORS),
    # Not DELETE: it would take the shared rule, and it is refused by the same `write=` check as PATCH.
    "monitoring-api:alert-rule": api("team", TEAM, pk="rule", patch=EDITORS),
    "monitoring-api:channels": api("team", TEAM, EDITORS),
    "monitoring-api:channel": api("team", None, pk="spare_channel", delete=EDITORS, patch=EDITORS),
    "monitoring-api:channel-test": api("team", None, EDITORS, pk="channel"),
    "monitoring-api:alerts": api("team", TEAM),
    "monitoring-api:alert-acknowledge": api("team", None, EDITORS, pk="event"),
    "monitoring-api:recommendation-sets": api("team", TEAM, EDITORS),
    "monitoring-api:recommendation-set": api("team", TEAM, pk="spare_recs", patch=EDITORS, delete=EDITORS),
    "monitoring-api:recommendation-set-file": api("team", TEAM, pk="recs"),
    "monitoring-api:recommendation-evaluations": api("team", TEAM, EDITORS),
    "monitoring-api:recommendation-evaluation": api("team", TEAM, pk="spare_recs_eval", patch=EDITORS, delete=EDITORS),
    "monitoring-api:recommendation-evaluation-curves": api("team", TEAM, pk="recs_eval"),
    "monitoring-api:fraud-score-sets": api("team", TEAM, EDITORS),
    "monitoring-api:fraud-score-set": api("team", TEAM, pk="spare_scores", patch=EDITORS, delete=EDITORS),
    "monitoring-api:fraud-score-set-download": api("team", TEAM, pk="scores"),
    "monitoring-api:fraud-evaluations": api("team", TEAM, EDITORS),
    "monitoring-api:fraud-evaluation": api("team", TEAM, pk="spare_fraud_eval", patch=EDITORS, delete=EDITORS),
    "monitoring-api:fraud-evaluation-curves": api("team", TEAM, pk="fraud_eval"),
    "monitoring-api:fraud-comparisons": api("team", TEAM, EDITORS),
    "monitoring-api:fraud-comparison": api("team", TEAM, pk="fraud_comparison"),
    "monitoring-api:recommendation-comparisons": api("team", TEAM, EDITORS),
    "monitoring-api:recommendation-comparison": api("team", TEAM, pk="recs_comparison"),
    "monitoring-api:streams": api("team", TEAM, EDITORS),
    "monitoring-api:stream": api("team", TEAM, pk="spare_stream", patch=EDITORS, delete=EDITORS),
    "monitoring-api:stream-schedule": api("team", None, put=EDITORS),
    "monitoring-api:stream-monitor": api("team", None, EDITORS),
    "monitoring-api:stream-recompute": api("team", None, EDITORS),
    "monitoring-api:stream-snapshots": api("team", TEAM, EDITORS),
    "monitoring-api:stream-snapshot": api("team", TEAM, pk="snapshot"),
    "monitoring-api:stream-runs": api("team", TEAM),
    "monitoring-api:stream-run": api("team", TEAM, pk="monitor"),
    "monitoring-api:stream-series": api("team", TEAM),
    "monitoring-api:stream-alerts": api("team", TEAM),
    "series:list": page("team", TEAM, post=None),
    "series:detail": page("team", TEAM, pk="series", post=None),
    "series:csv": page("team", TEAM, pk="series", post=None),
    "series-api:list": api("team", TEAM),
    "series-api:values": api("team", TEAM, pk="series"),
}  # fmt: skip
#: Allowed answers other than 200 to a GET (or a POST to a read-only page).
REDIRECTS = {
    "annotations:project-detail": {"ann_a": "302>"},  # an annotator's project page is their queue
    "login": {persona: "302>" for persona in SIGNED},
    "logout": {persona: "302L" for persona in ALL},
}
#: Path parameters other than `pk`, by name; the diffs compare build 1 with itself.
PARAMS = {
    "kind": "evaluation",
    "table": "metrics",
    "role": "recs",
    "name": "map",
    "fmt": "trec",
    "assignment_id": 0,
    "annotation_id": 0,
    "analysis": "reusability",
    "uidb64": "MQ",
    "token": "not-a-token",
}
QUERIES = {
    "monitoring:leaderboard-diff": "?from={build_qrels}",
    "monitoring:leaderboard-diff-csv": "?from={build_qrels}",
    "monitoring-api:leaderboard-diff": "?from={build_qrels}",
    "monitoring-api:leaderboard-ppi": "?machine_judge={machine_judge}",
    "annotations:qrels-diff": "?old=1&new=1",
    "annotations:machine-judge-csv": "?against=gold&table=topics",
    "annotations-api:qrels-diff": "?old=1&new=1",
    "annotations:quality-disagreements": "?a={user_id}",
    "annotations:quality-disagreements-csv": "?a={user_id}",
}


def expected(name: str, method: str, persona: str) -> str:
    """The status a persona gets; `302L` is a redirect to the login page, `302>` one elsewhere, `wrote` any
    of `WROTE`."""
    row = MATRIX[name]
    who = dict(row.other).get(method) if method not in {"get", "post"} else getattr(row, method)
    if who is SAME:
        who, method = row.get, "get"
    scope, _, surface = row.family.partition("-")
    if persona == "anon" and scope != "public":
        return "302L" if surface == "page" else "401"
    if who is None:
        return "405"
    if persona in who:
        return REDIRECTS.get(name, {}).get(persona, "200" if method == "get" else "wrote")
    return "403" if scope == "site" or persona in KNOWN[scope] else "404"


def outcome(response: Any) -> str:
    code = str(response.status_code)
    if code == "302":
        code += "L" if response["Location"].startswith(("/accounts/login/", "/admin/login/")) else ">"
    return code


def path_of(name: str, route: str, ids: dict[str, Any]) -> str:
    """The route with its parameters filled from the world's objects."""

    def fill(match: re.Match[str]) -> str:
        param = match[1]
        if param == "pk":
            return str(ids[MATRIX[name].pk])
        if name == "plotly-js":
            return plotly_js_version()
        return str(ids[param] if param in ids else PARAMS[param])

    return re.sub(r"<(?:\w+:)?(\w+)>", fill, route) + QUERIES.get(name, "").format(**ids)


def logged_in(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def spare_object(kind: str, team: Team) -> int:
    """A run, qrels source, evaluation, comparison, recommendation set or fraud score set of its own for one
    request that may delete it."""
    qrels_text, run_text = synthetic_collection(queries=2, docs=3)
    if kind == "spare_qrels":
        return uploads.qrels_upload(team=team, upload=upload("spare.qrels", qrels_text), uploaded_by=None).pk
    if kind == "spare_recs":
        files = {role: csv_file(f"{role}.csv", text) for role, text in demo_recsys_texts().items()}
        return recsys_fraud.recommendation_set_upload(team=team, name="spare", **files).pk
    if kind == "spare_scores":
        return recsys_fraud.fraud_score_set_upload(
            team=team, name="spare", scores=csv_file("s.csv", "id,score,label\na,1,1\n")
        ).pk
    if kind == "spare_recs_eval":
        recs = RecommendationSet.objects.filter(team=team).order_by("pk").first()
        return recsys_fraud.recommendation_evaluation_create(
            recommendation_set=recs,
            options=RecsysOptions(k=RecommendationEvaluation.objects.count() + 20),
            enqueue=False,
        ).pk
    if kind == "spare_fraud_eval":
        scores = FraudScoreSet.objects.filter(team=team).order_by("pk").first()
        options = FraudOptions(target_fpr=0.0123 + 0.0001 * FraudScoreEvaluation.objects.count())
        return recsys_fraud.fraud_evaluation_create(score_set=scores, options=options, enqueue=False).pk
    if kind == "spare_pool":  # a finished pool of project A (a second one building would be refused)
        project = Project.objects.get(slug="alpha")
        return JudgingPool.objects.create(team=team, project=project, strategy="depth", stage="done").pk
    run = uploads.run_upload(
        team=team, upload=upload("spare.run", run_text(1, 1.0, "spare")), uploaded_by=None
    )
    if kind == "spare_run":
        return run.pk
    source = QrelsSource.objects.filter(team=team, kind="upload").order_by("pk").first()
    if kind == "spare_comparison":
        other = Run.objects.filter(team=team).exclude(pk=run.pk).order_by("pk").first()
        return evaluations.comparison_create(
            qrels=source, runs=[run, other], measures=("map",), enqueue=False
        ).pk
    return evaluations.evaluation_create(run=run, qrels=source, measures=("map",), enqueue=False).pk


SPARE_OBJECTS = frozenset(
    {"spare_run", "spare_qrels", "spare_evaluation", "spare_comparison", "spare_recs", "spare_scores",
     "spare_recs_eval", "spare_fraud_eval", "spare_pool"}
)  # fmt: skip


def spare(name: str, world: World) -> dict[str, Any]:
    """Ids for one request that may destroy what it names: a channel, a team member, a stream or an object of
    its own for each."""
    if MATRIX[name].pk in SPARE_OBJECTS:
        return {**world.ids, MATRIX[name].pk: spare_object(MATRIX[name].pk, world.team)}
    if MATRIX[name].pk == "spare_stream":
        slug = f"spare-{uuid4().hex[:12]}"
        monitors.stream_create(team=world.team, slug=slug, name="Spare", dimension=DIM, every_minutes=60)
        return {**world.ids, "stream": slug}
    if MATRIX[name].pk == "spare_membership":
        user = User.objects.create_user(f"spare-{User.objects.count()}")
        return {**world.ids, "spare_membership": team_member_set(team=world.team, user=user).pk}
    if MATRIX[name].pk == "spare_project_membership":
        user = User.objects.create_user(f"spare-{User.objects.count()}")
        membership = services.membership_set(
            project=world.a, user=user, role=ProjectMembership.Role.ANNOTATOR
        )
        return {**world.ids, "spare_project_membership": membership.pk}
    if MATRIX[name].pk != "spare_channel":
        return world.ids
    channel = NotificationChannel.objects.create(
        team=world.team, name="spare", kind="email", target="x@example.org"
    )
    return {**world.ids, "spare_channel": channel.pk}


def request(client: Client, method: str, path: str) -> Any:
    if method in {"get", "post"}:
        return getattr(client, method)(path)
    return getattr(client, method)(path, {}, content_type="application/json")


@pytest.mark.django_db
class TestPermissionMatrix:
    def test_it_has_a_row_for_every_url_and_no_row_for_a_url_that_is_gone(self) -> None:
        assert set(urls()) - set(MATRIX) == set(), "new URLs: add them to MATRIX"
        assert set(MATRIX) - set(urls()) == set(), "rows of URLs that are gone"

    def test_it_answers_every_persona_as_the_matrix_says(self, queued: QueuedTasks) -> None:
        world = world_build()
        clients = {persona: logged_in(user) for persona, user in world.users.items()}
        routes = {name: route for name, route in urls().items() if name != "admin"}
        calls = [(name, method) for method in ("get", "post") for name in sorted(routes)]
        calls += [(name, method) for name in sorted(routes) for method, _ in MATRIX[name].other]
        wrong = []
        for name, method in calls:
            for persona in PERSONAS:
                path = path_of(name, routes[name], spare(name, world))
                # Logging out ends the session: that persona's own client for it.
                client = logged_in(world.users[persona]) if name == "logout" else clients[persona]
                got, want = outcome(request(client, method, path)), expected(name, method, persona)
                if got != want and not (want == "wrote" and got in WROTE):
                    wrong.append(f"{method.upper()} {path} as {persona}: {got}, expected {want}")
        assert wrong == []

    def test_it_answers_404_to_another_team_naming_this_teams_objects(self, queued: QueuedTasks) -> None:
        """otto edits the fraud team: T's objects by their ids under /teams/fraud/ are not found."""
        world = world_build()
        otto = logged_in(world.users["outsider"])
        team_routes = {
            n: r for n, r in urls().items() if "<team>" in r.replace("slug:", "") and "<int:pk>" in r
        }
        wrong = []
        for name, route in sorted(team_routes.items()):
            row = MATRIX[name]
            methods = [m for m in ("get", "post") if getattr(row, m) is not None] + [m for m, _ in row.other]
            ids = {**spare(name, world), "team": "fraud"}
            for method in methods:
                got = outcome(request(otto, method, path_of(name, route, ids)))
                if got != "404":
                    wrong.append(f"{method.upper()} {name}: {got}")
        assert wrong == [] and len(team_routes) > 40

    def test_it_keeps_everyone_but_staff_out_of_the_admin(self, db: None) -> None:
        """Every model's list for the superuser and for a lead (not staff); three pages for the others."""
        users: dict[str, User | None] = {"anon": None, **personas_create()}
        pages = ["/admin/"] + [
            f"/admin/{model._meta.app_label}/{model._meta.model_name}/" for model in admin.site._registry
        ]
        for persona, user in users.items():
            client = logged_in(user)
            for page in pages if persona in {"admin", "lead_a", "anon"} else pages[:3]:
                got = outcome(client.get(page))
                assert got == ("200" if persona == "admin" else "302L"), (persona, page, got)


# --- what an annotator reads ---------------------------------------------------------------------------

GOLD_NOTE = "zebra-gold-note-8841"
#: The same for everyone and about no project's data: the API's description names the lead's gold import,
#: and the metric registry defines the annotator family's "accuracy on gold", so only the note and carol's
#: name are looked for there. Plotly's bundle (colours "gold", "carolina") is a vendored file and not read.
DESCRIPTIONS = {"api-schema", "api-docs", "api-redoc", "monitoring-api:metrics"}
GOLD_FLAGS = re.compile(r"is_gold|gold", re.IGNORECASE)


@pytest.mark.django_db
class TestWhatAnAnnotatorReads:
    def test_it_shows_alice_no_gold_and_no_label_of_another_annotator_anywhere(
        self, queued: QueuedTasks
    ) -> None:
        """carol labelled every task of A and four are gold, with a note: alice reads every URL she may, and
        judges her whole queue through the page (its form, and its one-request answer) and the API, and never
        meets either."""
        world = world_build()
        assert GoldLabel.objects.filter(task__project=world.a).update(note=GOLD_NOTE) == 4
        alice = logged_in(world.users["ann_a"])
        routes = urls()
        read: list[tuple[str, str]] = []

        def keep(name: str, response: Any) -> Any:
            assert response.status_code in {200, 201}, (name, response.status_code)
            read.append((name, response.content.decode(errors="replace")))
            return response

        reachable = [
            name
            for name, row in MATRIX.items()
            if row.get and "ann_a" in row.get and name not in {"login", "plotly-js"}
        ]
        for name in reachable:
            keep(name, alice.get(path_of(name, routes[name], world.ids), follow=True))
        api = "/api/projects/alpha/"
        for step in range(12):
            keep("judge", alice.get("/projects/alpha/judge/"))
            task = keep("next", alice.post(api + "next/")).json()
            keep("next", alice.get(api + "next/"))
            keep("progress", alice.get(api + "progress/"))
            if task["status"] != "task":
                break
            assignment = task["task"]["assignment"]
            if step == 0:  # the page's own form, then its undo, then the API
                keep(
                    "judge-answer",
                    alice.post(f"/projects/alpha/judge/{assignment}/", {"grade": "3"}, follow=True),
                )
                keep("judge-undo", alice.post("/projects/alpha/judge/undo/", follow=True))
                assignment = keep("next", alice.post(api + "next/")).json()["task"]["assignment"]
            if (
                step == 1
            ):  # the page's one-request answer, as judge.js sends it: its reply holds the next task
                url = f"/projects/alpha/judge/{assignment}/next/"
                keep("judge-answer-next", alice.post(url, {"grade": "3"}, HTTP_ACCEPT="application/json"))
                continue
            body = {"assignment": assignment, "grade": 3}
            keep("submit", alice.post(api + "submit/", body, content_type="application/json"))
        assert task["status"] == "empty" and Annotation.objects.filter(
            annotator__username="alice", task__is_gold=True
        )
        assert {
            "judge",
            "judge-answer-next",
            "annotations:guidelines",
            "progress",
            "next",
            "submit",
            "home",
        } <= {n for n, _ in read}
        for name, text in read:
            assert GOLD_NOTE not in text and "carol" not in text, name
            assert name in DESCRIPTIONS or not GOLD_FLAGS.search(text), (name, GOLD_FLAGS.search(text))
