"""The judge page's answers, and the judging API's, signed in without a statement of their own (PostgreSQL).

An annotator's answer on the judge page (`views.judge_answer_next`) signs in from its session: the session,
its user and their membership of the project, read in one statement before the answer's. This process
keeps what such a sign-in read and verified (`remember`), by the session's key and the project; the
session's next answer in this process starts from it (`run_checked`) and makes no statement for it.
Nothing is trusted on that account: the answer's own statement (`annotations_answer_claim`, migration
0020) checks, before it writes anything, that the session row is still the one verified (same key, same
data, not expired, naming the same user), that the user is still active with the same password (so a
password change or a deactivation ends the session here as Django's `get_user` does), that the project's
row is the version whose settings the answer's rules were read from, and that the user is still an
annotator of it. If any of that fails it writes nothing and says `unverified`: the request forgets the
kept sign-in, signs in as a request always does (which may send the user to the login page) and runs again.

A request that starts from a kept sign-in is *pending* until that check passed (`confirm`, from
`hotpath.answer_and_claim`). Anything that would write before it, or a reply that does not come from it (a
refusal, an error), first asks `require_confirmed`, which raises `SignInUnconfirmed` while pending: the
request then signs in afresh and runs again, so that every reply and every write is made for a sign-in
verified during the request, as without this module. tests/annotations/test_kept_sign_ins.py holds it
to that: a logout, a password change, a deactivation, an expiry, a role change and a project change each
take effect on the next answer.

The judging API's answers (`submit/` and `skip/`, `api_answer`) keep their token sign-in the same way
(`remember_token`, `kept_token`, read by `annotations.api.JudgingTokenAuthentication`): the answer's
statement then checks the token is still the user's, the user active and an annotator, and the project's
row the version read. tests/annotations/test_kept_sign_ins.py holds the API to it too (a token deleted or
replaced, a deactivation, a role change).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from functools import wraps
from typing import Any, TypeVar

from django.contrib.auth.models import User
from django.http import HttpRequest
from rest_framework.authtoken.models import Token

from annotations.models import ProjectMembership
from evalplatform import sqlrows

#: Kept sign-ins by (the session's or token's key, the project's slug); the oldest dropped past `KEPT_MAX`.
_KEPT: dict[tuple[str, str], Kept] = {}
KEPT_MAX = 8192
_KEPT_LOCK = threading.Lock()
#: The projects the kept sign-ins hold, one copy by (id, row version); the oldest dropped past the maximum
#: (a sign-in keeps its own reference: dropping one here only stops its sharing).
_PROJECTS: dict[tuple[int, Any], Any] = {}
KEPT_PROJECTS_MAX = 256

#: The attribute of a project read with its row's version (`hotpath.session_member_of`, `token_member_of`).
PROJECT_VERSION = "_row_version"

R = TypeVar("R")


@dataclass(frozen=True)
class Guard:
    """What the answer's statement checks is unchanged before it writes (see the module's docstring)."""

    #: The session's key, or the API token's.
    sign_in_key: str
    #: The session's data and the user's password as verified (None for a token).
    session_data: str | None
    password: str | None
    #: The project row's version (`xmin`) its settings were read from.
    project_version: str


@dataclass(frozen=True)
class Kept:
    """A sign-in verified by a request of this process: the session's data (or the API token), its user,
    their membership (its project attached), and what the next answer's statement checks."""

    session_data: str | None
    user: User
    membership: ProjectMembership
    guard: Guard
    token: Token | None = None

    def copies(self) -> tuple[User, ProjectMembership]:
        """Copies of the user and the membership (with its project) for one request, which may change
        them: the kept ones stay as verified."""
        return sqlrows.clone(self.user), _membership_clone(self.membership)


class SignInUnconfirmed(Exception):
    """The request's kept sign-in did not hold, or a reply was about to be made before it was checked:
    nothing was written for it. The request signs in afresh and runs again."""


#: The guard of this request's kept sign-in while it is unchecked; None when there is none or it held.
_PENDING: ContextVar[Guard | None] = ContextVar("kept_sign_in_pending", default=None)
#: Whether this request's token sign-in may start from a kept one (inside `api_answer`).
_TOKENS_KEPT: ContextVar[bool] = ContextVar("kept_token_sign_ins", default=False)


def kept(session_key: str | None, slug: str) -> Kept | None:
    """The kept sign-in of the session `session_key` in project `slug`, if any."""
    entry = None if session_key is None else _KEPT.get((session_key, slug))
    return entry if entry is not None and entry.token is None else None


def remember(
    session_key: str, slug: str, session_data: str, user: User, membership: ProjectMembership | None
) -> None:
    """Keep a session's sign-in just verified: the session's data as read, its user and their
    membership, whose project was read with its row's version (`PROJECT_VERSION`)."""
    _remember(slug, session_key, user, membership, session_data=session_data, password=user.password)


def remember_token(token: Token, slug: str, user: User, membership: ProjectMembership | None) -> None:
    """Keep an API token's sign-in just verified (`annotations.api.JudgingTokenAuthentication`)."""
    _remember(slug, token.key, user, membership, token=sqlrows.clone(token))


