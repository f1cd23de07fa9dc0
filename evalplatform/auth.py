"""The user types of the apps: the platform's user model, and a request that is signed in; how a request
is signed in from its session.

The platform uses Django's default `User` model. Views behind `login_required` take a `SignedInRequest`,
whose user is a `User`, never anonymous; lookups that may see an anonymous user take `AnyUser`. A signed-in
page's request reads its session and its user in one statement (`AuthenticationMiddleware`,
`session_sign_in_with`) where Django's middleware reads them in two.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, load_backend
from django.contrib.auth import middleware as auth_middleware
from django.contrib.auth.models import AnonymousUser, User
from django.http import HttpRequest
from django.utils.crypto import constant_time_compare
from django.utils.functional import SimpleLazyObject

from evalplatform import sqlrows
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


def session_sign_in_kept(request: HttpRequest, session_data: str, user: User) -> bool:
    """Sign the request in as a sign-in verified before (`session_sign_in_with`'s, by an earlier request of
    this process): its session loaded from `session_data` as it was read then, `user` its user, with no
    statement. Whoever calls this checks, before anything is written or answered for it, that the session
    row and the user are still what was verified (see `annotations.kept_sign_ins`), else calls
    `session_sign_in_again`. False, doing nothing, where the request is signed in or its session loaded
    already."""
    session = request.session
    if hasattr(request, "_cached_user") or not isinstance(session, SessionStore):
        return False
    if hasattr(session, "_session_cache"):
        return False
    session._session_cache = session.decode_kept(session_data)
    request._cached_user = user  # type: ignore[attr-defined]
    return True


def session_sign_in_again(request: HttpRequest) -> None:
    """Forget the request's sign-in, its session's load and its user, as if nothing had read them: the
    next read of `request.user` or the session signs in afresh (`AuthenticationMiddleware`)."""
    if hasattr(request, "_cached_user"):
        del request._cached_user  # type: ignore[attr-defined]
    request.session = type(request.session)(request.session.session_key)
    _sign_in_lazily(request)


def session_user_statement(more_select: str = "", more_joins: str = "") -> str:
    """The statement that reads a session (`s`) with the user its row names (`u`, joined on the row's
    `user_id`): the session's data and the user's columns first (`session_user_parts`), then
    `more_select`'s columns, from `more_joins` joined after the user. Its parameters: those of
    `more_joins`, then the session's key and `sessions.unexpired_after()`."""
    select = f"s.session_data, {sqlrows.columns(User, 'u').select}" + (
        f", {more_select}" if more_select else ""
    )
    return (
        f"SELECT {select} FROM {SessionStore.get_model_class()._meta.db_table} s "
        f"LEFT JOIN {User._meta.db_table} u ON u.id = s.user_id {more_joins}"
        "WHERE s.session_key = %s AND s.expire_date > %s"
    )


def session_user_parts(row: tuple[Any, ...]) -> tuple[str, User | None]:
    """The session's data and its user (None where the row names no user found) from a row of
    `session_user_statement`; the columns after them start at `1 + sqlrows.columns(User, "u").width`."""
    shape = sqlrows.columns(User, "u")
    if row[1 + shape.attnames.index("id")] is None:
        return row[0], None
    return row[0], sqlrows.instance(shape, row, 1)


def session_user(session_key: str, unexpired_after: Any) -> tuple[str, User | None] | None:
    """The session `session_key` and the user its row names, in one statement (a `SessionReader`): None
    where there is no such unexpired session; the user None where the row names no user found."""
    with sqlrows.cursor() as cursor:
        cursor.execute(session_user_statement(), [session_key, unexpired_after])
        row = cursor.fetchone()
    return None if row is None else session_user_parts(row)


def _sign_in_lazily(request: HttpRequest) -> None:
    """`request.user`, signed in when first read (`_user`)."""
    request.user = SimpleLazyObject(lambda: _user(request))  # type: ignore[assignment]


def _user(request: HttpRequest) -> Any:
    session_sign_in_with(request, session_user)
    return auth_middleware.get_user(request)  # the user signed in above, else Django's own sign-in


class AuthenticationMiddleware(auth_middleware.AuthenticationMiddleware):
    """Django's, whose `request.user` (still read lazily, when first used) signs the session in with its
    user read in the same statement (`session_sign_in_with`, `session_user`): a signed-in page's request
    makes one round trip for them where Django's makes two. Whatever that common case does not cover is
    Django's `get_user`, as before."""

    def process_request(self, request: HttpRequest) -> None:
        super().process_request(request)
        _sign_in_lazily(request)


__all__ = [
    "AnyUser",
    "AuthenticationMiddleware",
    "SignedInRequest",
    "User",
    "session_sign_in_again",
    "session_sign_in_kept",
    "session_sign_in_with",
    "session_user",
    "session_user_parts",
    "session_user_statement",
]
