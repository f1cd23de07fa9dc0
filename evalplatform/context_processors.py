"""Template context shared by every page."""

from __future__ import annotations

from django.http import HttpRequest

from evalplatform.models import TeamMembership
from evalplatform.roles import user_roles


def roles(request: HttpRequest) -> dict[str, object]:
    """The user's platform roles, and whether they belong to any team (the Teams link)."""
    names = sorted(role.value for role in user_roles(request.user))

    def in_a_team() -> bool:  # called by the template only when the roles do not settle it
        return bool(request.user.is_authenticated) and (
            getattr(request.user, "is_superuser", False)
            or TeamMembership.objects.filter(user_id=request.user.pk or 0).exists()
        )

    return {"user_role_names": names, "user_in_a_team": in_a_team}
