"""Uploading runs and qrels files, and picking a judging project's qrels build (editors only).

A file in the wrong format is refused at once with the file, the line and the reason (`UploadError`),
and nothing is stored; the page shows the message (HTTP 400).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from evalcore.comparison import DEFAULT_MEASURES
from evalplatform.auth import SignedInRequest
from evalplatform.errors import InputError
from evalplatform.models import TeamMembership
from evalplatform.teams import get_team_for_member
from monitoring.evaluations import selectors
from monitoring.evaluations import services as evaluations
from monitoring.evaluations.forms import QrelsBuildForm, QrelsUploadForm, RunUploadForm
from monitoring.files import uploads
from monitoring.models import QrelsSource, Run


@login_required
def run_upload(request: SignedInRequest, team: str) -> HttpResponse:
    membership = get_team_for_member(request.user, team, write=True)
    form = RunUploadForm(request.POST or None, request.FILES or None, team=membership.team)
    error = ""
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = uploads.run_upload(
                team=membership.team, upload=data["file"], name=data["name"], description=data["description"],
                tags=data["tags"], uploaded_by=request.user,
            )  # fmt: skip
        except uploads.UploadError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Uploaded {run.name}: {run.original_name}.")
            if data["evaluate_on"] is None:
                return redirect(run.get_absolute_url())
            return _evaluate_uploaded(request, run, data["evaluate_on"])
    return render(
        request,
        "monitoring/run_upload.html",
        {"team": membership.team, "membership": membership, "form": form, "error": error},
        status=400 if error or form.errors else 200,
    )


def _evaluate_uploaded(request: SignedInRequest, run: Run, qrels: QrelsSource) -> HttpResponse:
    try:
        evaluation = evaluations.evaluation_create(
            run=run, qrels=qrels, measures=DEFAULT_MEASURES, created_by=request.user
        )
    except InputError as exc:  # the run is kept; the evaluation can be started again from its page
        messages.error(request, f"The evaluation was not started: {exc}")
        return redirect(run.get_absolute_url())
    messages.success(request, f"Evaluating it on {qrels.name}; the page follows the job.")
    return redirect(evaluation.get_absolute_url())


@login_required
def qrels_add(request: SignedInRequest, team: str) -> HttpResponse:
    """Upload a qrels file (POST here), or pick a build (the build form posts to `qrels_from_build`)."""
    membership = get_team_for_member(request.user, team, write=True)
    form = QrelsUploadForm(request.POST or None, request.FILES or None)
    error = ""
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            source = uploads.qrels_upload(
                team=membership.team, upload=data["file"], name=data["name"],
                description=data["description"], uploaded_by=request.user,
            )  # fmt: skip
        except uploads.UploadError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Uploaded the qrels {source.name}: {source.original_name}.")
            return redirect("monitoring:team", membership.team.slug)
    return _qrels_page(request, membership, form, QrelsBuildForm(team=membership.team), error)


@login_required
@require_POST
def qrels_from_build(request: SignedInRequest, team: str) -> HttpResponse:
    membership = get_team_for_member(request.user, team, write=True)
    form = QrelsBuildForm(request.POST, team=membership.team)
    error = ""
    if form.is_valid():
        try:
            source = uploads.qrels_source_for_build(
                team=membership.team, build=form.chosen_build, by=request.user
            )
        except uploads.UploadError as exc:
            error = str(exc)
        else:
            messages.success(request, f"The qrels {source.name} are ready to evaluate against.")
            return redirect("monitoring:team", membership.team.slug)
    return _qrels_page(request, membership, QrelsUploadForm(), form, error)


def _qrels_page(
    request: HttpRequest, membership: TeamMembership, upload_form: QrelsUploadForm, build_form: QrelsBuildForm,
    error: str,
) -> HttpResponse:  # fmt: skip
    return render(
        request,
        "monitoring/qrels_add.html",
        {
            "team": membership.team,
            "membership": membership,
            "upload_form": upload_form,
            "build_form": build_form,
            "has_builds": selectors.linked_qrels_builds(team=membership.team).exists(),
            "error": error,
        },
        status=400 if error or upload_form.errors or build_form.errors else 200,
    )
