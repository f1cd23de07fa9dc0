"""The home page: a signed-in user's roles, the projects they can judge and their teams' latest
evaluations, latest observations (from the one metric table) and open alerts. It reads both apps, so it
lives in the composition layer."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from annotations.selectors import annotator_accuracy_trend, annotator_queues
from evalplatform.auth import SignedInRequest
from evalplatform.roles import Role, user_roles
from monitoring.alerts.services import team_open_events
from monitoring.evaluations.selectors import latest_evaluations, team_memberships
from monitoring.teams.activity import team_activity
from series.selectors import latest_observations

#: How many of their teams' newest evaluations and open alerts a team member's home lists.
HOME_EVALUATIONS = 10
HOME_ALERTS = 20
#: How many of their teams' most recently observed series it lists.
HOME_SERIES = 10
#: How many changes in their teams ("what changed") it lists.
HOME_ACTIVITY = 15


@login_required
@require_safe
def home(request: SignedInRequest) -> HttpResponse:
    roles = user_roles(request.user)
    memberships = team_memberships(user=request.user)
    teams = [membership.team for membership in memberships]
    queues = annotator_queues(user=request.user)
    return render(
        request,
        "portal/home.html",
        {
            "roles": sorted(role.label for role in roles),
            "is_annotator": Role.ANNOTATOR in roles,
            "open_projects": [entry for entry in queues if entry.remaining > 0],
            "queues": queues,
            "accuracy_trends": annotator_accuracy_trend(user=request.user) if queues else [],
            "activity": team_activity(teams=teams, limit=HOME_ACTIVITY),
            "is_lead": Role.PROJECT_LEAD in roles or request.user.is_superuser,
            "is_team_member": Role.TEAM_MEMBER in roles or request.user.is_superuser or bool(teams),
            "memberships": memberships,
            "evaluations": latest_evaluations(teams=teams, limit=HOME_EVALUATIONS) if teams else [],
            "observations": latest_observations([team.pk for team in teams], limit=HOME_SERIES)
            if teams
            else [],
            "open_alerts": list(team_open_events(teams=teams)[:HOME_ALERTS]) if teams else [],
        },
    )
