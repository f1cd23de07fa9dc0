"""Pages of a list: the project's page-number pagination (`?page=`, `?page_size=`), and its schema."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response


class Page(PageNumberPagination):
    """`settings.REST_FRAMEWORK["PAGE_SIZE"]` rows a page unless `?page_size=` asks for another size."""

    page_size_query_param = "page_size"
    max_page_size = 1_000


#: The query parameters of a paginated list, for its schema.
PAGE_PARAMETERS = [
    OpenApiParameter("page", int, description="1-based page number."),
    OpenApiParameter(
        "page_size", int, description=f"Rows a page (default 100, at most {Page.max_page_size:,})."
    ),
]


class QueryPage(Page):
    """Per-query values are small: up to 10,000 queries a page, so most evaluations fit in one."""

    max_page_size = 10_000


def paginate(
    request: Request,
    rows: QuerySet[Any] | Sequence[Any],
    out: type[serializers.Serializer],
    *,
    page: type[Page] = Page,
    **extra: Any,
) -> Response:
    """One page of `rows` as `{"count", "next", "previous", "results", **extra}`."""
    paginator = page()
    items = paginator.paginate_queryset(rows, request)  # type: ignore[arg-type]
    data = out(items, many=True, context={"request": request}).data
    response = paginator.get_paginated_response(data)
    response.data.update(extra)
    return response


@cache
def page_of(out: type[serializers.Serializer]) -> type[serializers.Serializer]:
    """The schema of a page of `out` rows (a component named `<Out>Page`)."""
    name = out.__name__.removesuffix("Out")
    fields = {
        "count": serializers.IntegerField(help_text="Rows in all pages."),
        "next": serializers.URLField(allow_null=True, help_text="The next page, or null on the last."),
        "previous": serializers.URLField(allow_null=True),
        "results": out(many=True),
    }
    return type(f"{name}Page", (serializers.Serializer,), fields)
