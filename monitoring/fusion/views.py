"""Fusing runs from the web: the form (editors), and a fusion's page (members): its job state, the inputs and
parameters it ran with, the weights an optimisation chose with each fold's held-out score, and the run it
stored. Nothing is fused in a request: the job does it (`monitoring.fusion.services`)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_safe

from evalplatform.auth import SignedInRequest
from evalplatform.errors import InputError
from evalplatform.teams import get_team_for_member
from monitoring.evaluations.views.jobs import preselected
from monitoring.fusion import selectors, services
from monitoring.fusion.forms import FusionForm
from monitoring.fusion.models import DEFAULT_MEASURE


@login_required
def fusion_create(request: SignedInRequest, team: str) -> HttpResponse:
    membership = get_team_for_member(request.user, team, write=True)
    form = FusionForm(
        request.POST or None, team=membership.team, initial=preselected(request, many=("runs",))
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            fusion = services.fusion_create(
                team=membership.team, runs=data["runs"], method=data["method"], norm=data["norm"],
                weights=data["weights"], k=data["k"], gamma=data["gamma"], sigma=data["sigma"], phi=data["phi"],
                qrels=data["qrels"], measure=data["measure"] or DEFAULT_MEASURE,
                folds=data["folds"], step=data["step"], seed=data["seed"], name=data["name"], depth=data["depth"],
                created_by=request.user,
            )  # fmt: skip
        except InputError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Fusion of {len(data['runs'])} runs queued.")
            return redirect(fusion.get_absolute_url())
    return render(
        request,
        "monitoring/fusion_form.html",
        {"team": membership.team, "membership": membership, "form": form},
        status=400 if form.errors else 200,
    )


@login_required
@require_safe
def fusion_detail(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team)
    fusion = selectors.get_fusion(team=membership.team, pk=pk)
    weights = fusion.weights or [None] * len(fusion.inputs)
    context = {
        "team": membership.team,
        "membership": membership,
        "fusion": fusion,
        "inputs": list(zip(fusion.inputs, weights, strict=False)),
    }
    return render(request, "monitoring/fusion_detail.html", context)
