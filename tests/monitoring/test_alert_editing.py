"""Editing what alerts are made of: a rule's settings (web and API), checked at once on the latest
values; its latest checks on its page, saying why it fired or not; a channel's settings and a test message
with its delivery result (email, a local webhook, a redirect refused)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.urls import reverse

from evalplatform.models import Team
from monitoring.alerts import services as alerts
from monitoring.models import AlertEvent, AlertRule, EmbeddingStream, NotificationChannel
from tests.conftest import client_for
from tests.monitoring.test_alerts import Hook, monitor, rule

pytestmark = pytest.mark.django_db


@pytest.fixture
def hook(settings: Any) -> Iterator[Hook]:
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    server = Hook()
    yield server
    server.server.shutdown()


@pytest.fixture
def stream(team: Team) -> EmbeddingStream:
    return EmbeddingStream.objects.create(team=team, slug="docs", name="Doc embeddings", dimension=8)


def rule_url(r: AlertRule) -> str:
    return reverse("monitoring:alert-rule-detail", args=[r.team.slug, r.pk])


def form_data(r: AlertRule, **changes: Any) -> dict[str, Any]:
    data = {name: getattr(r, name) for name in alerts.RULE_EDITABLE}
    data.update(
        effect_metric=r.effect_metric or "",
        effect_threshold="" if r.effect_threshold is None else r.effect_threshold,
    )
    data["channels"] = [c.pk for c in r.channels.all()]
    data.update(changes)
    return {k: v for k, v in data.items() if not (k == "enabled" and v is False)}


def unresolved(r: AlertRule) -> list[AlertEvent]:
    return list(r.events.exclude(status=AlertEvent.Status.RESOLVED))


class TestRuleChecks:
    def test_it_says_for_each_latest_value_whether_the_rule_fired_and_why(
        self, stream: EmbeddingStream
    ) -> None:
        r = rule(stream, threshold=0.5, consecutive=2)
        for hour, value in enumerate([0.6, 0.3, 0.7, 0.8]):
            monitor(stream, hour, avg_cosine_similarity=value)
        checks = alerts.rule_recent_checks(r, last=3)
        assert [(c.value, c.verdict, c.fires) for c in checks] == [
            (0.8, "breaks", True), (0.7, "breaks", False), (0.3, "holds", False),
        ]  # fmt: skip
        assert checks[0].reason == "avg_cosine_similarity > 0.5: breaks (2 of 2 in a row)"
        assert checks[1].reason == "avg_cosine_similarity > 0.5: breaks (1 of 2 in a row)"
        assert checks[2].reason == "avg_cosine_similarity > 0.5 is false"
        assert [e.value for e in unresolved(r)] == [0.8]  # the decision the checks describe

    def test_an_undefined_value_is_told_as_the_rule_treats_it(self, stream: EmbeddingStream) -> None:
        r = rule(stream, on_undefined="fire")
        monitor(stream, 0, avg_cosine_similarity=float("nan"))
        (check,) = alerts.rule_recent_checks(r)
        assert (check.value, check.verdict, check.fires) == (None, "undefined", True)
        assert "fires on undefined values" in check.reason

    def test_the_rule_page_shows_the_checks_with_their_numbers(
        self, stream: EmbeddingStream, vera: User
    ) -> None:
        r = rule(stream, threshold=0.5)
        monitor(stream, 0, avg_cosine_similarity=0.75)
        page = client_for(vera).get(rule_url(r)).content.decode()
        assert "0.7500" in page and "avg_cosine_similarity &gt; 0.5: breaks" in page
        assert "Change the rule" not in page  # a viewer reads


class TestRuleEditing:
    def test_an_editor_changes_the_threshold_and_the_alert_follows_at_once(
        self, stream: EmbeddingStream, theo: User
    ) -> None:
        r = rule(stream, threshold=0.9)
        monitor(stream, 0, avg_cosine_similarity=0.75)
        assert unresolved(r) == []
        client = client_for(theo)
        response = client.post(
            rule_url(r), form_data(r, threshold=0.5, severity="critical", cooldown_minutes=5)
        )
        assert response.status_code == 302
        r.refresh_from_db()
        assert (r.threshold, r.severity, r.cooldown_minutes) == (0.5, "critical", 5)
        assert [e.value for e in unresolved(r)] == [0.75]
        client.post(rule_url(r), form_data(r, threshold=0.8))
        assert unresolved(r) == [] and r.events.get().status == AlertEvent.Status.RESOLVED

    def test_a_metric_of_another_family_is_refused_beside_the_field(
        self, stream: EmbeddingStream, theo: User
    ) -> None:
        r = rule(stream)
        response = client_for(theo).post(rule_url(r), form_data(r, metric="ndcg_cut_10"))
        assert response.status_code == 400
        assert "is a retrieval metric" in " ".join(response.context["form"].errors["metric"])
        r.refresh_from_db()
        assert r.metric == "avg_cosine_similarity"

    def test_a_viewer_may_not_change_a_rule(self, stream: EmbeddingStream, vera: User) -> None:
        r = rule(stream)
        assert client_for(vera).post(rule_url(r), form_data(r, threshold=0.1)).status_code == 403

    def test_the_api_changes_any_setting_and_the_channels(self, stream: EmbeddingStream, theo: User) -> None:
        ops = NotificationChannel.objects.create(
            team=stream.team, name="ops", kind="email", target="o@example.org"
        )
        r = rule(stream)
        url = f"/api/teams/search/alert-rules/{r.pk}/"
        client = client_for(theo)
        answer = client.patch(
            url, {"threshold": 0.1, "consecutive": 3, "channels": [ops.pk]}, content_type="application/json"
        )
        assert answer.status_code == 200
        body = answer.json()
        assert (body["threshold"], body["consecutive"], body["channels"]) == (0.1, 3, [ops.pk])
        bad = client.patch(url, {"metric": "nonsense_metric"}, content_type="application/json")
        assert bad.status_code == 400 and "metric" in bad.json()
        other = client.patch(url, {"channels": [10**6]}, content_type="application/json")
        assert other.status_code == 400 and "channels" in other.json()


class TestChannels:
    def test_an_editor_changes_a_channel_and_sends_a_test_email(self, team: Team, theo: User) -> None:
        ops = NotificationChannel.objects.create(team=team, name="ops", kind="email", target="o@example.org")
        client = client_for(theo)
        url = reverse("monitoring:channel-detail", args=["search", ops.pk])
        response = client.post(
            url,
            {"name": "on-call", "kind": "email", "target": "a@example.org, b@example.org", "enabled": "on"},
        )
        assert response.status_code == 302
        ops.refresh_from_db()
        assert (ops.name, ops.target) == ("on-call", "a@example.org, b@example.org")
        response = client.post(reverse("monitoring:channel-test", args=["search", ops.pk]), follow=True)
        *_, message = [str(m) for m in response.context["messages"]]
        assert message == "Test message delivered through on-call: sent to 2 address(es)."
        (sent,) = mail.outbox
        assert sent.to == ["a@example.org", "b@example.org"] and sent.subject.startswith(
            "[TEST] evalplatform"
        )

    def test_a_bad_target_is_refused_beside_the_field(self, team: Team, theo: User) -> None:
        ops = NotificationChannel.objects.create(team=team, name="ops", kind="email", target="o@example.org")
        url = reverse("monitoring:channel-detail", args=["search", ops.pk])
        response = client_for(theo).post(
            url, {"name": "ops", "kind": "webhook", "target": "http://10.0.0.1/hook"}
        )
        assert response.status_code == 400 and response.context["form"].errors["target"]
        ops.refresh_from_db()
        assert ops.kind == "email"

    def test_a_webhook_test_shows_what_the_hook_answered(self, team: Team, theo: User, hook: Hook) -> None:
        channel = NotificationChannel.objects.create(team=team, name="hook", kind="webhook", target=hook.url)
        client = client_for(theo)
        answer = client.post(f"/api/teams/search/channels/{channel.pk}/test/")
        assert answer.json() == {"delivered": True, "answer": "HTTP 200"}
        assert hook.bodies[0]["text"].startswith("[TEST] evalplatform: a test message to the channel hook")
        hook.status = 302
        answer = client.post(f"/api/teams/search/channels/{channel.pk}/test/")
        assert answer.json()["delivered"] is False and "redirects are not followed" in answer.json()["answer"]
        hook.status = 404
        response = client.post(reverse("monitoring:channel-test", args=["search", channel.pk]), follow=True)
        (message,) = [str(m) for m in response.context["messages"]]
        assert (
            message == "Test message not delivered through hook: The webhook refused the message: HTTP 404."
        )

    def test_the_api_changes_a_channel_with_the_same_checks(self, team: Team, theo: User) -> None:
        ops = NotificationChannel.objects.create(team=team, name="ops", kind="email", target="o@example.org")
        client = client_for(theo)
        url = f"/api/teams/search/channels/{ops.pk}/"
        assert (
            client.patch(url, {"enabled": False}, content_type="application/json").json()["enabled"] is False
        )
        bad = client.patch(url, {"target": "not-an-address"}, content_type="application/json")
        assert bad.status_code == 400 and "target" in bad.json()

    def test_a_viewer_reads_the_channel_masked_and_cannot_test_it(self, team: Team, vera: User) -> None:
        ops = NotificationChannel.objects.create(
            team=team, name="ops", kind="email", target="oncall@example.org"
        )
        client = client_for(vera)
        page = client.get(reverse("monitoring:channel-detail", args=["search", ops.pk])).content.decode()
        assert "oncall@example.org" not in page and "Send a test message" not in page
        assert client.post(reverse("monitoring:channel-test", args=["search", ops.pk])).status_code == 403
        assert mail.outbox == []


@pytest.mark.services
@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_editor_edits_a_rule_and_tests_a_channel_in_the_browser(
    page: Any, live_server: Any, stream: EmbeddingStream, theo: User
) -> None:
    from tests.conftest import THEO, browser_log_in, screenshot_path

    ops = NotificationChannel.objects.create(
        team=stream.team, name="ops", kind="email", target="o@example.org"
    )
    r = rule(stream, ops, threshold=0.9)
    monitor(stream, 0, avg_cosine_similarity=0.75)
    browser_log_in(page, live_server, THEO.username, THEO.password)
    page.goto(f"{live_server.url}/teams/search/alerts/")
    page.locator("#alert-rules").get_by_role("link", name="too_similar").click()
    assert "avg_cosine_similarity > 0.9 is false" in page.locator("#rule-checks").inner_text()
    page.get_by_label("Threshold", exact=True).fill("0.5")
    page.get_by_role("button", name="Save the rule").click()
    assert "Saved the rule too_similar" in page.get_by_role("status").inner_text()
    assert "avg_cosine_similarity > 0.5: breaks" in page.locator("#rule-checks").inner_text()
    assert page.locator("#rule-events tbody tr").count() == 1 and [e.value for e in unresolved(r)] == [0.75]
    page.screenshot(path=str(screenshot_path("alert-rule.png")), full_page=True)

    page.get_by_role("link", name="ops").first.click()
    page.get_by_role("button", name="Send a test message").click()
    assert (
        "Test message delivered through ops: sent to 1 address(es)."
        in page.get_by_role("status").inner_text()
    )
    assert mail.outbox[-1].to == ["o@example.org"]
