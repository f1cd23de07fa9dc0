"""Template context shared by every page."""

from __future__ import annotations

from django.http import HttpRequest

from evalplatform.roles import user_roles


def roles(request: HttpRequest) -> dict[str, object]:
    names = sorted(role.value for role in user_roles(request.user))
    return {"user_role_names": names}
