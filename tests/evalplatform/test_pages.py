"""Login, logout, the home page, the admin and the API basics."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.authtoken.models import Token

from tests.conftest import ALICE, remote_assets


@pytest.mark.django_db
class TestLogin:
    def test_it_redirects_anonymous_users_to_the_login_page(self, client: Client) -> None:
        response = client.get("/")
        assert response.status_code == 302
        assert response["Location"] == "/accounts/login/?next=/"

    def test_it_logs_in_and_shows_the_home_page(self, client: Client, alice: User) -> None:
        response = client.post("/accounts/login/", {"username": ALICE.username, "password": ALICE.password})
        assert response.status_code == 302
        home = client.get("/")
        assert home.status_code == 200
        assert b"Welcome, alice" in home.content
        assert b"Annotator" in home.content

    def test_it_rejects_a_wrong_password(self, client: Client, alice: User) -> None:
        response = client.post("/accounts/login/", {"username": ALICE.username, "password": "wrong"})
        assert response.status_code == 200
        assert b"didn't match" in response.content

    def test_it_logs_out_with_post(self, client: Client, alice: User) -> None:
        client.force_login(alice)
        response = client.post("/accounts/logout/")
        assert response.status_code == 302
        assert client.get("/").status_code == 302

    def test_it_creates_the_role_groups_in_a_migration(self) -> None:
        from django.contrib.auth.models import Group

        names = set(Group.objects.values_list("name", flat=True))
        assert {"annotator", "project_lead", "team_member"} <= names


@pytest.mark.django_db
class TestAdmin:
    def test_it_registers_every_model_of_our_apps(self) -> None:
        ours = [
            model
            for app in ("evalplatform", "annotations", "monitoring")
            for model in apps.get_app_config(app).get_models()
        ]
        missing = [model.__name__ for model in ours if not admin.site.is_registered(model)]
        assert missing == []

    def test_it_shows_the_admin_to_superusers(self, admin_client: Client) -> None:
        assert admin_client.get("/admin/").status_code == 200
        assert admin_client.get("/admin/evalplatform/workerheartbeat/").status_code == 200
        assert admin_client.get("/admin/django_celery_beat/periodictask/").status_code == 200

    def test_it_keeps_annotators_out_of_the_admin(self, client: Client, alice: User) -> None:
        client.force_login(alice)
        assert client.get("/admin/").status_code == 302


@pytest.mark.django_db
class TestApi:
    def test_it_serves_the_openapi_schema(self, client: Client) -> None:
        response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
        assert response.status_code == 200
        assert "/api/me/" in response.json()["paths"]

    def test_it_serves_the_docs_without_a_cdn(self, client: Client) -> None:
        response = client.get("/api/docs/")
        assert response.status_code == 200
        assert remote_assets(response.content.decode()) == []
        assert b"/static/drf_spectacular_sidecar/" in response.content

    def test_it_refuses_anonymous_api_calls(self, client: Client) -> None:
        assert client.get("/api/me/").status_code in {401, 403}

    def test_it_accepts_token_auth(self, client: Client, alice: User) -> None:
        token = Token.objects.create(user=alice)
        response = client.get("/api/me/", HTTP_AUTHORIZATION=f"Token {token.key}")
        assert response.status_code == 200
        assert response.json() == {
            "username": "alice",
            "email": "alice@example.org",
            "is_staff": False,
            "roles": ["annotator"],
        }


@pytest.mark.django_db
class TestDemoData:
    def test_it_creates_the_demo_accounts_idempotently(self) -> None:
        from django.core.management import call_command

        call_command("load_demo", "--json")
        call_command("load_demo", "--json")
        assert User.objects.filter(username__in=["admin", "lead", "alice", "bob", "analyst"]).count() == 5
        assert User.objects.get(username="admin").is_superuser
        assert User.objects.get(username="alice").check_password("demo-alice-pass")


@pytest.mark.django_db
def test_it_links_the_teams_page_for_any_team_member(client: Client, lena: User) -> None:
    from evalplatform.teams import team_create

    client.force_login(lena)  # a project lead, not in the team_member group
    assert b'href="/teams/"' not in client.get("/").content
    team_create(slug="search", name="Search", creator=lena)
    assert b'href="/teams/"' in client.get("/").content


def test_remote_assets_finds_what_a_page_loads_from_another_host() -> None:
    page = (
        '<script src="/vendor/plotly.min.js"></script><script src="https://cdn.plot.ly/plotly.js"></script>'
        "<link rel='stylesheet' href='//fonts.example/x.css'><img src=\"/static/a.png\">"
        '<input type="hidden" name="csrfmiddlewaretoken" value="tsboqlniulcdnkvb5gwogbazep5o">'
    )
    assert remote_assets(page) == ["https://cdn.plot.ly/plotly.js", "//fonts.example/x.css"]
