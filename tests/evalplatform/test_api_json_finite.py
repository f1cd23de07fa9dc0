"""No NaN or infinity in any JSON reply: with NaN, +inf and -inf planted in every stored float (every FloatField,
and every float inside every JSONField, of the models of evalplatform, annotations and monitoring, found
through the model registry so a new field is covered), every GET endpoint of the API schema answers strict
JSON (or its file) and no 5xx, read with real object ids by the demo's team editor and project lead.

PostgreSQL's jsonb cannot hold NaN or infinities (a write of one fails), so the JSON fields get theirs
as they are read: the floats in them are replaced on the way out of the database, a stricter what-if that
the API replies must pass. The dashboards' pages (and their embedded chart data) are then read with the
FloatFields planted, the values the database can hold.
"""

from __future__ import annotations

import json
import math
import re
from io import StringIO
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import DatabaseError, models, transaction
from django.test import Client

from annotations.models import (
    ImportJob,
    LLMJudgeJob,
    MachineJudge,
    MachineJudgeImport,
    Project,
    ProjectMembership,
    QrelsBuild,
)
from evalcore.recsys import RecsysOptions
from evalplatform.models import TeamMembership
from monitoring import models as monitoring_models
from monitoring.evaluations import loop
from monitoring.fusion import services as fusions
from monitoring.models import EmbeddingStream
from monitoring.recsys_fraud import comparisons
from monitoring.recsys_fraud import services as recsys_fraud
from monitoring.reuse import services as reuse
from series.models import Series

APPS = ("evalplatform", "annotations", "monitoring")
#: Parameters, not figures: each is checked as a finite number when its job or rule is made (the services
#: refuse NaN with a message naming the field), so no NaN can be stored there, and planting one would test
#: what a job does with a parameter it never gets rather than what a reply shows.
PARAMETERS = {
    "Project.gold_share_min", "Project.gold_share_max", "Project.min_gold_accuracy",
    "QualitySnapshot.min_gold_accuracy", "QrelsBuild.tolerance", "QrelsBuild.min_accuracy",
    "EmbeddingStream.params", "AlertRule.threshold", "AlertRule.effect_threshold", "Evaluation.confidence",
    "Comparison.alpha", "Comparison.confidence", "RecommendationEvaluation.head_share",
    "FraudScoreEvaluation.target_fpr", "FraudScoreEvaluation.fp_cost", "FraudScoreEvaluation.fn_cost",
    "JudgingPool.rbp_p", "Comparison.rbo_p", "Fusion.step",
    "MachineJudgeEvaluation.alpha",
    "FraudComparison.confidence", "RecommendationComparison.confidence",
}  # fmt: skip
PLANTED = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
#: The model behind each `{id}` of a path, by the segment before it.
ID_MODELS: dict[str, type[models.Model]] = {
    "alert-rules": monitoring_models.AlertRule,
    "comparisons": monitoring_models.Comparison,
    "evaluations": monitoring_models.Evaluation,
    "fraud-comparisons": monitoring_models.FraudComparison,
    "fraud-evaluations": monitoring_models.FraudScoreEvaluation,
    "fraud-score-sets": monitoring_models.FraudScoreSet,
    "fusions": monitoring_models.Fusion,
    "imports": ImportJob,
    "import-jobs": MachineJudgeImport,
    "llm-judge-jobs": LLMJudgeJob,
    "machine-judges": MachineJudge,
    "members": TeamMembership,
    "leaderboard": monitoring_models.QrelsSource,
    "pools": monitoring_models.JudgingPool,
    "qrels": monitoring_models.QrelsSource,
    "recommendation-comparisons": monitoring_models.RecommendationComparison,
    "recommendation-evaluations": monitoring_models.RecommendationEvaluation,
    "recommendation-sets": monitoring_models.RecommendationSet,
    "reuse-analyses": monitoring_models.ReuseAnalysis,
    "gaps-requests": monitoring_models.GapsRequest,
    "runs": monitoring_models.Run,
    "series": Series,
    "snapshots": monitoring_models.EmbeddingSnapshot,
}


