"""The alert API: rules, channels and events of a team, with its permissions and field errors."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from evalplatform.models import Team
from monitoring.files import uploads
from monitoring.models import AlertEvent, AlertRule, EmbeddingStream, NotificationChannel
from tests.conftest import client_for
from tests.monitoring.conftest import upload
from tests.monitoring.test_alerts import monitor

API = "/api/teams/search"


@pytest.fixture
def stream(team: Team) -> EmbeddingStream:
    return EmbeddingStream.objects.create(team=team, slug="docs", name="Doc embeddings", dimension=8)


def new_rule(client: Client, **fields: Any) -> Any:
    body = {"name": "similar", "metric": "avg_cosine_similarity", "comparator": ">", "threshold": 0.3,
            "stream": "docs", **fields}  # fmt: skip
    return client.post(f"{API}/alert-rules/", body, content_type="application/json")


@pytest.mark.django_db
class TestRulesAndChannels:
    def test_it_creates_a_channel_and_a_rule_and_lists_them(
        self, theo: User, stream: EmbeddingStream
    ) -> None:
        editor = client_for(theo)
        channel = editor.post(
            f"{API}/channels/", {"name": "ops", "kind": "webhook", "target": "https://hooks.example/x"},
            content_type="application/json",
        )  # fmt: skip
        assert channel.status_code == 201
        created = new_rule(editor, channels=[channel.json()["id"]], consecutive=2, severity="critical")
        assert created.status_code == 201, created.json()
        body = created.json()
        assert (body["stream"], body["qrels"], body["channels"], body["series"]) == (
            "docs",
            None,
            [channel.json()["id"]],
            "stream Doc embeddings",
        )
        assert editor.get(f"{API}/alert-rules/").json()["count"] == 1
        assert editor.get(f"{API}/channels/").json()["results"][0]["kind"] == "webhook"

    def test_it_names_the_field_of_bad_input(self, theo: User, stream: EmbeddingStream) -> None:
        editor = client_for(theo)
        assert "did you mean" in new_rule(editor, metric="avg_cosine").json()["metric"][0]
        assert "comparator" in new_rule(editor, comparator="=").json()
        assert "stream" in new_rule(editor, stream="nope").json()
        assert "channels" in new_rule(editor, channels=[999]).json()
        bad_hook = editor.post(f"{API}/channels/", {"name": "x", "kind": "webhook", "target": "ftp://x"},
                               content_type="application/json")  # fmt: skip
        assert bad_hook.status_code == 400 and "target" in bad_hook.json()

    def test_it_suggests_retrieval_names_with_the_cutoff_for_a_retrieval_rule(
        self, theo: User, team: Team
    ) -> None:
        qrels = uploads.qrels_upload(team=team, upload=upload("judged.qrels", "q1 0 d1 1\n"))
        response = new_rule(
            client_for(theo),
            metric="ndgc_cut_10",
            comparator="<",
            stream="",
            qrels=qrels.pk,
            run_name="nightly",
        )
        assert response.status_code == 400
        message = response.json()["metric"][0]
        assert message == "unknown metric 'ndgc_cut_10'; did you mean 'ndcg_cut_10' or 'ndcg_exp_cut_10'?"
        assert "ndcg_at_k" not in message
        assert not AlertRule.objects.exists()

    def test_it_suggests_embedding_names_for_a_stream_rule(self, theo: User, stream: EmbeddingStream) -> None:
        message = new_rule(client_for(theo), metric="ndgc_cut_10").json()["metric"][0]
        assert "ndcg" not in message

    def test_it_lets_viewers_read_but_not_write(
        self, theo: User, vera: User, stream: EmbeddingStream
    ) -> None:
        rule = new_rule(client_for(theo)).json()
        viewer = client_for(vera)
        assert viewer.get(f"{API}/alert-rules/{rule['id']}/").status_code == 200
        assert new_rule(viewer, name="other").status_code == 403
        assert viewer.patch(f"{API}/alert-rules/{rule['id']}/", {"enabled": False},
                            content_type="application/json").status_code == 403  # fmt: skip
        assert viewer.delete(f"{API}/alert-rules/{rule['id']}/").status_code == 403

    def test_it_hides_everything_from_other_teams(
        self, otto: User, theo: User, stream: EmbeddingStream
    ) -> None:
        new_rule(client_for(theo))
        outsider = client_for(otto)
        for path in ("alert-rules/", "channels/", "alerts/"):
            assert outsider.get(f"{API}/{path}").status_code == 404

    def test_it_disables_and_deletes_a_rule(self, theo: User, stream: EmbeddingStream) -> None:
        editor = client_for(theo)
        rule = new_rule(editor).json()
        patched = editor.patch(
            f"{API}/alert-rules/{rule['id']}/", {"enabled": False}, content_type="application/json"
        )
        assert patched.json()["enabled"] is False
        assert editor.delete(f"{API}/alert-rules/{rule['id']}/").status_code == 204
        assert not AlertRule.objects.exists()


@pytest.mark.django_db
class TestEvents:
    def test_it_lists_events_by_status_and_acknowledges_one(
        self, theo: User, vera: User, stream: EmbeddingStream, django_assert_max_num_queries: Any
    ) -> None:
        new_rule(client_for(theo))
        for hour, value in enumerate([0.5, 0.1, 0.6]):
            monitor(stream, hour, avg_cosine_similarity=value)
        viewer = client_for(vera)
        with django_assert_max_num_queries(8):
            listed = viewer.get(f"{API}/alerts/").json()
        assert [e["status"] for e in listed["results"]] == ["open", "resolved"]
        assert viewer.get(f"{API}/alerts/?status=unresolved").json()["count"] == 1
        assert viewer.get(f"{API}/alerts/?status=sideways").status_code == 400
        event = listed["results"][0]
        assert viewer.post(f"{API}/alerts/{event['id']}/acknowledge/").status_code == 403
        acknowledged = client_for(theo).post(f"{API}/alerts/{event['id']}/acknowledge/").json()
        assert (acknowledged["status"], acknowledged["acknowledged_by"]) == ("acknowledged", "theo")
        assert AlertEvent.objects.get(pk=event["id"]).status == "acknowledged"
        assert NotificationChannel.objects.count() == 0


#: Webhook URLs that point inside: cloud metadata, a private range, loopback in several spellings, userinfo.
INTERNAL_URLS = [
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
    ("http://10.0.0.1/", "10.0.0.1 is a private address"),
    ("http://[::1]/", "::1 is a loopback address"),
    ("http://localhost:6379/", "localhost resolves to 127.0.0.1, a loopback address"),
    ("http://2130706433/", "127.0.0.1 is a loopback address"),
    ("http://0x7f.1/", "127.0.0.1 is a loopback address"),
    ("http://017700000001/", "127.0.0.1 is a loopback address"),
    ("http://127.1/", "127.0.0.1 is a loopback address"),
    ("http://[::ffff:127.0.0.1]/", "is a loopback address"),
    ("http://0.0.0.0:8000/", "0.0.0.0 is the unspecified address"),
    ("http://user:pass@hooks.example.com/", "may not carry a user name or password"),
    ("ftp://hooks.example.com/", "Only http and https"),
]


@pytest.mark.django_db
class TestWebhookTargets:
    @pytest.mark.parametrize(("url", "reason"), INTERNAL_URLS)
    def test_it_refuses_a_webhook_to_an_internal_address(
        self, theo: User, stream: EmbeddingStream, url: str, reason: str
    ) -> None:
        answer = client_for(theo).post(
            f"{API}/channels/",
            {"name": "x", "kind": "webhook", "target": url},
            content_type="application/json",
        )
        assert answer.status_code == 400 and reason in answer.json()["target"][0], answer.json()
        assert not NotificationChannel.objects.exists()

    def test_it_accepts_an_internal_range_the_operator_allows(
        self, theo: User, stream: EmbeddingStream, settings: Any
    ) -> None:
        settings.WEBHOOK_ALLOWED_NETWORKS = ["10.20.0.0/16"]
        editor = client_for(theo)
        made = editor.post(f"{API}/channels/", {"name": "x", "kind": "webhook", "target": "http://10.20.3.4/h"},
                           content_type="application/json")  # fmt: skip
        assert made.status_code == 201
        other = editor.post(f"{API}/channels/", {"name": "y", "kind": "webhook", "target": "http://10.21.3.4/h"},
                            content_type="application/json")  # fmt: skip
        assert other.status_code == 400

    def test_it_shows_viewers_the_kind_and_a_masked_target(
        self, theo: User, vera: User, stream: EmbeddingStream
    ) -> None:
        editor = client_for(theo)
        secret = "https://hooks.slack.com/services/T000/B000/XXXXSECRET"
        for name, kind, target in (
            ("slack", "webhook", secret),
            ("mail", "email", "oncall@example.org, lb@ex.org"),
        ):
            body = {"name": name, "kind": kind, "target": target}
            assert editor.post(f"{API}/channels/", body, content_type="application/json").status_code == 201
        as_editor = {c["name"]: c for c in editor.get(f"{API}/channels/").json()["results"]}
        assert as_editor["slack"]["target"] == secret
        as_viewer = {c["name"]: c for c in client_for(vera).get(f"{API}/channels/").json()["results"]}
        assert (as_viewer["slack"]["kind"], as_viewer["slack"]["target"]) == (
            "webhook",
            "https://hooks.slack.com/…",
        )
        assert as_viewer["mail"]["target"] == "o***@example.org, l***@ex.org"
        assert "SECRET" not in client_for(vera).get(f"{API}/channels/").content.decode()
