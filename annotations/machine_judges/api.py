"""REST API of machine judges, under /api/projects/<slug>/machine-judges/ (project leads only).

`machine-judges/` lists the judges and takes an upload of labels (multipart: the file and the judge's
name, version, kind, model and configuration); `machine-judges/<id>/` is a judge with its calibration
against gold and the human consensus (computed on request, as on the page); `machine-judges/<id>/route/`
routes its doubtful pairs to people, and `machine-judges/<id>/routed/` lists what was routed and why.
Lookups go through `selectors.get_lead_project` (404 to non-members, 403 to annotators).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotations import selectors
from annotations.machine_judges import services
from annotations.machine_judges.import_api import JudgeImportOut, UploadErrorOut, judge_import_out
from annotations.machine_judges.imports import labels_request
from annotations.machine_judges.routing import RouteParams, judge_route
from annotations.models import MachineJudge, MachineJudgeImport, MachineRouting
from evalcore.errors import FormatError

TAGS = ["machine judges: leads"]
DEFAULT_ROUTE = RouteParams()


class JudgeOut(serializers.ModelSerializer):
    labels = serializers.IntegerField(source="n_labels", read_only=True)
    routed = serializers.IntegerField(source="n_routed", read_only=True)

    class Meta:
        model = MachineJudge
        fields = ["id", "name", "version", "kind", "model", "configuration", "created_at", "labels", "routed"]


class LabelsUploadIn(serializers.Serializer):
    file = serializers.FileField(
        help_text="TREC qrels or JSON Lines {qid, doc_id, label, confidence?, rationale?}."
    )
    name = serializers.CharField(max_length=100)
    version = serializers.CharField(max_length=64, default="1")
    kind = serializers.ChoiceField(choices=MachineJudge.Kind.choices, default=MachineJudge.Kind.OTHER)
    model = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    configuration = serializers.CharField(required=False, allow_blank=True, default="")


class LabelsImportedOut(serializers.Serializer):
    judge = serializers.IntegerField()
    name = serializers.CharField()
    version = serializers.CharField()
    judge_created = serializers.BooleanField()
    pairs = serializers.IntegerField(help_text="Graded pairs in the file.")
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    unjudged = serializers.IntegerField(help_text="Negative grades, left out.")
    missing_topic = serializers.IntegerField(help_text="Pairs whose topic the project lacks, left out.")
    missing_document = serializers.IntegerField(help_text="Pairs whose document the project lacks, left out.")
    summary = serializers.CharField()


class CalibrationOut(serializers.Serializer):
    judge = serializers.IntegerField()
    name = serializers.CharField()
    version = serializers.CharField()
    labels = serializers.IntegerField()
    with_confidence = serializers.IntegerField()
    consensus_build = serializers.IntegerField(allow_null=True, help_text="The human build compared with.")
    gold = serializers.JSONField(
        allow_null=True, help_text="The figures against gold (calibrate_judge --json)."
    )
    consensus = serializers.JSONField(allow_null=True, help_text="The figures against the human consensus.")
    krippendorff_alpha_with_humans = serializers.FloatField(allow_null=True)


class RouteIn(serializers.Serializer):
    budget = serializers.IntegerField(min_value=0, max_value=100_000, default=DEFAULT_ROUTE.budget)
    confidence_below = serializers.FloatField(
        min_value=0, max_value=1, default=DEFAULT_ROUTE.confidence_below
    )
    topic_agreement_below = serializers.FloatField(
        min_value=0, max_value=1, default=DEFAULT_ROUTE.topic_agreement_below
    )
    sample_share = serializers.FloatField(min_value=0, max_value=1, default=DEFAULT_ROUTE.sample_share)
    seed = serializers.IntegerField(min_value=0, default=DEFAULT_ROUTE.seed)


class RoutingDoneOut(serializers.Serializer):
    routed = serializers.DictField(child=serializers.IntegerField(), help_text="Pairs routed now, by reason.")
    tasks_created = serializers.IntegerField()
    tasks_existing = serializers.IntegerField()
    already_routed = serializers.IntegerField()
    judgments_added = serializers.IntegerField(
        help_text="Pairs that were tasks with answers already and now need one more judgment."
    )
    params = serializers.DictField()


class RoutedOut(serializers.ModelSerializer):
    qid = serializers.CharField(source="topic.qid")
    doc_id = serializers.CharField(source="document.doc_id")

    class Meta:
        model = MachineRouting
        fields = ["qid", "doc_id", "reason", "queue", "detail", "routed_at"]


def _judges(project: Any) -> Any:
    return MachineJudge.objects.filter(project=project).annotate(
        n_labels=Count("labels", distinct=True), n_routed=Count("routings", distinct=True)
    )


@extend_schema(
    request={"multipart/form-data": LabelsUploadIn},
    responses={
        200: JudgeOut(many=True),
        201: LabelsImportedOut,
        202: JudgeImportOut,
        400: OpenApiResponse(UploadErrorOut),
    },  # fmt: skip
    summary="List the machine judges, or upload a judge's labels",
    description="All or nothing: a bad line imports nothing and the answer names the file, line and reason. "
    "The same file again changes nothing; a new version is a new judge. Pairs whose topic or document the "
    "project lacks are counted (missing_topic, missing_document) and left out. A file over IMPORT_SYNC_MAX_BYTES "
    "is imported by a job: the answer is 202 with the job to follow.",
    tags=TAGS,
)
@api_view(["GET", "POST"])
@parser_classes([MultiPartParser, FormParser, JSONParser])
def machine_judges(request: Request, slug: str) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    if request.method == "GET":
        return Response(JudgeOut(_judges(project), many=True).data)
    data = LabelsUploadIn(data=request.data)
    data.is_valid(raise_exception=True)
    values = dict(data.validated_data)
    upload = values.pop("file")
    try:
        result = labels_request(project=project, upload=upload, created_by=request.user, **values)
    except FormatError as exc:
        body = {"detail": str(exc), "file": exc.path, "line": exc.line, "reason": exc.reason}
        return Response(UploadErrorOut(body).data, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(result, MachineJudgeImport):  # a large file: follow the job
        return Response(judge_import_out(result), status=status.HTTP_202_ACCEPTED)
    return Response(
        LabelsImportedOut({**result.as_dict(), "summary": result.summary}).data,
        status=status.HTTP_201_CREATED,
    )


@extend_schema(
    responses=CalibrationOut, summary="A machine judge's calibration against gold and people", tags=TAGS
)
@api_view(["GET"])
def machine_judge(request: Request, slug: str, pk: int) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    judge = get_object_or_404(MachineJudge.objects.select_related("project"), project=project, pk=pk)
    return Response(CalibrationOut(services.judge_calibration(judge)).data)


@extend_schema(
    request=RouteIn,
    responses={200: RoutingDoneOut},
    summary="Route a machine judge's doubtful pairs, and a random sample, to people",
    description="Up to `budget` pairs over all routings of the judge: where people disagree (adjudication "
    "queue), where the judge disagrees with people, is below `confidence_below`, or in a topic whose "
    "agreement is below `topic_agreement_below` (judging queue: a new task, or one more required judgment of a task "
    "that has answers already); plus `sample_share` of the other "
    "unjudged pairs at random (seeded). Routing again with the same data routes nothing more.",
    tags=TAGS,
)
@api_view(["POST"])
def machine_judge_route(request: Request, slug: str, pk: int) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    judge = get_object_or_404(MachineJudge.objects.select_related("project"), project=project, pk=pk)
    data = RouteIn(data=request.data)
    data.is_valid(raise_exception=True)
    done = judge_route(judge=judge, params=RouteParams(**data.validated_data), by=request.user)
    return Response(RoutingDoneOut(done.as_dict()).data)


@extend_schema(responses=RoutedOut(many=True), summary="The pairs routed to people, and why", tags=TAGS)
@api_view(["GET"])
def machine_judge_routed(request: Request, slug: str, pk: int) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    judge = get_object_or_404(MachineJudge, project=project, pk=pk)
    routings = (
        MachineRouting.objects.filter(judge=judge)
        .select_related("topic", "document")
        .order_by("routed_at", "id")
    )
    return Response(RoutedOut(routings, many=True).data)