def stored_fields() -> list[tuple[type[models.Model], models.Field[Any, Any]]]:
    return [
        (model, field)
        for app in APPS
        for model in apps.get_app_config(app).get_models()
        for field in model._meta.concrete_fields
        if isinstance(field, models.FloatField | models.JSONField)
        and f"{model.__name__}.{field.name}" not in PARAMETERS
    ]


def with_floats_as(data: Any, number: float) -> Any:
    """`data` with every float as `number` (ints, which may be counts or ranks, kept)."""
    if isinstance(data, float):
        return number
    if isinstance(data, dict):
        return {key: with_floats_as(value, number) for key, value in data.items()}
    if isinstance(data, list):
        return [with_floats_as(value, number) for value in data]
    return data


def plant(constant: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every stored float as `constant`: FloatFields in the database, JSONFields as they are read (jsonb
    cannot hold NaN or infinities). Returns the fields a check constraint kept it out of."""
    refused, number = [], PLANTED[constant]
    for model, field in stored_fields():
        if isinstance(field, models.FloatField):
            try:
                with transaction.atomic():
                    model._default_manager.update(**{field.attname: number})
            except DatabaseError:
                refused.append(f"{model.__name__}.{field.name}")
    planted = {field for _, field in stored_fields() if isinstance(field, models.JSONField)}
    read = models.JSONField.from_db_value

    def from_db_value(field: models.JSONField, value: Any, expression: Any, connection: Any) -> Any:
        data = read(field, value, expression, connection)
        return with_floats_as(data, number) if field in planted else data

    monkeypatch.setattr(models.JSONField, "from_db_value", from_db_value)
    return refused


def _ids(template: str, stream: EmbeddingStream) -> list[str]:
    """Up to 3 ids of the objects the path's `{id}` names (the stream's own runs and snapshots under it)."""
    segment = template.split("/{id}/")[0].rsplit("/", 1)[-1]
    rows: models.QuerySet[Any]
    if template.startswith("/api/teams/{team}/streams/{stream}/"):
        model = monitoring_models.MonitorRun if segment == "runs" else monitoring_models.EmbeddingSnapshot
        rows = model._default_manager.filter(stream=stream)
    elif segment == "series":  # a team's series (judging projects linked to no team have some too)
        rows = Series.objects.filter(team=stream.team)
    elif template.startswith("/api/projects/{slug}/members/"):  # the project's own ("members" is a team's)
        rows = ProjectMembership.objects.filter(project__slug="python-help")
    else:
        found = ID_MODELS.get(segment)
        assert found is not None, f"which objects does {template} read? Add /{segment}/ to ID_MODELS"
        rows = found._default_manager.all()
    return [str(pk) for pk in rows.order_by("pk").values_list("pk", flat=True)[:3]]


def get_paths(schema: dict[str, Any], stream: EmbeddingStream) -> list[str]:
    """Every GET path of the schema, its parameters filled with real values (each id of its kind, up to 3)."""
    project = Project.objects.get(slug="python-help")
    build = QrelsBuild.objects.filter(project=project).order_by("version").last()
    recsys_set = monitoring_models.RecommendationSet.objects.order_by("pk").first()
    assert build is not None and recsys_set is not None
    paths = []
    for template, operations in schema["paths"].items():
        if "get" not in operations:
            continue
        enums = {
            p["name"]: p["schema"].get("enum", [])
            for p in operations["get"].get("parameters", [])
            if p["in"] == "path"
        }
        filled = [template]
        for name, values in enums.items():
            if name == "id":
                options = _ids(template, stream)
            else:
                fixed = {"team": "search", "stream": stream.slug, "slug": project.slug, "version": str(build.version),
                         "name": "ndcg_cut_10", "role": next(iter(recsys_set.stored()))}  # fmt: skip
                options = [str(v) for v in values] or [fixed[name]]
            assert options, f"no object to read for {{{name}}} in {template}"
            filled = [path.replace(f"{{{name}}}", option) for path in filled for option in options]
        required = [
            p["name"]
            for p in operations["get"].get("parameters", [])
            if p["in"] == "query" and p.get("required")
        ]
        query = "&".join(f"{name}={QUERY[name](build)}" for name in required)
        paths += [f"{path}?{query}" if query else path for path in filled]
    assert not [path for path in paths if re.search(r"[{}]", path)]
    return paths


#: Values for the query parameters an endpoint requires.
QUERY = {
    "old": lambda build: build.version,
    "new": lambda build: build.version,
    "machine_judge": lambda build: MachineJudge.objects.filter(project=build.project).values_list(
        "pk", flat=True
    )[0],
}


def page_paths() -> list[str]:
    """The dashboards: every object's page (`get_absolute_url`, up to 3 of each model), the team's and the
    project's."""
    paths = ["/teams/search/", "/teams/search/alerts/", "/projects/python-help/quality/"]
    for app in APPS:
        for model in apps.get_app_config(app).get_models():
            if hasattr(model, "get_absolute_url"):
                paths += [row.get_absolute_url() for row in model._default_manager.order_by("pk")[:3]]
    return paths


