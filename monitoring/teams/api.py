"""Your teams, with your role in each: GET /api/teams/ and /api/teams/<team>/."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from evalplatform.teams import get_team_for_member
from monitoring.common import queries
from monitoring.common.pagination import PAGE_PARAMETERS, page_of, paginate
from monitoring.common.serializers import EvaluationErrorOut, TeamDetailOut, TeamOut

TAGS = ["evaluation: teams"]


@extend_schema(
    operation_id="teams_list",
    parameters=PAGE_PARAMETERS,
    responses=page_of(TeamOut),
    summary="Your teams, with your role",
    tags=TAGS,
)
@api_view(["GET"])
def team_list(request: Request) -> Response:
    return paginate(request, queries.teams_with_role(request.user), TeamOut)


@extend_schema(
    responses={200: TeamDetailOut, 404: OpenApiResponse(EvaluationErrorOut, description="Not a member.")},
    summary="A team: your role, what it holds, and its linked judging projects with their builds",
    tags=TAGS,
)
@api_view(["GET"])
def team_detail(request: Request, team: str) -> Response:
    membership = get_team_for_member(request.user, team)
    return Response(TeamDetailOut(queries.team_detail(membership), context={"request": request}).data)
