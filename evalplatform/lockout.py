"""Brute-force protection of every password login (the login page and the Django admin), with django-axes.

Failed logins are counted three ways within the cool-off (`LOGIN_COOLOFF_MINUTES`), each against its own
limit: one account from one address (`LOGIN_FAILURE_LIMIT`), one account from every address
(`LOGIN_ACCOUNT_FAILURE_LIMIT`: a guessing attack spread over many addresses) and one address over every
account (`LOGIN_ADDRESS_FAILURE_LIMIT`: one address trying many accounts). The first limit is the low
one; the wider two are higher, so that an attacker elsewhere, or colleagues behind one NAT, do not lock a
user out as easily as their own typing does. A successful login resets nothing: the failures before it
still count until the cool-off passes, so logging into one's own account cannot clear an address's count.

The client address is `REMOTE_ADDR` unless `TRUSTED_PROXY_COUNT` says how many reverse proxies append to
`X-Forwarded-For` (a header any client can forge, so it is read only when configured).
"""

from __future__ import annotations

from typing import Any

from axes.handlers.database import AxesDatabaseHandler
from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

#: What a limit counts over: axes' lockout parameters, in the order `lockout_parameters` gives them.
ACCOUNT_FROM_ADDRESS = ("username", "ip_address")
ACCOUNT = ("username",)
ADDRESS = ("ip_address",)


def lockout_rules() -> list[tuple[tuple[str, ...], int]]:
    """Each count axes keeps with its own limit; a limit of 0 turns that count off."""
    rules = [
        (ACCOUNT_FROM_ADDRESS, settings.LOGIN_FAILURE_LIMIT),
        (ACCOUNT, settings.LOGIN_ACCOUNT_FAILURE_LIMIT),
        (ADDRESS, settings.LOGIN_ADDRESS_FAILURE_LIMIT),
    ]
    return [(fields, limit) for fields, limit in rules if limit > 0]


def lockout_parameters(request: Any = None, credentials: Any = None) -> list[list[str]]:
    """`AXES_LOCKOUT_PARAMETERS`: one entry per rule, each a combination axes filters its attempts by."""
    return [list(fields) for fields, _ in lockout_rules()]


def client_address(request: HttpRequest) -> str | None:
    """`AXES_CLIENT_IP_CALLABLE`: the address the nearest of `TRUSTED_PROXY_COUNT` proxies saw.

    Each proxy appends the address it was connected from, so with N trusted proxies the client is the
    N-th entry from the right; entries further left came from the client and are not trusted.
    """
    remote = request.META.get("REMOTE_ADDR")
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies <= 0:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    forwarded = [part for part in forwarded if part]
    return forwarded[-proxies] if len(forwarded) >= proxies else remote


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: Any = None
) -> HttpResponse:
    """`AXES_LOCKOUT_CALLABLE`: the lockout page, HTTP 429 with Retry-After, for the login page and the admin."""
    minutes = settings.LOGIN_COOLOFF_MINUTES
    response = render(request, "registration/locked_out.html", {"minutes": minutes}, status=429)
    response["Retry-After"] = str(minutes * 60)
    return response


class LoginLockoutHandler(AxesDatabaseHandler):
    """axes' database handler with a limit per count rather than one for all.

    axes compares one number with `AXES_FAILURE_LIMIT` (= `LOGIN_FAILURE_LIMIT`): each count is scaled
    onto that limit, so the number reaches it exactly when some count reaches its own limit.
    """

    def get_failures(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        common = settings.AXES_FAILURE_LIMIT
        attempts_per_rule = self.get_user_attempts(request, credentials)
        scaled = 0
        for attempts, (_, limit) in zip(attempts_per_rule, lockout_rules(), strict=True):
            failures = attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0
            scaled = max(scaled, failures * common // limit)
        return scaled
