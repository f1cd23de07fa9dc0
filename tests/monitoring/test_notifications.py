"""Sending notifications: a webhook's address is checked again when it is sent and the connection is pinned
to it, redirects are not followed, the whole request has one deadline, failures are recorded and retried
and the last one fails the job with its reason; and, with real workers, a slow receiver holds neither a
monitor run nor the worker that runs it (notifications have their own queue).

The receivers are real HTTP listeners on 127.0.0.1 (allowed through WEBHOOK_ALLOWED_NETWORKS); only name
resolution is replaced where a test needs a name to resolve to a given address.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from evalplatform.jobs import job_enqueue
from evalplatform.models import Team
from monitoring.alerts import services as alerts
from monitoring.alerts.notifications import DeliveryError, notification_send
from monitoring.embeddings import services as monitors
from monitoring.models import AlertEvent, EmbeddingStream, MonitorRun, Notification, NotificationChannel
from series.subjects import stream_series
from tests.conftest import ROOT, WorkerProcess, _database_url_for, stop_process_group
from tests.monitoring.test_streams import embeddings, make_stream, npy_upload

LOOPBACK = ["127.0.0.0/8"]


class Receiver:
    """A webhook receiver on 127.0.0.1. Each POST is answered by `answer(handler, number)` (number: 0 for
    the first request); it records each request's path, Host header and body, and when it came and went."""

    def __init__(self, answer: Callable[[BaseHTTPRequestHandler, int], None]) -> None:
        self.requests: list[dict[str, Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server API)
                request = {"path": self.path, "host": self.headers["Host"], "came": time.monotonic()}
                request["body"] = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                receiver.requests.append(request)
                with contextlib.suppress(OSError):  # the sender hung up (its deadline), as a real one sees it
                    answer(self, len(receiver.requests) - 1)
                request["went"] = time.monotonic()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def ok(handler: BaseHTTPRequestHandler, number: int) -> None:
    handler.send_response(200)
    handler.end_headers()
    handler.wfile.write(b"ok")


def trickle(handler: BaseHTTPRequestHandler, number: int, *, seconds: int = 40) -> None:
    """A status line and then one header byte a second: every read gets a byte well within any timeout."""
    handler.wfile.write(b"HTTP/1.1 200 OK\r\n")
    for _ in range(seconds):
        handler.wfile.write(b"X")
        handler.wfile.flush()
        time.sleep(1)
    handler.wfile.write(b": y\r\n\r\n")


@pytest.fixture
def receivers() -> Iterator[Callable[[Callable[[BaseHTTPRequestHandler, int], None]], Receiver]]:
    started: list[Receiver] = []

    def start(answer: Callable[[BaseHTTPRequestHandler, int], None]) -> Receiver:
        started.append(Receiver(answer))
        return started[-1]

    yield start
    for receiver in started:
        receiver.close()


@pytest.fixture
def stream(team: Team) -> EmbeddingStream:
    return EmbeddingStream.objects.create(team=team, slug="docs", name="Doc embeddings", dimension=8)


def pending_notification(stream: EmbeddingStream, target: str, *, kind: str = "webhook") -> Notification:
    """A notification of an open event to a channel with this target, as `alerts` creates it (not queued).
    The rule (similarity above 0.99) does not fire on the test's monitor runs: no other message is sent."""
    channel = NotificationChannel.objects.create(team=stream.team, name="ops", kind=kind, target=target)
    rule = alerts.alert_rule_create(
        team=stream.team, series=stream_series(stream), name="too_similar", metric="avg_cosine_similarity", comparator=">",
        threshold=0.99, channels=[channel],
    )  # fmt: skip
    now = timezone.now()
    event = AlertEvent.objects.create(
        rule=rule, team=stream.team, value=0.995, latest_value=0.995, threshold=0.99, observed_at=now,
        source="monitor run", source_url=stream.get_absolute_url(), notified=True,
    )  # fmt: skip
    return Notification.objects.create(event=event, channel=channel, kind="opened")


def resolving(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> list[str]:
    """Make these names resolve to these addresses (every other name as before); returns the names looked
    up, in order."""
    real = socket.getaddrinfo
    asked: list[str] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in answers:
            asked.append(host)
            return [
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port))) for address in answers[host]
            ]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


