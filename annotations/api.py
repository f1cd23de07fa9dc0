"""REST API of the judging workflow, under /api/projects/<slug>/.

Annotators: `next` (POST claims; GET only reads the task held), `submit`, `skip`, `undo`, `progress`,
`break`. Leads: `imports` (multipart upload) and `overview`. Input and output serializers are explicit;
nothing an annotator receives says whether a task is gold. Lookups go through
`selectors.get_project_for_member` (404 to non-members, 403 to the wrong role).
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotations import selectors, services
from annotations.imports import FORMATS, KINDS, import_upload
from annotations.models import Annotation, Assignment, Project, ProjectMembership
from evalcore.errors import FormatError

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


class SubmitIn(serializers.Serializer):
    assignment = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    grade = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    unclear = serializers.BooleanField(required=False, default=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs.get("unclear") and attrs.get("grade") is None:
            raise serializers.ValidationError(
                {"grade": "A grade is required unless the pair is marked unclear."}
            )
        if attrs.get("unclear") and attrs.get("grade") is not None:
            raise serializers.ValidationError({"grade": "An unclear pair takes no grade."})
        return attrs


class SkipIn(serializers.Serializer):
    assignment = serializers.IntegerField(min_value=1, max_value=MAX_ID)


class AnswerOut(serializers.Serializer):
    assignment = serializers.IntegerField(source="assignment_id")
    grade = serializers.IntegerField(allow_null=True)
    skipped = serializers.BooleanField()
    unclear = serializers.BooleanField()
    too_fast = serializers.BooleanField()
    counts = serializers.BooleanField(help_text="Whether the answer counts (a grade given in time).")
    seconds_spent = serializers.FloatField()
    created_at = serializers.DateTimeField()


class UndoOut(serializers.Serializer):
    assignment = serializers.IntegerField(source="pk")
    message = serializers.CharField()


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


# --- helpers --------------------------------------------------------------------------------------------


def _annotator_project(request: Request, slug: str) -> Project:
    return selectors.get_project_for_member(request.user, slug, role=Role.ANNOTATOR).project


def _error(exc: services.JudgingError) -> Response:
    code = "".join(f"_{c.lower()}" if c.isupper() else c for c in type(exc).__name__).lstrip("_")
    body: dict[str, Any] = {"detail": str(exc), "code": code}
    if isinstance(exc, services.TooFast):
        body["seconds_left"] = round(exc.seconds_left, 2)
    return Response(ErrorOut(body).data, status=exc.status_code)


def _task_data(project: Project, assignment: Assignment) -> dict[str, Any]:
    task = assignment.task
    return {
        "assignment": assignment.pk,
        "query": {"text": task.topic.title, "description": task.topic.description},
        "document": {"title": task.document.title, "text": task.document.text},
        "served_at": assignment.reserved_at,
        "expires_at": assignment.expires_at,
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
def next_task(request: Request, slug: str) -> Response:
    project = _annotator_project(request, slug)
    state: str
    if request.method == "POST":
        claim = services.task_claim(project=project, annotator=request.user)
        state, assignment = claim.status, claim.assignment
    else:
        assignment = _held_reservation(project=project, annotator=request.user)
        state = "task" if assignment else "none"
    counts = selectors.queue_counts(project=project, annotator=request.user)
    data = {
        "status": state,
        "task": _task_data(project, assignment) if assignment else None,
        "progress": _progress_data(counts),
        "scale": project.scale,
        "message": MESSAGES[state],
    }
    return Response(NextOut(data).data)


def _held_reservation(*, project: Project, annotator: Any) -> Assignment | None:
    """The annotator's live reservation, read only: a GET claims nothing and extends nothing."""
    held = selectors.current_reservation(project=project, annotator=annotator)
    return held if held is not None and held.expires_at > timezone.now() else None


def _answer_data(answer: Annotation) -> dict[str, Any]:
    data = AnswerOut(answer).data
    data["counts"] = answer.counts
    return data


