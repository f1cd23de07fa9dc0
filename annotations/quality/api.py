"""REST API of annotator quality and qrels builds, under /api/projects/<slug>/ (project leads only).

`quality/` reads the precomputed snapshot, `quality/recompute/` queues a recompute,
`quality/annotators/<username>/override/` disqualifies or reinstates an annotator; `qrels/` lists and
creates builds (a build is queued on the worker: poll its detail until `done`), `qrels/<version>/` is a
build, `qrels/<version>/export/trec/` and `.../export/jsonl/` its exports, `qrels/diff/?old=&new=` the pairs added,
removed and changed between two builds. Lookups go through `selectors.get_project_for_member` (404 to
non-members, 403 to annotators).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from annotations import qrels, selectors
from annotations.models import SOURCE_RULES, MachineJudge, ProjectMembership, QrelsBuild
from annotations.quality import services as quality
from evalcore.judging import DEFAULT_QRELS_PARAMS, QrelsError, QrelsParams

Role = ProjectMembership.Role
TAGS = ["quality and qrels: leads"]

# --- serializers ----------------------------------------------------------------------------------------


class AnnotatorQualityOut(serializers.Serializer):
    username = serializers.CharField()
    answers = serializers.IntegerField(help_text="All answers, skipped and unclear included.")
    labels = serializers.IntegerField(help_text="Grades given in time: the labels that count.")
    too_fast = serializers.IntegerField()
    too_fast_share = serializers.FloatField(allow_null=True, help_text="Too-fast answers / graded answers.")
    median_seconds = serializers.FloatField(allow_null=True, help_text="Over all answers.")
    gold_seen = serializers.IntegerField()
    gold_accuracy = serializers.FloatField(allow_null=True, help_text="Exact, on gold items.")
    gold_accuracy_within = serializers.FloatField(allow_null=True, help_text="Within ±1, on gold items.")
    gold_mae = serializers.FloatField(allow_null=True)
    consensus_seen = serializers.IntegerField()
    consensus_agreement = serializers.FloatField(
        allow_null=True, help_text="Share of labels equal to the median of the other annotators' labels."
    )
    consensus_agreement_within = serializers.FloatField(allow_null=True)
    meets_thresholds = serializers.BooleanField()
    decision = serializers.ChoiceField(
        source="override",
        choices=ProjectMembership.QualityOverride.choices,
        help_text="A lead's override: auto (the thresholds decide), include or exclude.",
    )
    included = serializers.BooleanField(help_text="Whether qrels builds use this annotator's labels.")
    reason = serializers.CharField()


class MeasureOut(serializers.Serializer):
    estimate = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)


class AgreementScopeOut(serializers.Serializer):
    n_labels = serializers.IntegerField()
    n_items = serializers.IntegerField()
    n_pairable = serializers.IntegerField(help_text="Items with at least two labels.")
    n_annotators = serializers.IntegerField()
    confidence = serializers.FloatField()
    n_resamples = serializers.IntegerField()
    measures = serializers.DictField(child=MeasureOut())


class AgreementOut(serializers.Serializer):
    all = AgreementScopeOut(help_text="Every annotator's labels that count.")
    reliable = AgreementScopeOut(help_text="The included annotators' labels.")


Matrix = serializers.ListField(child=serializers.ListField(child=serializers.FloatField(allow_null=True)))


class KappaOut(serializers.Serializer):
    annotators = serializers.ListField(child=serializers.CharField())
    unweighted = Matrix
    linear = Matrix
    quadratic = Matrix
    shared_items = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()))


class QualityOut(serializers.Serializer):
    computed_at = serializers.DateTimeField()
    answers = serializers.IntegerField()
    answers_since = serializers.IntegerField(help_text="Answers newer than the figures.")
    min_gold_accuracy = serializers.FloatField()
    min_gold_items = serializers.IntegerField()
    annotators = AnnotatorQualityOut(many=True)
    agreement = AgreementOut()
    kappa = KappaOut()
    label_distribution = serializers.JSONField(
        help_text='{"grades": [...], "annotators": [...], "counts": [[...]]}'
    )
    statistics = serializers.JSONField(help_text="The sufficient statistics the agreement figures reduce.")


class QueuedOut(serializers.Serializer):
    queued = serializers.BooleanField()
    detail = serializers.CharField()


class OverrideIn(serializers.Serializer):
    decision = serializers.ChoiceField(choices=ProjectMembership.QualityOverride.choices)


class OverrideOut(serializers.Serializer):
    username = serializers.CharField()
    decision = serializers.ChoiceField(choices=ProjectMembership.QualityOverride.choices)
    by = serializers.CharField(allow_null=True)
    at = serializers.DateTimeField(allow_null=True)


class QrelsBuildIn(serializers.Serializer):
    aggregation = serializers.ChoiceField(
        choices=QrelsBuild.Aggregation.choices, default=DEFAULT_QRELS_PARAMS.aggregation
    )
    tolerance = serializers.FloatField(
        min_value=0, max_value=QrelsParams.MAX_TOLERANCE, default=DEFAULT_QRELS_PARAMS.tolerance
    )
    min_labels = serializers.IntegerField(
        min_value=1, max_value=QrelsParams.MAX_MIN_LABELS, default=DEFAULT_QRELS_PARAMS.min_labels
    )
    min_accuracy = serializers.FloatField(
        min_value=0, max_value=1, required=False, help_text="Default: the project's."
    )
    min_gold = serializers.IntegerField(
        min_value=0, max_value=QrelsParams.MAX_MIN_GOLD, required=False, help_text="Default: the project's."
    )
    use_adjudications = serializers.BooleanField(
        default=DEFAULT_QRELS_PARAMS.use_adjudications,
        help_text="Take the adjudicated pairs' rel from their adjudication (default true).",
    )
    sources = serializers.ChoiceField(
        choices=list(SOURCE_RULES.items()),
        default="human",
        help_text="human (default): people only; machine: the machine judge only; both: people where "
        "the human build judges the pair, else the machine judge.",
    )
    machine_judge = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        help_text="The machine judge's id (sources machine or both).",
    )


class QrelsBuildOut(serializers.Serializer):
    version = serializers.IntegerField()
    status = serializers.ChoiceField(choices=QrelsBuild.Status.choices)
    parameters = serializers.SerializerMethodField()
    pairs_kept = serializers.IntegerField()
    adjudicated = serializers.IntegerField(help_text="Pairs whose rel is an adjudicated grade.")
    counts = serializers.JSONField()
    agreement = serializers.JSONField()
    annotators = serializers.JSONField(help_text='{"included": [...], "excluded": [...]}, with reasons.')
    content_hash = serializers.CharField(help_text="sha256 of the TREC export.")
    error = serializers.CharField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    exports = serializers.SerializerMethodField()
    sources = serializers.CharField(help_text="human, machine or both.")
    machine_judge = serializers.CharField(
        allow_null=True, default=None, help_text="The machine judge, name vVERSION."
    )
    source_rule = serializers.CharField(help_text="The rule that chose each pair's rel.")

    def get_parameters(self, build: QrelsBuild) -> dict[str, Any]:
        return build.params.as_dict()

    def get_exports(self, build: QrelsBuild) -> dict[str, str]:
        if build.status != QrelsBuild.Status.DONE:
            return {}
        return {
            fmt: reverse("annotations-api:qrels-export", args=[build.project.slug, build.version, fmt])
            for fmt in qrels.EXPORT_FORMATS
        }


class PairOut(serializers.Serializer):
    qid = serializers.CharField()
    doc_id = serializers.CharField()
    rel = serializers.IntegerField()


class ChangedPairOut(serializers.Serializer):
    qid = serializers.CharField()
    doc_id = serializers.CharField()
    old_rel = serializers.IntegerField()
    new_rel = serializers.IntegerField()


class DiffOut(serializers.Serializer):
    old = serializers.IntegerField()
    new = serializers.IntegerField()
    added = PairOut(many=True)
    removed = PairOut(many=True)
    changed = ChangedPairOut(many=True)
    unchanged = serializers.IntegerField()


class QualityErrorOut(serializers.Serializer):
    detail = serializers.CharField()


# --- helpers --------------------------------------------------------------------------------------------


def error_response(detail: str, code: int) -> Response:
    """`{"detail": ...}` with status `code`: the error body of the quality, qrels and adjudication API."""
    return Response(QualityErrorOut({"detail": detail}).data, status=code)


def _version(request: Request, name: str) -> int | None:
    try:
        return int(request.query_params[name])
    except (KeyError, ValueError):
        return None


# --- quality --------------------------------------------------------------------------------------------


@extend_schema(
    responses={200: QualityOut, 404: OpenApiResponse(QualityErrorOut)},
    summary="Annotator quality and project agreement (precomputed)",
    description="The figures of the last recompute, with each lead override applied as it stands now. "
    "404 until the first recompute has run.",
    tags=TAGS,
)
@api_view(["GET"])
def quality_snapshot(request: Request, slug: str) -> Response:
    project = selectors.get_project_for_reader(request.user, slug).project
    snapshot = selectors.quality_snapshot(project=project)
    if snapshot is None:
        return error_response("No quality figures yet: POST quality/recompute/ to compute them.", 404)
    rows = selectors.quality_rows(
        snapshot=snapshot, memberships=selectors.annotator_memberships(project=project)
    )
    data = {
        "computed_at": snapshot.computed_at,
        "answers": snapshot.answers,
        "answers_since": selectors.answers_since(project=project, snapshot=snapshot),
        "min_gold_accuracy": snapshot.min_gold_accuracy,
        "min_gold_items": snapshot.min_gold_items,
        "annotators": rows,
        "agreement": snapshot.agreement,
        "kappa": snapshot.kappa,
        "label_distribution": snapshot.label_distribution,
        "statistics": snapshot.statistics,
    }
    return Response(QualityOut(data).data)


@extend_schema(
    request=None,
    responses={202: QueuedOut, 503: QueuedOut},
    summary="Recompute the quality figures now (on the worker)",
    tags=TAGS,
)
@api_view(["POST"])
def quality_recompute(request: Request, slug: str) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    if quality.quality_recompute_request(project_id=project.pk, force=True):
        return Response(
            QueuedOut({"queued": True, "detail": "Queued."}).data, status=status.HTTP_202_ACCEPTED
        )
    body = {"queued": False, "detail": "The task queue is unreachable; try again later."}
    return Response(QueuedOut(body).data, status=status.HTTP_503_SERVICE_UNAVAILABLE)


@extend_schema(
    request=OverrideIn,
    responses={200: OverrideOut, 404: OpenApiResponse(QualityErrorOut)},
    summary="Disqualify (exclude), reinstate (include) or reset (auto) an annotator",
    description="Overrides the accuracy-on-gold thresholds for qrels builds; recorded with who and when.",
    tags=TAGS,
)
@api_view(["POST"])
def annotator_override(request: Request, slug: str, username: str) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    data = OverrideIn(data=request.data)
    data.is_valid(raise_exception=True)
    user = get_user_model().objects.filter(username=username).first()
    try:
        membership = quality.annotator_override_set(
            project=project, annotator=user.pk if user else -1, decision=data.validated_data["decision"],
            by=request.user,
        )  # fmt: skip
    except ProjectMembership.DoesNotExist:
        return error_response(f"{username!r} is not an annotator of this project.", 404)
    body = {
        "username": username,
        "decision": membership.quality_override,
        "by": request.user.get_username(),
        "at": membership.quality_override_at,
    }
    return Response(OverrideOut(body).data)


# --- qrels builds ---------------------------------------------------------------------------------------


@extend_schema(
    methods=["GET"], responses=QrelsBuildOut(many=True), summary="The project's qrels builds", tags=TAGS
)
@extend_schema(
    methods=["POST"],
    request=QrelsBuildIn,
    responses={202: QrelsBuildOut, 400: OpenApiResponse(QualityErrorOut), 503: QrelsBuildOut},
    summary="Build a new qrels version (queued on the worker)",
    description="Creates version N+1 as `pending` and queues it on the heavy queue; poll its detail until "
    "`done` (or `failed`). The thresholds default to the project's. 503 when the queue is unreachable "
    "(the build is then `failed` with the reason).",
    tags=TAGS,
)
@api_view(["GET", "POST"])
def qrels_builds(request: Request, slug: str) -> Response:
    if request.method == "GET":
        project = selectors.get_project_for_reader(request.user, slug).project
        builds = selectors.qrels_builds(project=project).select_related("project")
        return Response(QrelsBuildOut(builds, many=True).data)
    project = selectors.get_lead_project(request.user, slug)
    data = QrelsBuildIn(data=request.data)
    data.is_valid(raise_exception=True)
    values = dict(data.validated_data)
    judge_id = values.pop("machine_judge")
    judge = (
        MachineJudge.objects.filter(project=project, pk=judge_id).first() if judge_id is not None else None
    )
    if judge_id is not None and judge is None:
        return error_response(f"No machine judge {judge_id} in this project.", 400)
    try:
        build = qrels.qrels_build_create(
            project=project, created_by=request.user, machine_judge=judge, **values
        )
    except QrelsError as exc:
        return error_response(str(exc), 400)
    build.refresh_from_db()
    code = status.HTTP_503_SERVICE_UNAVAILABLE if build.status == QrelsBuild.Status.FAILED else 202
    return Response(QrelsBuildOut(build).data, status=code)


@extend_schema(
    responses={200: QrelsBuildOut, 404: OpenApiResponse(QualityErrorOut)},
    summary="One qrels build",
    tags=TAGS,
)
@api_view(["GET"])
def qrels_build(request: Request, slug: str, version: int) -> Response:
    project = selectors.get_project_for_reader(request.user, slug).project
    return Response(QrelsBuildOut(selectors.qrels_build_for(project=project, version=version)).data)


@extend_schema(
    parameters=[OpenApiParameter("fmt", str, OpenApiParameter.PATH, enum=list(qrels.EXPORT_FORMATS))],
    responses={
        (200, "text/plain"): OpenApiTypes.STR,
        (200, "application/x-ndjson"): OpenApiTypes.STR,
        404: OpenApiResponse(QualityErrorOut),
        409: OpenApiResponse(QualityErrorOut),
    },
    summary="Download a build: TREC qrels (qid 0 docno rel) or JSONL with per-label provenance",
    description="Sorted by qid, then doc_id, in code point order: equal builds give byte-identical files.",
    tags=TAGS,
)
@api_view(["GET"])
def qrels_export(request: Request, slug: str, version: int, fmt: str) -> Response | HttpResponse:
    project = selectors.get_project_for_reader(request.user, slug).project
    build = selectors.qrels_build_for(project=project, version=version)
    if fmt not in qrels.EXPORT_FORMATS:
        return error_response("Exports are trec or jsonl.", 404)
    if build.status != QrelsBuild.Status.DONE:
        return error_response(f"Build v{version} is {build.status}; only a done build can be exported.", 409)
    return qrels.qrels_export_response(build, fmt=fmt)  # type: ignore[arg-type]


@extend_schema(
    parameters=[
        OpenApiParameter("old", int, required=True, description="version to compare from"),
        OpenApiParameter("new", int, required=True, description="version to compare to"),
    ],
    responses={200: DiffOut, 400: OpenApiResponse(QualityErrorOut), 404: OpenApiResponse(QualityErrorOut)},
    summary="Pairs added, removed and changed between two builds",
    tags=TAGS,
)
@api_view(["GET"])
def qrels_diff(request: Request, slug: str) -> Response:
    project = selectors.get_project_for_reader(request.user, slug).project
    old_version, new_version = _version(request, "old"), _version(request, "new")
    if old_version is None or new_version is None:
        return error_response("Give two build versions: ?old=1&new=2.", 400)
    diff = selectors.qrels_build_diff(
        old=selectors.qrels_build_for(project=project, version=old_version),
        new=selectors.qrels_build_for(project=project, version=new_version),
    )
    body: dict[str, Any] = {
        "old": old_version,
        "new": new_version,
        "added": [{"qid": q, "doc_id": d, "rel": r} for q, d, r in diff.added],
        "removed": [{"qid": q, "doc_id": d, "rel": r} for q, d, r in diff.removed],
        "changed": [{"qid": q, "doc_id": d, "old_rel": a, "new_rel": b} for q, d, a, b in diff.changed],
        "unchanged": diff.unchanged,
    }
    return Response(DiffOut(body).data)
