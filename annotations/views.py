"""HTML views of the judging workflow: the annotator's queue and the lead's project pages.

Every view looks its project up through `selectors.get_project_for_member`, which answers 404 to
non-members and 403 to members of the wrong role. Forms work without JavaScript (POST, then redirect).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from datetime import datetime
from functools import lru_cache, partial, wraps
from typing import Any, cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.middleware.csrf import CSRF_TOKEN_LENGTH, get_token
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import get_script_prefix, get_urlconf, reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from annotations import hooks, hotpath, judge_template, kept_sign_ins, selectors, services
from annotations.forms import ImportForm, MemberForm, ProjectForm
from annotations.highlight import query_terms
from annotations.imports import FORMATS, KINDS, import_request
from annotations.models import (
    COMMENT_MAX_LENGTH,
    Annotation,
    GoldLabel,
    ImportJob,
    Project,
    ProjectMembership,
)
from evalcore.errors import FormatError
from evalplatform import sqlrows
from evalplatform.auth import (
    SignedInRequest,
    User,
    session_sign_in_again,
    session_sign_in_kept,
    session_sign_in_with,
)
from evalplatform.csvexport import cell
from evalplatform.forms import ConfirmForm
from evalplatform.people import invitation_message
from evalplatform.roles import Role as PlatformRole
from evalplatform.roles import user_has_role

Role = ProjectMembership.Role
HISTORY_PAGE_SIZE = 50


def _can_create_projects(user: Any) -> bool:
    return user_has_role(user, PlatformRole.PROJECT_LEAD)


# --- projects -------------------------------------------------------------------------------------------


@login_required
@require_safe
def project_list(request: SignedInRequest) -> HttpResponse:
    memberships = list(selectors.projects_for_user(request.user))
    return render(
        request,
        "annotations/project_list.html",
        {"memberships": memberships, "can_create": _can_create_projects(request.user)},
    )


@login_required
def project_create(request: SignedInRequest) -> HttpResponse:
    if not _can_create_projects(request.user):
        raise PermissionDenied("Only project leads can create projects.")
    form = ProjectForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = {k: v for k, v in form.cleaned_data.items() if k not in ("slug", "name")}
        project = services.project_create(
            creator=request.user, slug=form.cleaned_data["slug"], name=form.cleaned_data["name"], **data
        )
        messages.success(request, f"Created {project.name}. Import topics, documents and a pool next.")
        return redirect("annotations:project-import", project.slug)
    return render(request, "annotations/project_form.html", {"form": form, "creating": True})


@login_required
@require_safe
def project_detail(request: SignedInRequest, slug: str) -> HttpResponse:
    membership = selectors.get_project_for_member(request.user, slug)
    if membership.role == Role.ANNOTATOR:
        return redirect("annotations:judge", slug)
    project = membership.project
    gold = GoldLabel.objects.filter(task__project=project).select_related("task__topic", "task__document")
    return render(
        request,
        "annotations/project_detail.html",
        {
            "project": project,
            "totals": selectors.project_totals(project=project),
            "topics": list(selectors.topic_progress(project=project)),
            "annotators": list(selectors.annotator_progress(project=project)),
            "members": list(project.memberships.select_related("user").order_by("role", "user__username")),
            "gold_labels": list(gold.order_by("task__topic__qid", "task__document__doc_id")[:50]),
            "member_form": MemberForm(),
            "app_links": hooks.project_links(project),
        },
    )


@login_required
@require_safe
def project_comments(request: SignedInRequest, slug: str) -> HttpResponse:
    """The annotators' comments on their answers, newest first: what they flagged for the lead."""
    project = selectors.get_lead_project(request.user, slug)
    page, rows = _answers_page(request, project, selectors.project_comments(project=project))
    return render(request, "annotations/comments.html", {"project": project, "page": page, "rows": rows})


@login_required
def project_edit(request: SignedInRequest, slug: str) -> HttpResponse:
    project = selectors.get_lead_project(request.user, slug)
    form = ProjectForm(request.POST or None, instance=project, user=request.user)
    if request.method == "POST" and form.is_valid():
        services.project_update(project=form.save(commit=False), changed=form.changed_data)
        messages.success(request, "Saved the project's settings.")
        return redirect("annotations:project-detail", project.slug)
    return render(request, "annotations/project_form.html", {"form": form, "project": project})