@pytest.mark.django_db(transaction=True)
class TestWebhookAddresses:
    def test_it_refuses_a_host_that_resolves_to_a_private_address_when_it_sends(
        self, stream: EmbeddingStream, receivers: Any, monkeypatch: pytest.MonkeyPatch, settings: Any
    ) -> None:
        settings.WEBHOOK_ALLOWED_NETWORKS = []
        receiver = receivers(ok)
        # Saved while the name resolved to a public address; by the time it is sent, it says 10.1.2.3.
        notification = pending_notification(stream, f"http://hooks.example.com:{receiver.port}/hook")
        resolving(monkeypatch, {"hooks.example.com": ["10.1.2.3"]})
        assert notification_send(notification_id=notification.pk).status == "failed"
        notification.refresh_from_db()
        assert (
            notification.status == "failed" and notification.attempts == 1
        )  # not retried: it will not change
        assert "hooks.example.com resolves to 10.1.2.3, a private address: refused" in notification.error
        assert receiver.requests == []

    def test_it_refuses_a_name_when_any_of_its_addresses_is_internal(
        self, stream: EmbeddingStream, receivers: Any, monkeypatch: pytest.MonkeyPatch, settings: Any
    ) -> None:
        settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
        receiver = receivers(ok)
        notification = pending_notification(stream, f"http://hooks.example.com:{receiver.port}/hook")
        resolving(monkeypatch, {"hooks.example.com": ["127.0.0.1", "169.254.169.254"]})
        assert notification_send(notification_id=notification.pk).status == "failed"
        notification.refresh_from_db()
        assert "169.254.169.254, a link-local address: refused" in notification.error
        assert receiver.requests == []

    def test_it_connects_to_the_address_it_checked_under_the_name_it_was_given(
        self, stream: EmbeddingStream, receivers: Any, monkeypatch: pytest.MonkeyPatch, settings: Any
    ) -> None:
        settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
        receiver = receivers(ok)
        notification = pending_notification(stream, f"http://hooks.example.com:{receiver.port}/hook?x=1")
        asked = resolving(monkeypatch, {"hooks.example.com": ["127.0.0.1"]})
        assert notification_send(notification_id=notification.pk).status == "done"
        (request,) = receiver.requests
        assert (request["path"], request["host"]) == ("/hook?x=1", f"hooks.example.com:{receiver.port}")
        assert request["body"]["text"].startswith("[WARNING] too_similar opened")
        assert asked == ["hooks.example.com"]  # resolved once: the connection went to what was checked

    def test_it_refuses_loopback_unless_the_operator_allows_it(
        self, stream: EmbeddingStream, receivers: Any, settings: Any
    ) -> None:
        receiver = receivers(ok)
        notification = pending_notification(stream, receiver.url)
        settings.WEBHOOK_ALLOWED_NETWORKS = []
        assert notification_send(notification_id=notification.pk).status == "failed"
        notification.refresh_from_db()
        assert "127.0.0.1 is a loopback address: refused" in notification.error and receiver.requests == []


@pytest.mark.django_db(transaction=True)
class TestWebhookDelivery:
    def test_it_does_not_follow_a_redirect(
        self, stream: EmbeddingStream, receivers: Any, settings: Any
    ) -> None:
        settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
        elsewhere = receivers(ok)

        def redirect(handler: BaseHTTPRequestHandler, number: int) -> None:
            handler.send_response(302)
            handler.send_header("Location", elsewhere.url)
            handler.end_headers()

        first = receivers(redirect)
        notification = pending_notification(stream, first.url)
        with pytest.raises(DeliveryError, match="HTTP 302"):
            notification_send(notification_id=notification.pk)
        notification.refresh_from_db()
        assert (notification.status, notification.attempts) == ("pending", 1)  # released for the retry
        assert "HTTP 302" in notification.response and "redirects are not followed" in notification.response
        assert len(first.requests) == 1 and elsewhere.requests == []

    def test_it_cuts_a_trickling_receiver_at_the_deadline_and_retries(
        self, stream: EmbeddingStream, receivers: Any, settings: Any
    ) -> None:
        settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
        settings.WEBHOOK_TIMEOUT_SECONDS = 2
        receiver = receivers(trickle)
        notification = pending_notification(stream, receiver.url)
        started = time.monotonic()
        with pytest.raises(DeliveryError, match="timed out after 2 s"):
            notification_send(notification_id=notification.pk)
        assert time.monotonic() - started <= 2 + 1.5
        notification.refresh_from_db()
        assert (notification.status, notification.attempts) == ("pending", 1)  # not delivered: retried
        assert notification.response.startswith("attempt 1 failed, to be retried: timed out after 2 s")

    def test_it_fails_after_the_last_attempt_with_the_reason(
        self, stream: EmbeddingStream, receivers: Any, settings: Any
    ) -> None:
        settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK

        def unavailable(handler: BaseHTTPRequestHandler, number: int) -> None:
            handler.send_response(503)
            handler.end_headers()

        receiver = receivers(unavailable)
        notification = pending_notification(stream, receiver.url)
        for _ in range(Notification.max_attempts - 1):
            with pytest.raises(DeliveryError, match="HTTP 503"):
                notification_send(notification_id=notification.pk)
        assert notification_send(notification_id=notification.pk).status == "failed"
        notification.refresh_from_db()
        assert (notification.status, notification.attempts) == ("failed", Notification.max_attempts)
        assert (
            notification.error
            == f"Not delivered after {Notification.max_attempts} attempts; the last: HTTP 503"
        )
        assert len(receiver.requests) == Notification.max_attempts

    def test_it_bounds_a_mail_server_that_does_not_answer(
        self, stream: EmbeddingStream, settings: Any
    ) -> None:
        silent = socket.create_server(("127.0.0.1", 0))  # accepts (the backlog) and never says a word
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", silent.getsockname()[1]
        settings.EMAIL_TIMEOUT = 1
        notification = pending_notification(stream, "oncall@example.org", kind="email")
        started = time.monotonic()
        try:
            with pytest.raises(DeliveryError, match="mail server"):
                notification_send(notification_id=notification.pk)
        finally:
            silent.close()
        assert time.monotonic() - started < 5
        notification.refresh_from_db()
        assert (notification.status, notification.response[:16]) == ("pending", "attempt 1 failed")


