"""The judge page's answers signed in without a statement of their own (PostgreSQL).

An annotator's answer on the judge page (`views.judge_answer_next`) signs in from its session: the session,
its user and their membership of the project, read in one statement before the answer's. This process
keeps what such a sign-in read and verified (`remember`), by the session's key and the project; the
session's next answer in this process starts from it (`begin`) and makes no statement for it. Nothing is
trusted on that account: the answer's own statement (`annotations_answer_claim`, migration 0020) checks,
before it writes anything, that the session row is still the one verified (same key, same data, not
expired, naming the same user), that the user is still active with the same password (so a password change
or a deactivation ends the session here as Django's `get_user` does), that the project's row is the
version whose settings the answer's rules were read from, and that the user is still an annotator of it. If any of that fails it writes nothing and says `unverified`: the request forgets the
kept sign-in, signs in as a request always does (which may send the user to the login page) and runs again.

A request that starts from a kept sign-in is *pending* until that check passed (`confirm`, from
`hotpath.answer_and_claim`). Anything that would write before it, or a reply that does not come from it (a
refusal, an error), first asks `require_confirmed`, which raises `SignInUnconfirmed` while pending: the
request then signs in afresh and runs again, so that every reply and every write is made for a sign-in
verified during the request, as without this module. tests/annotations/test_kept_sign_ins.py holds it
to that: a logout, a password change, a deactivation, an expiry, a role change and a project change each
take effect on the next answer.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User

from annotations.models import ProjectMembership
from evalplatform import sqlrows

#: Kept sign-ins by (session key, project slug); the oldest dropped past `KEPT_MAX`.
_KEPT: dict[tuple[str, str], Kept] = {}
KEPT_MAX = 8192
_KEPT_LOCK = threading.Lock()


@dataclass(frozen=True)
class Guard:
    """What the answer's statement checks is unchanged before it writes (see the module's docstring)."""

    session_key: str
    session_data: str
    password: str
    #: The project row's version (`xmin`) its settings were read from.
    project_version: str


@dataclass(frozen=True)
class Kept:
    """A sign-in verified by a request of this process: the session's data, its user, their membership
    (its project attached), and what the next answer's statement checks."""

    session_data: str
    user: User
    membership: ProjectMembership
    guard: Guard

    def copies(self) -> tuple[User, ProjectMembership]:
        """Copies of the user and the membership (with its project) for one request, which may change
        them: the kept ones stay as verified."""
        membership = sqlrows.clone(self.membership)
        membership.project = sqlrows.clone(self.membership.project)
        return sqlrows.clone(self.user), membership


class SignInUnconfirmed(Exception):
    """The request's kept sign-in did not hold, or a reply was about to be made before it was checked:
    nothing was written for it. The request signs in afresh and runs again."""


#: The guard of this request's kept sign-in while it is unchecked; None when there is none or it held.
_PENDING: ContextVar[Guard | None] = ContextVar("kept_sign_in_pending", default=None)


def kept(session_key: str | None, slug: str) -> Kept | None:
    return None if session_key is None else _KEPT.get((session_key, slug))


def remember(
    session_key: str, slug: str, session_data: str, user: User, membership: ProjectMembership
) -> None:
    """Keep a sign-in just verified: the session's data as read, its user and their membership, whose
    project was read with its row's version (`project_version`)."""
    version = getattr(membership.project, PROJECT_VERSION, None)
    if version is None:
        return
    guard = Guard(session_key, session_data, user.password, str(version))
    kept_membership = sqlrows.clone(membership)
    kept_membership.project = sqlrows.clone(membership.project)
    entry = Kept(session_data, sqlrows.clone(user), kept_membership, guard)
    with _KEPT_LOCK:
        _KEPT.pop((session_key, slug), None)
        if len(_KEPT) >= KEPT_MAX:
            del _KEPT[next(iter(_KEPT))]
        _KEPT[(session_key, slug)] = entry


def forget(session_key: str | None, slug: str) -> None:
    if session_key is not None:
        with _KEPT_LOCK:
            _KEPT.pop((session_key, slug), None)


def begin(guard: Guard) -> Any:
    """Mark this request's sign-in pending on `guard`; the token `end` takes."""
    return _PENDING.set(guard)


def end(token: Any) -> None:
    _PENDING.reset(token)


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


#: The attribute of a project read with its row's version (`hotpath.session_member_of`).
PROJECT_VERSION = "_row_version"


__all__ = [
    "Guard",
    "Kept",
    "PROJECT_VERSION",
    "SignInUnconfirmed",
    "begin",
    "confirm",
    "end",
    "forget",
    "kept",
    "pending",
    "remember",
    "require_confirmed",
]
