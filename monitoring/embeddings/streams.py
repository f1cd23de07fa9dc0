"""Streams, their schedule and their snapshots.

`stream_create` makes a stream with the default alert rules (`alerts.default_stream_rules`) and its schedule;
`stream_schedule_set` changes the schedule, and `stream_schedule_sync`, the one place that does, keeps the
stream's django-celery-beat `PeriodicTask` in step (an `IntervalSchedule` for `every_minutes`, a
`CrontabSchedule` for `crontab`), running `monitoring.tasks.stream_tick(stream_id)`. `snapshot_upload` keeps
a `.npy` file after checking its header; `snapshot_from_vectors` writes a small JSON batch to `.npy` first;
`stream_reference_set` makes a snapshot the reference and queues its run.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tokenize
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import IO, Any
from zoneinfo import ZoneInfo

import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files import File
from django.db import transaction
from django.template.defaultfilters import filesizeformat
from django.utils import timezone

from evalplatform.models import Team
from evalplatform.uploads import stored_file, upload_chunks, upload_name, upload_size, upload_too_large
from monitoring.alerts import services as alerts
from monitoring.editing.services import Consequence
from monitoring.embeddings.params import MonitorInputError, monitor_params
from monitoring.embeddings.runs import monitor_run_create
from monitoring.models import (
    AlertEvent,
    AlertRule,
    EmbeddingSnapshot,
    EmbeddingStream,
    MonitorRun,
    NotificationChannel,
)
from series.models import MetricValue, Series
from series.subjects import stream_series

#: The most vectors one JSON upload may carry; bigger batches go as `.npy` files.
MAX_JSON_VECTORS = 10_000
_FLOAT32_MAX = float(np.finfo(np.float32).max)
#: The most minutes between two ticks (a month).
MAX_EVERY_MINUTES = 31 * 24 * 60
#: The most columns a stream may declare: what its `dimension` column holds (PositiveIntegerField).
MAX_DIMENSION = 2**31 - 1
TICK_TASK = "monitoring.tasks.stream_tick"
CRON_FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
SLUG = re.compile(r"[-a-zA-Z0-9_]+")
ACCEPTED_DTYPES = ("float32", "float64")


# --- schedules ------------------------------------------------------------------------------------------


def crontab_fields(text: str) -> dict[str, str]:
    """`"minute hour day month weekday"` as CrontabSchedule's fields, each checked by Celery's parser."""
    from celery.schedules import crontab

    fields = text.split()
    if len(fields) != len(CRON_FIELDS):
        raise MonitorInputError(
            f'A cron schedule has five fields, "minute hour day month weekday" (e.g. "*/15 * * * *"); '
            f"got {text!r}.",
            field="crontab",
        )
    values = dict(zip(CRON_FIELDS, fields, strict=True))
    try:
        crontab(**values)
    except (ValueError, TypeError, IndexError, KeyError) as error:
        raise MonitorInputError(f"{text!r} is not a cron schedule: {error}", field="crontab") from None
    return values


def check_schedule(every_minutes: int | None, crontab: str) -> tuple[int | None, str]:
    """The schedule normalised: every N minutes, or a cron schedule, or neither (not scheduled)."""
    crontab = " ".join((crontab or "").split())
    if every_minutes is not None and crontab:
        raise MonitorInputError("Choose every_minutes or a crontab, not both.", field="every_minutes")
    if every_minutes is not None and not 1 <= every_minutes <= MAX_EVERY_MINUTES:
        raise MonitorInputError(
            f"every_minutes must lie between 1 and {MAX_EVERY_MINUTES}.", field="every_minutes"
        )
    if crontab:
        crontab_fields(crontab)
    return every_minutes, crontab


def schedule_text(stream: EmbeddingStream) -> str:
    if stream.every_minutes:
        return f"every {stream.every_minutes} minutes" if stream.every_minutes != 1 else "every minute"
    if stream.crontab:
        return f"cron {stream.crontab}"
    return "not scheduled"


#: Slugs a stream may not take: fixed words of its team's URLs (`/teams/<team>/streams/new/`).
RESERVED_STREAM_SLUGS = frozenset({"new"})


# --- streams --------------------------------------------------------------------------------------------


@transaction.atomic
def stream_create(
    *,
    team: Team,
    slug: str,
    name: str,
    dimension: int,
    description: str = "",
    params: Mapping[str, Any] | None = None,
    every_minutes: int | None = None,
    crontab: str = "",
    channels: Iterable[NotificationChannel] = (),
    created_by: User | None = None,
) -> EmbeddingStream:
    """A stream of the team with the default embedding alert rules (notifying `channels`) and its schedule."""
    if not SLUG.fullmatch(slug or ""):
        raise MonitorInputError("Use letters, digits, hyphens and underscores.", field="slug")
    if slug.lower() in RESERVED_STREAM_SLUGS:
        raise MonitorInputError(
            f"{slug!r} is reserved: the stream pages use that word. Choose another.", field="slug"
        )
    if EmbeddingStream.objects.filter(team=team, slug=slug).exists():
        raise MonitorInputError(f"The team {team.slug} already has a stream {slug}.", field="slug")
    if not name.strip():
        raise MonitorInputError("Name the stream.", field="name")
    if not isinstance(dimension, int) or not 1 <= dimension <= MAX_DIMENSION:
        raise MonitorInputError(
            f"The dimension is a positive number of columns, at most {MAX_DIMENSION}.", field="dimension"
        )
    overrides = dict(params or {})
    monitor_params(overrides)
    every_minutes, crontab = check_schedule(every_minutes, crontab)
    stream = EmbeddingStream.objects.create(
        team=team, slug=slug, name=name.strip()[:200], description=description, dimension=dimension,
        params=overrides, every_minutes=every_minutes, crontab=crontab, created_by=created_by,
    )  # fmt: skip
    alerts.default_stream_rules(stream=stream, channels=channels)
    stream_schedule_sync(stream=stream)
    return stream


@transaction.atomic
def stream_schedule_set(
    *, stream: EmbeddingStream, every_minutes: int | None = None, crontab: str = ""
) -> EmbeddingStream:
    """Monitor the stream every N minutes, on a cron schedule, or (neither) only when asked."""
    stream.every_minutes, stream.crontab = check_schedule(every_minutes, crontab)
    stream.save(update_fields=["every_minutes", "crontab"])
    stream_schedule_sync(stream=stream)
    return stream


@transaction.atomic
def stream_update(
    *,
    stream: EmbeddingStream,
    name: str | None = None,
    description: str | None = None,
    params: Mapping[str, Any] | None = None,
    schedule: tuple[int | None, str] | None = None,
) -> EmbeddingStream:
    """Change what is given of a stream's name, description, parameter overrides and schedule
    (`(every_minutes, crontab)`, as `stream_schedule_set` takes them); None leaves it unchanged.

    `params` replaces the overrides as a whole, checked as `stream_create` checks them; runs made later
    freeze the new parameters, finished ones keep theirs. A new name relabels the stream's series and its
    periodic task. The slug (its addresses) and the dimension (its snapshots') stay."""
    if schedule is not None:
        stream_schedule_set(stream=stream, every_minutes=schedule[0], crontab=schedule[1])
    changed: list[str] = []
    if name is not None:
        if not name.strip():
            raise MonitorInputError("Name the stream.", field="name")
        if len(name.strip()) > 200:
            raise MonitorInputError("A name has at most 200 characters.", field="name")
        stream.name = name.strip()
        changed.append("name")
    if description is not None:
        stream.description = description.strip()
        changed.append("description")
    if params is not None:
        overrides = dict(params)
        monitor_params(overrides)
        stream.params = overrides
        changed.append("params")
    if changed:
        stream.save(update_fields=changed)
    if "name" in changed:
        stream_series(stream)  # its label names the stream
        stream_schedule_sync(stream=stream)  # so does its periodic task's description
    return stream


def periodic_task_name(stream: EmbeddingStream) -> str:
    return f"embedding stream {stream.team.slug}/{stream.slug} (#{stream.pk})"[:200]


@transaction.atomic
def stream_schedule_sync(*, stream: EmbeddingStream) -> Any:
    """Make the stream's `PeriodicTask` match `every_minutes` / `crontab` (or delete it); returns it or None.

    Beat's database scheduler notices the change by itself. An admin may disable the task; a later change
    of the schedule keeps it disabled.
    """
    from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

    task = (
        PeriodicTask.objects.filter(pk=stream.periodic_task_id).first() if stream.periodic_task_id else None
    )
    if not stream.every_minutes and not stream.crontab:
        if task is not None:
            EmbeddingStream.objects.filter(pk=stream.pk).update(periodic_task=None)
            stream.periodic_task = None
            task.delete()
        return None
    interval = cron = None
    if stream.every_minutes:
        interval, _ = IntervalSchedule.objects.get_or_create(
            every=stream.every_minutes, period=IntervalSchedule.MINUTES
        )
    else:
        cron, _ = CrontabSchedule.objects.get_or_create(
            **crontab_fields(stream.crontab), timezone=ZoneInfo(settings.TIME_ZONE)
        )
    values = {
        "name": periodic_task_name(stream),
        "task": TICK_TASK,
        "args": json.dumps([stream.pk]),
        "interval": interval,
        "crontab": cron,
        "description": f"Monitor the new snapshots of the embedding stream {stream.name} "
        f"({schedule_text(stream)}); the stream's schedule is edited on the stream.",
    }
    if task is None:
        task = PeriodicTask.objects.create(**values)
        EmbeddingStream.objects.filter(pk=stream.pk).update(periodic_task=task)
        stream.periodic_task = task
    else:
        for name, value in values.items():
            setattr(task, name, value)
        task.save()
    return task


def stream_delete(*, stream: EmbeddingStream) -> None:
    """Delete a stream with its snapshots, runs and rules, its periodic task, and its files once committed."""
    with transaction.atomic():
        task_id = stream.periodic_task_id
        names = [name for pair in stream.snapshots.values_list("file", "summary") for name in pair if name]
        # Its series goes too (`monitoring.alerts.services.subject_deleted`, on the stream's post_delete),
        # with the rules on it, as its runs' values go with the runs.
        stream.delete()
        if task_id:
            from django_celery_beat.models import PeriodicTask

            PeriodicTask.objects.filter(pk=task_id).delete()
        storage = EmbeddingSnapshot._meta.get_field("file").storage  # type: ignore[union-attr]
        transaction.on_commit(partial(_delete_files, storage, names))


def stream_delete_consequences(stream: EmbeddingStream) -> list[Consequence]:
    """What goes with a stream, with counts (its confirmation page and the tests read it)."""
    snapshots = stream.snapshots.all()
    references = snapshots.filter(kind=EmbeddingSnapshot.Kind.REFERENCE).count()
    size = sum(snapshots.values_list("size", flat=True))
    runs = stream.monitor_runs.count()
    series = Series.objects.filter(kind=Series.Kind.STREAM, object_id=stream.pk)
    values = MetricValue.objects.filter(series__in=series).count()
    rules = list(AlertRule.objects.filter(series__in=series).order_by("name").values_list("name", flat=True))
    events = AlertEvent.objects.filter(rule__series__in=series).count()
    schedule = schedule_text(stream)
    return [
        Consequence("snapshots", snapshots.count(), f"{_plural(snapshots.count(), 'snapshot')} ({_plural(references, 'reference')} "
                    f"among them) and their stored files ({filesizeformat(size)})."),
        Consequence("runs", runs, f"{_plural(runs, 'monitor run')}, with {_plural(values, 'metric value')} in the "
                    "stream's series (its charts, CSV and reports)."),
        Consequence("rules", len(rules), f"{_plural(len(rules), 'alert rule')} on its series"
                    + (f" ({', '.join(rules)})" if rules else "") + f", with {_plural(events, 'alert')} they opened."),
        Consequence("schedule", int(bool(stream.periodic_task_id)),
                    f"Its schedule ({schedule}) and its periodic task." if stream.periodic_task_id
                    else "No schedule (it is not scheduled)."),
    ]  # fmt: skip


def _plural(count: int, one: str) -> str:
    return f"{count} {one if count == 1 else one + 's'}"


def _delete_files(storage: Any, names: Iterable[str]) -> None:
    for name in names:
        storage.delete(name)


# --- snapshots ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NpyHeader:
    """What an uploaded `.npy` file's header says, and the whole file's size and hash."""

    rows: int
    dimension: int
    dtype: str
    size: int
    sha256: str


def check_npy(upload: Any, *, dimension: int) -> NpyHeader:
    """Read an upload's `.npy` header and measure the file; refused (on `file`) unless it holds a 2-d
    float32 or float64 array of at least 2 rows and `dimension` columns, whole."""
    name = upload_name(upload, default="snapshot.npy")
    too_large = upload_too_large(upload_size(upload))
    if too_large:
        raise MonitorInputError(f"{name}: {too_large}", field="file")
    upload.seek(0)
    try:
        version = np.lib.format.read_magic(upload)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(upload)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(upload)
        else:
            raise ValueError(f"version {version[0]}.{version[1]} is not supported; save with numpy.save")
        offset = upload.tell()
    except (ValueError, OSError, SyntaxError, TypeError, tokenize.TokenError) as error:
        # numpy runs Python's tokenizer on the header text: a corrupt header can end in any of these.
        raise MonitorInputError(f"{name}: not a .npy file ({error})", field="file") from None
    if np.dtype(dtype).hasobject:
        raise MonitorInputError(
            f"{name}: dtype {dtype}: the file holds pickled Python objects, which are never loaded; "
            "snapshots are float32 or float64",
            field="file",
        )
    if np.dtype(dtype).kind != "f" or np.dtype(dtype).name not in ACCEPTED_DTYPES:
        raise MonitorInputError(f"{name}: dtype {dtype}: snapshots are float32 or float64", field="file")
    if len(shape) != 2 or shape[0] < 2:
        raise MonitorInputError(
            f"{name}: shape {tuple(shape)}: a snapshot is a 2-d (rows, dimension) array of at least 2 rows",
            field="file",
        )
    rows, columns = int(shape[0]), int(shape[1])
    if columns != dimension:
        raise MonitorInputError(
            f"{name}: {columns} columns, but the stream's dimension is {dimension}", field="file"
        )
    digest, size = hashlib.sha256(), 0
    values = _NonFinite(np.dtype(dtype), rows=rows, columns=columns, fortran=bool(fortran), skip=offset)
    for chunk in upload_chunks(upload):
        digest.update(chunk)
        size += len(chunk)
        values.feed(chunk)
    expected = offset + rows * columns * np.dtype(dtype).itemsize
    if size != expected:
        raise MonitorInputError(
            f"{name}: {size:,} bytes, but its header announces {rows:,} x {columns} {np.dtype(dtype).name} "
            f"({expected:,} bytes)",
            field="file",
        )
    if values.first_row is not None:
        raise MonitorInputError(f"{name}: row {values.first_row}: NaN or infinite values", field="file")
    return NpyHeader(rows, columns, np.dtype(dtype).name, size, digest.hexdigest())


class _NonFinite:
    """The first row of a `.npy` file's array holding NaN or an infinity, found as its bytes stream past
    (refused at upload, as JSON vectors are, rather than failing the monitor run later)."""

    def __init__(self, dtype: np.dtype, *, rows: int, columns: int, fortran: bool, skip: int) -> None:
        self.dtype, self.rows, self.columns, self.fortran = dtype, rows, columns, fortran
        self.skip = skip  # header bytes still to pass
        self.pending = b""
        self.seen = 0  # values read
        self.first_row: int | None = None

    def feed(self, chunk: bytes) -> None:
        if self.skip:
            taken = min(self.skip, len(chunk))
            chunk, self.skip = chunk[taken:], self.skip - taken
        data = self.pending + chunk
        whole = len(data) - len(data) % self.dtype.itemsize
        values = np.frombuffer(data[:whole], dtype=self.dtype)
        self.pending = data[whole:]
        bad = np.flatnonzero(~np.isfinite(values)) + self.seen
        self.seen += len(values)
        # Row-major files go row by row; column-major ones (fortran_order) column by column.
        found = bad % self.rows if self.fortran else bad // self.columns
        if found.size and (self.first_row is None or int(found.min()) < self.first_row):
            self.first_row = int(found.min())


@transaction.atomic
def snapshot_upload(
    *,
    stream: EmbeddingStream,
    upload: IO[bytes] | Any,
    reference: bool = False,
    observed_at: datetime | None = None,
    label: str = "",
    uploaded_by: User | None = None,
) -> EmbeddingSnapshot:
    """Keep a `.npy` snapshot of the stream after checking its header. A periodic snapshot waits for the
    stream's schedule (or `stream_tick`); a reference becomes the stream's reference at once."""
    header = check_npy(upload, dimension=stream.dimension)
    if observed_at is not None and timezone.is_naive(observed_at):
        observed_at = timezone.make_aware(observed_at)
    name = upload_name(upload, default="snapshot.npy")
    snapshot = EmbeddingSnapshot(
        stream=stream,
        kind=EmbeddingSnapshot.Kind.REFERENCE if reference else EmbeddingSnapshot.Kind.CURRENT,
        label=(label or Path(name).stem)[:200], rows=header.rows, dimension=header.dimension,
        dtype=header.dtype, size=header.size, sha256=header.sha256, observed_at=observed_at or timezone.now(),
        uploaded_by=uploaded_by,
    )  # fmt: skip
    snapshot.file.save(
        name if name.endswith(".npy") else f"{name}.npy",
        stored_file(upload, default="snapshot.npy"),
        save=False,
    )
    snapshot.save()
    if reference:
        stream_reference_set(stream=stream, snapshot=snapshot)
    return snapshot


def vectors_array(vectors: Any, *, dimension: int) -> np.ndarray:
    """A JSON list of vectors as a float32 matrix; refused (on `vectors`) naming the first bad vector."""
    if not isinstance(vectors, list) or len(vectors) < 2:
        raise MonitorInputError("Send a list of at least 2 vectors.", field="vectors")
    if len(vectors) > MAX_JSON_VECTORS:
        raise MonitorInputError(
            f"{len(vectors):,} vectors: at most {MAX_JSON_VECTORS:,} go as JSON; upload a .npy file instead.",
            field="vectors",
        )
    for index, vector in enumerate(vectors):
        if not isinstance(vector, list) or len(vector) != dimension:
            size = len(vector) if isinstance(vector, list) else "not a list of"
            raise MonitorInputError(
                f"vector {index}: {size} numbers, but the stream's dimension is {dimension}", field="vectors"
            )
        _check_numbers(index, vector)
    array = np.asarray(vectors, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(array).all(axis=1))
    if bad.size:
        raise MonitorInputError(f"vector {int(bad[0])}: NaN or infinite values", field="vectors")
    # Snapshots are float32: a number past its range (about 3.4e38) would be stored as infinity.
    too_large = np.flatnonzero((np.abs(array) > np.finfo(np.float32).max).any(axis=1))
    if too_large.size:
        raise MonitorInputError(
            f"vector {int(too_large[0])}: a value past float32's range (±3.4e38) would be stored as infinity",
            field="vectors",
        )
    return array.astype(np.float32)


def _check_numbers(index: int, vector: list[Any]) -> None:
    """Every entry a JSON number: not `true` or `false` (which numpy would take as 1 and 0), nor an
    integer past float32's range (which numpy would keep as a Python object), named where it stands."""
    for component, value in enumerate(vector):
        if type(value) not in (int, float):
            shown = (
                json.dumps(value) if value is None or isinstance(value, bool | str) else type(value).__name__
            )
            raise MonitorInputError(
                f"vector {index}: every entry must be a number; component {component} is {shown}",
                field="vectors",
            )
        if type(value) is int and abs(value) > _FLOAT32_MAX:
            raise MonitorInputError(
                f"vector {index}: a value past float32's range (±3.4e38) would be stored as infinity "
                f"(component {component})",
                field="vectors",
            )


def snapshot_from_vectors(
    *, stream: EmbeddingStream, vectors: Any, label: str = "", **options: Any
) -> EmbeddingSnapshot:
    """A small batch of vectors sent as JSON, written to a float32 `.npy` file and kept as a snapshot."""
    array = vectors_array(vectors, dimension=stream.dimension)
    buffer = io.BytesIO()
    np.save(buffer, array)
    stem = re.sub(r"[^-\w]+", "-", label).strip("-") or "vectors"
    return snapshot_upload(
        stream=stream, upload=File(buffer, name=f"{stem[:80]}.npy"), label=label or "vectors", **options
    )


@transaction.atomic
def stream_reference_set(
    *, stream: EmbeddingStream, snapshot: EmbeddingSnapshot, enqueue: bool = True
) -> MonitorRun:
    """Make `snapshot` the stream's reference, and queue its run: its quality, and the effect thresholds
    calibrated on its own splits (kept for every later run of the stream)."""
    if snapshot.stream_id != stream.pk:
        raise MonitorInputError("The snapshot belongs to another stream.", field="snapshot")
    EmbeddingSnapshot.objects.filter(pk=snapshot.pk).update(kind=EmbeddingSnapshot.Kind.REFERENCE)
    snapshot.kind = EmbeddingSnapshot.Kind.REFERENCE
    stream.reference = snapshot
    stream.save(update_fields=["reference"])
    return monitor_run_create(snapshot=snapshot, reference=snapshot, enqueue=enqueue)