# --- with real workers --------------------------------------------------------------------------------

NOTIFIER_DEADLINE = 10


@pytest.fixture(scope="module")
def notifier(celery_worker_process: WorkerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A worker on the `notifications` queue only, as production runs one (docker-compose's `notifier`),
    with the loopback listeners allowed and a 10 s webhook deadline. It writes to the test database."""
    from evalplatform.celery import app

    hostname = f"pytest-notifier-{uuid.uuid4().hex[:8]}@localhost"
    log_path = tmp_path_factory.mktemp("notifier") / "worker.log"
    env = {**os.environ, "DATABASE_URL": _database_url_for(connection.settings_dict),
           "WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8", "WEBHOOK_TIMEOUT_SECONDS": str(NOTIFIER_DEADLINE)}  # fmt: skip
    command = [sys.executable, "-m", "celery", "-A", "evalplatform", "worker", "-Q", "notifications",
               "--concurrency", "1", "--hostname", hostname, "--without-mingle", "--without-gossip",
               "--loglevel", "info"]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        assert wait_until(lambda: bool(app.control.ping(destination=[hostname], timeout=1.0)), timeout=60), (
            Path(log_path).read_text(errors="replace")
        )
        yield hostname
    finally:
        stop_process_group(process)


@pytest.fixture
def split_queues(celery_worker_process: WorkerProcess, notifier: str) -> Iterator[None]:
    """The shared test worker consumes `default` and `heavy` only while the test runs (as production's
    `worker` does); the notifier takes the notifications."""
    from evalplatform.celery import app

    app.control.cancel_consumer("notifications", destination=[celery_worker_process.hostname], reply=True)
    try:
        yield
    finally:
        app.control.add_consumer("notifications", destination=[celery_worker_process.hostname], reply=True)


def wait_until(predicate: Callable[[], bool], *, timeout: float, every: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return False


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_slow_webhook_holds_no_monitor_run_and_is_cut_at_the_deadline_then_retried(
    celery_worker_process: WorkerProcess, split_queues: None, receivers: Any, stream: EmbeddingStream
) -> None:
    def first_trickles(handler: BaseHTTPRequestHandler, number: int) -> None:
        (trickle if number == 0 else ok)(handler, number)

    receiver = receivers(first_trickles)
    monitored = make_stream(stream.team)  # another stream than the notification's: no rule of it resolves
    reference = monitors.snapshot_upload(
        stream=monitored, upload=npy_upload(embeddings(300, seed=1)), reference=True,
        observed_at=timezone.now() - timedelta(hours=2),
    )  # fmt: skip
    assert wait_until(lambda: MonitorRun.objects.get(snapshot=reference).is_finished, timeout=90)

    notification = pending_notification(stream, receiver.url)
    assert job_enqueue(notification)
    assert wait_until(lambda: len(receiver.requests) == 1, timeout=30), "the notifier never sent it"

    # While the receiver trickles, a monitor run is queued and done: the slow webhook holds the notifier only.
    later = monitors.snapshot_upload(
        stream=monitored, upload=npy_upload(embeddings(300, seed=2), "later.npy")
    )
    (run,) = monitors.stream_tick(stream_id=monitored.pk)
    assert run.snapshot_id == later.pk
    assert wait_until(lambda: MonitorRun.objects.get(pk=run.pk).is_finished, timeout=NOTIFIER_DEADLINE)
    assert MonitorRun.objects.get(pk=run.pk).status == "done"
    assert (
        "went" not in receiver.requests[0]
        and Notification.objects.get(pk=notification.pk).status == "running"
    )  # still on

    # The deadline cuts the trickle; the failure is recorded, and the retry delivers it.
    assert wait_until(lambda: "went" in receiver.requests[0], timeout=NOTIFIER_DEADLINE + 5)
    first = receiver.requests[0]
    assert first["went"] - first["came"] <= NOTIFIER_DEADLINE + 3  # a write after the hang-up notices it
    assert wait_until(lambda: Notification.objects.get(pk=notification.pk).status == "done", timeout=60)
    notification.refresh_from_db()
    assert (notification.attempts, notification.response, len(receiver.requests)) == (2, "HTTP 200", 2)
