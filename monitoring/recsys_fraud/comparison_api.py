"""Comparisons of two fraud evaluations or two recommendation evaluations through the REST API, under
/api/teams/<team>/.

Start one with the two evaluations' ids (`evaluation_a`, `evaluation_b`: the team's, of the kind, not the
same one), or with `evaluation_a` and another set (`score_set_b`, `recommendation_set_b`) to evaluate with
A's options: a job on the worker, 202 while it waits or runs, 200 once done (the same pair returns the same
comparison; a failed one is queued again). Read it back with its job state and, once done, its `result`:
for fraud, DeLong's test (`delong`: auc_a, auc_b, difference, variances, std_error, z, p_value) and the
bootstrap interval of the difference (`bootstrap`); for recommendations, per metric the paired tests
(`metrics`). Non-members get a 404, a viewer starting one a 403, and bad input a 400 naming the field.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from evalplatform.teams import get_team_for_member
from monitoring.common.pagination import PAGE_PARAMETERS, page_of, paginate
from monitoring.common.serializers import (
    FIELD_ERRORS,
    FORBIDDEN,
    NOT_FOUND,
    JobStateOut,
    TeamObjectField,
    link,
)
from monitoring.evaluations.api.evaluations import queued_status
from monitoring.models import FraudScoreEvaluation, FraudScoreSet, RecommendationEvaluation, RecommendationSet
from monitoring.recsys_fraud import comparisons, selectors

TAGS = ["recommendation and fraud"]
STARTED = {400: FIELD_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND,
           503: {"description": "The task queue is unreachable: the job failed, saying so."}}  # fmt: skip


class _PairIn(serializers.Serializer):
    """`evaluation_a` and either `evaluation_b` or another set (`*_set_b`) to evaluate with A's options."""

    set_field = ""

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        other, other_set = attrs.get("evaluation_b"), attrs.get(self.set_field)
        if (other is None) == (other_set is None):
            raise serializers.ValidationError(
                {"evaluation_b": [f"Give evaluation_b or {self.set_field}, one of the two."]}
            )
        if other is not None and other.pk == attrs["evaluation_a"].pk:
            raise serializers.ValidationError(
                {"evaluation_b": ["Choose another evaluation than evaluation_a."]}
            )
        return attrs


class FraudComparisonIn(_PairIn):
    set_field = "score_set_b"
    evaluation_a = TeamObjectField(FraudScoreEvaluation, "fraud evaluation")
    evaluation_b = TeamObjectField(FraudScoreEvaluation, "fraud evaluation", required=False)
    score_set_b = TeamObjectField(
        FraudScoreSet, "fraud score set", required=False,
        help_text="Instead of evaluation_b: a score set, evaluated with evaluation_a's options (found or queued).",
    )  # fmt: skip


class RecommendationComparisonIn(_PairIn):
    set_field = "recommendation_set_b"
    evaluation_a = TeamObjectField(RecommendationEvaluation, "recommendation evaluation")
    evaluation_b = TeamObjectField(RecommendationEvaluation, "recommendation evaluation", required=False)
    recommendation_set_b = TeamObjectField(
        RecommendationSet, "recommendation set", required=False,
        help_text="Instead of evaluation_b: a recommendation set, evaluated with evaluation_a's options.",
    )  # fmt: skip


class _ComparisonOut(JobStateOut):
    id = serializers.IntegerField()
    url = serializers.SerializerMethodField()
    page_url = serializers.SerializerMethodField()
    evaluation_a = serializers.IntegerField(source="evaluation_a_id")
    evaluation_b = serializers.IntegerField(source="evaluation_b_id")
    n_resamples = serializers.IntegerField()
    confidence = serializers.FloatField()
    seed = serializers.IntegerField()
    result = serializers.DictField(
        help_text="Once done: the paired statistics (see the endpoint's description)."
    )

    endpoint = ""

    def get_url(self, comparison: Any) -> str:
        return link(self, self.endpoint, comparison.team.slug, comparison.pk)

    def get_page_url(self, comparison: Any) -> str:
        request = self.context.get("request")
        path = comparison.get_absolute_url()
        return request.build_absolute_uri(path) if request is not None else path


class FraudComparisonOut(_ComparisonOut):
    endpoint = "fraud-comparison"


class RecommendationComparisonOut(_ComparisonOut):
    endpoint = "recommendation-comparison"


