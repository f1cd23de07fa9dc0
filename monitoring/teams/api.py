"""Teams and their members: GET/POST /api/teams/, GET /api/teams/<team>/, GET/POST
/api/teams/<team>/members/, GET/PATCH/DELETE /api/teams/<team>/members/<id>/.

Members read the member list; editors add (by username or email: an email with no account is invited,
as on the members page), change roles and remove. A team keeps one editor at least (409).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from evalplatform import people
from evalplatform.models import RESERVED_TEAM_SLUGS, Team, TeamMembership
from evalplatform.teams import (
    LastEditorError,
    can_create_team,
    get_team_for_member,
    team_create,
    team_member_add,
    team_member_change,
)
from monitoring.common import queries
from monitoring.common.pagination import PAGE_PARAMETERS, page_of, paginate
from monitoring.common.serializers import (
    FIELD_ERRORS,
    FORBIDDEN,
    NOT_FOUND,
    EvaluationErrorOut,
    TeamDetailOut,
    TeamOut,
)

TAGS = ["evaluation: teams"]
CONFLICT = OpenApiResponse(EvaluationErrorOut, description="The change would leave the team with no editor.")


class TeamIn(serializers.Serializer):
    slug = serializers.SlugField(max_length=64)
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")

    def validate_slug(self, value: str) -> str:
        if value.lower() in RESERVED_TEAM_SLUGS:
            raise serializers.ValidationError("“new” is the address of the new-team page: choose another.")
        if Team.objects.filter(slug=value).exists():
            raise serializers.ValidationError(f"A team is already named {value!r} in its addresses.")
        return value


class MemberOut(people.MemberOut):
    role = serializers.ChoiceField(choices=TeamMembership.Role.choices)
    created_at = serializers.DateTimeField()


class MemberAddOut(MemberOut, people.MailErrorOut):
    pass


class MemberIn(people.PersonIn):
    role = serializers.ChoiceField(choices=TeamMembership.Role.choices, default=TeamMembership.Role.VIEWER)


class RoleIn(serializers.Serializer):
    role = serializers.ChoiceField(choices=TeamMembership.Role.choices)


@extend_schema(methods=["GET"], operation_id="teams_list", parameters=PAGE_PARAMETERS, responses=page_of(TeamOut),
               summary="Your teams, with your role", tags=TAGS)  # fmt: skip
@extend_schema(methods=["POST"], request=TeamIn, responses={201: TeamOut, 400: FIELD_ERRORS, 403: FORBIDDEN},
               summary="Start a team (editors of a team, admins): you become its editor", tags=TAGS)  # fmt: skip
@api_view(["GET", "POST"])
def team_list(request: Request) -> Response:
    if request.method == "GET":
        return paginate(request, queries.teams_with_role(request.user), TeamOut)
    if not can_create_team(request.user):
        raise PermissionDenied("Editors of a team (or an admin) start new teams.")
    data = TeamIn(data=request.data)
    data.is_valid(raise_exception=True)
    team = team_create(creator=request.user, **data.validated_data)
    team.role = TeamMembership.Role.EDITOR  # type: ignore[attr-defined]
    return Response(TeamOut(team, context={"request": request}).data, status=status.HTTP_201_CREATED)


@extend_schema(
    responses={200: TeamDetailOut, 404: OpenApiResponse(EvaluationErrorOut, description="Not a member.")},
    summary="A team: your role, what it holds, and its linked judging projects with their builds",
    tags=TAGS,
)
@api_view(["GET"])
def team_detail(request: Request, team: str) -> Response:
    membership = get_team_for_member(request.user, team)
    return Response(TeamDetailOut(queries.team_detail(membership), context={"request": request}).data)


def _members(team: Team) -> Any:
    return TeamMembership.objects.filter(team=team).select_related("user").order_by("user__username", "pk")


@extend_schema(methods=["GET"], parameters=PAGE_PARAMETERS, responses={200: page_of(MemberOut), 404: NOT_FOUND},
               operation_id="teams_members_list", summary="The team's members and their roles", tags=TAGS)  # fmt: skip
@extend_schema(methods=["POST"], request=MemberIn, responses={201: MemberAddOut, 400: FIELD_ERRORS, 403: FORBIDDEN},
               summary="Add a member, or invite an email (editors)", tags=TAGS)  # fmt: skip
@api_view(["GET", "POST"])
def member_list(request: Request, team: str) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    if request.method == "GET":
        return paginate(request, _members(membership.team), MemberOut)
    data = MemberIn(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        member, invitation = team_member_add(
            team=membership.team, person=data.validated_data["person"], role=data.validated_data["role"],
            invited_by=request.user, request=request,
        )  # fmt: skip
    except ValidationError as exc:
        raise serializers.ValidationError({"person": exc.messages}) from None
    out = MemberAddOut(member, context={"mail_error": invitation.mail_error}).data
    return Response(out, status=status.HTTP_201_CREATED)


@extend_schema(methods=["GET"], responses={200: MemberOut, 404: NOT_FOUND}, summary="A member", tags=TAGS)
@extend_schema(methods=["PATCH"], request=RoleIn, responses={200: MemberOut, 400: FIELD_ERRORS, 403: FORBIDDEN, 409: CONFLICT},
               summary="Set a member's role (editors)", tags=TAGS)  # fmt: skip
@extend_schema(methods=["DELETE"], responses={204: None, 403: FORBIDDEN, 404: NOT_FOUND, 409: CONFLICT},
               summary="Take a member off the team (editors)", tags=TAGS)  # fmt: skip
@api_view(["GET", "PATCH", "DELETE"])
def member_detail(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method != "GET")
    member = get_object_or_404(_members(membership.team), pk=pk)
    if request.method == "GET":
        return Response(MemberOut(member).data)
    role = None
    if request.method == "PATCH":
        data = RoleIn(data=request.data)
        data.is_valid(raise_exception=True)
        role = data.validated_data["role"]
    try:
        changed = team_member_change(membership=member, role=role)
    except LastEditorError as exc:
        return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
    if changed is None:
        return Response(status=status.HTTP_204_NO_CONTENT)
    return Response(MemberOut(changed).data)
