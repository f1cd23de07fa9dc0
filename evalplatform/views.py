"""Project-wide pages: the home page (with a team member's teams and latest evaluations) and the health
endpoint."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_safe

from annotations.selectors import annotator_open_projects
from evalplatform.auth import SignedInRequest
from evalplatform.health import health_report, public_health_report
from evalplatform.roles import Role, user_roles
from monitoring.alerts import team_open_events
from monitoring.selectors import latest_evaluations, team_memberships

#: How many of their teams' newest evaluations and open alerts a team member's home lists.
HOME_EVALUATIONS = 10
HOME_ALERTS = 20


@login_required
@require_safe
def home(request: SignedInRequest) -> HttpResponse:
    roles = user_roles(request.user)
    memberships = team_memberships(user=request.user)
    teams = [membership.team for membership in memberships]
    return render(
        request,
        "evalplatform/home.html",
        {
            "roles": sorted(role.label for role in roles),
            "is_annotator": Role.ANNOTATOR in roles,
            "open_projects": annotator_open_projects(user=request.user),
            "is_lead": Role.PROJECT_LEAD in roles or request.user.is_superuser,
            "is_team_member": Role.TEAM_MEMBER in roles or request.user.is_superuser or bool(teams),
            "memberships": memberships,
            "evaluations": latest_evaluations(teams=teams, limit=HOME_EVALUATIONS) if teams else [],
            "open_alerts": list(team_open_events(teams=teams)[:HOME_ALERTS]) if teams else [],
        },
    )


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The overall status for anyone; each check's details for staff and holders of `HEALTHZ_TOKEN`."""
    status, body = health_report() if _may_see_health_details(request) else public_health_report()
    return JsonResponse(body, status=status)


def _may_see_health_details(request: HttpRequest) -> bool:
    if request.user.is_authenticated and request.user.is_staff:
        return True
    expected = settings.HEALTHZ_TOKEN
    if not expected:
        return False
    scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
    given = credential.strip() if scheme.lower() == "bearer" else request.GET.get("token", "")
    return hmac.compare_digest(given.encode(), expected.encode())
