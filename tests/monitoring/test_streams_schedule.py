"""End to end: a real `celery beat` (django-celery-beat's DatabaseScheduler) fires a stream's periodic task,
the real worker monitors the new snapshot, the alert rules open events, and a webhook on 127.0.0.1 receives
the Slack-compatible JSON once per event; the next firing monitors the next snapshot and the still-open
events notify nobody again.

The stream is scheduled every minute by the service, as a user would; the test then shortens that periodic
task's interval to 2 seconds (as an admin may edit it) so that two firings fit in a test. Everything else is
what runs in production: beat reads the schedule from the database, sends `stream_tick` through Redis, and
the worker does the rest.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from evalplatform.models import Team
from monitoring.embeddings import services as monitors
from monitoring.models import AlertEvent, MonitorRun, Notification, NotificationChannel
from tests.conftest import WorkerProcess, start_beat, stop_process_group
from tests.monitoring.test_streams import embeddings, make_stream, npy_upload

#: A monitor run task's end in the worker's log (a message left by another test ends "missing").
DONE_RUN = re.compile(r"Task monitoring\.tasks\.monitor_run\[[^]]+\] succeeded in [0-9.]+s: 'done'")
#: A finished alert check: a run's committed values queue one per series with rules.
DONE_CHECK = re.compile(r"Task monitoring\.tasks\.alerts_check_series\[[^]]+\] succeeded")


def wait_until(predicate: Callable[[], bool], *, timeout: float, every: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return False


class Webhook:
    """An HTTP server on 127.0.0.1 that records the JSON bodies POSTed to it."""

    def __init__(self) -> None:
        received = self.received = []  # type: list[dict[str, Any]]

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append(
                    {"path": self.path, "type": self.headers["Content-Type"], "json": json.loads(body)}
                )
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks/oncall"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Webhook:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    with Webhook() as server:
        yield server


@pytest.fixture
def beat(celery_worker_process: WorkerProcess, tmp_path: Path) -> Iterator[Callable[[], WorkerProcess]]:
    """Starts a real `celery beat` with the database scheduler on the test database, when called."""
    started: list[WorkerProcess] = []

    def start() -> WorkerProcess:
        started.append(start_beat(tmp_path))
        return started[-1]

    yield start
    for process in started:
        stop_process_group(process.process)


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_monitors_on_the_beat_schedule_and_notifies_a_webhook_once(
    celery_worker_process: WorkerProcess, beat: Callable[[], WorkerProcess], webhook: Webhook, team: Team
) -> None:
    def logs() -> str:
        return f"--- beat\n{processes[0].log()[-3000:]}\n--- worker\n{celery_worker_process.log()[-5000:]}"

    def runs_finished() -> int:
        """Monitor run tasks the worker finished in this test."""
        return len(DONE_RUN.findall(celery_worker_process.log())) - before

    def checks_finished() -> int:
        """Alert checks the worker finished in this test (one per run: its values' series has rules)."""
        return len(DONE_CHECK.findall(celery_worker_process.log())) - checks

    processes: list[WorkerProcess] = []
    before = checks = 0
    before, checks = runs_finished(), checks_finished()
    channel = NotificationChannel.objects.create(
        team=team, name="on-call", kind="webhook", target=webhook.url
    )
    stream = make_stream(team, every_minutes=1, channels=[channel])
    reference = monitors.snapshot_upload(
        stream=stream, upload=npy_upload(embeddings(1500, seed=1)), reference=True,
        observed_at=timezone.now() - timedelta(hours=2),
    )  # fmt: skip
    assert wait_until(lambda: MonitorRun.objects.get(snapshot=reference).is_finished, timeout=60)
    collapsed = monitors.snapshot_upload(
        stream=stream, upload=npy_upload(embeddings(1000, seed=6, collapse=True), "collapsed-1.npy"),
        observed_at=timezone.now() - timedelta(hours=1),
    )  # fmt: skip
    assert not collapsed.monitor_runs.exists()  # a periodic snapshot waits for the schedule

    task = PeriodicTask.objects.get(pk=stream.periodic_task_id)
    assert (task.interval.every, task.interval.period, task.total_run_count) == (1, "minutes", 0)
    task.interval, _ = IntervalSchedule.objects.get_or_create(every=2, period=IntervalSchedule.SECONDS)
    task.save()
    started = time.monotonic()
    processes.append(beat())

    # The first firing: the snapshot's run (and its alert check: the task's end), the events, one webhook
    # message per event.
    assert wait_until(lambda: runs_finished() == 2, timeout=60), logs()
    assert wait_until(lambda: checks_finished() == 2, timeout=60), logs()
    assert collapsed.monitor_runs.get().status == "done"
    monitored = time.monotonic() - started
    events = list(
        AlertEvent.objects.filter(
            rule__series__kind="stream", rule__series__object_id=stream.pk, status="open"
        ).select_related("rule")
    )
    names = {event.rule.name for event in events}
    assert {"dead_dimensions", "low_effective_rank", "top10_variance_dominates", "mmd_drift"} <= names
    assert all(event.notified for event in events)
    assert wait_until(lambda: len(webhook.received) >= len(events), timeout=30), logs()
    notified = time.monotonic() - started
    messages = [hit["json"] for hit in webhook.received]
    assert len(messages) == len(events)
    assert {hit["path"] for hit in webhook.received} == {"/hooks/oncall"}
    assert {hit["type"] for hit in webhook.received} == {"application/json"}
    for message in messages:
        assert set(message) == {"text", "attachments"}
        (attachment,) = message["attachments"]
        assert {"title", "title_link", "fields", "color", "ts"} <= set(attachment)
        assert f"on stream {stream.name}" in message["text"] and "opened" in message["text"]
    assert {message["attachments"][0]["title"].split(":")[0] for message in messages} == names
    # The webhook server holds a message before its sender's reply has come back and the worker marked
    # that notification done: wait for the last of them.
    done = Notification.objects.filter(status="done")
    assert wait_until(lambda: done.count() == len(events), timeout=30), logs()

    # The next firing monitors the next snapshot; the events stay open and notify nobody again.
    again = monitors.snapshot_upload(
        stream=stream, upload=npy_upload(embeddings(1000, seed=7, collapse=True), "collapsed-2.npy")
    )
    assert wait_until(lambda: runs_finished() == 3, timeout=60), logs()
    assert wait_until(lambda: checks_finished() == 3, timeout=60), logs()
    assert again.monitor_runs.get().status == "done"
    still = AlertEvent.objects.filter(
        rule__series__kind="stream", rule__series__object_id=stream.pk, status="open"
    )
    assert set(still.values_list("rule__name", flat=True)) == names
    assert set(still.values_list("observations", flat=True)) == {2}
    time.sleep(1.5)  # a notification queued by mistake would have reached the webhook by now
    assert len(webhook.received) == len(events)
    assert Notification.objects.count() == len(events)

    # It was the schedule: beat sent the stream's task, and no one else made the runs.
    task.refresh_from_db()
    beat_log = processes[0].log()
    assert f"Sending due task {task.name} (monitoring.tasks.stream_tick)" in beat_log
    assert task.total_run_count >= 2 or beat_log.count(f"Sending due task {task.name}") >= 2
    assert "monitoring.tasks.stream_tick" in celery_worker_process.log()
    print(  # shown with -s
        f"[beat] snapshot monitored {monitored:.1f} s after beat started, webhook notified at "
        f"{notified:.1f} s, {len(events)} events: {sorted(names)}"
    )
