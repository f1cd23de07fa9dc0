"""A project's members over the API: GET/POST /api/projects/<slug>/members/, GET/PATCH/DELETE
/api/projects/<slug>/members/<id>/.

Leads only, as the project page's member list and forms: list the members with their roles, add one by
username or email (an email with no account is invited and mailed a link to set a password), change a
role, take one off the project (the tasks they hold go back to the pool; their answers stay). A project
keeps one lead at least (409). Lookups go through `selectors.get_lead_project` (404 to non-members, 403
to annotators).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from annotations import selectors, services
from annotations.api import ErrorOut
from annotations.models import Project, ProjectMembership
from evalplatform import people

Role = ProjectMembership.Role
TAGS = ["judging: leads"]
NOT_FOUND = OpenApiResponse(ErrorOut, description="Not a member of the project, or no such member.")
FORBIDDEN = OpenApiResponse(ErrorOut, description="Not a lead of the project.")
CONFLICT = OpenApiResponse(ErrorOut, description="The change would leave the project with no lead.")


class ProjectMemberOut(people.MemberOut):
    role = serializers.ChoiceField(choices=Role.choices)


class ProjectMemberAddOut(ProjectMemberOut, people.MailErrorOut):
    pass


class ProjectMemberIn(people.PersonIn):
    role = serializers.ChoiceField(choices=Role.choices, default=Role.ANNOTATOR)


class ProjectRoleIn(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices)


def _members(project: Project) -> QuerySet[ProjectMembership]:
    return project.memberships.select_related("user").order_by("role", "user__username", "pk")


@extend_schema(methods=["GET"], responses={200: ProjectMemberOut(many=True), 403: FORBIDDEN, 404: NOT_FOUND},
               operation_id="projects_members_list", summary="The project's members and their roles (leads)",
               tags=TAGS)  # fmt: skip
@extend_schema(methods=["POST"], request=ProjectMemberIn,
               responses={201: ProjectMemberAddOut, 400: OpenApiResponse(description="Field errors."),
                          403: FORBIDDEN, 404: NOT_FOUND, 409: CONFLICT},
               summary="Add a member or change their role, or invite an email (leads)", tags=TAGS)  # fmt: skip
@api_view(["GET", "POST"])
def member_list(request: Request, slug: str) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    if request.method == "GET":
        return Response(ProjectMemberOut(_members(project), many=True).data)
    data = ProjectMemberIn(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        member, invitation = services.member_add(
            project=project, person=data.validated_data["person"], role=data.validated_data["role"],
            invited_by=request.user, request=request,
        )  # fmt: skip
    except ValidationError as exc:
        raise serializers.ValidationError({"person": exc.messages}) from None
    except services.LastLeadError as exc:
        return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
    out = ProjectMemberAddOut(member, context={"mail_error": invitation.mail_error}).data
    return Response(out, status=status.HTTP_201_CREATED)


@extend_schema(methods=["GET"], responses={200: ProjectMemberOut, 403: FORBIDDEN, 404: NOT_FOUND},
               summary="A member of the project (leads)", tags=TAGS)  # fmt: skip
@extend_schema(methods=["PATCH"], request=ProjectRoleIn,
               responses={200: ProjectMemberOut, 400: OpenApiResponse(description="Field errors."),
                          403: FORBIDDEN, 404: NOT_FOUND, 409: CONFLICT},
               summary="Set a member's role (leads); one who stops annotating hands back the tasks they hold",
               tags=TAGS)  # fmt: skip
@extend_schema(methods=["DELETE"], responses={204: None, 403: FORBIDDEN, 404: NOT_FOUND, 409: CONFLICT},
               summary="Take a member off the project (leads): their held tasks go back, their answers stay",
               tags=TAGS)  # fmt: skip
@api_view(["GET", "PATCH", "DELETE"])
def member_detail(request: Request, slug: str, pk: int) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    member = get_object_or_404(_members(project), pk=pk)
    if request.method == "GET":
        return Response(ProjectMemberOut(member).data)
    role = None
    if request.method == "PATCH":
        data = ProjectRoleIn(data=request.data)
        data.is_valid(raise_exception=True)
        role = data.validated_data["role"]
    try:
        changed = services.member_change(project=project, user=member.user, role=role)
    except services.LastLeadError as exc:
        return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
    if changed is None:
        return Response(status=status.HTTP_204_NO_CONTENT)
    return Response(ProjectMemberOut(changed).data)
