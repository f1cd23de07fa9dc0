"""Team access: every lookup of team-owned data goes through `get_team_for_member`.

Non-members get a 404 (a team's existence is not disclosed); viewers may read, editors may also upload
and start jobs (a viewer asking to write gets a 403). Superusers act as editors of every team.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404, HttpRequest

from evalplatform.auth import AnyUser, User
from evalplatform.models import RESERVED_TEAM_SLUGS, Team, TeamMembership
from evalplatform.people import Invitation, Person, person_account
from evalplatform.roles import Role as PlatformRole

Role = TeamMembership.Role


def get_team_for_member(user: AnyUser, slug: str, *, write: bool = False) -> TeamMembership:
    """The user's membership of team `slug`, with `.team` loaded; 404 to non-members, 403 to a viewer
    asking to write."""
    if not user.is_authenticated:
        raise Http404("No such team.")
    membership = TeamMembership.objects.select_related("team").filter(team__slug=slug, user=user).first()
    if membership is None and getattr(user, "is_superuser", False):
        team = Team.objects.filter(slug=slug).first()
        if team is not None:
            membership = TeamMembership(team=team, user=user, role=Role.EDITOR)  # type: ignore[misc]
    if membership is None:
        raise Http404("No such team.")
    if write and not membership.can_edit:
        raise PermissionDenied("Only the team's editors can upload and start jobs.")
    return membership


def teams_for_user(user: AnyUser) -> QuerySet[Team]:
    """The teams the user belongs to (every team for a superuser)."""
    if not user.is_authenticated:
        return Team.objects.none()
    if getattr(user, "is_superuser", False):
        return Team.objects.all()
    return Team.objects.filter(memberships__user=user)


@transaction.atomic
def team_create(*, slug: str, name: str, creator: User | None = None, description: str = "") -> Team:
    """A new team; its creator becomes an editor. A reserved slug (`RESERVED_TEAM_SLUGS`) is refused."""
    if slug.lower() in RESERVED_TEAM_SLUGS:
        raise ValueError(f"{slug!r} is reserved: /teams/{slug}/ is another page.")
    team = Team.objects.create(slug=slug, name=name, description=description)
    if creator is not None:
        TeamMembership.objects.create(team=team, user=creator, role=Role.EDITOR)
    return team


def team_member_set(*, team: Team, user: User, role: str = Role.VIEWER) -> TeamMembership:
    """Add a member, or change their role."""
    membership, _ = TeamMembership.objects.update_or_create(team=team, user=user, defaults={"role": role})
    return membership


def can_create_team(user: AnyUser) -> bool:
    """Editors of a team (and superusers, and holders of the `add_team` permission) may start teams."""
    if not user.is_authenticated:
        return False
    if getattr(user, "is_superuser", False) or user.has_perm("evalplatform.add_team"):
        return True
    return TeamMembership.objects.filter(user=user, role=Role.EDITOR).exists()


class LastEditorError(ValueError):
    """A change would leave the team with no editor."""


@transaction.atomic
def team_member_change(*, membership: TeamMembership, role: str | None) -> TeamMembership | None:
    """Set a member's role (`role`), or take them off the team (`role=None`); a team keeps one editor at
    least (the check locks the team's editor rows, so two editors demoting each other cannot both win)."""
    editors = list(
        TeamMembership.objects.select_for_update()
        .filter(team_id=membership.team_id, role=Role.EDITOR)
        .values_list("pk", flat=True)
    )
    if editors == [membership.pk] and role != Role.EDITOR:
        raise LastEditorError(
            f"{membership.user.get_username()} is the team's only editor: make another member an editor first."
        )
    if role is None:
        membership.delete()
        return None
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def team_member_add(
    *, team: Team, person: Person, role: str, invited_by: User | None, request: HttpRequest | None
) -> tuple[TeamMembership, Invitation]:
    """Add a person (an account, or an email to invite: `evalplatform.people`) to the team with `role`, or
    change their role; ValidationError (nothing changed) when the email's account cannot be made."""
    invitation = person_account(
        person, group=PlatformRole.TEAM_MEMBER, invited_by=invited_by, request=request, what=team_what(team)
    )
    return team_member_set(team=team, user=invitation.user, role=role), invitation


def team_what(team: Team) -> str:
    """How messages and invitations name the team."""
    return f"the {team.name} team"
