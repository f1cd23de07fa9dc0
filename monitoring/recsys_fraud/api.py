"""Recommendation sets and fraud score sets through the REST API, under /api/teams/<team>/.

Upload a set (multipart), start an evaluation (a job on the worker), poll it (`job.state()` fields), read
its metrics with their registry specs, and its curves once done; download the set's files. As everywhere
in the API: non-members get a 404, a viewer asking to write a 403, and bad input a 400 naming the field,
`{"recs": ["recs.csv:3: rank 'first' is not an integer"]}`. The same set and options return the same
evaluation (202 while it waits or runs, 200 once done; a failed one is queued again).
"""

from __future__ import annotations

from typing import Any

from django.db.models.fields.files import FieldFile
from django.http import FileResponse, HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.exceptions import NotFound
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from evalcore.fraud import FraudOptions
from evalcore.recsys import RecsysOptions
from evalplatform.jobs import JobStatus
from evalplatform.options import options_of, serializer_field
from evalplatform.teams import get_team_for_member
from monitoring.common.pagination import PAGE_PARAMETERS, page_of, paginate
from monitoring.common.serializers import (
    FIELD_ERRORS,
    FORBIDDEN,
    NOT_FOUND,
    EvaluationErrorOut,
    JobStateOut,
    MeasureSpecOut,
    ObjectRefOut,
    TeamObjectField,
    link,
    spec_of,
)
from monitoring.editing.api import ARCHIVED_PARAMETER, archived_asked, edit_schemas, item_change
from monitoring.evaluations.api.evaluations import queued_status
from monitoring.models import (
    RECSYS_FILE_ROLES,
    FraudScoreEvaluation,
    FraudScoreSet,
    RecommendationEvaluation,
    RecommendationSet,
)
from monitoring.recsys_fraud import selectors
from monitoring.recsys_fraud import services as recsys_fraud

TAGS = ["recommendation and fraud"]
DOWNLOAD = {(200, "text/csv"): OpenApiTypes.BINARY, 404: NOT_FOUND}
NOT_DONE = OpenApiResponse(EvaluationErrorOut, description="The evaluation is not done yet.")


def _refused(field: str | None, reason: object) -> serializers.ValidationError:
    return serializers.ValidationError({field or "non_field_errors": [str(reason)]})


def _stream(stored: FieldFile, filename: str) -> FileResponse:
    """A stored file as a download, read in chunks."""
    try:
        handle = stored.open("rb")
    except (FileNotFoundError, ValueError):
        raise NotFound(f"{filename}: the stored file is missing.") from None
    return FileResponse(handle, as_attachment=True, filename=filename, content_type="text/csv")


# --- shapes -------------------------------------------------------------------------------------------


class FileInfoOut(serializers.Serializer):
    name = serializers.CharField(help_text="The file's name on upload.")
    size = serializers.IntegerField(help_text="Bytes.")
    sha256 = serializers.CharField()


class RecommendationSetOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    tags = serializers.ListField(child=serializers.CharField())
    archived = serializers.BooleanField(help_text="Hidden from the team's lists unless asked for.")
    files = serializers.DictField(
        child=FileInfoOut(), help_text="recs, interactions and, if given, items, history."
    )
    num_users = serializers.IntegerField(
        allow_null=True, help_text="Null until known: a large set is counted by its first evaluation."
    )
    num_items = serializers.IntegerField(allow_null=True, help_text="Catalog items.")
    depth = serializers.IntegerField(allow_null=True, help_text="The longest list.")
    uploaded_by = serializers.CharField(source="uploaded_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    url = serializers.SerializerMethodField()
    file_urls = serializers.SerializerMethodField()

    def get_url(self, owner: RecommendationSet) -> str:
        return link(self, "recommendation-set", owner.team.slug, owner.pk)

    @extend_schema_field(serializers.DictField(child=serializers.URLField()))
    def get_file_urls(self, owner: RecommendationSet) -> dict[str, str]:
        return {
            role: link(self, "recommendation-set-file", owner.team.slug, owner.pk, role)
            for role in owner.stored()
        }


class RecommendationSetIn(serializers.Serializer):
    recs = serializers.FileField(allow_empty_file=True, help_text="CSV user,item,rank (rank 1 is the top).")
    interactions = serializers.FileField(
        allow_empty_file=True, help_text="CSV user,item: the held-out relevant items."
    )
    items = serializers.FileField(
        required=False, allow_empty_file=True, help_text="CSV item[,category]: the catalog, one row per item."
    )
    history = serializers.FileField(
        required=False, allow_empty_file=True, help_text="CSV user,item: earlier interactions (popularity)."
    )
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    description = serializers.CharField(required=False, allow_blank=True, default="")


class FraudScoreSetOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    tags = serializers.ListField(child=serializers.CharField())
    archived = serializers.BooleanField(help_text="Hidden from the team's lists unless asked for.")
    original_name = serializers.CharField(allow_blank=True)
    size = serializers.IntegerField(help_text="Bytes.")
    sha256 = serializers.CharField()
    columns = serializers.ListField(child=serializers.CharField(), help_text="The header's columns.")
    time_unit = serializers.CharField(
        allow_blank=True, help_text="seconds for ISO dates; blank: the file's numbers."
    )
    num_rows = serializers.IntegerField(allow_null=True, help_text="Null until known (a large file).")
    num_frauds = serializers.IntegerField(allow_null=True)
    uploaded_by = serializers.CharField(source="uploaded_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    url = serializers.SerializerMethodField()
    download_url = serializers.SerializerMethodField()

    def get_url(self, owner: FraudScoreSet) -> str:
        return link(self, "fraud-score-set", owner.team.slug, owner.pk)

    def get_download_url(self, owner: FraudScoreSet) -> str:
        return link(self, "fraud-score-set-download", owner.team.slug, owner.pk)


class FraudScoreSetIn(serializers.Serializer):
    scores = serializers.FileField(
        allow_empty_file=True, help_text="CSV id,score,label[,amount][,entity,timestamp]; label 1 is fraud."
    )
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    description = serializers.CharField(required=False, allow_blank=True, default="")


class MetricValueOut(serializers.Serializer):
    metric = serializers.CharField(help_text="The metric's name in the registry.")
    value = serializers.FloatField(
        allow_null=True, help_text="Null when undefined (NaN, or an input the set lacks)."
    )
    spec = serializers.SerializerMethodField()

    @extend_schema_field(MeasureSpecOut(allow_null=True))
    def get_spec(self, row: Any) -> dict[str, Any] | None:
        return spec_of(row.metric)


class RecommendationEvaluationIn(serializers.Serializer):
    """The set and `RecsysOptions`, each option's type, default, bounds and help from the dataclass."""

    recommendation_set = TeamObjectField(RecommendationSet, "recommendation set")
    k = serializer_field(RecsysOptions, "k")
    complete = serializer_field(RecsysOptions, "complete")
    head_share = serializer_field(RecsysOptions, "head_share")


class FraudEvaluationIn(serializers.Serializer):
    """The score set and `FraudOptions`, derived from the dataclass like `RecommendationEvaluationIn`."""

    score_set = TeamObjectField(FraudScoreSet, "fraud score set")
    target_fpr = serializer_field(FraudOptions, "target_fpr")
    threshold = serializer_field(FraudOptions, "threshold")
    fp_cost = serializer_field(FraudOptions, "fp_cost")
    fn_cost = serializer_field(FraudOptions, "fn_cost")
    budget = serializer_field(FraudOptions, "budget")


class WithResults(serializers.ListSerializer):
    """A list of evaluations whose metrics are read in one query (`selectors.with_results`), not one
    query per evaluation."""

    def to_representation(self, data: Any) -> list[Any]:
        return super().to_representation(selectors.with_results(data.all() if hasattr(data, "all") else data))


class RecommendationEvaluationOut(JobStateOut):
    id = serializers.IntegerField()
    name = serializers.CharField(allow_blank=True, help_text="Blank: named by its number.")
    description = serializers.CharField(allow_blank=True)
    tags = serializers.ListField(child=serializers.CharField())
    url = serializers.SerializerMethodField()
    curves_url = serializers.SerializerMethodField()
    recommendation_set = ObjectRefOut()
    k = serializers.IntegerField(allow_null=True)
    complete = serializers.BooleanField()
    head_share = serializers.FloatField()
    summary = serializers.DictField(help_text="Users, items, the catalog and popularity sources, once done.")
    results = MetricValueOut(many=True, source="metric_results", help_text="One per metric, once done.")

    class Meta:
        list_serializer_class = WithResults

    def get_url(self, evaluation: RecommendationEvaluation) -> str:
        return link(self, "recommendation-evaluation", evaluation.team.slug, evaluation.pk)

    def get_curves_url(self, evaluation: RecommendationEvaluation) -> str:
        return link(self, "recommendation-evaluation-curves", evaluation.team.slug, evaluation.pk)


class FraudEvaluationOut(JobStateOut):
    id = serializers.IntegerField()
    name = serializers.CharField(allow_blank=True, help_text="Blank: named by its number.")
    description = serializers.CharField(allow_blank=True)
    tags = serializers.ListField(child=serializers.CharField())
    url = serializers.SerializerMethodField()
    curves_url = serializers.SerializerMethodField()
    score_set = ObjectRefOut()
    target_fpr = serializers.FloatField()
    threshold = serializers.FloatField(allow_null=True)
    fp_cost = serializers.FloatField()
    fn_cost = serializers.FloatField()
    budget = serializers.IntegerField(allow_null=True)
    summary = serializers.DictField(
        help_text="Counts, the operating threshold and its confusion matrix, once done."
    )
    results = MetricValueOut(many=True, source="metric_results", help_text="One per metric, once done.")

    class Meta:
        list_serializer_class = WithResults

    def get_url(self, evaluation: FraudScoreEvaluation) -> str:
        return link(self, "fraud-evaluation", evaluation.team.slug, evaluation.pk)

    def get_curves_url(self, evaluation: FraudScoreEvaluation) -> str:
        return link(self, "fraud-evaluation-curves", evaluation.team.slug, evaluation.pk)


class CurvesOut(serializers.Serializer):
    id = serializers.IntegerField()
    summary = serializers.DictField()
    curves = serializers.DictField(
        help_text="Recommendations: lorenz {items, exposure}, popularity {edges, catalog_items, recommended_items, "
        "slots}, coverage {total, categories, other}. Fraud: roc {fpr, tpr, threshold}, pr {recall, precision, "
        "threshold}, cost {threshold, total_cost}, operating, ttd {edges, counts, undetected, ...}. Thinned to a "
        "bounded number of points; null for +inf and NaN."
    )


# --- recommendation sets ------------------------------------------------------------------------------


@extend_schema(
    methods=["GET"], parameters=[*PAGE_PARAMETERS, ARCHIVED_PARAMETER], responses={200: page_of(RecommendationSetOut), 404: NOT_FOUND},
    operation_id="teams_recommendation_sets_list", summary="The team's recommendation sets, newest first", tags=TAGS,
)  # fmt: skip
@extend_schema(
    methods=["POST"],
    request={"multipart/form-data": RecommendationSetIn},
    responses={201: RecommendationSetOut, 400: FIELD_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND},
    summary="Upload a recommendation set (editors)",
    description="`recs` and `interactions`, optionally `items` and `history`, as CSV files. Each file's first lines "
    "are checked before the set is kept; a bad line is a 400 on that file's field naming the line and the reason.",
    tags=TAGS,
)
@api_view(["GET", "POST"])
@parser_classes([MultiPartParser, FormParser])
def recommendation_set_list(request: Request, team: str) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    if request.method == "GET":
        return paginate(
            request,
            selectors.team_recommendation_sets(team=membership.team, archived=archived_asked(request)),
            RecommendationSetOut,
        )
    data = RecommendationSetIn(data=request.data)
    data.is_valid(raise_exception=True)
    values = data.validated_data
    try:
        created = recsys_fraud.recommendation_set_upload(
            team=membership.team, uploaded_by=request.user, name=values["name"], description=values["description"],
            **{role: values.get(role) for role in RECSYS_FILE_ROLES},
        )  # fmt: skip
    except recsys_fraud.FileRefused as error:
        raise _refused(error.role, error) from None
    return Response(
        RecommendationSetOut(created, context={"request": request}).data, status=status.HTTP_201_CREATED
    )


@extend_schema(
    methods=["GET"], responses={200: RecommendationSetOut, 404: NOT_FOUND}, summary="A recommendation set",
    tags=TAGS,
)  # fmt: skip
@edit_schemas(RecommendationSetOut, "recommendation set (with its evaluations and files)", TAGS)
@api_view(["GET", "PATCH", "DELETE"])
@parser_classes([JSONParser, MultiPartParser, FormParser])
def recommendation_set_detail(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method != "GET")
    found = selectors.get_recommendation_set(team=membership.team, pk=pk)
    if request.method != "GET":
        return item_change(request, found, RecommendationSetOut)
    return Response(RecommendationSetOut(found, context={"request": request}).data)


@extend_schema(
    responses=DOWNLOAD, summary="Download one of a recommendation set's files as uploaded", tags=TAGS
)
@api_view(["GET"])
def recommendation_set_file(request: Request, team: str, pk: int, role: str) -> HttpResponseBase:
    membership = get_team_for_member(request.user, team)
    found = selectors.get_recommendation_set(team=membership.team, pk=pk)
    stored = found.stored()
    if role not in stored:
        raise NotFound(f"The set has no {role} file; it has {', '.join(stored)}.")
    return _stream(stored[role], found.display_name(role))


# --- fraud score sets ---------------------------------------------------------------------------------


@extend_schema(
    methods=["GET"], parameters=[*PAGE_PARAMETERS, ARCHIVED_PARAMETER], responses={200: page_of(FraudScoreSetOut), 404: NOT_FOUND},
    operation_id="teams_fraud_score_sets_list", summary="The team's fraud score sets, newest first", tags=TAGS,
)  # fmt: skip
@extend_schema(
    methods=["POST"],
    request={"multipart/form-data": FraudScoreSetIn},
    responses={201: FraudScoreSetOut, 400: FIELD_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND},
    summary="Upload fraud scores (editors)",
    description="`scores`: CSV id,score,label[,amount][,entity,timestamp]. Its first lines are checked before it is "
    "kept; a bad line is a 400 on `scores` naming the line and the reason.",
    tags=TAGS,
)
@api_view(["GET", "POST"])
@parser_classes([MultiPartParser, FormParser])
def fraud_score_set_list(request: Request, team: str) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    if request.method == "GET":
        return paginate(
            request,
            selectors.team_fraud_score_sets(team=membership.team, archived=archived_asked(request)),
            FraudScoreSetOut,
        )
    data = FraudScoreSetIn(data=request.data)
    data.is_valid(raise_exception=True)
    values = data.validated_data
    try:
        created = recsys_fraud.fraud_score_set_upload(
            team=membership.team, scores=values["scores"], name=values["name"], description=values["description"],
            uploaded_by=request.user,
        )  # fmt: skip
    except recsys_fraud.FileRefused as error:
        raise _refused("scores", error) from None
    return Response(
        FraudScoreSetOut(created, context={"request": request}).data, status=status.HTTP_201_CREATED
    )


@extend_schema(
    methods=["GET"], responses={200: FraudScoreSetOut, 404: NOT_FOUND}, summary="A fraud score set", tags=TAGS
)
@edit_schemas(FraudScoreSetOut, "fraud score set (with its evaluations and file)", TAGS)
@api_view(["GET", "PATCH", "DELETE"])
@parser_classes([JSONParser, MultiPartParser, FormParser])
def fraud_score_set_detail(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method != "GET")
    found = selectors.get_fraud_score_set(team=membership.team, pk=pk)
    if request.method != "GET":
        return item_change(request, found, FraudScoreSetOut)
    return Response(FraudScoreSetOut(found, context={"request": request}).data)


@extend_schema(responses=DOWNLOAD, summary="Download a fraud score set's file as uploaded", tags=TAGS)
@api_view(["GET"])
def fraud_score_set_download(request: Request, team: str, pk: int) -> HttpResponseBase:
    membership = get_team_for_member(request.user, team)
    found = selectors.get_fraud_score_set(team=membership.team, pk=pk)
    return _stream(found.file, found.original_name or f"{found.name}.csv")


# --- evaluations --------------------------------------------------------------------------------------

STATUS_FILTER = [OpenApiParameter("status", str, enum=JobStatus.values), *PAGE_PARAMETERS]
STARTED = {
    400: FIELD_ERRORS,
    403: FORBIDDEN,
    404: NOT_FOUND,
    503: OpenApiResponse(description="The task queue is unreachable: the job failed, saying so."),
}


def _by_status(request: Request, rows: Any) -> Any:
    wanted = request.query_params.get("status")
    if not wanted:
        return rows
    if wanted not in JobStatus.values:
        raise serializers.ValidationError({"status": [f"Choose one of {', '.join(JobStatus.values)}."]})
    return rows.filter(status=wanted)


@extend_schema(
    methods=["GET"], parameters=STATUS_FILTER, responses={200: page_of(RecommendationEvaluationOut), 404: NOT_FOUND},
    operation_id="teams_recommendation_evaluations_list",
    summary="The team's recommendation evaluations, newest first, with their metrics", tags=TAGS,
)  # fmt: skip
@extend_schema(
    methods=["POST"],
    request=RecommendationEvaluationIn,
    responses={202: RecommendationEvaluationOut, 200: RecommendationEvaluationOut, **STARTED},
    summary="Evaluate a recommendation set (editors; queued on the worker)",
    description="Answers 202 with the evaluation and its job state; poll `url` until `status` is `done` (or "
    "`failed`, with `error`). The same set and options return the same evaluation (200 once done).",
    tags=TAGS,
)
@api_view(["GET", "POST"])
@parser_classes([JSONParser, FormParser, MultiPartParser])
def recommendation_evaluation_list(request: Request, team: str) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    if request.method == "GET":
        rows = _by_status(request, selectors.team_recommendation_evaluations(team=membership.team))
        return paginate(request, rows, RecommendationEvaluationOut)
    data = RecommendationEvaluationIn(data=request.data, context={"team": membership.team})
    data.is_valid(raise_exception=True)
    values = data.validated_data
    try:
        options = options_of(RecsysOptions, values)
        created = recsys_fraud.recommendation_evaluation_create(
            recommendation_set=values["recommendation_set"], options=options, created_by=request.user
        )
    except recsys_fraud.OptionError as error:
        raise _refused(error.field, error) from None
    found = selectors.get_recommendation_evaluation(team=membership.team, pk=created.pk)
    body = RecommendationEvaluationOut(found, context={"request": request}).data
    return Response(body, status=queued_status(found))


@extend_schema(
    methods=["GET"],
    responses={200: RecommendationEvaluationOut, 404: NOT_FOUND},
    summary="A recommendation evaluation: its job state and, once done, every metric with its registry spec",
    tags=TAGS,
)
@edit_schemas(RecommendationEvaluationOut, "recommendation evaluation (with its comparisons)", TAGS)
@api_view(["GET", "PATCH", "DELETE"])
def recommendation_evaluation_detail(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method != "GET")
    found = selectors.get_recommendation_evaluation(team=membership.team, pk=pk)
    if request.method != "GET":
        return item_change(request, found, RecommendationEvaluationOut)
    return Response(RecommendationEvaluationOut(found, context={"request": request}).data)


@extend_schema(
    methods=["GET"], parameters=STATUS_FILTER, responses={200: page_of(FraudEvaluationOut), 404: NOT_FOUND},
    operation_id="teams_fraud_evaluations_list", summary="The team's fraud evaluations, newest first, with their metrics",
    tags=TAGS,
)  # fmt: skip
@extend_schema(
    methods=["POST"],
    request=FraudEvaluationIn,
    responses={202: FraudEvaluationOut, 200: FraudEvaluationOut, **STARTED},
    summary="Evaluate a fraud score set (editors; queued on the worker)",
    description="Answers 202 with the evaluation and its job state; poll `url` until `status` is `done` (or "
    "`failed`, with `error`). The same score set and options return the same evaluation (200 once done).",
    tags=TAGS,
)
@api_view(["GET", "POST"])
@parser_classes([JSONParser, FormParser, MultiPartParser])
def fraud_evaluation_list(request: Request, team: str) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    if request.method == "GET":
        rows = _by_status(request, selectors.team_fraud_evaluations(team=membership.team))
        return paginate(request, rows, FraudEvaluationOut)
    data = FraudEvaluationIn(data=request.data, context={"team": membership.team})
    data.is_valid(raise_exception=True)
    values = data.validated_data
    try:
        created = recsys_fraud.fraud_evaluation_create(
            score_set=values["score_set"], options=options_of(FraudOptions, values), created_by=request.user
        )
    except recsys_fraud.OptionError as error:
        raise _refused(error.field, error) from None
    found = selectors.get_fraud_evaluation(team=membership.team, pk=created.pk)
    return Response(FraudEvaluationOut(found, context={"request": request}).data, status=queued_status(found))


@extend_schema(
    methods=["GET"],
    responses={200: FraudEvaluationOut, 404: NOT_FOUND},
    summary="A fraud evaluation: its job state and, once done, every metric with its registry spec",
    tags=TAGS,
)
@edit_schemas(FraudEvaluationOut, "fraud evaluation (with its comparisons)", TAGS)
@api_view(["GET", "PATCH", "DELETE"])
def fraud_evaluation_detail(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method != "GET")
    found = selectors.get_fraud_evaluation(team=membership.team, pk=pk)
    if request.method != "GET":
        return item_change(request, found, FraudEvaluationOut)
    return Response(FraudEvaluationOut(found, context={"request": request}).data)


def _curves(evaluation: RecommendationEvaluation | FraudScoreEvaluation) -> Response:
    if evaluation.status != JobStatus.DONE:
        detail = f"The evaluation is {evaluation.status}; its curves come once it is done."
        return Response(EvaluationErrorOut({"detail": detail}).data, status=status.HTTP_409_CONFLICT)
    return Response(
        CurvesOut({"id": evaluation.pk, "summary": evaluation.summary, "curves": evaluation.curves}).data
    )


@extend_schema(
    responses={200: CurvesOut, 404: NOT_FOUND, 409: NOT_DONE},
    summary="The curves of a done recommendation evaluation: Lorenz curve, popularity histogram, coverage",
    tags=TAGS,
)
@api_view(["GET"])
def recommendation_evaluation_curves(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team)
    return _curves(selectors.get_recommendation_evaluation(team=membership.team, pk=pk))


@extend_schema(
    responses={200: CurvesOut, 404: NOT_FOUND, 409: NOT_DONE},
    summary="The curves of a done fraud evaluation: ROC, PR, cost against threshold, time to detection",
    tags=TAGS,
)
@api_view(["GET"])
def fraud_evaluation_curves(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team)
    return _curves(selectors.get_fraud_evaluation(team=membership.team, pk=pk))
