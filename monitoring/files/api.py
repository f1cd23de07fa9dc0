"""A team's runs and qrels sources: list, upload (multipart), read, download; rename, tag, archive, delete.

Uploads go through `monitoring.files.uploads`, which checks a file's first lines with the evaluation's own
readers before keeping it: a bad file is a 400 on `file` naming the file, the line and the reason, and
nothing is stored. A qrels source is an uploaded file or a finished qrels build of a judging project
linked to the team (JSON `{"build": "<project-slug>:<version>"}`); asking for the same build again
returns the same source.
"""

from __future__ import annotations

from typing import Any

from django.db.models.fields.files import FieldFile
from django.http import FileResponse, HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.exceptions import NotFound
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotations.qrels import qrels_export_response
from evalplatform.models import Team
from evalplatform.teams import get_team_for_member
from monitoring.common import queries
from monitoring.common.pagination import PAGE_PARAMETERS, page_of, paginate
from monitoring.common.serializers import FIELD_ERRORS, FORBIDDEN, NOT_FOUND, QrelsIn, QrelsOut, RunIn, RunOut
from monitoring.editing.api import ARCHIVED_PARAMETER, archived_asked, edit_schemas, item_change
from monitoring.evaluations import selectors
from monitoring.files import uploads
from monitoring.models import QrelsSource, Run

TAGS = ["evaluation: runs and qrels"]
DOWNLOAD = {(200, "text/plain"): OpenApiTypes.BINARY, 404: NOT_FOUND}


def _refused(field: str, reason: object) -> serializers.ValidationError:
    """A 400 naming the field at fault: `{"file": ["bm25.run:2: score is not a number"]}`."""
    return serializers.ValidationError({field: [str(reason)]})


def _upload_options(values: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": values.get("name") or "",
        "description": values.get("description") or "",
        "fmt": values.get("format") or None,
    }


def _stream(stored: FieldFile, filename: str) -> FileResponse:
    """The stored file as a download, read in chunks (never whole into memory)."""
    try:
        handle = stored.open("rb")
    except (FileNotFoundError, ValueError):
        raise NotFound(f"{filename}: the stored file is missing.") from None
    return FileResponse(handle, as_attachment=True, filename=filename, content_type="text/plain")


# --- runs ---------------------------------------------------------------------------------------------


@extend_schema(
    methods=["GET"],
    parameters=[*PAGE_PARAMETERS, ARCHIVED_PARAMETER],
    responses={200: page_of(RunOut), 404: NOT_FOUND},
    operation_id="teams_runs_list",
    summary="The team's runs, newest first",
    tags=TAGS,
)
@extend_schema(
    methods=["POST"],
    request={"multipart/form-data": RunIn},
    responses={201: RunOut, 400: FIELD_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND},
    summary="Upload a run (editors)",
    description="A TREC run file, `qid Q0 docno rank score tag` (or TSV / JSONL with `format`). Its first "
    "lines are checked before it is kept; a bad line is a 400 on `file` naming the line and the reason.",
    tags=TAGS,
)
@api_view(["GET", "POST"])
@parser_classes([MultiPartParser, FormParser])
def run_list(request: Request, team: str) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    if request.method == "GET":
        return paginate(
            request,
            selectors.team_runs(team=membership.team, archived=archived_asked(request)).select_related(
                "team"
            ),
            RunOut,
        )
    data = RunIn(data=request.data)
    data.is_valid(raise_exception=True)
    values = data.validated_data
    try:
        run = uploads.run_upload(
            team=membership.team, upload=values["file"], tags=values["tags"], uploaded_by=request.user,
            **_upload_options(values),
        )  # fmt: skip
    except uploads.UploadError as error:
        raise _refused("file", error) from None
    return Response(RunOut(run, context={"request": request}).data, status=status.HTTP_201_CREATED)


@extend_schema(methods=["GET"], responses={200: RunOut, 404: NOT_FOUND}, summary="A run", tags=TAGS)
@edit_schemas(RunOut, "run (with its evaluations and the comparisons it took part in)", TAGS)
@api_view(["GET", "PATCH", "DELETE"])
@parser_classes([JSONParser, MultiPartParser, FormParser])
def run_detail(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method != "GET")
    found = selectors.get_run(team=membership.team, pk=pk)
    if request.method != "GET":
        return item_change(request, found, RunOut)
    return Response(RunOut(found, context={"request": request}).data)


