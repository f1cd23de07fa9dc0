"""Alert rules on metric series: opening, deduplication, resolution, cooldown, acknowledgement, and the
notifications they send by email and to a webhook (a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.utils import timezone

from evalplatform.errors import InputError
from evalplatform.models import Team
from monitoring.alerts import notifications
from monitoring.alerts import services as alerts
from monitoring.evaluations import services as evaluations
from monitoring.files import uploads
from monitoring.models import (
    AlertEvent,
    AlertRule,
    EmbeddingSnapshot,
    EmbeddingStream,
    MonitorRun,
    Notification,
    NotificationChannel,
)
from monitoring.tasks import alerts_check_series
from series.selectors import THRESHOLD_SUBGROUP
from series.services import MetricValueIn, metric_values_write
from series.subjects import run_series, stream_series
from tests.conftest import QueuedTasks, client_for
from tests.monitoring.conftest import synthetic_collection, upload

START = timezone.now() - timedelta(days=1)


class Hook:
    """A local webhook: records the JSON bodies it receives; answers `status` (200 by default)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.status = 200
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server API)
                length = int(self.headers["Content-Length"])
                hook.bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(hook.status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def hook(settings: Any) -> Iterator[Hook]:
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]  # the sender refuses loopback unless allowed
    server = Hook()
    yield server
    server.server.shutdown()


@pytest.fixture
def stream(team: Team) -> EmbeddingStream:
    return EmbeddingStream.objects.create(team=team, slug="docs", name="Doc embeddings", dimension=8)


def monitor(stream: EmbeddingStream, hour: int, **values: float) -> MonitorRun:
    """A finished monitor run at START + `hour` hours with these metric values, and the alert check."""
    snapshot = EmbeddingSnapshot.objects.create(
        stream=stream, file=f"x{hour}.npy", rows=10, dimension=8, observed_at=START + timedelta(hours=hour)
    )
    run = MonitorRun.objects.create(
        stream=stream, snapshot=snapshot, observed_at=snapshot.observed_at, status="done",
        effect_thresholds={"mmd2": 0.05},
    )  # fmt: skip
    series = stream_series(stream)
    metric_values_write(job=run, series=series, observed_at=run.observed_at, values=[
        *(MetricValueIn(k, v) for k, v in values.items()), MetricValueIn("mmd2", 0.05, subgroup=THRESHOLD_SUBGROUP)])  # fmt: skip
    alerts.alerts_check_series(series_id=series.pk, job_type="monitoring.monitorrun", job_id=run.pk)
    return run


def rule(stream: EmbeddingStream, *channels: NotificationChannel, **options: Any) -> AlertRule:
    settings = {"name": "too_similar", "metric": "avg_cosine_similarity", "comparator": ">", "threshold": 0.3}
    return alerts.alert_rule_create(
        team=stream.team, series=stream_series(stream), channels=channels, **{**settings, **options}
    )


def events(target: AlertRule) -> list[tuple[str, int]]:
    return list(AlertEvent.objects.filter(rule=target).order_by("pk").values_list("status", "observations"))


@pytest.mark.django_db
class TestRules:
    def test_it_refuses_an_unknown_metric_with_the_closest_names(self, stream: EmbeddingStream) -> None:
        with pytest.raises(InputError, match="did you mean 'avg_cosine_similarity'"):
            rule(stream, metric="avg_cosine_similarty")
        with pytest.raises(InputError, match="comparator"):
            rule(stream, comparator="=>")

    def test_it_refuses_a_series_of_another_team(self, stream: EmbeddingStream, other_team: Team) -> None:
        with pytest.raises(InputError, match="same team|rule's team"):
            alerts.alert_rule_create(
                team=other_team, series=stream_series(stream), name="x", metric="mmd_p_value", comparator="<",
                threshold=0.01,
            )  # fmt: skip

    def test_it_puts_the_default_embedding_rules_on_a_stream_once(self, stream: EmbeddingStream) -> None:
        first = alerts.default_stream_rules(stream=stream)
        again = alerts.default_stream_rules(stream=stream)
        assert [r.pk for r in first] == [r.pk for r in again] and len(first) == 7
        drift = AlertRule.objects.get(series=stream_series(stream), name="mmd_drift")
        assert (drift.metric, drift.comparator, drift.threshold, drift.effect_metric) == (
            "mmd_p_value",
            "<",
            0.01,
            "mmd2",
        )


