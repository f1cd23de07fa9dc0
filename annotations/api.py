"""REST API of the judging workflow, under /api/projects/<slug>/.

Annotators: `next` (POST claims; GET only reads the task held), `submit`, `skip`, `undo`, `progress`,
`break`. Leads: `imports` (multipart upload) and `overview`. Input and output serializers are explicit;
nothing an annotator receives says whether a task is gold. Lookups go through
`selectors.get_project_for_member` (404 to non-members, 403 to the wrong role).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.models import User as AuthUser
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.decorators import api_view, authentication_classes, parser_classes
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotations import hotpath, kept_sign_ins, selectors, services
from annotations.imports import FORMATS, KINDS, import_request
from annotations.models import (
    COMMENT_MAX_LENGTH,
    Annotation,
    Assignment,
    ImportJob,
    Project,
    ProjectMembership,
)
from evalcore.errors import FormatError
from evalplatform import sqlrows
from evalplatform.authentication import TokenAuthentication
from evalplatform.jobs import JobStatus

Role = ProjectMembership.Role
MAX_ID = 2**63 - 1  # the largest primary key; a larger number is a 400, not a database overflow

# --- serializers ----------------------------------------------------------------------------------------


class ScaleLevelOut(serializers.Serializer):
    grade = serializers.IntegerField()
    label = serializers.CharField()
    definition = serializers.CharField(required=False, allow_blank=True)


class ProjectOut(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    role = serializers.ChoiceField(choices=Role.choices)
    tasks = serializers.IntegerField()
    your_answers = serializers.IntegerField()


class QueryOut(serializers.Serializer):
    text = serializers.CharField()
    description = serializers.CharField(allow_blank=True)


class DocumentOut(serializers.Serializer):
    title = serializers.CharField(allow_blank=True)
    text = serializers.CharField(allow_blank=True)


class TaskOut(serializers.Serializer):
    assignment = serializers.IntegerField(help_text="Send this back with the answer.")
    query = QueryOut()
    document = DocumentOut()
    served_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    min_seconds = serializers.IntegerField()
    seconds_left = serializers.FloatField(help_text="Until an answer is accepted (server clock).")


class ProgressOut(serializers.Serializer):
    done = serializers.IntegerField()
    remaining = serializers.IntegerField()
    assigned = serializers.IntegerField(help_text="done + remaining")
    percent = serializers.IntegerField()


class NextOut(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=["task", "empty", "break", "none"],
        help_text="`none` (GET only): you hold no live task; POST to claim one.",
    )
    task = TaskOut(allow_null=True)
    progress = ProgressOut()
    scale = ScaleLevelOut(many=True)
    message = serializers.CharField(allow_blank=True)


class ClaimNextIn(serializers.Serializer):
    next = serializers.BooleanField(
        required=False, default=False,
        help_text="Also claim your next task, in the same request: the reply's `next` is what POST next/ "
        "would answer. Saves a round trip per answer.",
    )  # fmt: skip


class SubmitIn(ClaimNextIn):
    assignment = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    grade = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    unclear = serializers.BooleanField(required=False, default=False)
    comment = serializers.CharField(
        required=False, allow_blank=True, trim_whitespace=True, max_length=COMMENT_MAX_LENGTH, default="",
        help_text="An optional note on this answer for the project's lead.",
    )  # fmt: skip

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs.get("unclear") and attrs.get("grade") is None:
            raise serializers.ValidationError(
                {"grade": "A grade is required unless the pair is marked unclear."}
            )
        if attrs.get("unclear") and attrs.get("grade") is not None:
            raise serializers.ValidationError({"grade": "An unclear pair takes no grade."})
        return attrs


_SUBMIT_KEYS = frozenset({"assignment", "grade", "unclear", "comment", "next"})


def plain_submit(data: Any) -> dict[str, Any] | None:
    """The fields of an answer in its everyday shape (a JSON object of integers and booleans, no comment),
    as `SubmitIn` validates them, without building the serializer (its fields are deep-copied for every
    instance: a tenth of an answer's Python). None for any other body: `SubmitIn` then validates it and
    explains what is wrong. `tests/annotations/test_api_replies.py` holds the two to the same results."""
    if type(data) is not dict or not data.keys() <= _SUBMIT_KEYS or data.get("comment", "") != "":
        return None
    assignment, grade = data.get("assignment"), data.get("grade")
    unclear, claim_next = data.get("unclear", False), data.get("next", False)
    if type(assignment) is not int or not 1 <= assignment <= MAX_ID:
        return None
    if type(unclear) is not bool or type(claim_next) is not bool:
        return None
    if unclear and grade is not None or not unclear and (type(grade) is not int or grade < 0):
        return None
    return {"assignment": assignment, "grade": grade, "unclear": unclear, "comment": "", "next": claim_next}


class SkipIn(ClaimNextIn):
    assignment = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    comment = serializers.CharField(
        required=False, allow_blank=True, trim_whitespace=True, max_length=COMMENT_MAX_LENGTH, default="",
        help_text="An optional note for the project's lead, such as why you skipped.",
    )  # fmt: skip


class AnswerOut(serializers.Serializer):
    assignment = serializers.IntegerField(source="assignment_id")
    grade = serializers.IntegerField(allow_null=True)
    skipped = serializers.BooleanField()
    unclear = serializers.BooleanField()
    too_fast = serializers.BooleanField()
    counts = serializers.BooleanField(help_text="Whether the answer counts (a grade given in time).")
    seconds_spent = serializers.FloatField()
    comment = serializers.CharField(allow_blank=True, help_text="Your note for the lead.")
    created_at = serializers.DateTimeField()


class AnsweredOut(AnswerOut):
    next = NextOut(required=False, help_text="Your next task, when the request asked for it (`next: true`).")


class UndoOut(serializers.Serializer):
    assignment = serializers.IntegerField(source="pk")
    message = serializers.CharField()
    progress = ProgressOut(help_text="Your counts after the undo, as progress/ gives them.")


class CommentOut(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    annotator = serializers.CharField(source="annotator.username")
    qid = serializers.CharField(source="task.topic.qid")
    query = serializers.CharField(source="task.topic.title")
    doc_id = serializers.CharField(source="task.document.doc_id")
    document_title = serializers.CharField(source="task.document.title", allow_blank=True)
    grade = serializers.IntegerField(allow_null=True)
    outcome = serializers.CharField(
        help_text="The grade, `skipped`, `unclear`, or the grade with `(too fast)`."
    )
    comment = serializers.CharField()
    created_at = serializers.DateTimeField()


class CommentPageOut(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = CommentOut(many=True)


class ErrorOut(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField()
    seconds_left = serializers.FloatField(
        required=False, help_text="For too_fast: until an answer is accepted."
    )


class ImportIn(serializers.Serializer):
    kind = serializers.ChoiceField(choices=list(KINDS))
    format = serializers.ChoiceField(
        choices=sorted({f for formats in FORMATS.values() for f in formats}), required=False, allow_blank=True
    )
    depth = serializers.IntegerField(required=False, min_value=1, max_value=10_000, allow_null=True)
    file = serializers.FileField()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        fmt = attrs.get("format")
        if fmt and fmt not in FORMATS[attrs["kind"]]:
            raise serializers.ValidationError(
                {"format": f"{attrs['kind']} can be read as {', '.join(FORMATS[attrs['kind']])}."}
            )
        return attrs


class ImportOut(serializers.Serializer):
    kind = serializers.CharField()
    file = serializers.CharField()
    records = serializers.IntegerField()
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField(help_text="Records already there as they are (a re-import: all).")
    summary = serializers.CharField(help_text="What the import did, in plain words.")


class ImportJobOut(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    file = serializers.CharField(source="original_name")
    size = serializers.IntegerField(help_text="Bytes, as uploaded.")
    status = serializers.ChoiceField(choices=JobStatus.choices)
    percent = serializers.IntegerField(allow_null=True, help_text="How far it is, when known.")
    note = serializers.CharField(source="progress_note", help_text="What it is doing now.")
    error = serializers.CharField(help_text="Why nothing was imported (file:line: reason), once failed.")
    result = ImportOut(allow_null=True, help_text="What the import did, once done.")
    url = serializers.CharField(help_text="Where to follow it (GET).")


def _job_out(job: ImportJob) -> dict[str, Any]:
    data = {
        "id": job.pk, "kind": job.kind, "original_name": job.original_name, "size": job.size,
        "status": job.status, "percent": job.percent, "progress_note": job.progress_note, "error": job.error,
        "result": job.result if job.status == JobStatus.DONE else None,
        "url": reverse("annotations-api:import-job", args=[job.project.slug, job.pk]),
    }  # fmt: skip
    return ImportJobOut(data).data  # type: ignore[no-any-return]


class ImportErrorOut(serializers.Serializer):
    detail = serializers.CharField()
    file = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)
    reason = serializers.CharField()


class TotalsOut(serializers.Serializer):
    topics = serializers.IntegerField()
    documents = serializers.IntegerField()
    tasks = serializers.IntegerField()
    gold_tasks = serializers.IntegerField()
    labels = serializers.IntegerField()
    labels_needed = serializers.IntegerField()
    complete_tasks = serializers.IntegerField()
    percent = serializers.IntegerField()


class TopicProgressOut(serializers.Serializer):
    qid = serializers.CharField(source="topic__qid")
    query = serializers.CharField(source="topic__title")
    tasks = serializers.IntegerField()
    gold = serializers.IntegerField()
    labels = serializers.IntegerField()
    complete = serializers.IntegerField()


class AnnotatorProgressOut(serializers.Serializer):
    username = serializers.CharField(source="user.username")
    answered = serializers.IntegerField()
    graded = serializers.IntegerField()
    skipped = serializers.IntegerField()
    unclear = serializers.IntegerField()
    too_fast = serializers.IntegerField()
    gold_answered = serializers.IntegerField()
    mean_seconds = serializers.FloatField(allow_null=True)


class OverviewOut(serializers.Serializer):
    totals = TotalsOut()
    topics = TopicProgressOut(many=True)
    annotators = AnnotatorProgressOut(many=True)


# --- sign-in --------------------------------------------------------------------------------------------


class JudgingTokenAuthentication(TokenAuthentication):
    """The token sign-in of the judging API's views, whose URL names a project (`<slug>`): the same
    statement reads the user's membership of that project too (`hotpath.token_member_of`), and keeps it on
    the request's user for the view's membership check (`selectors.get_project_for_member`): one round
    trip where two were. Set on those views by name (`JUDGING_AUTHENTICATION`); no other view's `slug`
    argument is read as a project's."""

    #: The project of the URL signed in to (set per request: DRF makes its authenticators anew for each).
    slug: str | None = None

    def authenticate(self, request: Request) -> tuple[AuthUser, Token] | None:
        self.slug = (request.parser_context or {}).get("kwargs", {}).get("slug")
        return super().authenticate(request)  # type: ignore[no-any-return]

    def authenticate_credentials(self, key: str) -> tuple[AuthUser, Token]:
        if self.slug is None:
            return super().authenticate_credentials(key)
        kept = kept_sign_ins.kept_token(key, self.slug)
        if kept is not None and kept.token is not None:  # checked by the answer's statement (`api_answer`)
            kept_user, kept_membership = kept.copies()
            hotpath.membership_remember(kept_user, self.slug, kept_membership)
            kept_token = sqlrows.clone(kept.token)
            kept_token.user = kept_user
            return kept_user, kept_token
        found = hotpath.token_member_of(key=key, slug=self.slug)
        if found is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        token, user, membership = found
        hotpath.membership_remember(user, self.slug, membership)
        signed_in = self._checked(token, user)
        kept_sign_ins.remember_token(token, self.slug, user, membership)
        return signed_in


class JudgingTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """The judging API's sign-in in the schema: the same `Authorization: Token <key>` header as every other
    view's, as a scheme of its own name (two classes may not share the name `tokenAuth`)."""

    target_class = "annotations.api.JudgingTokenAuthentication"
    name = "judgingTokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": 'The API token with the prefix "Token", as for every other view.',
        }