@extend_schema(responses=DOWNLOAD, summary="Download a run's file as uploaded", tags=TAGS)
@api_view(["GET"])
def run_download(request: Request, team: str, pk: int) -> HttpResponseBase:
    membership = get_team_for_member(request.user, team)
    found: Run = selectors.get_run(team=membership.team, pk=pk)
    return _stream(found.file, found.original_name or f"{found.name}.run")


# --- qrels --------------------------------------------------------------------------------------------


@extend_schema(
    methods=["GET"],
    parameters=[*PAGE_PARAMETERS, ARCHIVED_PARAMETER],
    responses={200: page_of(QrelsOut), 404: NOT_FOUND},
    operation_id="teams_qrels_list",
    summary="The team's qrels sources, newest first",
    tags=TAGS,
)
@extend_schema(
    methods=["POST"],
    request={"multipart/form-data": QrelsIn, "application/json": QrelsIn},
    responses={201: QrelsOut, 200: QrelsOut, 400: FIELD_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND},
    summary="Upload qrels, or pick a judging project's qrels build (editors)",
    description='Multipart with `file` (`qid 0 docno rel`), or JSON `{"build": "<project-slug>:<version>"}` '
    "for a finished build of a judging project linked to the team (the project's latest finished build "
    "without `:<version>`). 201 when a source is created; 200 with the existing source when the build was "
    "picked before.",
    tags=TAGS,
)
@api_view(["GET", "POST"])
@parser_classes([MultiPartParser, FormParser, JSONParser])
def qrels_list(request: Request, team: str) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    if request.method == "GET":
        rows = selectors.team_qrels_sources(
            team=membership.team, archived=archived_asked(request)
        ).select_related("team", "uploaded_by")
        return paginate(request, rows, QrelsOut)
    data = QrelsIn(data=request.data)
    data.is_valid(raise_exception=True)
    values = data.validated_data
    if "build" in values:
        source, created = _source_for_build(request, membership.team, values)
    else:
        try:
            source = uploads.qrels_upload(
                team=membership.team, upload=values["file"], uploaded_by=request.user,
                **_upload_options(values),
            )  # fmt: skip
        except uploads.UploadError as error:
            raise _refused("file", error) from None
        created = True
    code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
    return Response(QrelsOut(source, context={"request": request}).data, status=code)


def _source_for_build(request: Request, team: Team, values: dict[str, Any]) -> tuple[QrelsSource, bool]:
    project, version = values["build"]
    build = queries.linked_build(team=team, project=project, version=version)
    if build is None:
        wanted = f"{project}:{version}" if version is not None else f"a finished build of {project}"
        raise _refused("build", f"No qrels build {wanted} in the team's judging projects.")
    existed = QrelsSource.objects.filter(team=team, build=build).exists()
    try:
        source = uploads.qrels_source_for_build(team=team, build=build, by=request.user)
    except uploads.UploadError as error:
        raise _refused("build", error) from None
    return source, not existed


@extend_schema(
    methods=["GET"], responses={200: QrelsOut, 404: NOT_FOUND}, summary="A qrels source", tags=TAGS
)
@edit_schemas(QrelsOut, "qrels source (with its evaluations, comparisons and leaderboard)", TAGS)
@api_view(["GET", "PATCH", "DELETE"])
@parser_classes([JSONParser, MultiPartParser, FormParser])
def qrels_detail(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method != "GET")
    source = selectors.get_qrels_source(team=membership.team, pk=pk)
    if request.method != "GET":
        return item_change(request, source, QrelsOut)
    return Response(QrelsOut(source, context={"request": request}).data)


@extend_schema(
    responses=DOWNLOAD,
    summary="Download qrels: the uploaded file, or a build's TREC export",
    tags=TAGS,
)
@api_view(["GET"])
def qrels_download(request: Request, team: str, pk: int) -> HttpResponseBase:
    membership = get_team_for_member(request.user, team)
    source: QrelsSource = selectors.get_qrels_source(team=membership.team, pk=pk)
    if source.build is not None:
        return qrels_export_response(source.build, fmt="trec")
    return _stream(source.file, source.original_name or f"{source.name}.qrels")
