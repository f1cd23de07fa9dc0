"""The leaderboard diff between two qrels sources of a team: by default a source against the version
before it (`loop.previous_source`), else `?from=`; per measure the table of old and new scores and ranks,
Kendall's tau and tau_ap, and a chart of one measure with its numbers beside it; as CSV too."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from evalplatform.auth import SignedInRequest
from evalplatform.csvexport import csv_response
from evalplatform.errors import InputError
from evalplatform.models import TeamMembership
from evalplatform.teams import get_team_for_member
from monitoring.evaluations import charts, selectors
from monitoring.evaluations.diffs import LeaderboardDiff, leaderboard_diff
from monitoring.evaluations.loop import previous_source
from monitoring.models import QrelsSource


def diff_sources(*, team: Any, pk: Any, old: Any) -> tuple[QrelsSource, QrelsSource | None]:
    """The new source (`pk`) and the old one: `old` when given, else the version before (None: none)."""
    new = selectors.get_qrels_source(team=team, pk=pk)
    if old not in (None, ""):
        return new, selectors.get_qrels_source(team=team, pk=old)
    return new, previous_source(new)


def _diff(
    request: SignedInRequest, team: str, pk: int
) -> tuple[TeamMembership, QrelsSource, LeaderboardDiff | None, str]:
    """The membership, the new source, the diff (None without an old source) and an error for the user."""
    membership = get_team_for_member(request.user, team)
    new, old = diff_sources(team=membership.team, pk=pk, old=request.GET.get("from"))
    if old is None:
        return membership, new, None, ""
    measures = [m.strip() for value in request.GET.getlist("measures") for m in value.split(",") if m.strip()]
    try:
        return membership, new, leaderboard_diff(old=old, new=new, measures=measures or None), ""
    except InputError as error:
        return membership, new, None, str(error)


@login_required
@require_safe
def leaderboard_diff_page(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership, new, diff, error = _diff(request, team, pk)
    context: dict[str, Any] = {
        "error": error,
        "team": membership.team,
        "membership": membership,
        "new": new,
        "diff": diff,
        "sources": QrelsSource.objects.filter(team=membership.team)
        .exclude(pk=new.pk)
        .order_by("-created_at"),
    }
    if diff is not None and diff.measures:
        charted = next((m for m in diff.measures if m.measure == request.GET.get("chart")), diff.measures[0])
        column = selectors.measure_column(charted.measure)
        context.update(
            charted=charted,
            figure=charts.leaderboard_diff_figure(
                charted, column=column, old=diff.old.name, new=diff.new.name
            ),
            csv_url=reverse("monitoring:leaderboard-diff-csv", args=[membership.team.slug, new.pk])
            + "?"
            + urlencode({"from": diff.old.pk}),
            chart_links=[
                (m.measure, "?" + urlencode({"from": diff.old.pk, "chart": m.measure})) for m in diff.measures
            ],
        )
    return render(request, "monitoring/leaderboard_diff.html", context)


CSV_HEADER = [
    "measure", "run_id", "run", "old", "old_ci_low", "old_ci_high", "new", "new_ci_low", "new_ci_high",
    "change", "old_rank", "new_rank", "rank_change", "kendall_tau", "tau_ap",
]  # fmt: skip


def diff_csv_rows(diff: LeaderboardDiff) -> list[list[Any]]:
    """One row per measure and run (the measure's tau and tau_ap repeated on each of its rows)."""

    def cells(result: Any) -> list[Any]:
        return [None, None, None] if result is None else [result.value, result.ci_low, result.ci_high]

    return [
        [measure.measure, row.run.pk, row.run.name, *cells(row.old), *cells(row.new), row.change,
         row.old_rank, row.new_rank, row.rank_change, measure.kendall_tau, measure.tau_ap]
        for measure in diff.measures
        for row in measure.rows
    ]  # fmt: skip


@login_required
@require_safe
def leaderboard_diff_csv(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership, new, diff, error = _diff(request, team, pk)
    if error:
        return HttpResponseBadRequest(error, content_type="text/plain; charset=utf-8")
    if diff is None:
        raise Http404("No earlier version to compare with: choose one with ?from=.")
    filename = f"{membership.team.slug}-leaderboard-diff-qrels{diff.old.pk}-qrels{new.pk}.csv"
    return csv_response(filename, CSV_HEADER, diff_csv_rows(diff))
