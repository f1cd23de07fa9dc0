"""PATCH (name, description, tags, archived) and DELETE on the detail endpoints of runs, qrels sources,
evaluations, comparisons (never archived), recommendation sets and fraud score sets: each endpoint looks its object up for an editor and
hands the request here, to the one service of `monitoring.editing.services`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from evalplatform.errors import InputError
from monitoring.common.serializers import FIELD_ERRORS, FORBIDDEN, NOT_FOUND
from monitoring.editing import services

#: The lists' `?archived=true`: archived objects too (they are left out by default).
ARCHIVED_PARAMETER = OpenApiParameter(
    "archived", bool, description="Include archived objects (default: they are left out)."
)


def archived_asked(request: Request) -> bool:
    return request.query_params.get("archived", "").lower() in {"1", "true"}


class ItemEditIn(serializers.Serializer):
    """What a PATCH may change; a field left out stays as it is."""

    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    description = serializers.CharField(required=False, allow_blank=True)
    tags = serializers.ListField(
        child=serializers.CharField(max_length=services.MAX_TAG_LENGTH, allow_blank=True),
        max_length=services.MAX_TAGS, required=False, help_text="The whole list (it replaces the old one).",
    )  # fmt: skip
    archived = serializers.BooleanField(
        required=False,
        help_text="Archived: hidden from the team's lists and leaderboards; nothing is deleted.",
    )


def edit_schemas(out: type[serializers.Serializer], noun: str, tags: list[str]) -> Callable[[Any], Any]:
    """The PATCH and DELETE halves of a detail endpoint's schema."""
    patch = extend_schema(
        methods=["PATCH"], request=ItemEditIn, responses={200: out, 400: FIELD_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND},
        summary=f"Rename, describe, tag, archive or unarchive a {noun} (editors)", tags=tags,
    )  # fmt: skip
    delete = extend_schema(
        methods=["DELETE"], responses={204: None, 403: FORBIDDEN, 404: NOT_FOUND},
        summary=f"Delete a {noun} (editors)",
        description="Deletes what goes with it too (the web's confirmation page lists it with counts): its "
        "evaluations and their metric values, and its stored files once the deletion commits.",
        tags=tags,
    )  # fmt: skip

    def both(view: Any) -> Any:
        return patch(delete(view))

    return both


def item_change(request: Request, item: Any, out: type[serializers.Serializer]) -> Response:
    """Answer a PATCH or a DELETE on `item` (looked up for an editor by the caller)."""
    if request.method == "DELETE":
        services.item_delete(item=item)
        return Response(status=status.HTTP_204_NO_CONTENT)
    data = ItemEditIn(data=request.data)
    data.is_valid(raise_exception=True)
    kind = services.kind_of(item)
    if "archived" in data.validated_data and not kind.archivable:
        raise serializers.ValidationError(
            {"archived": [f"A {kind.noun} is not archived: delete it, or keep it."]}
        )
    try:
        services.item_update(item=item, **data.validated_data)
    except InputError as exc:
        field = "tags" if "tag" in str(exc) else "name"
        raise serializers.ValidationError({field: [str(exc)]}) from None
    return Response(out(item, context={"request": request}).data)