@login_required
@require_POST
def member_add(request: SignedInRequest, slug: str) -> HttpResponse:
    """Add a member by username or email (an email with no account is invited), or change their role."""
    project = selectors.get_lead_project(request.user, slug)
    form = MemberForm(request.POST)
    if form.is_valid():
        person, role = form.cleaned_data["username"], form.cleaned_data["role"]
        try:
            _, invitation = services.member_add(
                project=project, person=person, role=role, invited_by=request.user, request=request
            )
        except ValidationError as exc:
            form.add_error("username", exc)
        except services.LastLeadError as exc:
            form.add_error("role", str(exc))
        else:
            level, text = invitation_message(invitation, services.member_what(project, role))
            getattr(messages, level)(request, text)
            return redirect("annotations:project-detail", project.slug)
    for error in form.errors.get("username", []) + form.errors.get("role", []):
        messages.error(request, str(error))
    return redirect("annotations:project-detail", project.slug)


@login_required
@require_http_methods(["GET", "POST"])
def member_remove(request: SignedInRequest, slug: str, pk: int) -> HttpResponse:
    """A confirmation naming what goes (GET), then the member taken off the project (POST)."""
    project = selectors.get_lead_project(request.user, slug)
    member = get_object_or_404(ProjectMembership.objects.select_related("user"), project=project, pk=pk)
    name = member.user.get_username()
    form = ConfirmForm(request.POST or None, expected=f"remove {name}")
    if request.method == "POST" and form.is_valid():
        try:
            services.member_change(project=project, user=member.user, role=None)
        except services.LastLeadError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Took {name} off {project.name}.")
        return redirect("annotations:project-detail", project.slug)
    context = {
        "title": f"Take {name} off {project.name}?",
        "consequences": [
            f"{name} can no longer claim or answer tasks of {project.name}; the tasks they hold go back to the pool.",
            "Their answers stay, and count in quality figures and qrels builds as before.",
        ],
        "form": form, "button": f"Remove {name}", "project": project,
        "cancel": reverse("annotations:project-detail", args=[project.slug]),
    }  # fmt: skip
    status = 200 if request.method == "GET" else 400
    return render(request, "evalplatform/confirm.html", context, status=status)


@login_required
def project_import(request: SignedInRequest, slug: str) -> HttpResponse:
    project = selectors.get_lead_project(request.user, slug)
    form = ImportForm(request.POST or None, request.FILES or None)
    error: FormatError | None = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            result = import_request(
                project=project, kind=data["kind"], upload=data["file"], fmt=data["format"] or None,
                depth=data["depth"], created_by=request.user,
            )  # fmt: skip
        except FormatError as exc:
            error = exc
        else:
            if isinstance(result, ImportJob):  # a large file: its page follows the job
                return redirect(result)
            messages.success(request, f"{result.file}: {result.summary}")
            return redirect("annotations:project-import", project.slug)
    return render(
        request,
        "annotations/project_import.html",
        {"project": project, "form": form, "error": error, "formats": FORMATS, "kinds": KINDS},
        status=400 if error or form.errors else 200,
    )


@login_required
@require_safe
def import_job(request: SignedInRequest, slug: str, pk: int) -> HttpResponse:
    """A background import's progress, then what it imported or why it imported nothing."""
    project = selectors.get_lead_project(request.user, slug)
    job = get_object_or_404(ImportJob, project=project, pk=pk)
    context = {"project": project, "job": job, "kind_label": KINDS.get(job.kind, job.kind)}
    return render(request, "annotations/import_job.html", context)


@login_required
@require_safe
def guidelines(request: SignedInRequest, slug: str) -> HttpResponse:
    project = selectors.get_project_for_member(request.user, slug).project
    return render(request, "annotations/guidelines.html", {"project": project})


# --- the annotator's queue ------------------------------------------------------------------------------


@login_required
@require_safe
def judge(request: SignedInRequest, slug: str) -> HttpResponse:
    membership = selectors.get_project_for_member(request.user, slug, role=Role.ANNOTATOR)
    claim = services.task_claim(project=membership.project, annotator=request.user)
    undoable = selectors.last_undoable_annotation(project=membership.project, annotator=request.user)
    context = _judge_context(membership, request.user, claim, undoable)
    context["task_part"] = judge_template.render(
        {**context, "request": request, "csrf_token": get_token(request)}
    )
    return render(request, "annotations/judge.html", context)


