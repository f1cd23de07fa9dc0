"""REST API of the LLM judge, under /api/projects/<slug>/llm-judge-jobs/ (project leads only).

`llm-judge-jobs/` lists the project's last grading jobs (GET) and starts one (POST `{topics?, limit?}`:
202 with the job); `llm-judge-jobs/<id>/` is one job's progress, then its summary. With LLM_JUDGE_ENABLED
off (the default) a POST is refused with 409 and a message saying how to turn it on; so is one while
another job of the project is unfinished (one at a time, so no pair is paid for twice).
"""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from annotations import selectors
from annotations.machine_judges import llm
from annotations.models import LLMJudgeJob
from evalplatform.errors import InputError
from evalplatform.jobs import JobStatus

TAGS = ["machine judges: leads"]
#: The jobs the list shows, newest first.
JOBS_LISTED = 100


class LLMJudgeIn(serializers.Serializer):
    topics = serializers.ListField(
        child=serializers.CharField(max_length=128), max_length=10_000, required=False, default=list,
        help_text="Topic ids (qids); empty or absent: every topic.",
    )  # fmt: skip
    limit = serializers.IntegerField(
        min_value=1, max_value=llm.MAX_PAIRS, default=100, help_text="Most pairs asked for in this job."
    )


class LLMJudgeJobOut(serializers.Serializer):
    id = serializers.IntegerField()
    judge = serializers.IntegerField(help_text="The machine judge its labels go to.")
    judge_name = serializers.CharField()
    judge_version = serializers.CharField(help_text="The prompt's version.")
    topics = serializers.ListField(child=serializers.CharField())
    limit = serializers.IntegerField()
    status = serializers.ChoiceField(choices=JobStatus.choices)
    percent = serializers.IntegerField(allow_null=True)
    progress_note = serializers.CharField()
    error = serializers.CharField()
    result = serializers.JSONField(
        allow_null=True,
        help_text="Once done: graded, unparsable, refused, failed, skipped, pairs, prompt_tokens, "
        "completion_tokens, tokens, tokens_estimated, cost, stopped_by_cap, stopped_by, stopped, summary.",
    )
    url = serializers.CharField()


class RefusedOut(serializers.Serializer):
    detail = serializers.CharField()
    job = serializers.IntegerField(
        required=False, help_text="The unfinished job, when one holds the project."
    )


def job_out(job: LLMJudgeJob) -> dict[str, Any]:
    data = {
        "id": job.pk, "judge": job.judge_id, "judge_name": job.judge.name, "judge_version": job.judge.version,
        "topics": job.topics, "limit": job.limit, "status": job.status, "percent": job.percent,
        "progress_note": job.progress_note, "error": job.error,
        "result": job.result if job.status == JobStatus.DONE else None,
        "url": reverse("annotations-api:llm-judge-job", args=[job.project.slug, job.pk]),
    }  # fmt: skip
    return LLMJudgeJobOut(data).data  # type: ignore[no-any-return]


@extend_schema(
    request=LLMJudgeIn,
    responses={
        200: LLMJudgeJobOut(many=True),
        202: LLMJudgeJobOut,
        400: OpenApiResponse(description="Unknown topics or a bad limit."),
        409: OpenApiResponse(RefusedOut, description="The LLM judge is off, or another job is unfinished."),
    },  # fmt: skip
    summary="List the LLM grading jobs, or start one",
    description="Off unless the operator sets LLM_JUDGE_ENABLED (409 otherwise, and nothing is asked). The job "
    "asks the configured model to grade the tasks of `topics` (or all) not yet answered by the same judge "
    "(model and prompt version), up to `limit` pairs, and stops at the operator's token and cost caps.",
    tags=TAGS,
)
@api_view(["GET", "POST"])
def llm_judge_jobs(request: Request, slug: str) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    if request.method == "GET":
        return Response([job_out(job) for job in llm.llm_jobs(project)[:JOBS_LISTED]])
    if not llm.llm_enabled():
        return Response({"detail": llm.DISABLED_MESSAGE}, status=status.HTTP_409_CONFLICT)
    data = LLMJudgeIn(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        job = llm.llm_judge_start(project=project, created_by=request.user, **data.validated_data)
    except llm.LLMJudgeBusy as busy:
        return Response({"detail": str(busy), "job": busy.job.pk}, status=status.HTTP_409_CONFLICT)
    except InputError as error:
        return Response({"detail": str(error)}, status=status.HTTP_400_BAD_REQUEST)
    return Response(job_out(job), status=status.HTTP_202_ACCEPTED)


@extend_schema(
    responses=LLMJudgeJobOut, summary="An LLM grading job: its progress, then its summary", tags=TAGS
)
@api_view(["GET"])
def llm_judge_job(request: Request, slug: str, pk: int) -> Response:
    project = selectors.get_lead_project(request.user, slug)
    job = get_object_or_404(LLMJudgeJob.objects.select_related("project", "judge"), project=project, pk=pk)
    return Response(job_out(job))
