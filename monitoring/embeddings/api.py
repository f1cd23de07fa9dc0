"""A team's embedding streams: create, read, edit (PATCH), delete and schedule them; upload snapshots (a `.npy` file, or a small
batch of vectors as JSON); queue their monitor runs; read the runs, the metric series and the alert events
(acknowledged through the team's alerts API, `monitoring.alerts.api`).

Writes go through `monitoring.embeddings`; a refused input
is a 400 naming the field (`{"file": ["week1.npy: 64 columns, but the stream's dimension is 768"]}`).
Nothing is computed in a request: monitor runs are jobs on the worker's heavy queue, queued by the
stream's schedule or by `POST .../monitor/`, and the reads serve the rows the workers wrote.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from evalplatform.errors import InputError
from evalplatform.jobs import JobStatus
from evalplatform.teams import get_team_for_member
from monitoring.alerts.api import EventOut
from monitoring.common.pagination import PAGE_PARAMETERS, page_of, paginate
from monitoring.common.serializers import FIELD_ERRORS, FORBIDDEN, NOT_FOUND, JobStateOut, link, spec_of
from monitoring.embeddings import services as monitors
from monitoring.models import EmbeddingSnapshot, EmbeddingStream, MonitorRun

TAGS = ["monitoring: embedding streams"]
QUEUE_AGAIN = "POST the stream's monitor/ (or run `monitor_stream`) to queue it again."


def _refused(error: InputError) -> serializers.ValidationError:
    return serializers.ValidationError({getattr(error, "field", "non_field_errors"): [str(error)]})


# --- shapes -------------------------------------------------------------------------------------------


class EmbeddingStreamIn(serializers.Serializer):
    slug = serializers.CharField(max_length=64, help_text="Letters, digits, hyphens and underscores.")
    name = serializers.CharField(max_length=200)
    dimension = serializers.IntegerField(min_value=1, help_text="Columns of every snapshot.")
    description = serializers.CharField(required=False, allow_blank=True, default="")
    params = serializers.DictField(
        required=False, default=dict, help_text="Overrides of the monitor's parameters (GET /api/metrics/ lists "
        "the metrics; the parameters are evalcore.embeddings.MonitorParams', e.g. n_permutations).",
    )  # fmt: skip
    every_minutes = serializers.IntegerField(required=False, allow_null=True, default=None)
    crontab = serializers.CharField(
        required=False, allow_blank=True, default="", help_text='"minute hour day month weekday".'
    )


class ScheduleIn(serializers.Serializer):
    every_minutes = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text="Monitor every N minutes."
    )
    crontab = serializers.CharField(
        required=False, allow_blank=True, default="", help_text='Or a cron schedule, "*/30 * * * *".'
    )


class EmbeddingStreamEditIn(serializers.Serializer):
    """What a PATCH may change; a field left out stays as it is (the slug and the dimension always do)."""

    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(required=False, allow_blank=True)
    params = serializers.DictField(
        required=False, help_text="The overrides of the monitor's parameters, as a whole (they replace the old "
        "ones; `{}` goes back to the defaults). Runs made later use them; finished runs keep theirs.",
    )  # fmt: skip
    every_minutes = serializers.IntegerField(
        required=False, allow_null=True, help_text="With crontab: the schedule, as PUT schedule/ takes it."
    )
    crontab = serializers.CharField(required=False, allow_blank=True)


class PeriodicTaskOut(serializers.Serializer):
    name = serializers.CharField()
    enabled = serializers.BooleanField(help_text="An admin may pause it in the Django admin.")
    last_run_at = serializers.DateTimeField(allow_null=True)
    total_run_count = serializers.IntegerField()


class EmbeddingStreamOut(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    dimension = serializers.IntegerField()
    params = serializers.DictField()
    every_minutes = serializers.IntegerField(allow_null=True)
    crontab = serializers.CharField(allow_blank=True)
    schedule = serializers.SerializerMethodField()
    periodic_task = PeriodicTaskOut(
        allow_null=True, help_text="The django-celery-beat task; null unscheduled."
    )
    reference = serializers.IntegerField(source="reference_id", allow_null=True, help_text="A snapshot id.")
    created_at = serializers.DateTimeField()
    url = serializers.SerializerMethodField()
    snapshots_url = serializers.SerializerMethodField()
    runs_url = serializers.SerializerMethodField()
    series_url = serializers.SerializerMethodField()
    dashboard_url = serializers.SerializerMethodField()

    def get_schedule(self, stream: EmbeddingStream) -> str:
        return monitors.schedule_text(stream)

    def _link(self, name: str, stream: EmbeddingStream) -> str:
        return link(self, name, stream.team.slug, stream.slug)

    def get_url(self, stream: EmbeddingStream) -> str:
        return self._link("stream", stream)

    def get_snapshots_url(self, stream: EmbeddingStream) -> str:
        return self._link("stream-snapshots", stream)

    def get_runs_url(self, stream: EmbeddingStream) -> str:
        return self._link("stream-runs", stream)

    def get_series_url(self, stream: EmbeddingStream) -> str:
        return self._link("stream-series", stream)

    def get_dashboard_url(self, stream: EmbeddingStream) -> str:
        path = reverse("monitoring:stream-detail", args=[stream.team.slug, stream.slug])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path


class EmbeddingSnapshotIn(serializers.Serializer):
    file = serializers.FileField(
        required=False, help_text="A .npy file: rows x dimension, float32 or float64."
    )
    vectors = serializers.JSONField(
        required=False,
        help_text=f"Or, as JSON, a list of at most {monitors.MAX_JSON_VECTORS:,} vectors (lists of numbers), in a "
        "request body within DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB by default: about 300 vectors of 768 numbers).",
    )
    reference = serializers.BooleanField(
        required=False, default=False, help_text="Make it the stream's reference (monitored at once)."
    )
    observed_at = serializers.DateTimeField(required=False, help_text="When the embeddings were taken (now).")
    label = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        if ("file" in data) == ("vectors" in data):
            raise serializers.ValidationError(
                {"file": ["Send a .npy file, or vectors as JSON (one of them)."]}
            )
        return data


class EmbeddingSnapshotOut(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=EmbeddingSnapshot.Kind.choices)
    label = serializers.CharField(allow_blank=True)
    rows = serializers.IntegerField()
    dimension = serializers.IntegerField()
    dtype = serializers.CharField()
    size = serializers.IntegerField(help_text="Bytes of the .npy file.")
    sha256 = serializers.CharField()
    observed_at = serializers.DateTimeField()
    uploaded_by = serializers.CharField(source="uploaded_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    url = serializers.SerializerMethodField()

    def get_url(self, snapshot: EmbeddingSnapshot) -> str:
        return link(self, "stream-snapshot", snapshot.stream.team.slug, snapshot.stream.slug, snapshot.pk)


class MonitorRunOut(JobStateOut):
    created_by = None  # type: ignore[assignment]  # runs are made by the schedule, not by someone
    id = serializers.IntegerField()
    snapshot = serializers.IntegerField(source="snapshot_id")
    snapshot_label = serializers.CharField(source="snapshot.label")
    reference = serializers.IntegerField(
        source="reference_id",
        allow_null=True,
        help_text="Null: quality only; the snapshot's own id: the reference.",
    )
    observed_at = serializers.DateTimeField()
    chunks = serializers.IntegerField(
        help_text="How many workers summarised the snapshot (a chord when > 1)."
    )
    device = serializers.CharField(allow_blank=True, help_text="cpu or cuda, once done.")
    url = serializers.SerializerMethodField()

    def get_url(self, run: MonitorRun) -> str:
        return link(self, "stream-run", run.stream.team.slug, run.stream.slug, run.pk)


class MonitorValueOut(serializers.Serializer):
    value = serializers.FloatField(allow_null=True, help_text="Null when undefined.")
    section = serializers.ChoiceField(choices=["current", "drift"])


class MonitorRunDetailOut(MonitorRunOut):
    values = serializers.SerializerMethodField()
    effect_thresholds = serializers.DictField(
        child=serializers.FloatField(), help_text="Calibrated on the reference's own splits (drift rules)."
    )
    spectrum = serializers.DictField(
        help_text="Covariance eigenvalues at log-spaced ranks: rank, current, reference (the scree)."
    )
    params = serializers.DictField(
        help_text="The monitor's parameters the run computed with (every field), frozen when it was made or "
        "queued again: editing the stream's parameters later changes no finished run."
    )

    @extend_schema_field(serializers.DictField(child=MonitorValueOut()))
    def get_values(self, run: MonitorRun) -> dict[str, dict[str, Any]]:
        return monitors.run_values(run)


class SeriesPointOut(serializers.Serializer):
    run = serializers.IntegerField(source="run_id")
    observed_at = serializers.DateTimeField()
    label = serializers.CharField(allow_blank=True)
    is_reference = serializers.BooleanField(help_text="The reference's own run (its quality).")
    value = serializers.FloatField(allow_null=True)


class SeriesRuleOut(serializers.Serializer):
    name = serializers.CharField()
    comparator = serializers.CharField()
    threshold = serializers.FloatField()
    severity = serializers.CharField()


class MetricSeriesOut(serializers.Serializer):
    metric = serializers.CharField()
    section = serializers.ChoiceField(choices=["current", "drift"])
    spec = serializers.SerializerMethodField()
    rules = SeriesRuleOut(many=True)
    points = SeriesPointOut(many=True)
    events = EventOut(many=True)

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_spec(self, series: monitors.MetricSeries) -> dict[str, Any] | None:
        return spec_of(series.metric)


class StreamSeriesOut(serializers.Serializer):
    stream = serializers.CharField()
    metrics = MetricSeriesOut(many=True, help_text="Metrics watched by a rule first.")


# --- streams ------------------------------------------------------------------------------------------


def _stream_of(request: Request, team: str, stream: str, *, write: bool = False) -> EmbeddingStream:
    membership = get_team_for_member(request.user, team, write=write)
    return monitors.get_stream(team=membership.team, slug=stream)


def _fresh(stream: EmbeddingStream) -> EmbeddingStream:
    """The stream as saved, its periodic task included."""
    return monitors.team_streams(team=stream.team).get(pk=stream.pk)


@extend_schema(
    methods=["GET"],
    parameters=PAGE_PARAMETERS,
    responses={200: page_of(EmbeddingStreamOut), 404: NOT_FOUND},
    operation_id="teams_streams_list",
    summary="The team's embedding streams",
    tags=TAGS,
)
@extend_schema(
    methods=["POST"],
    request=EmbeddingStreamIn,
    responses={201: EmbeddingStreamOut, 400: FIELD_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND},
    summary="Create an embedding stream with the default alert rules and its schedule (editors)",
    tags=TAGS,
)
@api_view(["GET", "POST"])
def stream_list(request: Request, team: str) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    if request.method == "GET":
        return paginate(request, monitors.team_streams(team=membership.team), EmbeddingStreamOut)
    data = EmbeddingStreamIn(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        stream = monitors.stream_create(team=membership.team, created_by=request.user, **data.validated_data)
    except InputError as error:
        raise _refused(error) from None
    return Response(
        EmbeddingStreamOut(_fresh(stream), context={"request": request}).data,
        status=status.HTTP_201_CREATED,
    )


@extend_schema(
    methods=["GET"],
    responses={200: EmbeddingStreamOut, 404: NOT_FOUND},
    summary="An embedding stream",
    tags=TAGS,
)
@extend_schema(
    methods=["PATCH"],
    request=EmbeddingStreamEditIn,
    responses={200: EmbeddingStreamOut, 400: FIELD_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND},
    summary="Rename a stream, describe it, change its parameters or its schedule (editors)",
    description="Fields left out stay. `every_minutes` and `crontab` set the schedule together, as "
    "PUT schedule/ does (one given, the other is cleared). The slug and the dimension do not change.",
    tags=TAGS,
)
@extend_schema(
    methods=["DELETE"],
    responses={204: None, 403: FORBIDDEN, 404: NOT_FOUND},
    summary="Delete a stream (editors)",
    description="Deletes what goes with it too (the web's confirmation page lists it with counts): its "
    "snapshots and their files, its monitor runs and their metric values, the alert rules on its series with "
    "their alerts, and its periodic task.",
    tags=TAGS,
)
@api_view(["GET", "PATCH", "DELETE"])
def stream_detail(request: Request, team: str, stream: str) -> Response:
    found = _stream_of(request, team, stream, write=request.method != "GET")
    if request.method == "DELETE":
        monitors.stream_delete(stream=found)
        return Response(status=status.HTTP_204_NO_CONTENT)
    if request.method == "PATCH":
        data = EmbeddingStreamEditIn(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        scheduled = "every_minutes" in values or "crontab" in values
        schedule = (values.pop("every_minutes", None), values.pop("crontab", "")) if scheduled else None
        try:
            monitors.stream_update(stream=found, schedule=schedule, **values)
        except InputError as error:
            raise _refused(error) from None
        found = _fresh(found)
    return Response(EmbeddingStreamOut(found, context={"request": request}).data)


@extend_schema(
    methods=["PUT"],
    request=ScheduleIn,
    responses={200: EmbeddingStreamOut, 400: FIELD_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND},
    summary="Schedule the stream's monitor: every N minutes, a cron schedule, or neither (editors)",
    description='Keeps the stream\'s django-celery-beat periodic task in step: `{"every_minutes": 60}`, '
    '`{"crontab": "0 * * * *"}`, or `{}` to stop scheduling (runs are then queued by POST monitor/).',
    tags=TAGS,
)
@api_view(["PUT"])
def stream_schedule(request: Request, team: str, stream: str) -> Response:
    found = _stream_of(request, team, stream, write=True)
    data = ScheduleIn(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        monitors.stream_schedule_set(stream=found, **data.validated_data)
    except InputError as error:
        raise _refused(error) from None
    return Response(EmbeddingStreamOut(_fresh(found), context={"request": request}).data)


@extend_schema(
    request=None,
    responses={
        202: MonitorRunOut(many=True),
        403: FORBIDDEN,
        404: NOT_FOUND,
        503: OpenApiResponse(
            MonitorRunOut(many=True), description="The task queue is unreachable: the runs failed, saying so."
        ),
    },
    summary="Monitor the stream's new snapshots now, as its schedule does (editors)",
    description="Queues a monitor run for every snapshot that has none, queues the failed runs again, and "
    "returns the stream's unfinished runs (the reference's first, then in observed order); an empty list "
    "when every snapshot is monitored. Poll a run's `url` until it is done. 503 when the task queue is "
    "unreachable: the runs it could not take are listed as failed, saying so.",
    tags=TAGS,
)
@api_view(["POST"])
def stream_monitor(request: Request, team: str, stream: str) -> Response:
    found = _stream_of(request, team, stream, write=True)
    runs = monitors.stream_monitor_now(stream=found)
    order = {run.pk: position for position, run in enumerate(runs)}
    found_runs = monitors.stream_runs(stream=found).select_related("stream__team").filter(pk__in=list(order))
    rows = sorted(found_runs, key=lambda run: order[run.pk])
    data = MonitorRunOut(rows, many=True, context={"request": request}).data
    # Every failed run was just queued again: one still failed is one the task queue did not take.
    down = any(run.status == JobStatus.FAILED for run in rows)
    return Response(data, status=status.HTTP_503_SERVICE_UNAVAILABLE if down else status.HTTP_202_ACCEPTED)


@extend_schema(
    request=None,
    responses={202: MonitorRunOut(many=True), 400: FIELD_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND},
    summary="Recompute the stream's earlier snapshots against its current reference (editors)",
    description="After a new reference: queues a monitor run against it for every other snapshot that has "
    "none yet, oldest first, and returns those runs; asked again, it queues nothing (an empty list). The runs "
    "against the earlier reference stay; the series reads, per snapshot, the run against the current one. "
    "400 when the stream has no reference.",
    tags=TAGS,
)
@api_view(["POST"])
def stream_recompute(request: Request, team: str, stream: str) -> Response:
    found = _stream_of(request, team, stream, write=True)
    try:
        runs = monitors.stream_recompute(stream=found)
    except InputError as error:
        raise _refused(error) from None
    rows = (
        monitors.stream_runs(stream=found).select_related("stream__team").filter(pk__in=[r.pk for r in runs])
    )
    data = MonitorRunOut(sorted(rows, key=lambda run: (run.observed_at, run.pk)), many=True,
                         context={"request": request}).data  # fmt: skip
    return Response(data, status=status.HTTP_202_ACCEPTED)


# --- snapshots ----------------------------------------------------------------------------------------


@extend_schema(
    methods=["GET"],
    parameters=PAGE_PARAMETERS,
    responses={200: page_of(EmbeddingSnapshotOut), 404: NOT_FOUND},
    operation_id="teams_streams_snapshots_list",
    summary="The stream's snapshots, newest observed first",
    tags=TAGS,
)
@extend_schema(
    methods=["POST"],
    request={"multipart/form-data": EmbeddingSnapshotIn, "application/json": EmbeddingSnapshotIn},
    responses={
        201: EmbeddingSnapshotOut,
        400: FIELD_ERRORS,
        403: FORBIDDEN,
        404: NOT_FOUND,
        503: OpenApiResponse(
            description="A reference kept, but the task queue is unreachable: its run failed, saying so "
            "(`monitor_run`, `detail`); POST monitor/ queues it again."
        ),
    },
    summary="Upload a snapshot: a .npy file, or vectors as JSON (editors)",
    description="Multipart with `file` (a .npy of rows x the stream's dimension, float32 or float64; its header "
    'is checked before it is kept), or JSON `{"vectors": [[...], ...]}` for a small batch (written to a '
    "float32 .npy). `reference: true` makes it the stream's reference and queues its run at once; other "
    "snapshots are monitored by the stream's schedule (or POST monitor/).",
    tags=TAGS,
)
@api_view(["GET", "POST"])
@parser_classes([MultiPartParser, FormParser, JSONParser])
def snapshot_list(request: Request, team: str, stream: str) -> Response:
    found = _stream_of(request, team, stream, write=request.method == "POST")
    if request.method == "GET":
        rows = monitors.stream_snapshots(stream=found).select_related("stream__team")
        return paginate(request, rows, EmbeddingSnapshotOut)
    try:
        body = request.data
    except RequestDataTooBig:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        reason = f"The request is over the {limit:,} bytes taken as JSON; upload a .npy file instead."
        raise serializers.ValidationError({"vectors": [reason]}) from None
    data = EmbeddingSnapshotIn(data=body)
    data.is_valid(raise_exception=True)
    values = data.validated_data
    options = {
        "reference": values["reference"],
        "observed_at": values.get("observed_at"),
        "label": values["label"],
        "uploaded_by": request.user,
    }
    try:
        if "file" in values:
            snapshot = monitors.snapshot_upload(stream=found, upload=values["file"], **options)
        else:
            snapshot = monitors.snapshot_from_vectors(stream=found, vectors=values["vectors"], **options)
    except InputError as error:
        raise _refused(error) from None
    body = EmbeddingSnapshotOut(snapshot, context={"request": request}).data
    run = (
        monitors.stream_runs(stream=found)
        .select_related("stream__team")
        .filter(snapshot=snapshot, reference=snapshot, status=JobStatus.FAILED)
        .first()
    )
    if run is not None:  # a reference's run, queued on commit: the task queue did not take it
        # Kept, as a job whose queue is down is (a 503 saying so); POST monitor/ queues it again.
        detail = f"The snapshot is kept, but its monitor run could not be queued: {run.error} " + QUEUE_AGAIN
        body = {
            **body,
            "monitor_run": MonitorRunOut(run, context={"request": request}).data,
            "detail": detail,
        }
        return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE)
    return Response(body, status=status.HTTP_201_CREATED)


@extend_schema(responses={200: EmbeddingSnapshotOut, 404: NOT_FOUND}, summary="A snapshot", tags=TAGS)
@api_view(["GET"])
def snapshot_detail(request: Request, team: str, stream: str, pk: int) -> Response:
    found = _stream_of(request, team, stream)
    snapshot = monitors.get_snapshot(stream=found, pk=pk)
    return Response(EmbeddingSnapshotOut(snapshot, context={"request": request}).data)


# --- runs, series, events -----------------------------------------------------------------------------


@extend_schema(
    parameters=[OpenApiParameter("status", str, enum=JobStatus.values), *PAGE_PARAMETERS],
    responses={200: page_of(MonitorRunOut), 400: FIELD_ERRORS, 404: NOT_FOUND},
    operation_id="teams_streams_runs_list",
    summary="The stream's monitor runs, newest observed first, with their job state",
    tags=TAGS,
)
@api_view(["GET"])
def run_list(request: Request, team: str, stream: str) -> Response:
    found = _stream_of(request, team, stream)
    rows = monitors.stream_runs(stream=found).select_related("stream__team")
    if wanted := request.query_params.get("status"):
        if wanted not in JobStatus.values:
            raise serializers.ValidationError({"status": [f"Choose one of {', '.join(JobStatus.values)}."]})
        rows = rows.filter(status=wanted)
    return paginate(request, rows, MonitorRunOut)


@extend_schema(
    responses={200: MonitorRunDetailOut, 404: NOT_FOUND},
    summary="A monitor run: its state and, once done, its values, effect thresholds and spectrum",
    tags=TAGS,
)
@api_view(["GET"])
def run_detail(request: Request, team: str, stream: str, pk: int) -> Response:
    found = _stream_of(request, team, stream)
    run = monitors.get_run(stream=found, pk=pk)
    return Response(MonitorRunDetailOut(run, context={"request": request}).data)


@extend_schema(
    responses={200: StreamSeriesOut, 404: NOT_FOUND},
    summary="Every metric of the stream over observed time, with the rules' thresholds and their events",
    tags=TAGS,
)
@api_view(["GET"])
def stream_series(request: Request, team: str, stream: str) -> Response:
    found = _stream_of(request, team, stream)
    data = {"stream": found.slug, "metrics": monitors.stream_series(stream=found)}
    return Response(StreamSeriesOut(data, context={"request": request}).data)


@extend_schema(
    responses={200: EventOut(many=True), 404: NOT_FOUND},
    summary="The stream's alert events: open and acknowledged first, then resolved; newest first",
    description="The team's events of this stream's rules (the team's alerts are at /api/teams/<team>/alerts/, "
    "where editors acknowledge them).",
    tags=TAGS,
)
@api_view(["GET"])
def event_list(request: Request, team: str, stream: str) -> Response:
    found = _stream_of(request, team, stream)
    return Response(EventOut(monitors.stream_events(stream=found), many=True).data)