#: A task id no URL holds, reversed once and replaced by each task's own (`judge_urls`).
_TASK_MARKER = 987654321987654321
#: The judge page's links: the key the task part reads, the URL's name, whether it names a task.
_JUDGE_LINKS = (
    ("judge", "annotations:judge", False),
    ("undo", "annotations:judge-undo", False),
    ("history", "annotations:judge-history", False),
    ("guidelines", "annotations:guidelines", False),
    ("continue", "annotations:judge-continue", False),
    ("answer", "annotations:judge-answer", True),
    ("answer_next", "annotations:judge-answer-next", True),
)


@lru_cache(maxsize=4096)
def _judge_url_shapes(prefix: str, urlconf: str | None, slug: str) -> tuple[tuple[str, str, bool], ...]:
    # `prefix` and `urlconf` key the cache: `reverse` reads them from the request's thread.
    shapes = [(key, reverse(name, args=[slug, _TASK_MARKER] if task else [slug]), task)
              for key, name, task in _JUDGE_LINKS]  # fmt: skip
    return (*shapes, ("projects", reverse("annotations:project-list"), False))


def judge_urls(slug: str, assignment_id: int | None = None) -> dict[str, str]:
    """The judge page's links for project `slug`, and the answer URLs of the task `assignment_id` where
    one is served: reversed once per project and process, since the task part is rendered on every
    answer and its `{% url %}` tags were a twentieth of the answer's Python (py-spy, the load benchmark's
    page mode)."""
    marker = str(_TASK_MARKER)
    return {
        key: url.replace(marker, str(assignment_id)) if task else url
        for key, url, task in _judge_url_shapes(get_script_prefix(), get_urlconf(), slug)
        if assignment_id is not None or not task
    }


def _judge_context(
    membership: ProjectMembership, annotator: Any, claim: services.Claim, undoable: Annotation | None
) -> dict[str, Any]:
    """What the judge page's task part (`judge_template`) shows after `claim`: the whole page, and the
    one-request answer's reply, render it from this."""
    project = membership.project
    # A claim that served a new task brings its counts. Otherwise (the task held: after an undo, a
    # "Change", a reload; a break) they are counted afresh, as the open totals cached may predate an undo.
    progress = claim.counts or selectors.queue_counts(project=project, annotator=annotator, fresh=True)
    context: dict[str, Any] = {
        "project": project,
        "claim": claim,
        "progress": progress,
        "undoable": undoable,
        "undo_rule": selectors.UNDO_RULE,
        "urls": judge_urls(project.slug, claim.assignment.pk if claim.assignment is not None else None),
    }
    if claim.assignment is not None:
        task = claim.assignment.task
        context.update(
            assignment=claim.assignment,
            topic=task.topic,
            document=task.document,
            terms=query_terms(task.topic.title),
            seconds_left=max(
                0, round(project.min_seconds_per_task - claim.assignment.seconds_since_served(), 1)
            ),
        )
    elif claim.status == "break":
        context["session"] = selectors.session_state(membership=membership)
    return context


def posted_grade(request: HttpRequest) -> int | None:
    """The form's `grade` as an integer, or None (the service then refuses it as off the scale)."""
    try:
        return int(request.POST.get("grade", ""))
    except ValueError:
        return None


def _saved_message(answer: Annotation, label: str) -> str:
    if answer.skipped:
        return "Skipped."
    if answer.unclear:
        return "Marked as unclear."
    if answer.too_fast:
        return f"Saved {answer.grade} ({label}), but flagged as too fast: it will not count."
    return f"Saved {answer.grade} ({label})."


def _posted_answer(
    request: HttpRequest, project: Project, annotator: Any, assignment_id: int, *, claim_next: bool
) -> Annotation | services.Answered:
    """Store the answer the judge form posted (a grade, `action=skip` or `action=unclear`, and the
    comment); with `claim_next`, claim the next task in the answer's transaction, as the API's `next: true`."""
    action = request.POST.get("action", "grade")
    common: dict[str, Any] = {
        "project": project,
        "annotator": annotator,
        "assignment_id": assignment_id,
        "comment": request.POST.get("comment", ""),
    }
    if action == "skip":
        skip = services.annotation_skip_and_claim if claim_next else services.annotation_skip
        return skip(**common)
    submit = services.annotation_submit_and_claim if claim_next else services.annotation_submit
    if action == "unclear":
        return submit(**common, unclear=True)
    return submit(**common, grade=posted_grade(request))


