"""Downloads of the reports (`monitoring.reports.services`): any member of the team (viewers too) takes an
evaluation's, a comparison's or a monitor run's HTML report, and a comparison's LaTeX or Markdown table."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.views.decorators.http import require_safe

from evalplatform.auth import SignedInRequest
from evalplatform.teams import get_team_for_member
from monitoring.embeddings import services as monitors
from monitoring.evaluations import selectors
from monitoring.reports import services as reports


@login_required
@require_safe
def evaluation_report(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team)
    evaluation = selectors.get_evaluation(team=membership.team, pk=pk, per_query=True)
    body = reports.evaluation_report(evaluation)
    return reports.report_response(
        body, filename=f"{membership.team.slug}-evaluation{evaluation.pk}-report.html"
    )


@login_required
@require_safe
def comparison_report(request: SignedInRequest, team: str, pk: int, fmt: str) -> HttpResponse:
    """The comparison as `fmt`: html (the report), latex or markdown (the table to cite)."""
    membership = get_team_for_member(request.user, team)
    comparison = selectors.get_comparison(team=membership.team, pk=pk, per_query=False)
    body = reports.comparison_export(comparison, fmt)
    extension = reports.FORMATS[fmt][1]
    name = "report" if fmt == "html" else "table"
    filename = f"{membership.team.slug}-comparison{comparison.pk}-{name}.{extension}"
    return reports.report_response(body, filename=filename, fmt=fmt)


@login_required
@require_safe
def monitor_run_report(request: SignedInRequest, team: str, stream: str) -> HttpResponse:
    """A monitor run of the stream (`?run=`; without it, the newest finished one) as an HTML report."""
    membership = get_team_for_member(request.user, team)
    found = monitors.get_stream(team=membership.team, slug=stream)
    run = reports.monitor_run_chosen(stream=found, pk=request.GET.get("run"))
    body = reports.monitor_run_report(run)
    return reports.report_response(
        body, filename=f"{membership.team.slug}-{found.slug}-run{run.pk}-report.html"
    )