def page_problems(pages: list[str], editor: Client, lead: Client) -> list[str]:
    """Pages that fail, or whose embedded chart data holds NaN or Infinity (which `JSON.parse` refuses)."""
    problems = []
    for path in pages:
        response = (lead if path.startswith("/projects/") else editor).get(path)
        html = response.content.decode()
        if response.status_code != 200:
            problems.append(f"page {path}: {response.status_code}")
        for script in re.findall(r"<script[^>]*>(.*?)</script>", html, flags=re.S):
            if found := re.search(r"\bNaN\b|\bInfinity\b", script):
                problems.append(
                    f"page {path}: {found.group()} in a script: ...{script[max(0, found.start() - 80) : found.end()]}"
                )
    return problems


def comparisons_of_demo_sets() -> None:
    """The demo's fraud and recommendation sets evaluated again with other options, and each pair compared,
    so that the comparisons' replies and pages are read too."""
    fraud = monitoring_models.FraudScoreEvaluation.objects.get(team__slug="search")
    other_fraud = recsys_fraud.fraud_evaluation_create(score_set=fraud.score_set, enqueue=False)
    recsys_fraud.fraud_evaluation_run(evaluation_id=other_fraud.pk)
    compared = comparisons.fraud_comparison_create(a=fraud, b=other_fraud, enqueue=False)
    assert comparisons.fraud_comparison_run(comparison_id=compared.pk).status == "done"
    recs = monitoring_models.RecommendationEvaluation.objects.get(team__slug="search")
    other_recs = recsys_fraud.recommendation_evaluation_create(
        recommendation_set=recs.recommendation_set, options=RecsysOptions(k=5), enqueue=False
    )
    recsys_fraud.recommendation_evaluation_run(evaluation_id=other_recs.pk)
    paired = comparisons.recommendation_comparison_create(a=recs, b=other_recs, enqueue=False)
    assert comparisons.recommendation_comparison_run(comparison_id=paired.pk).status == "done"


def refuse_constant(constant: str) -> None:
    raise ValueError(f"non-standard JSON constant {constant}")