def _start(request: Request, team: str, kind: str) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    fraud = kind == "fraud"
    if request.method == "GET":
        rows: Any = (
            selectors.team_fraud_comparisons if fraud else selectors.team_recommendation_comparisons
        )(team=membership.team)
        return paginate(request, rows, FraudComparisonOut if fraud else RecommendationComparisonOut)
    data = (FraudComparisonIn if fraud else RecommendationComparisonIn)(
        data=request.data, context={"team": membership.team}
    )
    data.is_valid(raise_exception=True)
    values = data.validated_data
    try:
        found = _created(membership.team, values, fraud=fraud, created_by=request.user)
    except comparisons.ComparisonRefused as error:
        raise serializers.ValidationError({FraudComparisonIn.set_field if fraud else
                                           RecommendationComparisonIn.set_field: [str(error)]}) from None  # fmt: skip
    shape = FraudComparisonOut if fraud else RecommendationComparisonOut
    return Response(shape(found, context={"request": request}).data, status=queued_status(found))


def _created(team: Any, values: dict[str, Any], *, fraud: bool, created_by: Any) -> Any:
    """The comparison asked for, found or created (a set named for B is evaluated with A's options)."""
    a, b = values["evaluation_a"], values.get("evaluation_b")
    if fraud:
        created: Any = (
            comparisons.fraud_comparison_create(a=a, b=b, created_by=created_by)
            if b is not None
            else comparisons.fraud_comparison_with_set(
                a=a, score_set=values["score_set_b"], created_by=created_by
            )
        )
        return selectors.get_fraud_comparison(team=team, pk=created.pk)
    created = (
        comparisons.recommendation_comparison_create(a=a, b=b, created_by=created_by)
        if b is not None
        else comparisons.recommendation_comparison_with_set(
            a=a, recommendation_set=values["recommendation_set_b"], created_by=created_by
        )
    )
    return selectors.get_recommendation_comparison(team=team, pk=created.pk)


DESCRIPTION = ("Answers 202 with the comparison and its job state; poll `url` until `status` is `done` (or `failed`, "
               "with `error`: two fraud files that do not score the same ids fail, naming them). The same pair "
               "returns the same comparison (200 once done).")  # fmt: skip


@extend_schema(
    methods=["GET"], parameters=PAGE_PARAMETERS, responses={200: page_of(FraudComparisonOut), 404: NOT_FOUND},
    operation_id="teams_fraud_comparisons_list", summary="The team's fraud comparisons, newest first", tags=TAGS,
)  # fmt: skip
@extend_schema(
    methods=["POST"], request=FraudComparisonIn, responses={202: FraudComparisonOut, 200: FraudComparisonOut, **STARTED},
    summary="Compare two fraud evaluations (editors; queued on the worker): DeLong's test and a bootstrap "
    "interval of the difference in ROC-AUC", description=DESCRIPTION, tags=TAGS,
)  # fmt: skip
@api_view(["GET", "POST"])
@parser_classes([JSONParser, FormParser, MultiPartParser])
def fraud_comparison_list(request: Request, team: str) -> Response:
    return _start(request, team, "fraud")


@extend_schema(
    methods=["GET"], parameters=PAGE_PARAMETERS, responses={200: page_of(RecommendationComparisonOut), 404: NOT_FOUND},
    operation_id="teams_recommendation_comparisons_list", summary="The team's recommendation comparisons, newest first",
    tags=TAGS,
)  # fmt: skip
@extend_schema(
    methods=["POST"], request=RecommendationComparisonIn,
    responses={202: RecommendationComparisonOut, 200: RecommendationComparisonOut, **STARTED},
    summary="Compare two recommendation evaluations (editors; queued on the worker): paired tests on the "
    "per-user metrics", description=DESCRIPTION, tags=TAGS,
)  # fmt: skip
@api_view(["GET", "POST"])
@parser_classes([JSONParser, FormParser, MultiPartParser])
def recommendation_comparison_list(request: Request, team: str) -> Response:
    return _start(request, team, "recommendation")


@extend_schema(responses={200: FraudComparisonOut, 404: NOT_FOUND}, summary="A fraud comparison", tags=TAGS)
@api_view(["GET"])
def fraud_comparison_detail(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team)
    found = selectors.get_fraud_comparison(team=membership.team, pk=pk)
    return Response(FraudComparisonOut(found, context={"request": request}).data, status=status.HTTP_200_OK)


@extend_schema(
    responses={200: RecommendationComparisonOut, 404: NOT_FOUND},
    summary="A recommendation comparison",
    tags=TAGS,
)
@api_view(["GET"])
def recommendation_comparison_detail(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team)
    found = selectors.get_recommendation_comparison(team=membership.team, pk=pk)
    return Response(RecommendationComparisonOut(found, context={"request": request}).data)
