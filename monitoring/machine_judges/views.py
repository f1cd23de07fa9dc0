"""Starting the job that scores a leaderboard on a machine judge's labels (editors of the team); the
leaderboard page (`monitoring.evaluations.views.leaderboard`) shows its results."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotations.models import MachineJudge
from evalplatform.auth import SignedInRequest
from evalplatform.errors import InputError
from evalplatform.teams import get_team_for_member
from monitoring.evaluations import selectors
from monitoring.machine_judges.forms import MachineJudgeEvaluationForm
from monitoring.machine_judges.services import machine_judge_evaluation_create


@login_required
@require_POST
def leaderboard_ppi_compute(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    """Queue the leaderboard's scoring on the chosen judge's labels; back to the leaderboard showing it."""
    membership = get_team_for_member(request.user, team, write=True)
    qrels = selectors.get_qrels_source(team=membership.team, pk=pk)
    judges = (
        list(MachineJudge.objects.filter(project_id=qrels.build.project_id))
        if qrels.build is not None
        else []
    )
    form = MachineJudgeEvaluationForm(request.POST, judges=judges)
    back = reverse("monitoring:leaderboard", args=[membership.team.slug, qrels.pk])
    if not form.is_valid():
        for field, errors in form.errors.items():
            label = form.fields[field].label if field in form.fields else ""
            messages.error(request, f"{label or 'Machine judge'}: {' '.join(str(error) for error in errors)}")
        return redirect(back + ("?" + urlencode({"judge": request.POST["judge"]}) if request.POST.get("judge", "").isdigit() else ""))  # fmt: skip
    params = form.params()
    try:
        job = machine_judge_evaluation_create(qrels=qrels, created_by=request.user, **params)
    except InputError as error:
        messages.error(request, str(error))
    else:
        state = "queued" if not job.is_finished else f"already {job.status} for these labels and runs"
        messages.success(request, f"Scoring the leaderboard on {params['judge']}'s labels: {state}.")
    return redirect(back + "?" + urlencode({"judge": params["judge"].pk}))
