"""Platform-wide roles, kept as Django groups.

Per-project membership (who annotates or leads which project) lives on the project; these groups
say what kind of user someone is across the platform.
"""

from __future__ import annotations

from enum import StrEnum

from evalplatform.auth import AnyUser


class Role(StrEnum):
    ANNOTATOR = "annotator"
    PROJECT_LEAD = "project_lead"
    TEAM_MEMBER = "team_member"

    @property
    def label(self) -> str:
        return self.value.replace("_", " ").capitalize()


def user_roles(user: AnyUser) -> set[Role]:
    if not user.is_authenticated:
        return set()
    names = set(user.groups.values_list("name", flat=True))  # type: ignore[attr-defined]
    return {role for role in Role if role.value in names}


def user_has_role(user: AnyUser, role: Role) -> bool:
    if getattr(user, "is_superuser", False):
        return True
    return role in user_roles(user)
