"""HTML views of the LLM judge (project leads only): the form that starts a grading job, and the job's page.

With LLM_JUDGE_ENABLED off (the default) the pages say how an operator turns it on, and a POST is refused
(409) without asking anything of anyone. Lookups go through `selectors.get_lead_project`.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_safe

from annotations import selectors
from annotations.machine_judges import llm
from annotations.machine_judges.llm_forms import LLMJudgeForm
from annotations.models import LLMJudgeJob, Project
from evalcore.llm_judge import PROMPT_VERSION
from evalplatform.auth import SignedInRequest
from evalplatform.errors import InputError


def page_context(project: Project, form: LLMJudgeForm | None = None) -> dict[str, Any]:
    """The "grade with an LLM" part of a page: the form when the judge is on, or how to turn it on."""
    enabled = llm.llm_enabled()
    return {
        "enabled": enabled,
        "model": llm.llm_endpoint().model if enabled else "",
        "prompt_version": PROMPT_VERSION,
        "form": (form or LLMJudgeForm(project=project)) if enabled else None,
        "jobs": list(llm.llm_jobs(project)[:10]),
        "disabled_message": llm.DISABLED_MESSAGE,
    }


@login_required
def llm_judge(request: SignedInRequest, slug: str) -> HttpResponse:
    """The form that starts a grading job, and the project's last jobs."""
    project = selectors.get_lead_project(request.user, slug)
    form = LLMJudgeForm(request.POST or None, project=project)
    status = 200
    if request.method == "POST":
        if not llm.llm_enabled():
            messages.error(request, llm.DISABLED_MESSAGE)
            status = 409
        elif form.is_valid():
            try:
                job = llm.llm_judge_start(
                    project=project, topics=form.cleaned_data["topics"], limit=form.cleaned_data["limit"],
                    created_by=request.user,
                )  # fmt: skip
            except llm.LLMJudgeBusy as busy:
                messages.error(request, str(busy))
                return redirect(busy.job)
            except InputError as error:
                messages.error(request, str(error))
                status = 400
            else:
                return redirect(job)
        else:
            status = 400
    context = {"project": project, "llm": page_context(project, form)}
    return render(request, "annotations/llm_judge.html", context, status=status)


@login_required
@require_safe
def llm_judge_job(request: SignedInRequest, slug: str, pk: int) -> HttpResponse:
    """A grading job's progress, then its summary: graded, unparsable, refused, failed, tokens, cost, cap."""
    project = selectors.get_lead_project(request.user, slug)
    job = get_object_or_404(LLMJudgeJob.objects.select_related("judge"), project=project, pk=pk)
    return render(request, "annotations/llm_judge_job.html", {"project": project, "job": job})
