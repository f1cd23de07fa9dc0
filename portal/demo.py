"""Demo accounts for `make demo`. Passwords are public on purpose: this is local demo data only."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from evalplatform.roles import Role


@dataclass(frozen=True)
class DemoAccount:
    username: str
    password: str
    role: Role | None
    is_admin: bool = False
    first_name: str = ""


DEMO_ACCOUNTS: tuple[DemoAccount, ...] = (
    DemoAccount("admin", "demo-admin-pass", None, is_admin=True, first_name="Ada"),
    DemoAccount("lead", "demo-lead-pass", Role.PROJECT_LEAD, first_name="Lena"),
    DemoAccount("alice", "demo-alice-pass", Role.ANNOTATOR, first_name="Alice"),
    DemoAccount("bob", "demo-bob-pass", Role.ANNOTATOR, first_name="Bob"),
    DemoAccount("analyst", "demo-analyst-pass", Role.TEAM_MEMBER, first_name="Theo"),
)


@transaction.atomic
def demo_accounts_create() -> list[DemoAccount]:
    """Create the demo accounts that do not exist yet, with their demo passwords, and refresh their names
    and roles. An existing account keeps its password: setting it again, even to the same value, changes
    the hash and so logs out every open session of that user."""
    user_model = get_user_model()
    for account in DEMO_ACCOUNTS:
        user, created = user_model.objects.get_or_create(username=account.username)
        user.first_name = account.first_name
        user.email = f"{account.username}@example.org"
        user.is_staff = user.is_superuser = account.is_admin
        if created:
            user.set_password(account.password)
        user.save()
        if account.role is not None:
            group, _ = Group.objects.get_or_create(name=account.role.value)
            user.groups.add(group)
    return list(DEMO_ACCOUNTS)
