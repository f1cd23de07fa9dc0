"""The load benchmark's URLconf (`benchmarks.load_site`): the site's URLs and the floor, `POST /bench/floor/`.

The floor is the least a signed-in write can cost on the benchmark's web server and database: the same
gunicorn workers, middleware and API token sign-in (`evalplatform.authentication.TokenAuthentication`)
as the judging API, and one row inserted into a table of the benchmark's own (`FLOOR_TABLE`, created and
dropped by the benchmark with raw SQL). Its requests per second are what the answers per second are
reported against. It is not one of the product's URLs."""

from __future__ import annotations

from django.db import connection
from django.urls import path
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from evalplatform import urls as site_urls
from evalplatform.authentication import TokenAuthentication

FLOOR_TABLE = "bench_floor"
FLOOR_TABLE_SQL = (
    f"CREATE TABLE IF NOT EXISTS {FLOOR_TABLE} "
    "(id bigserial PRIMARY KEY, user_id integer NOT NULL, created_at timestamptz NOT NULL)"
)


@api_view(["POST"])
@authentication_classes([TokenAuthentication])
@permission_classes([IsAuthenticated])
def floor(request: Request) -> Response:
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {FLOOR_TABLE} (user_id, created_at) VALUES (%s, now()) RETURNING id",
            [request.user.pk],
        )
        row = cursor.fetchone()
    return Response({"id": row[0]}, status=201)


urlpatterns = [path("bench/floor/", floor, name="bench-floor"), *site_urls.urlpatterns]