@pytest.mark.django_db
class TestEvents:
    def test_it_opens_one_event_extends_it_and_resolves_it(self, stream: EmbeddingStream) -> None:
        watched = rule(stream)
        monitor(stream, 0, avg_cosine_similarity=0.1)
        assert events(watched) == []
        monitor(stream, 1, avg_cosine_similarity=0.4)
        monitor(stream, 2, avg_cosine_similarity=0.5)
        assert events(watched) == [("open", 2)]
        event = AlertEvent.objects.get(rule=watched)
        assert (event.value, event.latest_value, event.threshold) == (0.4, 0.5, 0.3)
        monitor(stream, 3, avg_cosine_similarity=0.2)
        assert events(watched) == [("resolved", 2)]
        monitor(stream, 4, avg_cosine_similarity=0.9)
        assert events(watched) == [("resolved", 2), ("open", 1)]

    def test_it_needs_the_consecutive_count(self, stream: EmbeddingStream) -> None:
        watched = rule(stream, consecutive=3)
        for hour, value in enumerate([0.4, 0.4, 0.1, 0.4, 0.4]):
            monitor(stream, hour, avg_cosine_similarity=value)
        assert events(watched) == []
        monitor(stream, 5, avg_cosine_similarity=0.4)
        assert events(watched) == [("open", 1)]

    def test_it_fires_a_drift_rule_only_with_a_large_enough_effect(self, stream: EmbeddingStream) -> None:
        drift = rule(
            stream, name="drift", metric="mmd_p_value", comparator="<", threshold=0.01, effect_metric="mmd2"
        )
        monitor(stream, 0, mmd_p_value=0.005, mmd2=0.01)  # significant, but smaller than the calibrated 0.05
        assert events(drift) == []
        monitor(stream, 1, mmd_p_value=0.005, mmd2=0.2)
        event = AlertEvent.objects.get(rule=drift)
        assert (event.effect_value, event.effect_threshold) == (0.2, 0.05)

    def test_it_ignores_a_run_without_the_metric(self, stream: EmbeddingStream) -> None:
        watched = rule(stream)
        monitor(stream, 0, avg_cosine_similarity=0.5)
        monitor(stream, 1, effective_rank=3.0)
        assert events(watched) == [("open", 1)]

    def test_it_keeps_an_acknowledged_event_unresolved_and_says_who(
        self, stream: EmbeddingStream, theo: User
    ) -> None:
        watched = rule(stream)
        monitor(stream, 0, avg_cosine_similarity=0.5)
        event = alerts.alert_event_acknowledge(event=AlertEvent.objects.get(rule=watched), by=theo)
        assert (event.status, event.acknowledged_by) == ("acknowledged", theo)
        monitor(stream, 1, avg_cosine_similarity=0.6)
        assert events(watched) == [("acknowledged", 2)]
        assert list(alerts.team_open_events(teams=[stream.team])) == [event]


@pytest.mark.django_db
class TestEvaluationSeries:
    def test_it_watches_the_ndcg_of_a_nightly_run(
        self, team: Team, queued: QueuedTasks, settings: Any, django_capture_on_commit_callbacks: Any
    ) -> None:
        settings.SITE_URL = "http://testserver.example"
        qrels_text, make_run = synthetic_collection()
        qrels = uploads.qrels_upload(team=team, upload=upload("judged.qrels", qrels_text))
        floor = alerts.alert_rule_create(
            team=team, series=run_series(qrels, "nightly"), name="ndcg_floor", metric="ndcg_cut_10",
            comparator="<", threshold=0.5,
        )  # fmt: skip
        for night, quality in enumerate([3.0, 0.0]):  # a good night, then a broken ranker
            run = uploads.run_upload(
                team=team, upload=upload(f"n{night}.run", make_run(night, quality)), name="nightly"
            )
            evaluation = evaluations.evaluation_create(
                run=run, qrels=qrels, measures=["ndcg_cut_10"], enqueue=False
            )
            with django_capture_on_commit_callbacks(execute=True):
                assert evaluations.evaluation_run(evaluation_id=evaluation.pk).status == "done"
            # The evaluation's values announced its series, which queued the series' check: run it here.
            (check,) = [sent for sent in queued.sent if sent[0] == "monitoring.tasks.alerts_check_series"]
            queued.sent.clear()
            alerts_check_series(*check[1])
            assert len(events(floor)) == night
        event = AlertEvent.objects.get(rule=floor)
        assert (
            event.value < 0.5 and "nightly" in event.source and event.source_url.startswith("/teams/search/")
        )
        payload = notifications.message(event, "opened")
        assert payload["attachments"][0]["title_link"] == f"http://testserver.example{event.source_url}"


