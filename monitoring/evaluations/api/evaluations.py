"""Evaluations of a run on a qrels source: start one (a job on the worker), poll it, read its aggregate
and per-query results; and the leaderboard of a qrels source.

`POST evaluations/` goes through `monitoring.evaluations.services.evaluation_create`: the same run, qrels and
options find the same evaluation (202 while it is queued or running, 200 once done; a failed one is
queued again), so a client may simply repeat its request. Nothing is computed in a request: the views
read the rows the worker wrote.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from evalplatform.errors import InputError
from evalplatform.jobs import JobStatus
from evalplatform.teams import get_team_for_member
from monitoring.common import queries
from monitoring.common.pagination import PAGE_PARAMETERS, QueryPage, page_of, paginate
from monitoring.common.serializers import (
    FIELD_ERRORS,
    FORBIDDEN,
    NOT_FOUND,
    EvaluationErrorOut,
    EvaluationIn,
    EvaluationOut,
    LeaderboardOut,
    PerQueryPageOut,
    PerQueryRowOut,
    specs_of,
)
from monitoring.editing.api import ARCHIVED_PARAMETER, archived_asked, edit_schemas, item_change
from monitoring.evaluations import selectors
from monitoring.evaluations import services as evaluations
from monitoring.machine_judges.selectors import JudgeBoard, judge_board
from monitoring.models import Evaluation

TAGS = ["evaluation: evaluations"]
QUEUE_DOWN = OpenApiResponse(
    EvaluationOut, description="The task queue is unreachable: the job failed, saying so."
)


def queued_status(job: Any) -> int:
    """202 while a job waits or runs, 200 once done, 503 when the queue could not take it."""
    if job.status == JobStatus.FAILED:
        return status.HTTP_503_SERVICE_UNAVAILABLE
    return status.HTTP_200_OK if job.status == JobStatus.DONE else status.HTTP_202_ACCEPTED


@extend_schema(
    methods=["GET"],
    parameters=[OpenApiParameter("status", str, enum=JobStatus.values), *PAGE_PARAMETERS, ARCHIVED_PARAMETER],
    responses={200: page_of(EvaluationOut), 404: NOT_FOUND},
    operation_id="teams_evaluations_list",
    summary="The team's evaluations, newest first, with their aggregate results",
    tags=TAGS,
)
@extend_schema(
    methods=["POST"],
    request=EvaluationIn,
    responses={
        202: EvaluationOut,
        200: EvaluationOut,
        400: FIELD_ERRORS,
        403: FORBIDDEN,
        404: NOT_FOUND,
        503: QUEUE_DOWN,
    },  # fmt: skip
    summary="Evaluate a run on a qrels source (editors; queued on the worker)",
    description="Answers 202 with the evaluation and its job state; poll `url` until `status` is `done` "
    "(or `failed`, with `error`). The same run, qrels and options return the same evaluation: 200 when it "
    "is already done, and a failed one is queued again. An unknown measure is a 400 on `measures` that "
    "suggests the closest names.",
    tags=TAGS,
)
@api_view(["GET", "POST"])
def evaluation_list(request: Request, team: str) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    if request.method == "GET":
        rows = selectors.team_evaluations(team=membership.team, archived=archived_asked(request))
        if wanted := request.query_params.get("status"):
            if wanted not in JobStatus.values:
                raise serializers.ValidationError(
                    {"status": [f"Choose one of {', '.join(JobStatus.values)}."]}
                )
            rows = rows.filter(status=wanted)
        return paginate(request, rows, EvaluationOut)
    data = EvaluationIn(data=request.data, context={"team": membership.team})
    data.is_valid(raise_exception=True)
    try:
        created = evaluations.evaluation_create(created_by=request.user, **data.validated_data)
    except InputError as error:
        raise serializers.ValidationError({"non_field_errors": [str(error)]}) from None
    evaluation = selectors.get_evaluation(team=membership.team, pk=created.pk)
    body = EvaluationOut(evaluation, context={"request": request}).data
    return Response(body, status=queued_status(evaluation))


@extend_schema(
    methods=["GET"],
    responses={200: EvaluationOut, 404: NOT_FOUND},
    summary="An evaluation: its job state and, once done, each measure's value, CI and registry spec",
    tags=TAGS,
)
@edit_schemas(EvaluationOut, "evaluation (with its metric values)", TAGS)
@api_view(["GET", "PATCH", "DELETE"])
def evaluation_detail(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method != "GET")
    found = selectors.get_evaluation(team=membership.team, pk=pk)
    if request.method != "GET":
        return item_change(request, found, EvaluationOut)
    return Response(EvaluationOut(found, context={"request": request}).data)


@extend_schema(
    parameters=[
        OpenApiParameter(
            "measure", str, many=True, description="Only these measure keys (repeat it); default: every one."
        ),
        OpenApiParameter("page", int, description="1-based page number."),
        OpenApiParameter("page_size", int, description="Queries a page (default 100, at most 10,000)."),
    ],
    responses={
        200: PerQueryPageOut,
        400: FIELD_ERRORS,
        404: NOT_FOUND,
        409: OpenApiResponse(EvaluationErrorOut),
    },
    summary="Per-query values of a done evaluation, a page of queries at a time",
    description="One row per evaluated query, in the evaluation's query order: "
    '`{"qid": "q1", "values": {"map": 0.42, ...}}`. Paginated like every list (`?page=`, '
    "`?page_size=` up to 10,000 queries); under `complete` the qrels queries the run lacks are there "
    "with 0. 409 until the evaluation is done.",
    tags=TAGS,
)
@api_view(["GET"])
def evaluation_per_query(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team)
    found: Evaluation = selectors.get_evaluation(team=membership.team, pk=pk)
    if found.status != JobStatus.DONE:
        detail = f"The evaluation is {found.status}; its per-query values come once it is done."
        return Response(EvaluationErrorOut({"detail": detail}).data, status=status.HTTP_409_CONFLICT)
    keys = [result.measure for result in found.results]
    wanted = request.query_params.getlist("measure") or keys
    if unknown := [name for name in wanted if name not in keys]:
        reason = f"{', '.join(unknown)}: not a measure of this evaluation; it has {', '.join(keys)}."
        raise serializers.ValidationError({"measure": [reason]})
    rows = queries.per_query_values(found, wanted)
    return paginate(request, rows, PerQueryRowOut, page=QueryPage, measures=wanted)


@extend_schema(
    parameters=[
        OpenApiParameter("sort", str, description="The measure to rank by (default: the first)."),
        OpenApiParameter(
            "machine_judge",
            int,
            description="A machine judge of the qrels' judging project: each row gets its newest done "
            "scoring's human-only, machine-only and PPI estimates (`machine_judge`), and the reply the job.",
        ),  # fmt: skip
        OpenApiParameter(
            "archived", bool, description="Include archived runs and evaluations (default: no)."
        ),
    ],
    responses={200: LeaderboardOut, 400: FIELD_ERRORS, 404: NOT_FOUND},
    summary="Runs x measures on a qrels source: per run and measure, the newest finished evaluation there "
    "that has the measure",
    description="Rows are ranked by `sort`, best first by the measure's direction in the registry; runs "
    "without that measure come last. Not paginated: one row per evaluated run of the team.",
    tags=TAGS,
)
@api_view(["GET"])
def leaderboard(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team)
    source = selectors.get_qrels_source(team=membership.team, pk=pk)
    board = selectors.leaderboard(
        qrels=source, archived=request.query_params.get("archived") in {"1", "true"}
    )
    asked = request.query_params.get("sort")
    sort = selectors.measure_key(asked) if asked else (board.measures[0] if board.measures else None)
    if sort is not None and sort not in board.measures:
        choices = ", ".join(board.measures) or "none yet"
        raise serializers.ValidationError(
            {"sort": [f"{sort!r} is not on this leaderboard; it has {choices}."]}
        )
    rows = board.sorted_by(sort) if sort else board.rows
    machines = leaderboard_machine_judge(request, source, board.rows)
    data: dict[str, Any] = {
        "qrels": source,
        "measures": board.measures,
        "specs": specs_of(board.measures),
        "sort": sort,
        "rows": [
            {
                "rank": rank,
                "run": row.run,
                "label": row.run.label,
                "tags": row.run.tags,
                "evaluation": row.evaluation.pk,
                "finished_at": row.evaluation.finished_at,
                "results": {
                    measure: {
                        "value": result.value,
                        "ci_low": result.ci_low,
                        "ci_high": result.ci_high,
                        "evaluation": row.sources[measure].pk,
                    }
                    for measure, result in row.results.items()
                    if measure in board.measures
                },
                "coverage": row.coverage.as_dict(),
                **(
                    {"machine_judge": machines.done.estimates_of(row.run.pk) if machines.done else {}}
                    if machines
                    else {}
                ),
            }
            for rank, row in enumerate(rows, start=1)
        ],
    }
    if machines is not None:
        data["machine_judge"] = {"judge": machines.judge_ref, "job": machines.done, "stale": machines.stale}
    return Response(LeaderboardOut(data).data)


def leaderboard_machine_judge(request: Request, source: Any, rows: Any) -> JudgeBoard | None:
    """The `machine_judge` parameter's board (None without it); 400 for a judge not of the qrels' project."""
    asked = request.query_params.get("machine_judge")
    if asked is None:
        return None
    machines = judge_board(qrels=source, asked=asked, rows=rows)
    if machines.judge is None:
        raise serializers.ValidationError(
            {"machine_judge": [f"{asked!r} is not a machine judge of the project these qrels come from."]}
        )
    return machines