#: The judging API's sign-in schemes: the settings' (`DEFAULT_AUTHENTICATION_CLASSES`: the token first, so
#: that a request without credentials is a 401), the token's read with the project's membership.
JUDGING_AUTHENTICATION: list[type[BaseAuthentication]] = [JudgingTokenAuthentication, SessionAuthentication]
judging_sign_in = authentication_classes(JUDGING_AUTHENTICATION)


# --- helpers --------------------------------------------------------------------------------------------


def _annotator_project(request: Request, slug: str) -> Project:
    return selectors.get_project_for_member(request.user, slug, role=Role.ANNOTATOR).project


def _error(exc: services.JudgingError) -> Response:
    code = "".join(f"_{c.lower()}" if c.isupper() else c for c in type(exc).__name__).lstrip("_")
    body: dict[str, Any] = {"detail": str(exc), "code": code}
    if isinstance(exc, services.TooFast):
        body["seconds_left"] = round(exc.seconds_left, 2)
    return Response(ErrorOut(body).data, status=exc.status_code)


# The replies of claims and answers, which every answer makes, are written as their serializers (`NextOut`,
# `AnswerOut`: the schema) would write them, without running them: serializing cost more Python than the
# rest of the request. tests/annotations/test_api_replies.py holds each to its serializer.


