"""The user types of the apps: the platform's user model, and a request that is signed in.

The platform uses Django's default `User` model. Views behind `login_required` take a `SignedInRequest`,
whose user is a `User`, never anonymous; lookups that may see an anonymous user take `AnyUser`.
"""

from __future__ import annotations

from typing import TypeAlias

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, load_backend
from django.contrib.auth.models import AnonymousUser, User
from django.http import HttpRequest
from django.utils.crypto import constant_time_compare

from evalplatform.sessions import SessionReader, SessionStore

AnyUser: TypeAlias = User | AnonymousUser


class SignedInRequest(HttpRequest):
    """A request behind `login_required`."""

    user: User  # type: ignore[assignment]


#: The backend a session signed in with for `session_sign_in_with` to read its user itself.
MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"


def session_sign_in_with(request: HttpRequest, read: SessionReader[User | None]) -> None:
    """Sign the request in from its session as `django.contrib.auth.get_user` does, the session and its
    user read together by `read` (`SessionStore.load_with`: one statement, which may read more with them)
    instead of the session's read and then the backend's query; call it before anything reads the
    session or `request.user`.

    Only the common case is taken here, with Django's own checks: a session signed in through the model
    backend (still in AUTHENTICATION_BACKENDS), whose hash verifies against the user's with the current
    secret, of a user the backend lets sign in (active), and the user read being the one the session's
    signed data names (the session row's `user_id` only finds it). Anything else (no session, another
    backend, a user gone or inactive, a hash that does not verify, which may verify against
    SECRET_KEY_FALLBACKS) is left to `get_user`, which refuses, flushes or rotates the session as it
    does: it then reads the user again."""
    if hasattr(request, "_cached_user"):
        return
    session = request.session
    if not isinstance(session, SessionStore):
        return
    user = session.load_with(read)
    if user is None:
        return
    try:
        user_id = User._meta.pk.to_python(session[SESSION_KEY])  # type: ignore[union-attr]
        backend_path = session[BACKEND_SESSION_KEY]
    except KeyError:
        return
    session_hash = session.get(HASH_SESSION_KEY)
    if (
        user.pk != user_id
        or backend_path != MODEL_BACKEND
        or backend_path not in settings.AUTHENTICATION_BACKENDS
        or not session_hash
    ):
        return
    if not load_backend(backend_path).user_can_authenticate(user):  # type: ignore[attr-defined]
        return
    if constant_time_compare(session_hash, user.get_session_auth_hash()):
        request._cached_user = user  # type: ignore[attr-defined]  # what `request.user` gives


__all__ = ["AnyUser", "SignedInRequest", "User", "session_sign_in_with"]
