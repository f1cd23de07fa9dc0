"""HTML pages of adjudication: the queue, the per-pair keyboard page, and the lead's choice of adjudicators.

The queue and the pair pages are for leads and the annotators a lead allowed
(`adjudication.get_adjudicator_membership`: 404 to non-members, 403 to other annotators); choosing
adjudicators is for leads (`selectors.get_lead_project`). Writes are POST forms that redirect.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from annotations import selectors
from annotations.adjudication import services as adjudication
from annotations.highlight import query_terms
from annotations.models import COMMENT_MAX_LENGTH, Project, ProjectMembership, Task
from annotations.views import posted_grade
from evalplatform.auth import SignedInRequest


@login_required
@require_safe
def adjudication_queue(request: SignedInRequest, slug: str) -> HttpResponse:
    membership = adjudication.get_adjudicator_membership(request.user, slug)
    project = membership.project
    queue = adjudication.adjudication_queue(project=project, with_gold=membership.is_lead)
    return render(
        request,
        "annotations/adjudicate_queue.html",
        {"project": project, "queue": queue, "is_lead": membership.is_lead},
    )


def _task(membership: ProjectMembership, task_id: int) -> Task:
    try:
        return adjudication.task_for(membership, task_id=task_id)
    except Task.DoesNotExist as exc:
        raise Http404("No such pair in this project.") from exc


@login_required
def adjudicate(request: SignedInRequest, slug: str, task_id: int) -> HttpResponse:
    """GET: the pair with every label given; POST: set its final grade and go to the next waiting pair."""
    membership = adjudication.get_adjudicator_membership(request.user, slug)
    project = membership.project
    task = _task(membership, task_id)
    if request.method == "POST":
        return _set(request, project, task)
    current = getattr(task, "adjudication", None)
    return render(
        request,
        "annotations/adjudicate.html",
        {
            "project": project,
            "task": task,
            "topic": task.topic,
            "document": task.document,
            "terms": query_terms(task.topic.title),
            "labels": adjudication.labels_given(project=project, task=task),
            "current": current,
            "gold": adjudication.gold_grade(task) if membership.is_lead else None,
            "note_max": COMMENT_MAX_LENGTH,
        },
    )


def _set(request: SignedInRequest, project: Project, task: Task) -> HttpResponse:
    grade = posted_grade(request)
    try:
        adjudication.adjudication_set(
            project=project,
            task=task,
            grade=grade,
            note=request.POST.get("note", ""),
            adjudicator=request.user,
        )
    except adjudication.AdjudicationError as exc:
        messages.error(request, str(exc))
        return redirect("annotations:adjudicate", project.slug, task.pk)
    messages.success(request, f"Final grade {grade} for {task.topic.qid} / {task.document.doc_id}.")
    following = adjudication.next_waiting(adjudication.adjudication_queue(project=project), after=task)
    if following is None:
        return redirect("annotations:adjudication", project.slug)
    return redirect("annotations:adjudicate", project.slug, following.pk)


@login_required
@require_POST
def adjudicator_allow(request: SignedInRequest, slug: str, user_id: int) -> HttpResponse:
    project = selectors.get_lead_project(request.user, slug)
    allowed = request.POST.get("allowed") == "1"
    try:
        membership = adjudication.adjudicator_allow(project=project, user_id=user_id, allowed=allowed)
    except ProjectMembership.DoesNotExist as exc:
        raise Http404("No such annotator in this project.") from exc
    name = membership.user.get_username()
    messages.success(request, f"{name} may now adjudicate." if allowed else f"{name} no longer adjudicates.")
    return redirect("annotations:project-detail", project.slug)