@pytest.mark.django_db(transaction=True)
class TestNotifications:
    def test_it_posts_slack_json_to_the_webhook_once_per_event(
        self, stream: EmbeddingStream, hook: Hook, queued: QueuedTasks
    ) -> None:
        channel = NotificationChannel.objects.create(
            team=stream.team, name="ops", kind="webhook", target=hook.url
        )
        watched = rule(stream, channel, severity="critical")
        for hour, value in enumerate([0.5, 0.6, 0.7, 0.1]):
            monitor(stream, hour, avg_cosine_similarity=value)
        kinds = list(Notification.objects.filter(event__rule=watched).values_list("kind", flat=True))
        assert sorted(kinds) == ["opened", "resolved"]  # three firing runs, one message
        for notification in Notification.objects.order_by("pk"):
            assert notifications.notification_send(notification_id=notification.pk).status == "done"
        opened, resolved = hook.bodies
        assert opened["text"].startswith("[CRITICAL] too_similar opened") and "0.5" in opened["text"]
        assert opened["attachments"][0]["fields"][0] == {
            "title": "metric",
            "value": "avg_cosine_similarity",
            "short": True,
        }
        assert "resolved" in resolved["text"] and resolved["attachments"][0]["color"] == "good"

    def test_it_retries_a_failing_webhook_and_gives_up_on_a_refusal(
        self, stream: EmbeddingStream, hook: Hook, queued: QueuedTasks
    ) -> None:
        channel = NotificationChannel.objects.create(
            team=stream.team, name="ops", kind="webhook", target=hook.url
        )
        rule(stream, channel)
        monitor(stream, 0, avg_cosine_similarity=0.5)
        notification = Notification.objects.get()
        hook.status = 503
        with pytest.raises(notifications.DeliveryError):
            notifications.notification_send(notification_id=notification.pk)
        notification.refresh_from_db()
        assert (notification.status, notification.attempts) == ("pending", 1)  # released for the retry
        hook.status = 200
        assert notifications.notification_send(notification_id=notification.pk).status == "done"
        notification.refresh_from_db()
        assert notification.response == "HTTP 200" and len(hook.bodies) == 2

    def test_it_emails_the_channel_and_holds_back_a_flapping_rule(
        self, stream: EmbeddingStream, queued: QueuedTasks, settings: Any
    ) -> None:
        settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
        settings.SITE_URL = "https://evalplatform.example"
        channel = NotificationChannel.objects.create(
            team=stream.team, name="on-call", kind="email", target="oncall@example.org, lead@example.org"
        )
        watched = rule(stream, channel, cooldown_minutes=60)
        for hour, value in enumerate([0.5, 0.1, 0.5, 0.1]):  # opens, resolves, opens again within the hour
            monitor(stream, hour, avg_cosine_similarity=value)
        assert [event.notified for event in AlertEvent.objects.filter(rule=watched).order_by("pk")] == [
            True,
            False,
        ]
        for notification in Notification.objects.order_by("pk"):
            notifications.notification_send(notification_id=notification.pk)
        assert len(mail.outbox) == 2  # the first event's opening and resolution only
        assert mail.outbox[0].to == ["oncall@example.org", "lead@example.org"]
        assert "too_similar opened" in mail.outbox[0].subject and "value: 0.5" in mail.outbox[0].body
        links = [line for message in mail.outbox for line in message.body.splitlines() if "://" in line]
        assert links and all(line.startswith("Details: https://evalplatform.example/") for line in links)

    def test_it_says_notified_only_when_a_channel_was_sent_a_message(
        self, stream: EmbeddingStream, queued: QueuedTasks, vera: User
    ) -> None:
        """A rule without channels "notifies nobody": its alert is not shown as notified, though the
        cooldown let it through (`notified`); a rule with a channel shows how many were sent one."""
        silent = rule(stream, cooldown_minutes=60)
        channel = NotificationChannel.objects.create(
            team=stream.team, name="ops", kind="webhook", target="http://127.0.0.1:9/"
        )
        loud = rule(stream, channel, name="too_similar_loud", cooldown_minutes=60)
        for hour, value in enumerate([0.5, 0.1]):  # opens and resolves each rule's alert
            monitor(stream, hour, avg_cosine_similarity=value)
        quiet_event, loud_event = (AlertEvent.objects.get(rule=r) for r in (silent, loud))
        assert quiet_event.notified and loud_event.notified  # the cooldown held neither back
        client = client_for(vera)  # a viewer of the team
        page = client.get("/teams/search/alerts/").content.decode()
        rows = {
            name: row
            for row in page.split('<table class="data" id="resolved-alerts">')[1]
            .split("</table>")[0]
            .split("<tr>")
            for name in ("too_similar_loud", "too_similar")
            if f'<th scope="row">{name}</th>' in row
        }
        assert "no (no channel)" in rows["too_similar"] and ">yes" not in rows["too_similar"]
        assert "yes, 1 channel" in rows["too_similar_loud"]
        rule_page = client.get(f"/teams/search/alerts/rules/{silent.pk}/settings/").content.decode()
        its_alerts = rule_page.split('id="rule-events"')[1].split("</table>")[0]
        assert "notifies nobody" in rule_page and "no (no channel)" in its_alerts and "yes" not in its_alerts
        api = client.get("/api/teams/search/alerts/?status=resolved").json()["results"]
        found = {row["rule_name"]: (row["notified"], row["channels_notified"]) for row in api}
        assert found == {"too_similar": (True, 0), "too_similar_loud": (True, 1)}

    def test_it_queues_notifications_on_their_own_queue(
        self, stream: EmbeddingStream, queued: QueuedTasks
    ) -> None:
        from evalplatform.celery import app

        channel = NotificationChannel.objects.create(
            team=stream.team, name="ops", kind="webhook", target="http://127.0.0.1:9/"
        )
        rule(stream, channel)
        monitor(stream, 0, avg_cosine_similarity=0.5)
        # (The run's values also queued the series' check, which `monitor` ran here already.)
        assert [name for name in queued.names() if name != "monitoring.tasks.alerts_check_series"] == [
            "monitoring.tasks.notification_send"
        ]
        assert (
            app.amqp.router.route({}, "monitoring.tasks.notification_send")["queue"].name == "notifications"
        )
