"""REST API of machine judges' imports (project leads only), under /api/projects/<slug>/machine-judges/.

`click-logs/` takes a search log (multipart: the file, its format, the click model and its grade
mapping) and answers 202 with the job that derives the judge's labels; `import-jobs/<id>/` follows a job (a
search log's, or a large file of labels'): its progress, then what it stored or why it stored nothing.
"""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotations import selectors
from annotations.machine_judges.clicks import (
    DEFAULT_MIN_IMPRESSIONS,
    ClickImportParams,
    default_grade_map,
    grade_map_error,
)
from annotations.machine_judges.imports import click_log_request
from annotations.models import MachineJudgeImport
from evalcore.clicks import FORMATS, MODELS
from evalcore.errors import FormatError
from evalplatform.jobs import JobStatus

TAGS = ["machine judges: leads"]


class ClickLogIn(serializers.Serializer):
    file = serializers.FileField(help_text="The search log: one row per shown result.")
    format = serializers.ChoiceField(choices=FORMATS, default="csv", help_text="csv, jsonl or ubi.")
    model = serializers.ChoiceField(choices=MODELS, help_text="coec, pbm or dbn.")
    name = serializers.CharField(max_length=100, required=False, allow_blank=True, default="",
                                 help_text="The judge's name; empty: clicks-<model>.")  # fmt: skip
    version = serializers.CharField(max_length=64, default="1")
    min_impressions = serializers.IntegerField(
        min_value=1, max_value=1_000_000, default=DEFAULT_MIN_IMPRESSIONS
    )
    thresholds = serializers.ListField(
        child=serializers.FloatField(), min_length=4, max_length=4, required=False, allow_null=True, default=None,
        help_text="The relevance at which grades 1-4 start (default: the model's; see docs/clicks.md).",
    )  # fmt: skip
    grade_map = serializers.ListField(
        child=serializers.IntegerField(min_value=-1000, max_value=1000), min_length=5, max_length=5,
        required=False, allow_null=True, default=None,
        help_text="The project's grade for each click grade 0-4 (default: each onto the largest project grade not above it).",
    )  # fmt: skip
    min_dwell = serializers.FloatField(
        min_value=0, max_value=86_400, required=False, allow_null=True, default=None
    )
    max_iterations = serializers.IntegerField(
        min_value=1, max_value=10_000, required=False, allow_null=True, default=None
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        project = self.context["project"]
        grade_map = tuple(attrs["grade_map"]) if attrs.get("grade_map") else None
        if grade_map is not None and (wrong := grade_map_error(project, grade_map)):
            raise serializers.ValidationError({"grade_map": wrong})
        try:
            attrs["params"] = ClickImportParams(
                model=attrs["model"], log_format=attrs["format"], name=attrs["name"].strip(),
                version=attrs["version"].strip(), min_impressions=attrs["min_impressions"],
                thresholds=tuple(attrs["thresholds"]) if attrs.get("thresholds") else None,
                grade_map=grade_map or default_grade_map(project), min_dwell=attrs.get("min_dwell"),
                max_iterations=attrs.get("max_iterations"),
            )  # fmt: skip
        except ValueError as exc:
            raise serializers.ValidationError({"thresholds": str(exc)}) from None
        return attrs


class JudgeImportOut(serializers.Serializer):
    id = serializers.IntegerField()
    source = serializers.ChoiceField(choices=MachineJudgeImport.Source.choices)
    file = serializers.CharField(source="original_name")
    size = serializers.IntegerField(help_text="Bytes, as uploaded.")
    parameters = serializers.JSONField(help_text="The judge and the source's settings, as asked.")
    status = serializers.ChoiceField(choices=JobStatus.choices)
    percent = serializers.IntegerField(allow_null=True, help_text="How far it is, when known.")
    note = serializers.CharField(source="progress_note", help_text="What it is doing now.")
    error = serializers.CharField(help_text="Why nothing was stored (file:line: reason), once failed.")
    judge = serializers.IntegerField(allow_null=True, help_text="The judge it stored into, once done.")
    result = serializers.JSONField(allow_null=True, help_text="What it stored, once done.")
    url = serializers.CharField(help_text="Where to follow it (GET).")


class UploadErrorOut(serializers.Serializer):
    detail = serializers.CharField()
    file = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)
    reason = serializers.CharField()


def judge_import_out(job: MachineJudgeImport) -> dict[str, Any]:
    done = job.status == JobStatus.DONE
    data = {
        "id": job.pk, "source": job.source, "original_name": job.original_name, "size": job.size,
        "parameters": job.parameters, "status": job.status, "percent": job.percent,
        "progress_note": job.progress_note, "error": job.error, "judge": job.judge_id if done else None,
        "result": job.result if done else None,
        "url": reverse("annotations-api:machine-judge-import", args=[job.project.slug, job.pk]),
    }  # fmt: skip
    return JudgeImportOut(data).data  # type: ignore[no-any-return]


@extend_schema(
    request={"multipart/form-data": ClickLogIn},
    responses={202: JudgeImportOut, 400: OpenApiResponse(UploadErrorOut)},
    summary="Derive a machine judge's labels from a search log with a click model",
    description="Answers at once with the job (202); follow its `url`. The job stores the judged pairs as the "
    "labels of the judge (kind click model; its configuration records the model, its parameters, the grade "
    "mapping and the log), all or nothing: a bad line stores nothing and the job's error names the file, line "
    "and reason. The same log with the same settings again changes nothing; another log or other settings under "
    "an existing version fail the job.",
    tags=TAGS,
)
@api_view(["POST"])
@parser_classes([MultiPartParser, FormParser])
def click_logs(request: Request, slug: str) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    data = ClickLogIn(data=request.data, context={"project": project})
    data.is_valid(raise_exception=True)
    try:
        job = click_log_request(
            project=project, upload=data.validated_data["file"], params=data.validated_data["params"],
            created_by=request.user,
        )  # fmt: skip
    except FormatError as exc:
        body = {"detail": str(exc), "file": exc.path, "line": exc.line, "reason": exc.reason}
        return Response(UploadErrorOut(body).data, status=status.HTTP_400_BAD_REQUEST)
    return Response(judge_import_out(job), status=status.HTTP_202_ACCEPTED)


@extend_schema(
    responses=JudgeImportOut,
    summary="A machine judge's import in the background: its progress, then what it stored",
    tags=TAGS,
)
@api_view(["GET"])
def machine_judge_import(request: Request, slug: str, pk: int) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    job = get_object_or_404(MachineJudgeImport.objects.select_related("project"), project=project, pk=pk)
    return Response(judge_import_out(job))
