"""A team's people without the admin: start a team, name it, add members (by username or email, inviting
those without an account), set their role, take them off.

Members read the member list; editors change it. A team keeps one editor at least.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from evalplatform.auth import SignedInRequest
from evalplatform.forms import ConfirmForm
from evalplatform.models import TeamMembership
from evalplatform.people import invitation_message
from evalplatform.teams import (
    LastEditorError,
    can_create_team,
    get_team_for_member,
    team_create,
    team_member_add,
    team_member_change,
    team_what,
)
from monitoring.teams.forms import MemberAddForm, MemberRoleForm, TeamEditForm, TeamForm

#: Members shown on the members page (a team of more is listed by the API, page by page).
MEMBER_LIMIT = 500


@login_required
@require_http_methods(["GET", "POST"])
def team_create_view(request: SignedInRequest) -> HttpResponse:
    if not can_create_team(request.user):
        raise PermissionDenied("Editors of a team (or an admin) start new teams.")
    form = TeamForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        team = team_create(creator=request.user, **form.cleaned_data)
        messages.success(request, f"Started {team.name}: you are its editor. Add its members here.")
        return redirect("monitoring:team-members", team.slug)
    status = 400 if request.method == "POST" else 200
    return render(request, "monitoring/team_form.html", {"form": form, "team": None}, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def team_edit(request: SignedInRequest, team: str) -> HttpResponse:
    membership = get_team_for_member(request.user, team, write=True)
    form = TeamEditForm(request.POST or None, instance=membership.team)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Saved the team's name and description.")
        return redirect("monitoring:team", membership.team.slug)
    status = 400 if request.method == "POST" else 200
    return render(
        request, "monitoring/team_form.html", {"form": form, "team": membership.team}, status=status
    )


def members_page(
    request: SignedInRequest, membership: TeamMembership, form: MemberAddForm, status: int
) -> HttpResponse:
    team = membership.team
    members = list(
        TeamMembership.objects.filter(team=team)
        .select_related("user")
        .order_by("user__username")[:MEMBER_LIMIT]
    )
    context = {
        "team": team, "membership": membership, "members": members, "form": form,
        "roles": TeamMembership.Role.choices, "member_limit": MEMBER_LIMIT,
    }  # fmt: skip
    return render(request, "monitoring/team_members.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def team_members(request: SignedInRequest, team: str) -> HttpResponse:
    """The members and their roles; editors add one by username or email (POST)."""
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    form = MemberAddForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            _, invitation = team_member_add(
                team=membership.team, person=form.cleaned_data["person"], role=form.cleaned_data["role"],
                invited_by=request.user, request=request,
            )  # fmt: skip
        except ValidationError as exc:
            form.add_error("person", exc)
        else:
            level, text = invitation_message(invitation, team_what(membership.team))
            getattr(messages, level)(request, text)
            return redirect("monitoring:team-members", membership.team.slug)
    return members_page(request, membership, form, 400 if request.method == "POST" else 200)


@login_required
@require_POST
def team_member_role(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team, write=True)
    member = get_object_or_404(TeamMembership.objects.select_related("user"), team=membership.team, pk=pk)
    form = MemberRoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a role: viewer or editor.")
        return members_page(request, membership, MemberAddForm(), 400)
    try:
        team_member_change(membership=member, role=form.cleaned_data["role"])
    except LastEditorError as exc:
        messages.error(request, str(exc))
        return members_page(request, membership, MemberAddForm(), 409)
    messages.success(request, f"{member.user.get_username()} is now {member.get_role_display().lower()}.")
    return redirect("monitoring:team-members", membership.team.slug)


@login_required
@require_http_methods(["GET", "POST"])
def team_member_remove(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    """A confirmation naming what goes (GET), then the removal (POST with the confirmation)."""
    membership = get_team_for_member(request.user, team, write=True)
    member = get_object_or_404(TeamMembership.objects.select_related("user"), team=membership.team, pk=pk)
    name = member.user.get_username()
    form = ConfirmForm(request.POST or None, expected=f"remove {name}")
    error = ""
    if request.method == "POST" and form.is_valid():
        try:
            team_member_change(membership=member, role=None)
        except LastEditorError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Took {name} off {membership.team.name}.")
            if member.user_id == request.user.pk:
                return redirect("monitoring:team-list")
            return redirect("monitoring:team-members", membership.team.slug)
    context = {
        "title": f"Take {name} off {membership.team.name}?",
        "consequences": [
            f"{name} no longer reads the team's runs, evaluations, streams and alerts.",
            "What they uploaded or started stays with the team.",
            "Projects they annotate or lead are not changed.",
        ],
        "form": form, "error": error, "button": f"Remove {name}",
        "cancel": reverse("monitoring:team-members", args=[membership.team.slug]), "team": membership.team,
    }  # fmt: skip
    status = 200 if request.method == "GET" else 409 if error else 400
    return render(request, "evalplatform/confirm.html", context, status=status)