def _when(value: datetime) -> str:
    """A datetime's text as the serializers write it (DRF's `DateTimeField` with its default ISO 8601
    format: in the current time zone, `Z` for UTC), without the field's lookups of its format, the
    settings and the time zone on every call (a tenth of the answer view's Python, py-spy)."""
    text = value.astimezone(timezone.get_current_timezone()).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _task_data(project: Project, assignment: Assignment) -> dict[str, Any]:
    task = assignment.task
    return {
        "assignment": assignment.pk,
        "query": {"text": task.topic.title, "description": task.topic.description},
        "document": {"title": task.document.title, "text": task.document.text},
        "served_at": _when(assignment.reserved_at),
        "expires_at": _when(assignment.expires_at),
        "min_seconds": project.min_seconds_per_task,
        "seconds_left": round(max(0.0, project.min_seconds_per_task - assignment.seconds_since_served()), 2),
    }


def _progress_data(counts: selectors.QueueCounts) -> dict[str, int]:
    return {
        "done": counts.done,
        "remaining": counts.remaining,
        "assigned": counts.assigned,
        "percent": counts.percent,
    }


MESSAGES = {
    "task": "",
    "none": "You hold no task: POST to next/ to claim one.",
    "empty": "Your queue is empty: there is nothing left for you to judge.",
    "break": "Time for a break: you reached the session cap. POST to break/ to continue.",
}
ERRORS = {404: OpenApiResponse(ErrorOut), 409: OpenApiResponse(ErrorOut)}

