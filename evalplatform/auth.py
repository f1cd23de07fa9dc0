"""The user types of the apps: the platform's user model, and a request that is signed in.

The platform uses Django's default `User` model. Views behind `login_required` take a `SignedInRequest`,
whose user is a `User`, never anonymous; lookups that may see an anonymous user take `AnyUser`.
"""

from __future__ import annotations

from typing import TypeAlias

from django.contrib.auth.models import AnonymousUser, User
from django.http import HttpRequest

AnyUser: TypeAlias = User | AnonymousUser


class SignedInRequest(HttpRequest):
    """A request behind `login_required`."""

    user: User  # type: ignore[assignment]


__all__ = ["AnyUser", "SignedInRequest", "User"]
