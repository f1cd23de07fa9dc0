"""Monitor runs: made by the scheduled tick (or on demand), computed in one task or by a chord of chunk tasks.

See the package's docstring for the chord's lifecycle.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from evalcore.embeddings import MonitorParams
from evalcore.jsonable import json_number
from evalplatform.jobs import (
    Claim,
    JobError,
    JobOutcome,
    JobStatus,
    Progress,
    ProgressFn,
    job_attempt,
    job_claim,
    job_enqueue_on_commit,
    job_finish,
    job_release,
    job_run,
)
from monitoring.embeddings.models import summary_upload_to
from monitoring.embeddings.params import MonitorInputError, monitor_params
from monitoring.models import (
    EmbeddingSnapshot,
    EmbeddingStream,
    MonitorRun,
)
from series.selectors import THRESHOLD_SUBGROUP
from series.services import MetricValueIn, metric_values_write
from series.subjects import stream_series

logger = logging.getLogger(__name__)

#: The hard time limit of a monitor run's tasks on the worker.
TIME_LIMIT = 30 * 60
#: A snapshot with more rows than this is split over several workers (settings.MONITOR_CHUNK_ROWS).
DEFAULT_CHUNK_ROWS = 1_000_000
#: How long a chord's chunk may wait in the queue before its run counts as lost (settings.MONITOR_CHORD_WAIT_SECONDS).
DEFAULT_CHORD_WAIT_SECONDS = 15 * 60
#: Points of the eigenvalue spectrum kept for the scree plot (log-spaced ranks, the first and last kept).
SPECTRUM_POINTS = 160
CHUNK_TASK = "monitoring.tasks.monitor_chunk"
MERGE_TASK = "monitoring.tasks.monitor_merge"


# --- monitor runs: creating them and the schedule -------------------------------------------------------


def chunk_rows() -> int:
    return int(getattr(settings, "MONITOR_CHUNK_ROWS", DEFAULT_CHUNK_ROWS))


def chord_wait() -> timedelta:
    return timedelta(
        seconds=float(getattr(settings, "MONITOR_CHORD_WAIT_SECONDS", DEFAULT_CHORD_WAIT_SECONDS))
    )


def chord_available() -> bool:
    """Whether Celery has a result backend, which a chord needs to know when all its chunks are done."""
    return bool(getattr(settings, "CELERY_RESULT_BACKEND", None))


def planned_chunks(rows: int) -> int:
    """How many workers summarise a snapshot of `rows` rows: one, or one per MONITOR_CHUNK_ROWS rows."""
    if not chord_available():
        return 1
    return max(1, min(rows // 2, math.ceil(rows / max(1, chunk_rows()))))


@transaction.atomic
def monitor_run_create(
    *, snapshot: EmbeddingSnapshot, reference: EmbeddingSnapshot | None, enqueue: bool = True
) -> MonitorRun:
    """The monitor run of `snapshot` against `reference` (None: quality only), queued on commit.

    The same request finds the same run: a done or unfinished one as it is, a failed one reset and queued
    again. A reference's own run (`reference` is `snapshot`) computes its quality and its calibration. The
    stream's parameters are frozen on the run when it is made or queued again (`frozen_params`): the run
    computes with those, whatever the stream says later.
    """
    if reference is not None and reference.stream_id != snapshot.stream_id:
        raise MonitorInputError("The reference belongs to another stream.", field="reference")
    stream = EmbeddingStream.objects.only("params").get(pk=snapshot.stream_id)
    run, created = MonitorRun.objects.select_for_update().get_or_create(
        snapshot=snapshot,
        reference=reference,
        defaults={
            "stream_id": snapshot.stream_id,
            "observed_at": snapshot.observed_at,
            "chunks": planned_chunks(snapshot.rows),
            "params": frozen_params(stream.params),
        },
    )
    if not created and run.status == JobStatus.FAILED:
        MonitorRun.objects.filter(pk=run.pk).update(
            status=JobStatus.PENDING, attempts=0, error="", chunks=planned_chunks(snapshot.rows),
            params=frozen_params(stream.params),
        )  # fmt: skip
        run.refresh_from_db()
        created = True
    if created and enqueue:
        job_enqueue_on_commit(run)
    return run


def stream_tick(*, stream_id: int, enqueue: bool = True) -> list[MonitorRun]:
    """The scheduled job: a monitor run for every snapshot of the stream that has none, queued on commit
    (`enqueue=False`: only created, for the caller to compute). The reference goes first (its run
    calibrates the thresholds), then oldest first, so a worker raises alerts in time order."""
    stream = EmbeddingStream.objects.filter(pk=stream_id).select_related("reference").first()
    if stream is None:
        logger.warning("stream_tick: no embedding stream %s (its periodic task outlived it?)", stream_id)
        return []
    waiting = list(stream.snapshots.filter(monitor_runs__isnull=True).order_by("observed_at", "pk"))
    waiting.sort(key=lambda snapshot: snapshot.pk != stream.reference_id)
    runs = []
    for snapshot in waiting:
        reference = snapshot if snapshot.pk == stream.reference_id else stream.reference
        runs.append(monitor_run_create(snapshot=snapshot, reference=reference, enqueue=enqueue))
    return runs


def stream_recompute(*, stream: EmbeddingStream, enqueue: bool = True) -> list[MonitorRun]:
    """After a new reference: a run against it for every other snapshot of the stream that has none yet,
    oldest first, queued on commit; returns the runs made. Idempotent: a second call makes none (a snapshot
    with a run against the reference is skipped, and `monitor_run_create` finds the run it would make). The
    runs against the earlier reference stay (their values and the alerts they opened); the dashboard shows,
    per snapshot, the run against the current reference once it is done."""
    if stream.reference_id is None:
        raise MonitorInputError("The stream has no reference to recompute against.", field="reference")
    reference = EmbeddingSnapshot.objects.get(pk=stream.reference_id)
    with transaction.atomic():
        snapshots = (
            stream.snapshots.exclude(pk=reference.pk)
            .exclude(monitor_runs__reference=reference)
            .order_by("observed_at", "pk")
        )
        return [monitor_run_create(snapshot=s, reference=reference, enqueue=enqueue) for s in snapshots]


def stream_recompute_pending(*, stream: EmbeddingStream) -> int:
    """How many snapshots `stream_recompute` would run: monitored before, but not against the reference."""
    if stream.reference_id is None:
        return 0
    return (
        stream.snapshots.exclude(pk=stream.reference_id)
        .filter(monitor_runs__isnull=False)
        .exclude(monitor_runs__reference_id=stream.reference_id)
        .distinct()
        .count()
    )


def stream_monitor_now(*, stream: EmbeddingStream, enqueue: bool = True) -> list[MonitorRun]:
    """What `monitor_stream` and `POST .../monitor/` ask for: the tick now, failed runs queued again; returns
    those runs and the others still unfinished (as they stand once queued: a run the broker could not take
    has failed, saying so), the reference's first, then in observed order."""
    with transaction.atomic():
        touched = {run.pk for run in stream_tick(stream_id=stream.pk, enqueue=enqueue)}
        failed = MonitorRun.objects.filter(stream=stream, status=JobStatus.FAILED).select_related(
            "snapshot", "reference"
        )
        for run in failed:
            touched.add(
                monitor_run_create(snapshot=run.snapshot, reference=run.reference, enqueue=enqueue).pk
            )
        unfinished = MonitorRun.objects.filter(stream=stream).unfinished()
        never_queued = unfinished.filter(status=JobStatus.PENDING, queued_at__isnull=True).exclude(
            pk__in=touched
        )
        for run in never_queued if enqueue else ():
            job_enqueue_on_commit(run)  # made without queueing (an interrupted --sync run, say)
        touched.update(unfinished.values_list("pk", flat=True))
    runs = MonitorRun.objects.filter(pk__in=touched).select_related("snapshot", "reference")
    return sorted(runs, key=lambda run: (run.snapshot_id != run.reference_id, run.observed_at, run.pk))