# --- annotator endpoints --------------------------------------------------------------------------------


@extend_schema(responses=ProjectOut(many=True), summary="Your judging projects", tags=["judging"])
@api_view(["GET"])
def projects(request: Request) -> Response:
    rows = [
        {
            "slug": m.project.slug,
            "name": m.project.name,
            "role": m.role,
            "tasks": m.task_count,  # type: ignore[attr-defined]
            "your_answers": m.own_answer_count,  # type: ignore[attr-defined]
        }
        for m in selectors.projects_for_user(request.user)
    ]
    return Response(ProjectOut(rows, many=True).data)


@extend_schema(
    methods=["GET"],
    responses=NextOut,
    summary="The task you hold now (claims nothing)",
    description="Returns your live reservation without extending it, or `status: none` when you hold "
    "none. Reading it claims nothing: POST to claim.",
    tags=["judging"],
)
@extend_schema(
    methods=["POST"],
    request=None,
    responses=NextOut,
    summary="Claim your next task (or get the one you hold)",
    description="Returns your live reservation if you hold one (its expiry moves on), else reserves a new "
    "task. `status` is `empty` when nothing is left and `break` when the session cap is reached.",
    tags=["judging"],
)
@api_view(["GET", "POST"])
@judging_sign_in
def next_task(request: Request, slug: str) -> Response:
    project = _annotator_project(request, slug)
    if request.method == "POST":
        return Response(_claim_data(project, request.user))
    assignment = _held_reservation(project=project, annotator=request.user)
    return Response(_next_data(project, request.user, "task" if assignment else "none", assignment, None))


def _claim_data(project: Project, annotator: Any) -> dict[str, Any]:
    """What POST next/ answers: the claim's outcome, the task and the annotator's progress."""
    claim = services.task_claim(project=project, annotator=annotator)
    return _next_data(project, annotator, claim.status, claim.assignment, claim.counts)


def _next_data(
    project: Project,
    annotator: Any,
    state: str,
    assignment: Assignment | None,
    counts: selectors.QueueCounts | None,
) -> dict[str, Any]:
    if counts is None:  # the task held, as after an undo: counted afresh (`selectors.open_totals`)
        counts = selectors.queue_counts(project=project, annotator=annotator, fresh=True)
    return {
        "status": state,
        "task": _task_data(project, assignment) if assignment else None,
        "progress": _progress_data(counts),
        "scale": [
            {key: level[key] for key in ("grade", "label", "definition") if key in level}
            for level in project.scale
        ],
        "message": MESSAGES[state],
    }


