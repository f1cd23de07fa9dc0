"""HTML views of machine judges' imports: a search log's upload (a click model's judgments, in a job) and
the page that follows an import job. Leads only, through `selectors.get_lead_project`."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_safe

from annotations import selectors
from annotations.machine_judges.click_forms import ClickLogForm
from annotations.machine_judges.imports import click_log_request
from annotations.models import MachineJudgeImport, Project
from evalcore.errors import FormatError
from evalplatform.auth import SignedInRequest

#: The imports the judges' page lists, newest first.
IMPORTS_SHOWN = 20


def recent_imports(project: Project) -> list[MachineJudgeImport]:
    """The project's latest imports, each with its judge (one query)."""
    return list(
        MachineJudgeImport.objects.filter(project=project)
        .select_related("project", "judge")
        .order_by("-created_at", "-id")[:IMPORTS_SHOWN]
    )


@login_required
def click_log_upload(request: SignedInRequest, slug: str) -> HttpResponse:
    """Upload a search log: a job derives a click model's judgments and stores them as a judge's labels."""
    project = selectors.get_lead_project(request.user, slug)
    form = ClickLogForm(request.POST or None, request.FILES or None, project=project)
    error: FormatError | None = None
    if request.method == "POST" and form.is_valid():
        try:
            job = click_log_request(
                project=project,
                upload=form.cleaned_data["file"],
                params=form.params(),
                created_by=request.user,
            )
        except FormatError as exc:
            error = exc
        else:
            return redirect(job)
    return render(
        request,
        "annotations/machine_judge_click_log.html",
        {"project": project, "form": form, "error": error},
        status=400 if error or form.errors else 200,
    )


@login_required
@require_safe
def machine_judge_import(request: SignedInRequest, slug: str, pk: int) -> HttpResponse:
    """An import job's progress, then what it stored (and its judge) or why it stored nothing."""
    project = selectors.get_lead_project(request.user, slug)
    job = get_object_or_404(MachineJudgeImport.objects.select_related("judge"), project=project, pk=pk)
    context = {"project": project, "job": job, "judge_name": judge_name(job)}
    return render(request, "annotations/machine_judge_import.html", context)


def judge_name(job: MachineJudgeImport) -> str:
    """The judge the job imports into, as asked (a search log's judge is `clicks-<model>` unless named)."""
    return str(job.parameters.get("name") or f"clicks-{job.parameters.get('model', '')}")