@pytest.mark.django_db
def test_it_answers_strict_json_from_every_get_endpoint_with_undefined_values_stored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    call_command("load_demo", "--json", stdout=StringIO())
    # A finished background import, so its job's reply (progress and result) is read too.
    ImportJob.objects.create(
        project=Project.objects.get(slug="python-help"), kind="documents", original_name="docs.jsonl.gz",
        status="done", progress=1.0, result={"kind": "documents", "file": "docs.jsonl.gz", "records": 3,
        "created": 3, "updated": 0, "unchanged": 0, "summary": "3 documents added"},
    )  # fmt: skip
    # A finished reusability analysis of the search team's leaderboard, so its reply is read too.
    board = monitoring_models.Evaluation.objects.filter(team__slug="search", status="done").values("qrels_id")
    source = monitoring_models.QrelsSource.objects.filter(pk__in=board).order_by("pk").first()
    assert source is not None
    analysis = reuse.reuse_analysis_create(
        qrels=source, kind="reusability", params={"depth": 10}, created_by=None
    )
    reuse.reuse_analysis_run(analysis_id=analysis.pk)
    analysis.refresh_from_db()
    assert analysis.status == "done", analysis.error
    # A finished "judge the gaps" request on a built version, so its reply (state and counts) is read too.
    built = monitoring_models.QrelsSource.objects.filter(team__slug="search", build__isnull=False).first()
    assert built is not None
    gaps = loop.gaps_request_create(
        run=monitoring_models.Run.objects.filter(team__slug="search").order_by("pk")[0], qrels=built, depth=5
    )
    assert loop.gaps_request_run(request_id=gaps.pk).status == "done"
    # A finished fusion optimised on that leaderboard's qrels, so its reply (weights, folds) is read too.
    inputs = list(monitoring_models.Run.objects.filter(team__slug="search").order_by("pk")[:2])
    fusion = fusions.fusion_create(
        team=source.team, runs=inputs, method="wsum", qrels=source, folds=2, step=0.5, enqueue=False
    )
    assert fusions.fusion_run(fusion_id=fusion.pk).status == "done"
    comparisons_of_demo_sets()
    demo_project = Project.objects.get(slug="python-help")  # an LLM judge job, so its reply is read too
    LLMJudgeJob.objects.create(
        project=demo_project, judge=MachineJudge.objects.filter(project=demo_project).first(), limit=5
    )
    editor, lead, annotator = (Client(raise_request_exception=False) for _ in range(3))
    editor.force_login(User.objects.get(username="analyst"))
    lead.force_login(User.objects.get(username="lead"))
    annotator.force_login(User.objects.get(username="carol"))
    schema = json.loads(editor.get("/api/schema/?format=json").content)
    stream = EmbeddingStream.objects.get(team__slug="search")
    paths = get_paths(schema, stream)
    assert len(paths) > 50
    pages = page_paths()
    refused: dict[str, list[str]] = {}
    for constant in PLANTED:
        refused[constant] = plant(constant, monkeypatch)
        problems = []
        for path in paths:
            client = lead if path.startswith("/api/projects/") else editor
            response = client.get(path)
            if response.status_code == 403 and client is lead:  # an annotator's own pages (next, progress)
                response = annotator.get(path)
            if response.status_code >= 500:
                problems.append(f"{path}: {response.status_code}")
                continue
            if response.status_code != 200:
                problems.append(f"{path}: {response.status_code} {response.content[:200]!r}")
            if response.get("Content-Type", "").startswith("application/json"):
                try:
                    json.loads(response.content, parse_constant=refuse_constant)
                except ValueError as error:
                    problems.append(f"{path}: {error}")
        monkeypatch.undo()  # the pages with the database's own values: jsonb holds no NaN for a chart to get
        problems += page_problems(pages, editor, lead)
        assert not problems, f"with {constant} stored:\n" + "\n".join(problems)
    # Check constraints keep a negative time out of an answer, a machine label's confidence in [0, 1] and a
    # fusion's sigma in [0, 1] and phi in (0, 1) (NaN too: PostgreSQL orders NaN above every number): the
    # floats these values could not reach.
    bounded = ["MachineLabel.confidence", "Fusion.sigma", "Fusion.phi"]
    assert refused == {"nan": bounded, "inf": bounded, "-inf": ["Annotation.seconds_spent", *bounded]}