def _held_reservation(*, project: Project, annotator: Any) -> Assignment | None:
    """The annotator's live reservation, read only: a GET claims nothing and extends nothing."""
    held = selectors.current_reservation(project=project, annotator=annotator)
    return held if held is not None and held.expires_at > timezone.now() else None


def _answer_data(answer: Annotation, claim: services.Claim | None = None) -> dict[str, Any]:
    """An answer's reply; with the claim made with it (`next: true`), that claim as POST next/ gives it
    (no `next` when the annotator was removed meanwhile: the answer is stored, and POST next/ says why)."""
    data: dict[str, Any] = {
        "assignment": answer.assignment_id,
        "grade": answer.grade,
        "skipped": answer.skipped,
        "unclear": answer.unclear,
        "too_fast": answer.too_fast,
        "counts": answer.counts,
        "seconds_spent": float(answer.seconds_spent),
        "comment": answer.comment,
        "created_at": _when(answer.created_at),
    }
    if claim is not None:
        data["next"] = _next_data(
            answer.project, answer.annotator, claim.status, claim.assignment, claim.counts
        )
    return data


@kept_sign_ins.api_answer
@extend_schema(
    request=SubmitIn,
    responses={201: AnsweredOut, 400: OpenApiResponse(ErrorOut), **ERRORS},
    summary="Answer your reserved task with a grade, or mark it unclear",
    description="Refused with 409 `too_fast` before the project's minimum time, unless the project flags "
    "such answers instead (then stored with `too_fast: true`, not counted). With `next: true` the reply's "
    "`next` holds your next task too (what POST next/ answers), in one round trip.",
    tags=["judging"],
)
@api_view(["POST"])
@judging_sign_in
def submit(request: Request, slug: str) -> Response:
    project = _annotator_project(request, slug)
    fields = plain_submit(request.data)
    if fields is None:
        data = SubmitIn(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
    answer = services.annotation_submit_and_claim if fields["next"] else services.annotation_submit
    try:
        answered = answer(
            project=project, annotator=request.user, assignment_id=fields["assignment"],
            grade=fields.get("grade"), unclear=fields["unclear"], comment=fields["comment"],
        )  # fmt: skip
    except services.JudgingError as exc:
        return _error(exc)
    return _answered_reply(answered)


@kept_sign_ins.api_answer
@extend_schema(
    request=SkipIn,
    responses={201: AnsweredOut, **ERRORS},
    summary="Skip your reserved task",
    tags=["judging"],
)
@api_view(["POST"])
@judging_sign_in
def skip(request: Request, slug: str) -> Response:
    project = _annotator_project(request, slug)
    data = SkipIn(data=request.data)
    data.is_valid(raise_exception=True)
    fields = data.validated_data
    skip = services.annotation_skip_and_claim if fields["next"] else services.annotation_skip
    try:
        answered = skip(
            project=project,
            annotator=request.user,
            assignment_id=fields["assignment"],
            comment=fields["comment"],
        )
    except services.JudgingError as exc:
        return _error(exc)
    return _answered_reply(answered)


def _answered_reply(answered: Annotation | services.Answered) -> Response:
    if isinstance(answered, services.Answered):
        return Response(_answer_data(answered.annotation, answered.claim), status=status.HTTP_201_CREATED)
    return Response(_answer_data(answered), status=status.HTTP_201_CREATED)


@extend_schema(
    request=None,
    responses={200: UndoOut, **ERRORS},
    summary="Take back your last answer; its task is served again",
    description="Call it again to take back the answer before, and so on: "
    f"it reaches back over your current work session, up to your {selectors.UNDO_DEPTH} newest answers, "
    "and stops at a pause as long as the project's break (409 `nothing_to_undo` past that). "
    "409 `undo_conflict` when a skipped answer's place went to another annotator meanwhile.",
    tags=["judging"],
)
@api_view(["POST"])
@judging_sign_in
def undo(request: Request, slug: str) -> Response:
    project = _annotator_project(request, slug)
    try:
        assignment = services.annotation_undo(project=project, annotator=request.user)
    except services.JudgingError as exc:
        return _error(exc)
    # Counted afresh, here and not on the claim path: a client keeping the counts of its last answer's
    # reply would show one answer too many done until its next answer. The open totals too: the cached
    # ones may hold the task undone as open (`selectors.open_totals`).
    counts = selectors.queue_counts(project=project, annotator=request.user, fresh=True)
    body = {
        "pk": assignment.pk,
        "message": "Undone; the task is yours again.",
        "progress": _progress_data(counts),
    }
    return Response(UndoOut(body).data)


@extend_schema(responses=ProgressOut, summary="Your progress in the project", tags=["judging"])
@api_view(["GET"])
@judging_sign_in
def progress(request: Request, slug: str) -> Response:
    project = _annotator_project(request, slug)
    return Response(
        ProgressOut(
            _progress_data(selectors.queue_counts(project=project, annotator=request.user, fresh=True))
        ).data
    )


@extend_schema(
    request=None, responses={204: None}, summary="End the break prompt and continue", tags=["judging"]
)
@api_view(["POST"])
@judging_sign_in
def end_break(request: Request, slug: str) -> Response:
    membership = selectors.get_project_for_member(request.user, slug, role=Role.ANNOTATOR)
    services.session_break_dismiss(membership=membership)
    return Response(status=status.HTTP_204_NO_CONTENT)


# --- lead endpoints -------------------------------------------------------------------------------------


@extend_schema(
    request={"multipart/form-data": ImportIn},
    responses={201: ImportOut, 202: ImportJobOut, 400: ImportErrorOut},
    summary="Import topics, documents, a pool or gold labels (leads)",
    description="All or nothing: on a bad line nothing is imported and the answer names the file, line "
    "and reason. Re-importing the same file creates nothing new. A file that holds, or expands to, more "
    "than IMPORT_SYNC_MAX_BYTES is imported by a background job: the answer is a 202 with the job, to "
    "follow at its `url`.",
    tags=["judging: leads"],
)
@api_view(["POST"])
@judging_sign_in
@parser_classes([MultiPartParser, FormParser, JSONParser])
def imports(request: Request, slug: str) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    data = ImportIn(data=request.data)
    data.is_valid(raise_exception=True)
    values = data.validated_data
    try:
        result = import_request(
            project=project, kind=values["kind"], upload=values["file"], fmt=values.get("format") or None,
            depth=values.get("depth"), created_by=request.user,
        )  # fmt: skip
    except FormatError as exc:
        body = {"detail": str(exc), "file": exc.path, "line": exc.line, "reason": exc.reason}
        return Response(ImportErrorOut(body).data, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(result, ImportJob):
        return Response(_job_out(result), status=status.HTTP_202_ACCEPTED)
    return Response(
        ImportOut({**result.as_dict(), "summary": result.summary}).data, status=status.HTTP_201_CREATED
    )


@extend_schema(
    responses=ImportJobOut,
    summary="A background import: its progress, then what it imported or why it imported nothing (leads)",
    tags=["judging: leads"],
)
@api_view(["GET"])
@judging_sign_in
def import_job(request: Request, slug: str, pk: int) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    job = get_object_or_404(ImportJob, project=project, pk=pk)
    return Response(_job_out(job))


@extend_schema(
    responses=OverviewOut,
    summary="Project progress by topic and by annotator (leads)",
    tags=["judging: leads"],
)
@api_view(["GET"])
@judging_sign_in
def overview(request: Request, slug: str) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    totals = selectors.project_totals(project=project)
    data = {
        "totals": {**totals.__dict__, "percent": totals.percent},
        "topics": list(selectors.topic_progress(project=project)),
        "annotators": list(selectors.annotator_progress(project=project)),
    }
    return Response(OverviewOut(data).data)


class CommentPagination(PageNumberPagination):
    page_size = 50


@extend_schema(
    responses=CommentPageOut,
    summary="Annotators' comments on their answers, newest first (leads)",
    description="Every non-empty comment in the project with who wrote it, on which pair, and the answer "
    "it came with; 50 a page (`?page=`).",
    tags=["judging: leads"],
)
@api_view(["GET"])
@judging_sign_in
def comments(request: Request, slug: str) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    paginator = CommentPagination()
    page = paginator.paginate_queryset(selectors.project_comments(project=project), request)  # type: ignore[arg-type]
    return paginator.get_paginated_response(CommentOut(page, many=True).data)