@login_required
@require_POST
def judge_answer(request: SignedInRequest, slug: str, assignment_id: int) -> HttpResponse:
    """The judge form's answer without JavaScript: store it, then redirect to the page (which claims)."""
    project = selectors.get_project_for_member(request.user, slug, role=Role.ANNOTATOR).project
    try:
        answer = _posted_answer(request, project, request.user, assignment_id, claim_next=False)
    except services.TooFast as exc:
        messages.warning(request, str(exc))
    except services.JudgingError as exc:
        messages.error(request, str(exc))
    else:
        assert isinstance(answer, Annotation)
        messages.success(request, _saved_message(answer, project.grade_label(answer.grade)))
    return redirect("annotations:judge", slug)


def _session_with_membership(
    session_key: str, unexpired_after: Any, *, slug: str, read: dict[str, Any]
) -> tuple[str, Any] | None:
    """The session, its user and their membership of the project `slug`, read in one statement; the
    membership kept on the user for `get_project_for_member`, and what was read in `read` (for
    `kept_sign_ins.remember`)."""
    found = hotpath.session_member_of(session_key, unexpired_after, slug=slug)
    if found is None:
        return None
    session_data, signed_in = found
    if signed_in is None:
        return session_data, None
    user, membership = signed_in
    hotpath.membership_remember(user, slug, membership)
    read.update(session_key=session_key, session_data=session_data, user=user, membership=membership)
    return session_data, user