# --- monitor runs: computing them -----------------------------------------------------------------------


@dataclass(frozen=True)
class MonitorOutput:
    """What a run stores: (metric, value) pairs (None when undefined), the spectrum, the effect thresholds,
    the device. Whether a metric describes the snapshot or its drift is the metric's (`metric_section`)."""

    values: list[tuple[str, float | None]]
    spectrum: dict[str, Any]
    effect_thresholds: dict[str, float]
    device: str
    chunks: int


@dataclass(frozen=True)
class Split:
    """`monitor_run` claimed the run and handed it to a chord of `chunks` tasks."""

    chunks: int


def frozen_params(overrides: Any) -> dict[str, Any]:
    """What a run stores of its stream's parameters: every field of `MonitorParams` with the stream's
    overrides applied. Overrides that no longer resolve (refused since they were saved) are kept as they
    are, so the run fails saying why rather than running with other settings."""
    try:
        return monitor_params(overrides).to_dict()
    except MonitorInputError:
        return dict(overrides or {})


def _params(run: MonitorRun) -> MonitorParams:
    """The parameters the run was made with (frozen on it), never the stream's current ones."""
    try:
        return monitor_params(run.params)
    except MonitorInputError as error:
        raise JobError(f"The run's parameters: {error}") from None


def _device() -> Any:
    from evalcore.embeddings import resolve_device

    return resolve_device(getattr(settings, "MONITOR_DEVICE", "auto"))


