"""A team's home: its runs, qrels sources, latest evaluations (with live status) and comparisons."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from evalplatform.auth import SignedInRequest
from evalplatform.teams import can_create_team, get_team_for_member
from monitoring.evaluations import selectors
from monitoring.recsys_fraud import selectors as recsys_fraud
from monitoring.teams.activity import team_activity

#: Rows per list on the team's home (newest first).
LIST_LIMIT = 50
#: Changes listed under "What changed".
ACTIVITY_LIMIT = 20


@login_required
@require_safe
def team_list(request: SignedInRequest) -> HttpResponse:
    memberships = selectors.team_memberships(user=request.user)
    context = {"memberships": memberships, "can_create": can_create_team(request.user)}
    return render(request, "monitoring/team_list.html", context)


@login_required
@require_safe
def team_home(request: SignedInRequest, team: str) -> HttpResponse:
    membership = get_team_for_member(request.user, team)
    found = membership.team
    archived = request.GET.get("archived") == "1"  # "show archived", kept in the URL
    return render(
        request,
        "monitoring/team.html",
        {
            "membership": membership,
            "team": found,
            "runs": list(selectors.team_runs(team=found, archived=archived)[:LIST_LIMIT]),
            "qrels_sources": list(selectors.team_qrels_sources(team=found, archived=archived)[:LIST_LIMIT]),
            "evaluations": selectors.evaluation_results_attach(
                selectors.team_evaluations(team=found, archived=archived)[:LIST_LIMIT]
            ),
            "recommendation_sets": list(
                recsys_fraud.team_recommendation_sets(team=found, archived=archived)[:LIST_LIMIT]
            ),
            "fraud_score_sets": list(
                recsys_fraud.team_fraud_score_sets(team=found, archived=archived)[:LIST_LIMIT]
            ),
            "archived": archived,
            "comparisons": list(selectors.team_comparisons(team=found)[:LIST_LIMIT]),
            "list_limit": LIST_LIMIT,
            "activity": team_activity(teams=[found], limit=ACTIVITY_LIMIT),
        },
    )
