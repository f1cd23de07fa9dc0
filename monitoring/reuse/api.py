"""Reuse analyses of a qrels source over REST: the newest results (and the planner), start one, follow one.

`GET  /api/teams/<team>/qrels/<pk>/reuse/`      the newest done reusability and sensitivity analyses, and the planner
`POST /api/teams/<team>/qrels/<pk>/reuse/`      `{"kind": "reusability"|"sensitivity", "params": {...}}` (editors): 202
`GET  /api/teams/<team>/reuse-analyses/<pk>/`   one analysis: its job state, parameters and result
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from evalcore.jsonable import json_finite
from evalplatform.errors import InputError
from evalplatform.teams import get_team_for_member
from monitoring.common.serializers import FIELD_ERRORS, FORBIDDEN, NOT_FOUND
from monitoring.evaluations import selectors
from monitoring.models import ReuseAnalysis
from monitoring.reuse import services

TAGS = ["evaluation: reusability"]


class ReuseAnalysisIn(serializers.Serializer):
    kind = serializers.ChoiceField(choices=ReuseAnalysis.Kind.choices)
    params = serializers.DictField(
        required=False,
        default=dict,
        help_text="reusability: depth, measure, rel_level; sensitivity: n_resamples, seed, confidence, "
        "measure, rel_level, min_coverage (the build's aggregation is used).",
    )


class ReuseAnalysisOut(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    qrels = serializers.IntegerField(source="qrels_id")
    kind = serializers.CharField()
    params = serializers.DictField()
    state = serializers.SerializerMethodField()
    result = serializers.SerializerMethodField()

    def get_state(self, analysis: ReuseAnalysis) -> dict[str, Any]:
        return json_finite(analysis.state())  # type: ignore[no-any-return]

    def get_result(self, analysis: ReuseAnalysis) -> dict[str, Any] | None:
        return json_finite(analysis.result) if analysis.status == "done" else None  # type: ignore[no-any-return]


class PlannerRowOut(serializers.Serializer):
    min_diff = serializers.FloatField()
    ttest = serializers.IntegerField()
    anova = serializers.IntegerField()


class PlannerOut(serializers.Serializer):
    variance = serializers.FloatField()
    design = serializers.CharField()
    pilot_topics = serializers.IntegerField()
    n_systems = serializers.IntegerField()
    alpha = serializers.FloatField()
    power = serializers.FloatField()
    rows = PlannerRowOut(many=True)


class QrelsReuseOut(serializers.Serializer):
    reusability = ReuseAnalysisOut(allow_null=True)
    sensitivity = ReuseAnalysisOut(allow_null=True)
    planner = PlannerOut(allow_null=True)
    planner_reason = serializers.CharField(allow_blank=True)


@extend_schema(
    methods=["GET"],
    responses={200: QrelsReuseOut, 404: NOT_FOUND},
    summary="A qrels source's newest reusability and sensitivity analyses, and the topic set size planner",
    tags=TAGS,
)
@extend_schema(
    methods=["POST"],
    request=ReuseAnalysisIn,
    responses={202: ReuseAnalysisOut, 400: FIELD_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND},
    summary="Start a reusability or annotator sensitivity analysis (a job on the worker)",
    tags=TAGS,
)
@api_view(["GET", "POST"])
def qrels_reuse(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    source = selectors.get_qrels_source(team=membership.team, pk=pk)
    if request.method == "POST":
        data = ReuseAnalysisIn(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            analysis = services.reuse_analysis_create(
                qrels=source, kind=data.validated_data["kind"], params=data.validated_data["params"],
                created_by=request.user,
            )  # fmt: skip
        except InputError as error:
            raise serializers.ValidationError({"params": [str(error)]}) from None
        return Response(ReuseAnalysisOut(analysis).data, status=status.HTTP_202_ACCEPTED)
    planner = services.qrels_planner_context(qrels=source)
    return Response(
        {
            "reusability": _out(services.latest_done(qrels=source, kind=ReuseAnalysis.Kind.REUSABILITY)),
            "sensitivity": _out(services.latest_done(qrels=source, kind=ReuseAnalysis.Kind.SENSITIVITY)),
            "planner": planner["planner"],
            "planner_reason": planner["planner_reason"],
        }
    )


def _out(analysis: ReuseAnalysis | None) -> dict[str, Any] | None:
    return None if analysis is None else ReuseAnalysisOut(analysis).data  # type: ignore[return-value]


@extend_schema(responses={200: ReuseAnalysisOut, 404: NOT_FOUND}, summary="One reuse analysis", tags=TAGS)
@api_view(["GET"])
def reuse_analysis(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team)
    analysis = selectors.get_one(ReuseAnalysis.objects.filter(team=membership.team), pk, "analysis")
    return Response(ReuseAnalysisOut(analysis).data)