def _remember(
    slug: str, key: str, user: User, membership: ProjectMembership | None, *, session_data: str | None = None,
    password: str | None = None, token: Token | None = None,
) -> None:  # fmt: skip
    """Keep a sign-in whose membership is an annotator's and whose project was read with its row's
    version: what the answer's statement checks. Anyone else's (not a member, a lead) is not kept."""
    if membership is None or membership.role != ProjectMembership.Role.ANNOTATOR:
        return
    version = getattr(membership.project, PROJECT_VERSION, None)
    if version is None:
        return
    guard = Guard(key, session_data, password, str(version))
    entry = Kept(session_data, sqlrows.clone(user), _membership_kept(membership), guard, token)
    with _KEPT_LOCK:
        _KEPT.pop((key, slug), None)
        if len(_KEPT) >= KEPT_MAX:
            del _KEPT[next(iter(_KEPT))]
        _KEPT[(key, slug)] = entry


def kept_token(key: str, slug: str) -> Kept | None:
    """The kept sign-in of the API token `key` in project `slug`, where this request may use one (inside
    `api_answer`); the request is then pending on its guard."""
    if not _TOKENS_KEPT.get():
        return None
    entry = _KEPT.get((key, slug))
    if entry is None or entry.token is None:
        return None
    _PENDING.set(entry.guard)
    return entry


def _membership_clone(membership: ProjectMembership) -> ProjectMembership:
    copied: ProjectMembership = sqlrows.clone(membership)
    copied.project = sqlrows.clone(membership.project)
    return copied


def _membership_kept(membership: ProjectMembership) -> ProjectMembership:
    """A copy of the membership to keep, its project the one copy kept of that project's version: the
    sign-ins of a project's many annotators share it (a project may hold long guidelines)."""
    project = membership.project
    key = (project.pk, getattr(project, PROJECT_VERSION, None))
    kept_project = _PROJECTS.get(key)
    if kept_project is None:
        kept_project = sqlrows.clone(project)
        with _KEPT_LOCK:
            if len(_PROJECTS) >= KEPT_PROJECTS_MAX:
                del _PROJECTS[next(iter(_PROJECTS))]
            _PROJECTS[key] = kept_project
    copied: ProjectMembership = sqlrows.clone(membership)
    copied.project = kept_project
    return copied


def forget(sign_in_key: str | None, slug: str) -> None:
    if sign_in_key is not None:
        with _KEPT_LOCK:
            _KEPT.pop((sign_in_key, slug), None)


def pending() -> Guard | None:
    """The guard the answer's statement checks, while this request's kept sign-in is unchecked."""
    return _PENDING.get()


def confirm() -> None:
    """The answer's statement found the kept sign-in as it was verified: the request is signed in."""
    _PENDING.set(None)


def require_confirmed() -> None:
    """Raise `SignInUnconfirmed` while this request's kept sign-in is unchecked: call it before a write
    or a reply that the answer's statement did not check."""
    if _PENDING.get() is not None:
        raise SignInUnconfirmed()


def _claims_next(request: HttpRequest) -> bool:
    """Whether the request is an answer with `"next": true` in a JSON body: the one-statement answer and
    claim, which checks a kept sign-in. Its body is read once here and kept (a re-run parses the same)."""
    if request.content_type != "application/json":
        return False
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("next") is True


def run_checked(
    run: Callable[[], R], slug: str, *, guard: Guard | None = None, tokens: bool = False
) -> tuple[bool, R | None]:
    """Run `run` (a view) for a request that may start from a kept sign-in: the page's session's, pending
    on `guard` from the start, or (`tokens`) an API token's, which its sign-in takes (`kept_token`).
    (True, its result) where it used none or the answer's statement confirmed the one it used. (False,
    None) where that sign-in did not hold, or the view replied (or raised) before the check: nothing was
    written for it, it is forgotten, and the caller signs in afresh and runs the view again."""
    allowed, pending_token = _TOKENS_KEPT.set(tokens), _PENDING.set(guard)
    result = None
    try:
        try:
            result = run()
        except SignInUnconfirmed:
            pass
        except Exception:
            if _PENDING.get() is None:
                raise
        unchecked = _PENDING.get()
    finally:
        _TOKENS_KEPT.reset(allowed)
        _PENDING.reset(pending_token)
    if unchecked is None:
        return True, result
    forget(unchecked.sign_in_key, slug)
    return False, None


def api_answer(view: Callable[..., Any]) -> Callable[..., Any]:
    """The judging API's answer views (DRF's), whose token sign-in may start from a kept one
    (`kept_token`) for an answer with `"next": true` (only the answer and claim in one statement checks
    it; a plain answer signs in with its statement, as before). Where the answer's statement found it no
    longer holds, or the view replied without that statement's check (a refusal, a validation error),
    the request signs in afresh and runs again (`run_checked`): DRF turns a view's exceptions into
    replies inside it, so the re-run is made here, around it, from the request's body as read once."""

    @wraps(view)
    def answered(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if sqlrows.vendor() == "postgresql" and _claims_next(request):
            slug = str(kwargs.get("slug", ""))
            done, response = run_checked(lambda: view(request, *args, **kwargs), slug, tokens=True)
            if done:
                return response
        return view(request, *args, **kwargs)

    return answered


__all__ = [
    "KEPT_MAX",
    "PROJECT_VERSION",
    "Guard",
    "Kept",
    "SignInUnconfirmed",
    "api_answer",
    "confirm",
    "forget",
    "kept",
    "kept_token",
    "pending",
    "remember",
    "remember_token",
    "require_confirmed",
    "run_checked",
]
