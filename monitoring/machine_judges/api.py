"""The API of a leaderboard's scoring on a machine judge's labels: start it (editors), read its newest state."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from annotations.models import MachineJudge
from evalplatform.errors import InputError
from evalplatform.teams import get_team_for_member
from monitoring.common.serializers import (
    FIELD_ERRORS,
    FORBIDDEN,
    NOT_FOUND,
    MachineJudgeEvaluationOut,
    ObjectRefOut,
)
from monitoring.evaluations import selectors
from monitoring.evaluations.selectors import leaderboard
from monitoring.machine_judges.models import MachineJudgeEvaluation
from monitoring.machine_judges.selectors import judge_board
from monitoring.machine_judges.services import machine_judge_evaluation_create
from monitoring.models import QrelsSource

TAGS = ["evaluation: evaluations"]


class MachineJudgeScoringOut(serializers.Serializer):
    judge = ObjectRefOut()
    job = MachineJudgeEvaluationOut(allow_null=True, help_text="The newest scoring asked for (any status).")
    done = MachineJudgeEvaluationOut(
        allow_null=True, help_text="The newest done one (its figures are shown)."
    )
    stale = serializers.BooleanField(
        help_text="The judge's labels or the evaluated runs changed since `done`."
    )


class MachineJudgeEvaluationIn(serializers.Serializer):
    machine_judge = serializers.IntegerField(help_text="A machine judge of the qrels' judging project.")
    sample = serializers.ChoiceField(choices=MachineJudgeEvaluation.Sample.choices, default="all")
    sample_size = serializers.IntegerField(
        min_value=2, required=False, help_text="With sample=random: how many queries to draw (at least 2)."
    )
    seed = serializers.IntegerField(min_value=0, default=0, help_text="With sample=random.")
    alpha = serializers.FloatField(default=0.05, help_text="The intervals are 1 - alpha.")
    estimand = serializers.ChoiceField(choices=MachineJudgeEvaluation.Estimand.choices, default="population")

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        if data["sample"] == "random" and not data.get("sample_size"):
            raise serializers.ValidationError({"sample_size": ["Say how many queries to draw (at least 2)."]})
        if not 0 < data["alpha"] < 1:
            raise serializers.ValidationError({"alpha": ["alpha must lie strictly between 0 and 1."]})
        return data


def judge_of(source: QrelsSource, pk: Any, field: str) -> MachineJudge:
    found = (
        MachineJudge.objects.filter(project_id=source.build.project_id, pk=pk).first()
        if source.build is not None and str(pk).isdigit()
        else None
    )
    if found is None:
        raise serializers.ValidationError(
            {field: [f"{pk!r} is not a machine judge of the project these qrels come from."]}
        )
    return found


@extend_schema(
    methods=["GET"],
    parameters=[OpenApiParameter("machine_judge", int, required=True, description="The machine judge.")],
    responses={200: MachineJudgeScoringOut, 400: FIELD_ERRORS, 404: NOT_FOUND},
    summary="A leaderboard's scoring on a machine judge's labels: the newest job and the newest done one",
    description="`job`: the newest scoring asked for (poll its status), null if none; `done`: the newest "
    "done one, whose figures the leaderboard shows per run (`?machine_judge=` there); `stale`: the judge's "
    "labels or the evaluated runs changed since `done`.",
    tags=TAGS,
)
@extend_schema(
    methods=["POST"],
    request=MachineJudgeEvaluationIn,
    responses={202: MachineJudgeEvaluationOut, 400: FIELD_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND},
    summary="Score a leaderboard on a machine judge's labels: PPI, human-only and machine-only (editors)",
    description="Queues the job (poll this endpoint with GET). For qrels built by people alone in the judge's "
    "project. The same parameters on the same labels and evaluations find the same job (a done one is "
    "returned as it is; a failed one is queued again). `sample`: `all` takes every human-judged query the "
    "machine judged (not a random sample: the reply says so); `random` draws `sample_size` of them.",
    tags=TAGS,
)
@api_view(["GET", "POST"])
def leaderboard_ppi(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    source = selectors.get_qrels_source(team=membership.team, pk=pk)
    if request.method == "GET":
        judge = judge_of(source, request.query_params.get("machine_judge"), "machine_judge")
        machines = judge_board(qrels=source, asked=str(judge.pk), rows=leaderboard(qrels=source).rows)
        body = {
            "judge": machines.judge_ref,
            "job": machines.job,
            "done": machines.done,
            "stale": machines.stale,
        }
        return Response(MachineJudgeScoringOut(body).data)
    data = MachineJudgeEvaluationIn(data=request.data)
    data.is_valid(raise_exception=True)
    params = dict(data.validated_data)
    judge = judge_of(source, params.pop("machine_judge"), "machine_judge")
    try:
        job = machine_judge_evaluation_create(qrels=source, judge=judge, created_by=request.user, **params)
    except InputError as error:
        raise serializers.ValidationError({"non_field_errors": [str(error)]}) from None
    return Response(MachineJudgeEvaluationOut(job).data, status=status.HTTP_202_ACCEPTED)
