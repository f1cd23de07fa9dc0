"""Embedding monitors: a team's streams, their snapshots, the schedule, and one monitor run per snapshot.

- `stream_create` makes a stream with the default alert rules (`alerts.default_stream_rules`) and its
  schedule; `stream_update` renames it and changes its parameters; `stream_delete` deletes it with what
  `stream_delete_consequences` names. `stream_schedule_set` changes the schedule; `stream_schedule_sync`, the one place that does,
  keeps the stream's django-celery-beat `PeriodicTask` in step with it (an `IntervalSchedule` for
  `every_minutes`, a `CrontabSchedule` for `crontab`), running `monitoring.tasks.stream_tick(stream_id)`.
- `snapshot_upload` keeps a `.npy` file after checking its header (2-d float32 or float64, the stream's
  dimension, not truncated); `snapshot_from_vectors` writes a small batch of JSON vectors to `.npy` first.
  A reference snapshot becomes the stream's reference and its monitor run is queued at once: it computes
  the reference's statistics and the effect thresholds calibrated on the reference's own splits, both
  kept on the snapshot for every later run.
- `stream_tick` (the scheduled job) creates and queues a monitor run for every snapshot of the stream that
  has none yet, the reference first, then oldest first. `monitor_run_create` finds or creates the one run
  of a snapshot against a reference: the same request finds the same run, and a failed one is queued again.
  The run freezes the stream's parameters (`MonitorRun.params`, every field of `MonitorParams`) when it is
  made or queued again, and computes with those: an edit of the stream changes later runs only.
- `monitor_run` (the task's one call) computes a run. A snapshot of at most `MONITOR_CHUNK_ROWS` rows, or
  any snapshot when Celery has no result backend (the filesystem broker), is summarised in that one task
  (`job_run`). A bigger one is split into row ranges: the task claims the job and starts a Celery chord
  whose tasks (`monitor_chunk`) each summarise one range into an `EmbeddingSummary` file, and whose callback
  (`monitor_merge`) merges them, computes the metrics and finishes the job. The statistics are mergeable, so
  the result equals the single task's (the row sample exactly, the moments to float64 rounding).

The chord keeps the job lifecycle of `evalplatform.jobs`. Each chunk and the merge carry the claim's lease
token and do nothing once it no longer holds the job; each renews the lease while it computes, and the
dispatch and every finished chunk extend it by `MONITOR_CHORD_WAIT_SECONDS`, the time a chunk may wait in
the queue. A lost chord (a killed worker, a dropped message) lets the lease lapse, the stale-job sweep
queues the run again, and a new claim starts a new chord; the old chunks' results are discarded. Results
are stored once, by `job_finish` under the claim: the scalars and the calibrated effect thresholds through
`series.services.metric_values_write` into the stream's series, the spectrum on the run. Once they are
committed, the table's `series_observed` signal has `monitoring.alerts.services` check the stream's alert rules.

Modules: `params` (the parameters and the input error), `streams` (streams, schedules, snapshots), `runs`
(monitor runs, the tick, the computation and the chord), `selectors` (the read side). Everything is
re-exported here: callers write `monitors.stream_tick(...)`.
"""

from __future__ import annotations

from evalcore.embeddings import DRIFT_METRICS, QUALITY_METRICS
from monitoring.embeddings.params import MonitorInputError, monitor_params
from monitoring.embeddings.runs import (
    TIME_LIMIT,
    Split,
    chord_available,
    chord_wait,
    chunk_ranges,
    frozen_params,
    monitor_chunk,
    monitor_merge,
    monitor_run,
    monitor_run_create,
    planned_chunks,
    spectrum_points,
    stream_monitor_now,
    stream_recompute,
    stream_recompute_pending,
    stream_tick,
)
from monitoring.embeddings.selectors import (
    METRIC_GROUPS,
    UNDEFINED,
    MetricSeries,
    SeriesPoint,
    get_run,
    get_snapshot,
    get_stream,
    get_stream_event,
    latest_spectrum_run,
    metric_group,
    metric_section,
    run_values,
    series_table,
    stream_events,
    stream_runs,
    stream_series,
    stream_snapshots,
    team_streams,
)
from monitoring.embeddings.streams import (
    MAX_JSON_VECTORS,
    check_npy,
    check_schedule,
    crontab_fields,
    schedule_text,
    snapshot_from_vectors,
    snapshot_upload,
    stream_create,
    stream_delete,
    stream_delete_consequences,
    stream_reference_set,
    stream_schedule_set,
    stream_schedule_sync,
    stream_update,
)

__all__ = [
    "DRIFT_METRICS",
    "MAX_JSON_VECTORS",
    "QUALITY_METRICS",
    "TIME_LIMIT",
    "MetricSeries",
    "MonitorInputError",
    "SeriesPoint",
    "Split",
    "check_npy",
    "check_schedule",
    "chord_available",
    "chord_wait",
    "chunk_ranges",
    "frozen_params",
    "crontab_fields",
    "get_run",
    "get_snapshot",
    "get_stream",
    "get_stream_event",
    "latest_spectrum_run",
    "METRIC_GROUPS",
    "metric_group",
    "metric_section",
    "run_values",
    "monitor_chunk",
    "monitor_merge",
    "monitor_params",
    "monitor_run",
    "monitor_run_create",
    "planned_chunks",
    "schedule_text",
    "UNDEFINED",
    "series_table",
    "snapshot_from_vectors",
    "snapshot_upload",
    "spectrum_points",
    "stream_create",
    "stream_delete",
    "stream_delete_consequences",
    "stream_events",
    "stream_monitor_now",
    "stream_recompute",
    "stream_recompute_pending",
    "stream_reference_set",
    "stream_runs",
    "stream_schedule_set",
    "stream_schedule_sync",
    "stream_series",
    "stream_snapshots",
    "stream_tick",
    "stream_update",
    "team_streams",
]