@extend_schema(
    request=SubmitIn,
    responses={201: AnswerOut, 400: OpenApiResponse(ErrorOut), **ERRORS},
    summary="Answer your reserved task with a grade, or mark it unclear",
    description="Refused with 409 `too_fast` before the project's minimum time, unless the project flags "
    "such answers instead (then stored with `too_fast: true`, not counted).",
    tags=["judging"],
)
@api_view(["POST"])
def submit(request: Request, slug: str) -> Response:
    project = _annotator_project(request, slug)
    data = SubmitIn(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        answer = services.annotation_submit(
            project=project, annotator=request.user, assignment_id=data.validated_data["assignment"],
            grade=data.validated_data.get("grade"), unclear=data.validated_data["unclear"],
        )  # fmt: skip
    except services.JudgingError as exc:
        return _error(exc)
    return Response(_answer_data(answer), status=status.HTTP_201_CREATED)


@extend_schema(
    request=SkipIn, responses={201: AnswerOut, **ERRORS}, summary="Skip your reserved task", tags=["judging"]
)
@api_view(["POST"])
def skip(request: Request, slug: str) -> Response:
    project = _annotator_project(request, slug)
    data = SkipIn(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        answer = services.annotation_skip(
            project=project, annotator=request.user, assignment_id=data.validated_data["assignment"]
        )
    except services.JudgingError as exc:
        return _error(exc)
    return Response(_answer_data(answer), status=status.HTTP_201_CREATED)


@extend_schema(
    request=None,
    responses={200: UndoOut, **ERRORS},
    summary="Take back your last answer (within a minute); its task is served again",
    tags=["judging"],
)
@api_view(["POST"])
def undo(request: Request, slug: str) -> Response:
    project = _annotator_project(request, slug)
    try:
        assignment = services.annotation_undo(project=project, annotator=request.user)
    except services.JudgingError as exc:
        return _error(exc)
    return Response(UndoOut({"pk": assignment.pk, "message": "Undone; the task is yours again."}).data)


@extend_schema(responses=ProgressOut, summary="Your progress in the project", tags=["judging"])
@api_view(["GET"])
def progress(request: Request, slug: str) -> Response:
    project = _annotator_project(request, slug)
    return Response(
        ProgressOut(_progress_data(selectors.queue_counts(project=project, annotator=request.user))).data
    )


@extend_schema(
    request=None, responses={204: None}, summary="End the break prompt and continue", tags=["judging"]
)
@api_view(["POST"])
def end_break(request: Request, slug: str) -> Response:
    membership = selectors.get_project_for_member(request.user, slug, role=Role.ANNOTATOR)
    services.session_break_dismiss(membership=membership)
    return Response(status=status.HTTP_204_NO_CONTENT)


# --- lead endpoints -------------------------------------------------------------------------------------


@extend_schema(
    request={"multipart/form-data": ImportIn},
    responses={201: ImportOut, 400: ImportErrorOut},
    summary="Import topics, documents, a pool or gold labels (leads)",
    description="All or nothing: on a bad line nothing is imported and the answer names the file, line "
    "and reason. Re-importing the same file creates nothing new.",
    tags=["judging: leads"],
)
@api_view(["POST"])
@parser_classes([MultiPartParser, FormParser, JSONParser])
def imports(request: Request, slug: str) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    data = ImportIn(data=request.data)
    data.is_valid(raise_exception=True)
    values = data.validated_data
    try:
        result = import_upload(
            project=project, kind=values["kind"], upload=values["file"], fmt=values.get("format") or None,
            depth=values.get("depth"),
        )  # fmt: skip
    except FormatError as exc:
        body = {"detail": str(exc), "file": exc.path, "line": exc.line, "reason": exc.reason}
        return Response(ImportErrorOut(body).data, status=status.HTTP_400_BAD_REQUEST)
    return Response(ImportOut(result.as_dict()).data, status=status.HTTP_201_CREATED)


@extend_schema(
    responses=OverviewOut,
    summary="Project progress by topic and by annotator (leads)",
    tags=["judging: leads"],
)
@api_view(["GET"])
def overview(request: Request, slug: str) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    totals = selectors.project_totals(project=project)
    data = {
        "totals": {**totals.__dict__, "percent": totals.percent},
        "topics": list(selectors.topic_progress(project=project)),
        "annotators": list(selectors.annotator_progress(project=project)),
    }
    return Response(OverviewOut(data).data)