def _path(snapshot: EmbeddingSnapshot) -> str:
    if not snapshot.file or not Path(snapshot.file.path).is_file():
        raise JobError(f"{snapshot.label or snapshot}: the stored file is missing")
    return str(snapshot.file.path)


def _summarize(snapshot: EmbeddingSnapshot, params: MonitorParams, device: Any, **options: Any) -> Any:
    from evalcore.embeddings import summarize

    return summarize(
        _path(snapshot), sample_size=params.sample_size, seed=params.seed, chunk_rows=params.chunk_rows,
        device=device, **options,
    )  # fmt: skip


def summary_key(params: MonitorParams) -> str:
    """What a cached summary depends on: the row sample's size and seed."""
    return f"sample{params.sample_size}-seed{params.seed}"


def params_key(params: MonitorParams) -> str:
    return hashlib.sha256(json.dumps(params.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


def reference_summary(snapshot: EmbeddingSnapshot, *, params: MonitorParams, device: Any) -> Any:
    """The reference's summary: read from its cache file, or computed and cached (every run reads it)."""
    from evalcore.embeddings import load_summary

    key = summary_key(params)
    if snapshot.summary and snapshot.summary_key == key:
        try:
            return load_summary(snapshot.summary.path)
        except (OSError, ValueError, KeyError):
            logger.warning("the cached summary of snapshot %s is unreadable; computing it again", snapshot.pk)
    summary = _summarize(snapshot, params, device)
    _cache_summary(snapshot, summary, key)
    return summary


def _cache_summary(snapshot: EmbeddingSnapshot, summary: Any, key: str) -> None:
    # A cache of derived data, written outside the job's store: concurrent runs write equal files, the
    # conditional update keeps one of them and the others delete theirs.
    storage = snapshot.summary.storage
    name = storage.save(
        summary_upload_to(snapshot, f"snapshot{snapshot.pk}.npz"), ContentFile(summary.to_bytes())
    )
    old = snapshot.summary.name or ""
    kept = EmbeddingSnapshot.objects.filter(pk=snapshot.pk, summary=old).update(summary=name, summary_key=key)
    if not kept:
        storage.delete(name)
        return
    if old:
        storage.delete(old)
    snapshot.summary.name, snapshot.summary_key = name, key


def reference_calibration(
    snapshot: EmbeddingSnapshot, summary: Any, *, params: MonitorParams, device: Any
) -> dict[str, Any]:
    """The reference's effect thresholds and kernel bandwidth: cached on the snapshot per parameters."""
    from evalcore.embeddings import calibrate

    key = params_key(params)
    if snapshot.calibration.get("key") == key:
        return dict(snapshot.calibration)
    calibration = calibrate(summary, params=params, device=device).to_dict()
    finite = {name: value for name, value in calibration["thresholds"].items() if math.isfinite(value)}
    data = {**calibration, "thresholds": finite, "key": key}
    EmbeddingSnapshot.objects.filter(pk=snapshot.pk).update(calibration=data)
    snapshot.calibration = data
    return data


def eigenvalues(summary: Any) -> np.ndarray:
    """The covariance's eigenvalues, largest first, rounding below zero clipped to zero."""
    return np.clip(np.linalg.eigvalsh(summary.covariance())[::-1], 0.0, None)


def spectrum_points(current: Any, reference: Any | None, *, points: int = SPECTRUM_POINTS) -> dict[str, Any]:
    """The scree of a snapshot (and of its reference) at up to `points` log-spaced ranks (1-based)."""
    values = eigenvalues(current)
    dim = values.size
    if dim <= points:
        ranks = np.arange(1, dim + 1)
    else:
        ranks = np.unique(np.geomspace(1, dim, num=points).round().astype(np.int64))
    data: dict[str, Any] = {
        "dimension": dim,
        "rank": ranks.tolist(),
        "current": values[ranks - 1].tolist(),
        "current_total": float(values.sum()),
    }
    if reference is not None:
        reference_values = eigenvalues(reference)
        data["reference"] = reference_values[ranks - 1].tolist()
        data["reference_total"] = float(reference_values.sum())
    return data


def _evaluate(
    run: MonitorRun, current: Any, *, params: MonitorParams, device: Any, progress: ProgressFn, chunks: int
) -> MonitorOutput:
    """The metrics of a snapshot's summary: its quality, and its drift against the run's reference."""
    from evalcore.embeddings import drift_metrics, snapshot_quality

    progress(0.65, "quality and collapse metrics")
    values = list(snapshot_quality(current, params=params, device=device).items())
    reference = None
    thresholds: dict[str, float] = {}
    if run.reference is not None:
        is_reference = run.reference_id == run.snapshot_id
        if not is_reference:
            progress(0.7, "reading the reference")
        reference = (
            current if is_reference else reference_summary(run.reference, params=params, device=device)
        )
        progress(0.75, "calibrating the effect thresholds on the reference")
        calibration = reference_calibration(run.reference, reference, params=params, device=device)
        thresholds = dict(calibration["thresholds"])
        if not is_reference:
            progress(0.8, "drift against the reference")
            drift, _, _ = drift_metrics(
                reference, current, params=params, bandwidth=calibration["bandwidth"], device=device
            )
            values += list(drift.items())
    return MonitorOutput(
        values=[(name, json_number(value)) for name, value in values],
        spectrum=spectrum_points(current, None if reference is current else reference),
        effect_thresholds=thresholds,
        device=str(getattr(device, "type", device)),
        chunks=chunks,
    )


def _compute_single(run: MonitorRun, progress: ProgressFn) -> MonitorOutput:
    params, device = _params(run), _device()
    total, done = max(1, run.snapshot.rows), [0]

    def rows_done(count: int) -> None:
        done[0] += count
        progress(0.6 * done[0] / total, f"summarising {done[0]:,} of {total:,} rows")

    progress(0.0, "summarising the snapshot")
    if run.reference_id == run.snapshot_id:
        summary = reference_summary(run.snapshot, params=params, device=device)
    else:
        summary = _summarize(run.snapshot, params, device, progress=rows_done)
    return _evaluate(run, summary, params=params, device=device, progress=progress, chunks=1)


def _store(run: MonitorRun, output: MonitorOutput) -> None:
    """Write a run's results (inside `job_finish`'s transaction, for one task or a chord's merge alike): the
    spectrum and thresholds on the run; its scalars and its calibrated effect thresholds (subgroup
    `THRESHOLD_SUBGROUP`) through the one writer into the stream's series, at the snapshot's time. A re-run
    updates the same rows."""
    run.device = output.device
    run.spectrum = output.spectrum
    run.effect_thresholds = output.effect_thresholds
    run.chunks = output.chunks
    values = [MetricValueIn(name, value) for name, value in output.values]
    values += [
        MetricValueIn(name, threshold, subgroup=THRESHOLD_SUBGROUP)
        for name, threshold in sorted(output.effect_thresholds.items())
    ]
    metric_values_write(job=run, series=stream_series(run.stream), observed_at=run.observed_at, values=values)


def monitor_run(*, run_id: int, queue: str | None = None, split: bool = True) -> JobOutcome | Split:
    """Compute a monitor run (the task's one call); its committed values have the stream's alert rules
    checked (`monitoring.alerts.services.series_observed`). Idempotent.

    A run planned over several chunks is claimed here and handed to a chord on `queue` (`Split`), when
    `split` and Celery has a result backend; otherwise it is computed in this process.
    """
    run = MonitorRun.objects.filter(pk=run_id).select_related("snapshot").first()
    if run is None:
        return JobOutcome("missing")
    if split and run.chunks > 1 and chord_available() and not run.is_finished:
        return _dispatch(run, queue=queue)
    return job_run(MonitorRun, pk=run_id, compute=_compute_single, store=_store)


def chunk_ranges(rows: int, chunks: int) -> list[tuple[int, int]]:
    """`chunks` contiguous, non-empty row ranges covering 0:rows, as equal as can be."""
    bounds = np.linspace(0, rows, num=max(1, min(chunks, rows)) + 1).round().astype(np.int64)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]


def _dispatch(run: MonitorRun, *, queue: str | None) -> JobOutcome | Split:
    from celery import chord, current_app

    claim = job_claim(MonitorRun, pk=run.pk)
    if isinstance(claim, JobOutcome):
        return claim
    ranges = chunk_ranges(run.snapshot.rows, run.chunks)
    _remove_chunk_files(run)  # a lost chord's leftovers
    claim.rows().update(
        lease_expires_at=timezone.now() + chord_wait(),
        progress=0.0,
        progress_note=f"summarising {len(ranges)} chunks on the workers",
    )
    options = {"queue": queue} if queue else {}
    token = str(claim.token)
    header = [current_app.signature(CHUNK_TASK, args=(run.pk, token, a, b), **options) for a, b in ranges]
    callback = current_app.signature(MERGE_TASK, args=(run.pk, token), **options)
    try:
        chord(header)(callback)
    except Exception:
        job_release(claim)  # pending again: the stale-job sweep queues it once more
        raise
    return Split(len(ranges))


def _chord_claim(run_id: int, token: str) -> Claim:
    return Claim(MonitorRun, run_id, uuid.UUID(token))


def _chunk_dir(run: MonitorRun) -> str:
    return f"embeddings/{run.stream.team.slug}/{run.stream_id}/chunks"


def _remove_chunk_files(run: MonitorRun, names: Sequence[str | None] = ()) -> None:
    storage = run.snapshot.file.storage
    if not names:
        try:
            _, files = storage.listdir(_chunk_dir(run))
        except FileNotFoundError:
            return
        names = [f"{_chunk_dir(run)}/{name}" for name in files if name.startswith(f"run{run.pk}-")]
    for name in names:
        if name:
            storage.delete(name)


def _extend_chord_lease(claim: Claim, *, progress_step: float = 0.0, note: str = "") -> None:
    updates: dict[str, Any] = {"lease_expires_at": timezone.now() + chord_wait()}
    if progress_step:
        updates["progress"] = F("progress") + progress_step
        updates["progress_note"] = note
    claim.rows().update(**updates)


def monitor_chunk(*, run_id: int, token: str, start: int, stop: int) -> str | None:
    """Summarise rows start:stop of a run's snapshot into a summary file; its storage name, or None when
    the claim `token` no longer holds the run (taken over, failed or done: the chunk is dropped)."""
    claim = _chord_claim(run_id, token)
    run = claim.rows().select_related("stream__team", "snapshot").first()
    if run is None:
        return None
    storage = run.snapshot.file.storage

    def summarize_rows() -> str:
        summary = _summarize(run.snapshot, _params(run), _device(), start=start, stop=stop)
        name = storage.save(
            f"{_chunk_dir(run)}/run{run.pk}-{token}-{start}.npz", ContentFile(summary.to_bytes())
        )
        return str(name)

    name = job_attempt(claim, summarize_rows, release=False, where=f"rows {start}:{stop}")
    if isinstance(name, JobOutcome):
        return None
    if not claim.rows().exists():
        storage.delete(name)
        return None
    share = 0.6 * (stop - start) / max(1, run.snapshot.rows)
    _extend_chord_lease(claim, progress_step=share, note=f"summarised rows {start:,}:{stop:,}")
    return str(name)


def monitor_merge(*, run_id: int, token: str, names: Sequence[str | None]) -> JobOutcome:
    """The chord's callback: merge the chunks' summaries, compute the metrics, store them under the claim
    (`job_finish`; their commit has the alert rules checked). `lost` when the claim no longer holds the run."""
    from evalcore.embeddings import load_summary, merge_summaries

    claim = _chord_claim(run_id, token)
    run = claim.rows().select_related("stream__team", "snapshot", "reference").first()
    if run is None or any(name is None for name in names):
        if run is not None:
            _remove_chunk_files(run, names)
        return JobOutcome("lost")
    storage = run.snapshot.file.storage

    def merge() -> MonitorOutput:
        Progress(claim)(0.6, "merging the chunks")
        summary = merge_summaries([load_summary(storage.path(name)) for name in names])  # type: ignore[arg-type]
        if run.reference_id == run.snapshot_id:  # a reference's run: every later run reads its summary
            _cache_summary(run.snapshot, summary, summary_key(_params(run)))
        return _evaluate(
            run,
            summary,
            params=_params(run),
            device=_device(),
            progress=Progress(claim),
            chunks=len(names),
        )

    output = job_attempt(claim, merge, fail_on=(OSError,), release=False)
    if isinstance(output, JobOutcome):
        _remove_chunk_files(run, names)
        return output
    return job_finish(
        claim,
        lambda job: _store(job, output),  # type: ignore[arg-type]
        cleanup=lambda: _remove_chunk_files(run, names),
    )
