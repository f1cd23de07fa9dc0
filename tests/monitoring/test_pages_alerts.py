"""The alerts page and the home page's open alerts: who sees what, the forms and their errors."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils.html import escape

from evalplatform.models import Team
from monitoring.models import AlertEvent, AlertRule, EmbeddingStream, NotificationChannel
from tests.conftest import client_for
from tests.monitoring.test_alerts import monitor, rule
from tests.monitoring.test_api_alerts import INTERNAL_URLS

PAGE = "/teams/search/alerts/"


@pytest.fixture
def stream(team: Team) -> EmbeddingStream:
    return EmbeddingStream.objects.create(team=team, slug="docs", name="Doc embeddings", dimension=8)


@pytest.mark.django_db
class TestAlertsPage:
    def test_it_shows_open_alerts_rules_and_channels_to_viewers_without_forms(
        self, vera: User, stream: EmbeddingStream, django_assert_max_num_queries: Any
    ) -> None:
        rule(stream)
        monitor(stream, 0, avg_cosine_similarity=0.5)
        viewer = client_for(vera)
        with django_assert_max_num_queries(12):
            page = viewer.get(PAGE)
        html = page.content.decode()
        assert page.status_code == 200 and "too_similar" in html and "Average cosine similarity" in html
        assert 'id="rule-form"' not in html and "Acknowledge</button>" not in html

    def test_it_keeps_other_teams_and_anonymous_users_out(self, otto: User, stream: EmbeddingStream) -> None:
        assert client_for(otto).get(PAGE).status_code == 404
        assert Client().get(PAGE).status_code == 302

    def test_it_adds_a_rule_and_a_channel_and_reports_errors(
        self, theo: User, stream: EmbeddingStream
    ) -> None:
        editor = client_for(theo)
        made = editor.post(
            "/teams/search/alerts/channels/", {"name": "ops", "kind": "webhook", "target": "https://x/y"}
        )
        assert made.status_code == 302 and NotificationChannel.objects.get().name == "ops"
        bad = editor.post(
            "/teams/search/alerts/channels/", {"name": "x", "kind": "email", "target": "nobody"}
        )
        assert bad.status_code == 200 and "email addresses" in bad.content.decode()
        form = {"name": "collapse", "metric": "effective_rank_ratio", "comparator": "<", "threshold": "0.3",
                "severity": "critical", "consecutive": "2", "cooldown_minutes": "30", "stream": stream.pk,
                "channels": [NotificationChannel.objects.get().pk]}  # fmt: skip
        assert editor.post("/teams/search/alerts/rules/", form).status_code == 302
        created = AlertRule.objects.get()
        assert (
            created.metric,
            created.consecutive,
            list(created.channels.values_list("name", flat=True)),
        ) == ("effective_rank_ratio", 2, ["ops"])
        unknown = editor.post("/teams/search/alerts/rules/", {**form, "name": "x", "metric": "efective_rank"})
        assert "did you mean" in unknown.content.decode()
        neither = editor.post("/teams/search/alerts/rules/", {**form, "name": "y", "stream": ""})
        assert "Choose one of the team&#x27;s series, or a kind of series" in neither.content.decode()

    def test_it_lets_editors_acknowledge_toggle_and_delete(
        self, theo: User, vera: User, stream: EmbeddingStream
    ) -> None:
        watched = rule(stream)
        monitor(stream, 0, avg_cosine_similarity=0.5)
        event = AlertEvent.objects.get()
        assert client_for(vera).post(f"/teams/search/alerts/{event.pk}/acknowledge/").status_code == 403
        editor = client_for(theo)
        assert editor.post(f"/teams/search/alerts/{event.pk}/acknowledge/").status_code == 302
        assert AlertEvent.objects.get().status == "acknowledged"
        editor.post(f"/teams/search/alerts/rules/{watched.pk}/", {"action": "toggle"})
        assert AlertRule.objects.get().enabled is False
        delete = f"/teams/search/alerts/rules/{watched.pk}/delete/"
        assert "Its 1 alert (open and resolved)" in editor.get(delete).content.decode()
        assert editor.post(delete).status_code == 400 and AlertRule.objects.exists()  # no confirmation
        assert editor.post(delete, {"confirm": f"delete rule {watched.pk}"}).status_code == 302
        assert not AlertRule.objects.exists()

    def test_a_channel_goes_after_a_confirmation_naming_its_rules(
        self, theo: User, vera: User, stream: EmbeddingStream
    ) -> None:
        ops = NotificationChannel.objects.create(
            team=stream.team, name="ops", kind="email", target="o@example.org"
        )
        rule(stream, ops)
        delete = f"/teams/search/alerts/channels/{ops.pk}/delete/"
        assert client_for(vera).get(delete).status_code == 403
        editor = client_for(theo)
        assert "1 rule stop notifying it: too_similar." in editor.get(delete).content.decode()
        assert editor.post(delete).status_code == 400 and NotificationChannel.objects.exists()
        assert editor.post(delete, {"confirm": f"delete channel {ops.pk}"}).status_code == 302
        assert not NotificationChannel.objects.exists() and AlertRule.objects.exists()


@pytest.mark.django_db
def test_it_lists_the_teams_open_alerts_on_the_home_page(
    vera: User, otto: User, stream: EmbeddingStream
) -> None:
    rule(stream)
    monitor(stream, 0, avg_cosine_similarity=0.5)
    home = client_for(vera).get("/").content.decode()
    assert 'id="home-alerts"' in home and "too_similar" in home
    assert "too_similar" not in client_for(otto).get("/").content.decode()


@pytest.mark.django_db
class TestChannels:
    @pytest.mark.parametrize(("url", "reason"), INTERNAL_URLS)
    def test_it_refuses_a_webhook_to_an_internal_address(
        self, theo: User, stream: EmbeddingStream, url: str, reason: str
    ) -> None:
        answer = client_for(theo).post(
            "/teams/search/alerts/channels/", {"name": "x", "kind": "webhook", "target": url}
        )
        assert answer.status_code == 200 and escape(reason) in answer.content.decode()
        assert not NotificationChannel.objects.exists()

    def test_it_shows_viewers_a_masked_target_and_editors_the_whole_one(
        self, theo: User, vera: User, stream: EmbeddingStream
    ) -> None:
        secret = "https://hooks.slack.com/services/T000/B000/XXXXSECRET"
        NotificationChannel.objects.create(team=stream.team, name="slack", kind="webhook", target=secret)
        NotificationChannel.objects.create(
            team=stream.team, name="mail", kind="email", target="oncall@example.org"
        )
        viewer = client_for(vera).get(PAGE).content.decode()
        assert (
            "SECRET" not in viewer and "https://hooks.slack.com/…" in viewer and "o***@example.org" in viewer
        )
        assert "oncall@" not in viewer
        editor = client_for(theo).get(PAGE).content.decode()
        assert secret in editor and "oncall@example.org" in editor
