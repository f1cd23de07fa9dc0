"""The judging loop on the API: judge a run's gaps on a qrels source (tasks for its unjudged top-k pairs in
the linked judging project), compute the coverage a leaderboard lacks, and the leaderboard diff between two
qrels sources of a team."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from evalplatform.errors import InputError
from evalplatform.teams import get_team_for_member
from monitoring.common.serializers import (
    FIELD_ERRORS,
    FORBIDDEN,
    NOT_FOUND,
    CoverageQueuedOut,
    EvaluationErrorOut,
    GapsIn,
    GapsRequestOut,
    LeaderboardDiffOut,
)
from monitoring.evaluations import loop, selectors
from monitoring.evaluations.diffs import leaderboard_diff
from monitoring.evaluations.views.diffs import diff_sources
from monitoring.models import GapsRequest

TAGS = ["evaluation: evaluations"]
NOT_A_LEAD = OpenApiResponse(
    EvaluationErrorOut,
    description="You are not both an editor of the team and a lead of the judging project the qrels come from.",
)


@extend_schema(
    request=GapsIn,
    responses={202: GapsRequestOut, 400: FIELD_ERRORS, 403: NOT_A_LEAD, 404: NOT_FOUND},
    summary="Judge the gaps: add a run's unjudged top-k pairs on a qrels source to its judging project",
    description="For qrels built by a judging project linked to the team: the distinct (qid, docno) pairs "
    "of the run's top `depth` per query (trec_eval's order) that these qrels do not judge become tasks of "
    "the project. Pairs whose topic or document the project lacks are skipped and counted; pairs that are "
    "tasks already are counted, never added twice, so the call may be repeated. Uploaded qrels have no "
    "project: 400. The work is a job (a run may have millions of lines): the answer, 202, is the queued "
    "request; poll `GET /api/teams/<team>/gaps-requests/<id>/` for its `result` (these counts: `GapsOut`).",
    tags=TAGS,
)
@api_view(["POST"])
def judge_gaps(request: Request, team: str, pk: int, run: int) -> Response:
    membership = get_team_for_member(request.user, team, write=True)
    qrels = selectors.get_qrels_source(team=membership.team, pk=pk)
    found = selectors.get_run(team=membership.team, pk=run)
    if not loop.may_judge_gaps(user=request.user, membership=membership, qrels=qrels):
        raise PermissionDenied(
            "Only a lead of the judging project these qrels come from can add tasks to it."
        )
    data = GapsIn(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        job = loop.gaps_request_create(
            run=found, qrels=qrels, depth=data.validated_data["depth"], created_by=request.user
        )
    except InputError as error:
        raise serializers.ValidationError({"non_field_errors": [str(error)]}) from None
    return Response(GapsRequestOut(job).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(
    responses={200: GapsRequestOut, 404: NOT_FOUND},
    summary='One "judge the gaps" request: its state and, once done, what it added',
    tags=TAGS,
)
@api_view(["GET"])
def gaps_request(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team)
    job = selectors.get_one(GapsRequest.objects.filter(team=membership.team), pk, "gaps request")
    return Response(GapsRequestOut(job).data)


@extend_schema(
    request=None,
    responses={202: CoverageQueuedOut, 403: FORBIDDEN, 404: NOT_FOUND},
    summary="Compute the coverage of the runs whose evaluation on these qrels predates it (editors)",
    description="For each run on the leaderboard whose newest evaluation has no Judged@10 and Judged@100, "
    "queues the same evaluation (same measures, -l and -c) with the coverage measures added; once done it "
    "is the run's newest and the leaderboard shows its coverage. Repeating the call finds the same "
    "evaluations.",
    tags=TAGS,
)
@api_view(["POST"])
def compute_coverage(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team, write=True)
    qrels = selectors.get_qrels_source(team=membership.team, pk=pk)
    queued = loop.leaderboard_coverage_compute(qrels=qrels, created_by=request.user)
    body = {"queued": len(queued), "evaluations": [evaluation.pk for evaluation in queued]}
    return Response(CoverageQueuedOut(body).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(
    parameters=[
        OpenApiParameter(
            "from", int, description="The old qrels source's id (default: the version before this one)."
        ),
        OpenApiParameter(
            "measure", str, many=True, description="Only these measures (repeat it); default: those on both."
        ),
    ],
    responses={200: LeaderboardDiffOut, 400: FIELD_ERRORS, 404: NOT_FOUND},
    summary="The leaderboard diff from another qrels source of the team to this one",
    description="Per measure and run: the old and new value with their CIs, the change, the old and new "
    "competition rank and the rank change (positive: up); per measure Kendall's tau-b and tau_ap (the new "
    "ranking as the truth) over the runs scored on both, null where undefined. Without `from`, this source "
    "is compared with the team's source of the previous version of its judging project's qrels; where there "
    "is none (a first version, an uploaded file), `from` is null and `measures` empty.",
    tags=TAGS,
)
@api_view(["GET"])
def leaderboard_diff_detail(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team)
    new, old = diff_sources(team=membership.team, pk=pk, old=request.query_params.get("from"))
    if old is None:  # nothing to compare with: an empty diff, saying so
        return Response(LeaderboardDiffOut({"from": None, "to": new, "measures": []}).data)
    try:
        diff = leaderboard_diff(old=old, new=new, measures=request.query_params.getlist("measure") or None)
    except InputError as error:
        raise serializers.ValidationError({"measure": [str(error)]}) from None
    return Response(LeaderboardDiffOut(diff.as_dict()).data)