def _signed_in_with_membership(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Sign the session in reading the session, its user and the user's membership of the URL's project
    in one statement (`session_sign_in_with`): the judge page's answers' sign-in in one round trip where
    three were. Put it above `login_required`, which reads the user.

    In PostgreSQL the sign-in is then kept (`kept_sign_ins`), and the session's next answer in this process
    starts from it with no statement of its own: the answer's statement checks it before writing. Where
    it does not hold (or a reply would come before that check), the request signs in afresh and runs
    again; nothing was written for it."""

    @wraps(view)
    def signed_in(request: HttpRequest, slug: str, *args: Any, **kwargs: Any) -> HttpResponse:
        postgres = sqlrows.vendor() == "postgresql"
        session_key = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
        kept = kept_sign_ins.kept(session_key, slug) if postgres else None
        if kept is not None and kept.session_data is not None:
            user, membership = kept.copies()
            if session_sign_in_kept(request, kept.session_data, user):
                hotpath.membership_remember(user, slug, membership)
                done, response = kept_sign_ins.run_checked(
                    lambda: view(request, slug, *args, **kwargs), slug, guard=kept.guard
                )
                if done:
                    return cast(HttpResponse, response)
                session_sign_in_again(request)
        read: dict[str, Any] = {}
        session_sign_in_with(request, partial(_session_with_membership, slug=slug, read=read))
        response = view(request, slug, *args, **kwargs)
        read_user: User | None = read.get("user")
        signed_in_as_read = getattr(request, "_cached_user", None) is read_user
        if postgres and signed_in_as_read and read_user is not None:
            kept_sign_ins.remember(
                read["session_key"], slug, read["session_data"], read_user, read["membership"]
            )
        return response

    return signed_in


@_signed_in_with_membership
@login_required
@require_POST
def judge_answer_next(request: SignedInRequest, slug: str, assignment_id: int) -> JsonResponse:
    """The judge page's answer with JavaScript (judge.js), in one request: the answer and the claim of the
    next task in one transaction (the API's `next: true` path), and a JSON reply that holds the page's
    task part as a reload would render it (`html`), the message the form's redirect would show
    (`message`, `level`) and the page's address (`url`). A too-fast refusal keeps the task (no `html`;
    `seconds_left`); another refusal (an answered, expired or unknown task) brings the task the page would
    show now. The reply holds what the page shows and nothing more: no gold flag, no other's label."""
    membership = selectors.get_project_for_member(request.user, slug, role=Role.ANNOTATOR)
    project = membership.project
    try:
        answered = _posted_answer(request, project, request.user, assignment_id, claim_next=True)
    except services.TooFast as exc:
        kept_sign_ins.require_confirmed()
        body = {"level": "warning", "message": str(exc), "seconds_left": round(exc.seconds_left, 2)}
        return JsonResponse(body, status=exc.status_code)
    except services.JudgingError as exc:
        kept_sign_ins.require_confirmed()  # a refusal before the answer's statement: signed in afresh first
        claim = services.task_claim(project=project, annotator=request.user)
        undoable = selectors.last_undoable_annotation(project=project, annotator=request.user)
        return _judge_reply(request, membership, claim, undoable, "error", str(exc), status=exc.status_code)
    assert isinstance(answered, services.Answered)
    if answered.claim is None:
        raise PermissionDenied("You are no longer an annotator of this project.")
    answer = answered.annotation
    message = _saved_message(answer, project.grade_label(answer.grade))
    # The answer just stored is the newest of the session: the one the undo button takes back.
    return _judge_reply(request, membership, answered.claim, answer, "success", message)


def _form_token(request: HttpRequest) -> str:
    """A masked CSRF token for the reply's forms (`get_token`) that does not send the CSRF cookie again
    where the request carried it: `get_token` flags the cookie to be set once more on every reply only to
    renew its expiry (a year), which the page's own load does; here that was a Set-Cookie header and a
    thirtieth of the answer's Python (py-spy, the load benchmark's page mode). A new or replaced cookie
    (none carried, or one the middleware rejected) is still sent.

    Where the middleware accepted this POST's own masked token (the form's field, else the X-CSRFToken
    header: the one it checked) against the cookie kept as it was, the reply's forms carry that token
    again: a new masking was 32 calls to the system's random source per answer, and it tells the page
    nothing it did not send (the reply is not compressed, and the token already matches the secret)."""
    renew = request.META.get("CSRF_COOKIE_NEEDS_UPDATE", False) or "CSRF_COOKIE" not in request.META
    if not renew and getattr(request, "csrf_processing_done", False):
        sent = request.POST.get("csrfmiddlewaretoken", "") or request.META.get(settings.CSRF_HEADER_NAME, "")
        if len(sent) == CSRF_TOKEN_LENGTH:
            return str(sent)
    token = get_token(request)
    request.META["CSRF_COOKIE_NEEDS_UPDATE"] = renew
    return token


def _judge_reply(
    request: HttpRequest, membership: ProjectMembership, claim: services.Claim, undoable: Annotation | None,
    level: str, message: str, *, status: int = 200,
) -> JsonResponse:  # fmt: skip
    # Rendered without the context processors, which the task part does not read (the site menu's read
    # the user's roles: a query per answer); it reads the request (the reading view's `?view=`) and the
    # form's CSRF token.
    context = {**_judge_context(membership, request.user, claim, undoable), "request": request,
               "csrf_token": _form_token(request)}  # fmt: skip
    body = {
        "html": judge_template.render(context),
        "level": level,
        "message": message,
        "url": context["urls"]["judge"],
    }
    return JsonResponse(body, status=status)


@login_required
@require_POST
def judge_undo(request: SignedInRequest, slug: str) -> HttpResponse:
    project = selectors.get_project_for_member(request.user, slug, role=Role.ANNOTATOR).project
    try:
        services.annotation_undo(project=project, annotator=request.user)
    except services.JudgingError as exc:
        messages.error(request, str(exc))
    else:
        messages.info(request, "Undone. Here is that task again.")
    return redirect("annotations:judge", slug)


@login_required
@require_safe
def judge_history(request: SignedInRequest, slug: str) -> HttpResponse:
    """The annotator's own answers in this project, newest first, with "Change" while each is still open."""
    membership = selectors.get_project_for_member(request.user, slug, role=Role.ANNOTATOR)
    project = membership.project
    page, rows = _answers_page(request, project, selectors.own_answers(membership=membership))
    open_ids = {answer.pk for answer in selectors.undoable_annotations(membership=membership)}
    return render(
        request,
        "annotations/history.html",
        {
            "project": project,
            "page": page,
            "rows": rows,
            "open_ids": open_ids,
            "undo_rule": selectors.UNDO_RULE,
            "comment_max_length": COMMENT_MAX_LENGTH,
        },
    )


def _answers_page(
    request: HttpRequest, project: Project, answers: QuerySet[Annotation]
) -> tuple[Page[Annotation], list[tuple[Annotation, str]]]:
    """The page `?page=` of `answers` (`HISTORY_PAGE_SIZE` a page), each with its outcome in words."""
    page = Paginator(answers, HISTORY_PAGE_SIZE).get_page(request.GET.get("page"))
    return page, [(answer, _outcome_text(answer, project.grade_label(answer.grade))) for answer in page]


def _outcome_text(answer: Annotation, label: str) -> str:
    if answer.skipped:
        return "Skipped"
    if answer.unclear:
        return "Unclear"
    text = f"{answer.grade} ({label})" if label and label != str(answer.grade) else str(answer.grade)
    return f"{text}, too fast: does not count" if answer.too_fast else text


@login_required
@require_POST
def judge_change(request: SignedInRequest, slug: str, annotation_id: int) -> HttpResponse:
    """Take back one answer from the history page and serve its task again on the judge page."""
    project = selectors.get_project_for_member(request.user, slug, role=Role.ANNOTATOR).project
    try:
        services.annotation_reopen(project=project, annotator=request.user, annotation_id=annotation_id)
    except services.JudgingError as exc:  # someone else's answer reads as no answer: nothing is told
        messages.error(request, str(exc))
        return redirect("annotations:judge-history", slug)
    messages.info(request, "Here is that task again: your answer was taken back. Answer it anew.")
    return redirect("annotations:judge", slug)


@login_required
@require_POST
def judge_comment(request: SignedInRequest, slug: str, annotation_id: int) -> HttpResponse:
    """Add, change or clear the comment on one of the annotator's own answers."""
    project = selectors.get_project_for_member(request.user, slug, role=Role.ANNOTATOR).project
    try:
        answer = services.annotation_comment_set(
            project=project,
            annotator=request.user,
            annotation_id=annotation_id,
            comment=request.POST.get("comment", ""),
        )
    except services.JudgingError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Saved your comment." if answer.comment else "Removed your comment.")
    return redirect(_history_url(slug, request.POST.get("page")))


def _history_url(slug: str, page: str | None) -> str:
    url = reverse("annotations:judge-history", args=[slug])
    return f"{url}?page={int(page)}" if page and page.isdigit() else url


@login_required
@require_POST
def judge_continue(request: SignedInRequest, slug: str) -> HttpResponse:
    membership = selectors.get_project_for_member(request.user, slug, role=Role.ANNOTATOR)
    services.session_break_dismiss(membership=membership)
    return redirect("annotations:judge", slug)


# --- every raw answer, for a lead -------------------------------------------------------------------------

#: The columns of the answers export, in order (CSV header and JSON Lines keys).
ANSWER_FIELDS = ("annotator", "qid", "doc_id", "grade", "skipped", "unclear", "too_fast", "gold", "answered_at",
                 "seconds_spent", "comment")  # fmt: skip


def _answer_rows(project: Project) -> Any:
    """Every answer of the project, oldest first, as tuples in `ANSWER_FIELDS` order (streamed from the
    database in chunks: memory stays flat whatever the project's size)."""
    return (
        Annotation.objects.filter(project=project)
        .order_by("created_at", "pk")
        .values_list(
            "annotator__username",
            "task__topic__qid",
            "task__document__doc_id",
            "grade",
            "skipped",
            "unclear",
            "too_fast",
            "task__is_gold",
            "created_at",
            "seconds_spent",
            "comment",
        )  # fmt: skip
        .iterator(chunk_size=5000)
    )


@login_required
@require_safe
def answers_csv(request: SignedInRequest, slug: str) -> StreamingHttpResponse:
    """Every raw answer of the project as CSV (leads): who, which pair, the grade (empty for a skip), the
    flags, whether the pair is gold, when, seconds spent and the comment; cells neutralised."""
    project = selectors.get_lead_project(request.user, slug)

    def lines() -> Any:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(ANSWER_FIELDS)
        for row in _answer_rows(project):
            writer.writerow(
                [cell(value.isoformat() if isinstance(value, datetime) else value) for value in row]
            )
            if buffer.tell() > 65536:
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
        yield buffer.getvalue()

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-answers.csv"'
    return response


@login_required
@require_safe
def answers_jsonl(request: SignedInRequest, slug: str) -> StreamingHttpResponse:
    """The same answers as JSON Lines, one object per answer."""
    project = selectors.get_lead_project(request.user, slug)

    def lines() -> Any:
        chunk: list[str] = []
        for row in _answer_rows(project):
            item = dict(zip(ANSWER_FIELDS, row, strict=True))
            item["answered_at"] = item["answered_at"].isoformat()
            chunk.append(json.dumps(item, ensure_ascii=False, allow_nan=False))
            if len(chunk) >= 2000:
                yield "\n".join(chunk) + "\n"
                chunk = []
        if chunk:
            yield "\n".join(chunk) + "\n"

    response = StreamingHttpResponse(lines(), content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-answers.jsonl"'
    return response
