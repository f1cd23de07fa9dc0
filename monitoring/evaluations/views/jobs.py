"""Starting evaluations and comparisons (editors only), and the job state that pages poll."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from evalplatform.auth import SignedInRequest
from evalplatform.errors import InputError
from evalplatform.jobs import JobStatus
from evalplatform.teams import get_team_for_member
from monitoring.evaluations import selectors
from monitoring.evaluations import services as evaluations
from monitoring.evaluations.forms import ComparisonForm, EvaluationForm


def preselected(
    request: HttpRequest, *, one: tuple[str, ...] = (), many: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The choices a link preselects (`?run=3`, `?runs=1&runs=2`); the form checks them on submit."""
    chosen: dict[str, Any] = {name: request.GET[name] for name in one if request.GET.get(name)}
    chosen.update({name: request.GET.getlist(name) for name in many if request.GET.getlist(name)})
    return chosen


@login_required
def evaluation_create(request: SignedInRequest, team: str) -> HttpResponse:
    membership = get_team_for_member(request.user, team, write=True)
    initial = preselected(request, one=("run", "qrels"))
    form = EvaluationForm(request.POST or None, team=membership.team, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            evaluation = evaluations.evaluation_create(
                run=form.run, qrels=form.qrels, measures=data["measure_names"], rel_level=data["rel_level"],
                complete=data["complete"], created_by=request.user,
            )  # fmt: skip
        except InputError as exc:
            form.add_error(None, str(exc))
        else:
            if evaluation.status == JobStatus.DONE:
                messages.info(request, "This run was already evaluated with these options: here it is.")
            else:
                messages.success(request, f"Evaluation of {form.run.name} on {form.qrels.name} queued.")
            return redirect(evaluation.get_absolute_url())
    return render(
        request,
        "monitoring/evaluation_form.html",
        {"team": membership.team, "membership": membership, "form": form},
        status=400 if form.errors else 200,
    )


@login_required
def comparison_create(request: SignedInRequest, team: str) -> HttpResponse:
    membership = get_team_for_member(request.user, team, write=True)
    initial = preselected(request, one=("qrels",), many=("runs",))
    form = ComparisonForm(request.POST or None, team=membership.team, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            comparison = evaluations.comparison_create(
                qrels=data["qrels"], runs=data["runs"], measures=data["measure_names"],
                rel_level=data["rel_level"], complete=data["complete"], test=data["test"],
                correction=data["correction"], alpha=data["alpha"], overlap_k=data["overlap_k"], rbo_p=data["rbo_p"],
                created_by=request.user,
            )  # fmt: skip
        except InputError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Comparison of {len(data['runs'])} runs queued.")
            return redirect(comparison.get_absolute_url())
    return render(
        request,
        "monitoring/comparison_form.html",
        {"team": membership.team, "membership": membership, "form": form},
        status=400 if form.errors else 200,
    )


@never_cache
@login_required
@require_GET
def job_state(request: SignedInRequest, team: str, kind: str, pk: int) -> JsonResponse:
    """`job.state()` of one of the team's jobs (`selectors.JOB_MODELS`), for the pages' polling script."""
    membership = get_team_for_member(request.user, team)
    return JsonResponse(selectors.get_job(team=membership.team, kind=kind, pk=pk).state())
