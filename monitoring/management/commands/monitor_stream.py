"""`monitor_stream TEAM STREAM`: monitor a stream's new snapshots now, as its schedule does.

It queues a run for every snapshot without one (and the failed runs again), then by default returns;
`--wait` follows the runs on the worker until they are done, `--sync` computes them in this process (no
worker needed, one task per run). It then prints each run's main values and the stream's open alerts.
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import InterfaceError, OperationalError

from evalcore.jsonable import json_number
from evalplatform.jobs import JobStatus
from monitoring.alerts import services as alerts
from monitoring.embeddings import services as monitors
from monitoring.management.commands.upload_run import add_user_option
from monitoring.management.commands.upload_snapshot import find_stream
from monitoring.models import AlertEvent, EmbeddingStream, MonitorRun
from series.selectors import jobs_values

POLL_SECONDS = 0.5
#: The values printed per run in text (every value is in --json).
SHOWN = ("avg_cosine_similarity", "effective_rank_ratio", "dead_dim_ratio", "mmd_p_value", "classifier_auc")


class Command(BaseCommand):
    help = (
        "Monitor an embedding stream's new snapshots now, as its schedule does: a monitor run for each snapshot "
        "that has none (failed runs are queued again). By default the runs are queued on the worker's heavy "
        "queue and the command returns; --wait follows them until they are done, --sync computes them here "
        "(needing no worker). Prints each run's main values and the stream's open alerts, or one JSON object."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("team", metavar="TEAM", help="the team's slug")
        parser.add_argument("stream", metavar="STREAM", help="the stream's slug")
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--sync", action="store_true", help="compute the runs in this process")
        mode.add_argument("--wait", action="store_true", help="wait for the worker to finish the runs")
        parser.add_argument(
            "--timeout",
            type=float,
            default=monitors.TIME_LIMIT,
            metavar="S",
            help="seconds to wait with --wait (default %(default)d)",
        )
        add_user_option(parser)
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, *args: Any, **options: Any) -> None:
        self.verbosity = int(options["verbosity"])
        stream, _ = find_stream(options["team"], options["stream"], options["user"])
        runs = monitors.stream_monitor_now(stream=stream, enqueue=not options["sync"])
        if options["sync"]:
            self.compute_here(runs)
        elif options["wait"]:
            self.wait(runs, timeout=options["timeout"])
        runs = list(MonitorRun.objects.filter(pk__in=[run.pk for run in runs]).select_related("snapshot"))
        runs.sort(key=lambda run: (run.snapshot_id != run.reference_id, run.observed_at, run.pk))
        self.report(stream, runs, as_json=options["json"], queued=not (options["sync"] or options["wait"]))

    def note(self, text: str) -> None:
        if self.verbosity >= 1:
            self.stderr.write(text)

    def compute_here(self, runs: list[MonitorRun]) -> None:
        for run in runs:
            self.note(f"Monitoring {run.snapshot.label!r} ({run.observed_at:%Y-%m-%d %H:%M}) here...")
            try:
                with alerts.alerts_checked_here():  # the open alerts printed below are this run's
                    outcome = monitors.monitor_run(run_id=run.pk, split=False)
            except (OperationalError, InterfaceError) as error:
                raise CommandError(
                    f"Monitor run {run.pk} stopped on a database error ({error}); run the same command again."
                ) from None
            if outcome.status in ("busy", "lost"):  # type: ignore[union-attr]
                self.note(f"A worker holds monitor run {run.pk}; waiting for it.")
                self.wait([run], timeout=monitors.TIME_LIMIT)

    def wait(self, runs: list[MonitorRun], *, timeout: float) -> None:
        started = time.monotonic()
        pending = {run.pk for run in runs}
        while pending:
            done = set(
                MonitorRun.objects.filter(pk__in=pending, status__in=["done", "failed"]).values_list(
                    "pk", flat=True
                )
            )
            pending -= done
            if not pending:
                return
            if time.monotonic() - started > timeout:
                raise CommandError(
                    f"{len(pending)} monitor run(s) still unfinished after {timeout:g} s; is a worker running on "
                    "the heavy queue? Run the same command with --wait to keep waiting, or --sync."
                )
            time.sleep(POLL_SECONDS)

    def report(self, stream: EmbeddingStream, runs: list[MonitorRun], *, as_json: bool, queued: bool) -> None:
        values: dict[int, dict[str, float | None]] = {run.pk: {} for run in runs}
        stored = jobs_values(MonitorRun, [run.pk for run in runs])
        for run_id, by_metric in stored.items():
            values[run_id] = {metric: json_number(by_metric[metric].value) for metric in sorted(by_metric)}
        events = list(
            AlertEvent.objects.filter(rule__series__kind="stream", rule__series__object_id=stream.pk)
            .exclude(status="resolved")
            .select_related("rule")
            .order_by("-opened_at")
        )
        if as_json:
            self.stdout.write(json.dumps(as_data(stream, runs, values, events), allow_nan=False))
        else:
            self.stdout.write(as_text(stream, runs, values, events, queued=queued), ending="")
        failed = [run for run in runs if run.status == JobStatus.FAILED]
        if failed:
            reasons = "; ".join(f"run {run.pk} ({run.snapshot.label}): {run.error}" for run in failed)
            hint = " Or compute them here with --sync." if "task queue is unreachable" in reasons else ""
            raise CommandError(f"{len(failed)} monitor run(s) failed: {reasons}{hint}")


def as_data(
    stream: EmbeddingStream,
    runs: list[MonitorRun],
    values: dict[int, dict[str, Any]],
    events: list[AlertEvent],
) -> dict[str, Any]:
    return {
        "team": stream.team.slug,
        "stream": stream.slug,
        "runs": [
            {"run": run.pk, "snapshot": run.snapshot_id, "label": run.snapshot.label,
             "observed_at": run.observed_at.isoformat(), "reference": run.reference_id, "status": run.status,
             "error": run.error, "chunks": run.chunks, "device": run.device, "values": values[run.pk]}
            for run in runs
        ],
        "open_alerts": [
            {"rule": event.rule.name, "metric": event.rule.metric, "severity": event.rule.severity,
             "status": event.status, "value": event.value, "threshold": event.threshold,
             "observed_at": event.observed_at.isoformat(), "observations": event.observations}
            for event in events
        ],
    }  # fmt: skip


def as_text(
    stream: EmbeddingStream,
    runs: list[MonitorRun],
    values: dict[int, dict[str, Any]],
    events: list[AlertEvent],
    *,
    queued: bool,
) -> str:
    name = f"{stream.team.slug}/{stream.slug}"
    if not runs:
        lines = [f"Every snapshot of {name} is monitored."]
    elif queued:
        lines = [f"Queued {len(runs)} monitor run(s) of {name} on the worker (--wait to follow them):"]
    else:
        lines = [f"{len(runs)} monitor run(s) of {name}:"]
    for run in runs:
        shown = "  ".join(
            f"{metric} {value:.4g}" for metric in SHOWN if (value := values[run.pk].get(metric)) is not None
        )
        lines.append(
            f"  {run.observed_at:%Y-%m-%d %H:%M}  {run.snapshot.label:<24} {run.status:<8} {shown}".rstrip()
        )
    lines.append(f"Open alerts: {len(events) or 'none'}")
    lines += [
        f"  [{event.rule.severity}] {event.rule.name}: {event.rule.metric} {event.value:.4g} "
        f"{event.rule.comparator} {event.threshold:g} (since {event.observed_at:%Y-%m-%d %H:%M}, "
        f"{event.observations} run(s){', acknowledged' if event.status == 'acknowledged' else ''})"
        for event in events
    ]
    return "\n".join(lines) + "\n"
