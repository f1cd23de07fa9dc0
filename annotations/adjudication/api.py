"""REST API of adjudication, under /api/projects/<slug>/adjudication/ (leads and chosen annotators).

`adjudication/` is the queue (the pairs a build with the latest build's parameters drops for
disagreement, with the grades given) and the pairs already adjudicated; `adjudication/<task_id>/` sets a
pair's final grade, which every later qrels build uses. Lookups go through
`adjudication.get_adjudicator_membership` (404 to non-members, 403 to other annotators).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from annotations.adjudication import services as adjudication
from annotations.models import COMMENT_MAX_LENGTH, Task
from annotations.quality.api import QualityErrorOut, error_response

TAGS = ["adjudication"]


class AdjudicationOut(serializers.Serializer):
    grade = serializers.IntegerField()
    note = serializers.CharField(allow_blank=True)
    adjudicator = serializers.CharField(allow_null=True)
    updated_at = serializers.DateTimeField()


class QueuePairOut(serializers.Serializer):
    task = serializers.IntegerField(help_text="The task id: POST adjudication/<task>/ to set its grade.")
    qid = serializers.CharField()
    doc_id = serializers.CharField()
    query = serializers.CharField()
    grades = serializers.ListField(child=serializers.IntegerField(), help_text="The grades given, sorted.")
    spread = serializers.FloatField(
        allow_null=True, help_text="max - min of the labels a build uses; null when no longer dropped."
    )
    adjudication = AdjudicationOut(allow_null=True)
    gold = serializers.IntegerField(
        allow_null=True,
        help_text="The pair's gold grade when it is a gold pair and you lead the project; null otherwise.",
    )


class QueueOut(serializers.Serializer):
    parameters = serializers.JSONField(help_text="The qrels parameters the queue is computed with.")
    build_version = serializers.IntegerField(
        allow_null=True, help_text="The build those parameters come from; null: the defaults."
    )
    waiting = QueuePairOut(many=True)
    done = QueuePairOut(many=True)


class AdjudicateIn(serializers.Serializer):
    grade = serializers.IntegerField(help_text="A grade of the project's scale.")
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=COMMENT_MAX_LENGTH)


def _pair(pair: adjudication.QueuePair) -> dict[str, Any]:
    done = pair.adjudication
    return {
        "task": pair.task.pk,
        "qid": pair.task.topic.qid,
        "doc_id": pair.task.document.doc_id,
        "query": pair.task.topic.title,
        "grades": pair.grades,
        "spread": pair.spread,
        "adjudication": _adjudication(done) if done is not None else None,
        "gold": pair.gold,
    }


def _adjudication(done: Any) -> dict[str, Any]:
    return {
        "grade": done.grade,
        "note": done.note,
        "adjudicator": done.adjudicator.get_username() if done.adjudicator else None,
        "updated_at": done.updated_at,
    }


@extend_schema(
    responses={200: QueueOut, 404: OpenApiResponse(QualityErrorOut)},
    summary="The adjudication queue: pairs dropped for disagreement, and those adjudicated",
    description="Computed now from the current answers with the latest done build's parameters (the "
    "defaults before any build). Leads and the annotators a lead allowed to adjudicate.",
    tags=TAGS,
)
@api_view(["GET"])
def adjudication_queue(request: Request, slug: str) -> Response:
    membership = adjudication.get_adjudicator_membership(request.user, slug)
    queue = adjudication.adjudication_queue(project=membership.project, with_gold=membership.is_lead)
    body = {
        "parameters": queue.params.as_dict(),
        "build_version": queue.build_version,
        "waiting": [_pair(pair) for pair in queue.waiting],
        "done": [_pair(pair) for pair in queue.done],
    }
    return Response(QueueOut(body).data)


@extend_schema(
    request=AdjudicateIn,
    responses={
        200: AdjudicationOut,
        400: OpenApiResponse(QualityErrorOut),
        404: OpenApiResponse(QualityErrorOut),
    },
    summary="Set (or change) a pair's final grade",
    description="Every later qrels build takes the pair's rel from it (unless built with "
    'use_adjudications false); its JSONL provenance says `"source": "adjudication"`.',
    tags=TAGS,
)
@api_view(["POST"])
def adjudicate(request: Request, slug: str, task_id: int) -> Response:
    membership = adjudication.get_adjudicator_membership(request.user, slug)
    project = membership.project
    try:
        task = adjudication.task_for(membership, task_id=task_id)
    except Task.DoesNotExist:
        return error_response("No such pair in this project.", 404)
    data = AdjudicateIn(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        done = adjudication.adjudication_set(
            project=project, task=task, adjudicator=request.user, **data.validated_data
        )
    except adjudication.AdjudicationError as exc:
        return error_response(str(exc), 400)
    return Response(AdjudicationOut(_adjudication(done)).data)
