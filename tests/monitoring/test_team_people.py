"""Teams and people without the admin: start a team, add members by username or email (inviting those
without an account), set roles, take members off; the same through the API; a lead invites annotators
to a project. Then the whole journey in Chromium, down to the invited person setting a password."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from django.urls import reverse

from annotations.models import Project, ProjectMembership
from evalplatform.models import Team, TeamMembership
from evalplatform.teams import team_member_set
from tests.annotations.conftest import build_project
from tests.conftest import THEO, Persona, browser_log_in, client_for, make_user, screenshot_path
from tests.monitoring.conftest import OTTO, VERA

pytestmark = pytest.mark.django_db

LINK = re.compile(r"https?://[^/\s]+(/accounts/set-password/[^\s]+/)")


def members_url(team: Team) -> str:
    return reverse("monitoring:team-members", args=[team.slug])


def roles(team: Team) -> dict[str, str]:
    return dict(TeamMembership.objects.filter(team=team).values_list("user__username", "role"))


def messages_of(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


class TestStartingATeam:
    def test_an_editor_starts_a_team_and_becomes_its_editor(self, team: Team, theo: User) -> None:
        response = client_for(theo).post(
            reverse("monitoring:team-create"), {"name": "Recs", "slug": "recs", "description": "recommenders"}
        )
        assert response.status_code == 302 and response["Location"] == "/teams/recs/members/"
        assert roles(Team.objects.get(slug="recs")) == {"theo": "editor"}

    def test_a_clashing_or_reserved_slug_is_refused_beside_the_field(self, team: Team, theo: User) -> None:
        client = client_for(theo)
        for slug, message in [("search", "already named 'search'"), ("new", "new-team page")]:
            response = client.post(reverse("monitoring:team-create"), {"name": "X", "slug": slug})
            assert response.status_code == 400
            assert message in " ".join(response.context["form"].errors["slug"])
        assert Team.objects.count() == 1

    def test_a_viewer_of_no_team_as_editor_may_not_start_one(self, team: Team, vera: User) -> None:
        response = client_for(vera).get(reverse("monitoring:team-create"))
        assert response.status_code == 403
        assert "Start a team" not in client_for(vera).get(reverse("monitoring:team-list")).content.decode()

    def test_editors_rename_the_team_but_keep_its_address(self, team: Team, theo: User) -> None:
        response = client_for(theo).post(
            reverse("monitoring:team-edit", args=["search"]), {"name": "Web search", "description": "d"}
        )
        assert response.status_code == 302
        team.refresh_from_db()
        assert (team.name, team.slug, team.description) == ("Web search", "search", "d")


class TestMembers:
    def test_an_editor_adds_an_existing_account_by_username_or_email(self, team: Team, theo: User) -> None:
        alice = make_user(Persona("alice", "alice-password-123", None))
        bob = make_user(Persona("bob", "bob-password-123", None))
        client = client_for(theo)
        client.post(members_url(team), {"person": "alice", "role": "editor"})
        client.post(members_url(team), {"person": "BOB@example.org", "role": "viewer"})
        assert roles(team) == {"theo": "editor", "vera": "viewer", "alice": "editor", "bob": "viewer"}
        assert not User.objects.filter(username__contains="@").exists() and mail.outbox == []
        assert alice.has_usable_password() and bob.has_usable_password()

    def test_an_email_with_no_account_is_invited_and_sets_a_password(self, team: Team, theo: User) -> None:
        response = client_for(theo).post(members_url(team), {"person": "Nora@Example.org", "role": "viewer"})
        assert response.status_code == 302
        nora = User.objects.get(email="nora@example.org")
        assert nora.username == "nora@example.org" and not nora.has_usable_password()
        assert list(nora.groups.values_list("name", flat=True)) == ["team_member"]
        assert roles(team)["nora@example.org"] == "viewer"
        (message,) = mail.outbox
        assert message.to == ["nora@example.org"] and "the Search team" in message.subject
        link = LINK.search(message.body)
        assert link is not None
        anonymous = Client()
        form_page = anonymous.get(link[1], follow=True)
        assert form_page.context["validlink"] is True
        done = anonymous.post(
            form_page.request["PATH_INFO"],
            {"new_password1": "a-long-new-password-9", "new_password2": "a-long-new-password-9"},
        )
        assert done.status_code == 302 and done["Location"] == reverse("password-set-done")
        assert User.objects.get(pk=nora.pk).check_password("a-long-new-password-9")
        # The link is spent.
        assert Client().get(link[1], follow=True).context["validlink"] is False

    def test_a_failed_invitation_mail_is_told_and_the_membership_kept(
        self, team: Team, theo: User, settings: Any
    ) -> None:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 2
        response = client_for(theo).post(
            members_url(team), {"person": "sam@example.org", "role": "viewer"}, follow=True
        )
        (text,) = messages_of(response)
        assert "could not be sent" in text and "ConnectionRefusedError" in text
        assert roles(team)["sam@example.org"] == "viewer"

    @pytest.mark.parametrize(
        ("person", "reason"),
        [
            ("nobody", "There is no account named 'nobody'"),
            ("not an@email", "neither a username nor a valid email"),
            ("", "This field is required."),
            ("shared@example.org", "Several accounts use shared@example.org"),
            ("gone", "deactivated"),
        ],
    )
    def test_bad_people_are_refused_beside_the_field(
        self, team: Team, theo: User, person: str, reason: str
    ) -> None:
        User.objects.create_user("s1", "shared@example.org")
        User.objects.create_user("s2", "Shared@example.org")
        User.objects.create_user("gone", "gone@example.org", is_active=False)
        response = client_for(theo).post(members_url(team), {"person": person, "role": "viewer"})
        assert response.status_code == 400
        assert reason in " ".join(response.context["form"].errors["person"])
        assert roles(team) == {"theo": "editor", "vera": "viewer"} and mail.outbox == []

    def test_roles_change_and_members_go_after_a_confirmation(
        self, team: Team, theo: User, vera: User
    ) -> None:
        client = client_for(theo)
        vera_membership = TeamMembership.objects.get(team=team, user=vera)
        client.post(
            reverse("monitoring:team-member-role", args=["search", vera_membership.pk]), {"role": "editor"}
        )
        assert roles(team)["vera"] == "editor"
        remove = reverse("monitoring:team-member-remove", args=["search", vera_membership.pk])
        page = client.get(remove)
        assert page.status_code == 200 and "vera no longer reads" in page.content.decode()
        assert client.post(remove).status_code == 400  # no confirmation: nothing happens
        assert client.post(remove, {"confirm": "remove theo"}).status_code == 400
        assert "vera" in roles(team)
        assert client.post(remove, {"confirm": "remove vera"}).status_code == 302
        assert roles(team) == {"theo": "editor"}

    def test_the_last_editor_can_neither_be_demoted_nor_removed(self, team: Team, theo: User) -> None:
        client = client_for(theo)
        mine = TeamMembership.objects.get(team=team, user=theo)
        response = client.post(
            reverse("monitoring:team-member-role", args=["search", mine.pk]), {"role": "viewer"}
        )
        assert response.status_code == 409 and "only editor" in messages_of(response)[0]
        response = client.post(
            reverse("monitoring:team-member-remove", args=["search", mine.pk]), {"confirm": "remove theo"}
        )
        assert response.status_code == 409 and "only editor" in response.content.decode()
        assert roles(team)["theo"] == "editor"

    def test_viewers_read_the_list_but_change_nothing(self, team: Team, vera: User, theo: User) -> None:
        client = client_for(vera)
        page = client.get(members_url(team)).content.decode()
        assert "theo" in page and "Add a member" not in page and "Set role" not in page
        assert client.post(members_url(team), {"person": "vera", "role": "editor"}).status_code == 403
        mine = TeamMembership.objects.get(team=team, user=theo)
        assert (
            client.post(
                reverse("monitoring:team-member-role", args=["search", mine.pk]), {"role": "viewer"}
            ).status_code
            == 403
        )

    def test_the_members_page_reads_a_fixed_number_of_rows(
        self, team: Team, theo: User, django_assert_max_num_queries: Any
    ) -> None:
        client = client_for(theo)
        with django_assert_max_num_queries(12) as few:
            client.get(members_url(team))
        counted = len(few.captured_queries)
        for n in range(8):
            team_member_set(team=team, user=User.objects.create_user(f"m{n}", f"m{n}@example.org"))
        with django_assert_max_num_queries(counted):
            client.get(members_url(team))


class TestMembersApi:
    def test_create_add_invite_change_and_remove(self, team: Team, theo: User, vera: User) -> None:
        client = client_for(theo)
        created = client.post(
            "/api/teams/", {"slug": "recs", "name": "Recs"}, content_type="application/json"
        )
        assert created.status_code == 201 and created.json()["role"] == "editor"
        added = client.post(
            "/api/teams/recs/members/",
            {"person": "kim@example.org", "role": "editor"},
            content_type="application/json",
        )
        assert added.status_code == 201
        assert {k: added.json()[k] for k in ("username", "role", "invited", "mail_error")} == {
            "username": "kim@example.org", "role": "editor", "invited": True, "mail_error": "",
        }  # fmt: skip
        assert len(mail.outbox) == 1
        listed = client.get("/api/teams/recs/members/").json()["results"]
        assert [(m["username"], m["role"]) for m in listed] == [
            ("kim@example.org", "editor"),
            ("theo", "editor"),
        ]
        kim = listed[0]["id"]
        patched = client.patch(
            f"/api/teams/recs/members/{kim}/", {"role": "viewer"}, content_type="application/json"
        )
        assert patched.status_code == 200 and patched.json()["role"] == "viewer"
        theo_id = listed[1]["id"]
        conflict = client.delete(f"/api/teams/recs/members/{theo_id}/")
        assert conflict.status_code == 409 and "only editor" in conflict.json()["detail"]
        assert client.delete(f"/api/teams/recs/members/{kim}/").status_code == 204
        assert roles(Team.objects.get(slug="recs")) == {"theo": "editor"}

    def test_bad_input_is_a_400_naming_the_field(self, team: Team, theo: User) -> None:
        client = client_for(theo)
        bad = client.post("/api/teams/search/members/", {"person": "nobody"}, content_type="application/json")
        assert bad.status_code == 400 and "no account named 'nobody'" in str(bad.json()["person"])
        clash = client.post("/api/teams/", {"slug": "search", "name": "S"}, content_type="application/json")
        assert clash.status_code == 400 and "slug" in clash.json()

    def test_a_viewer_may_not_start_a_team_or_add_members(self, team: Team, vera: User) -> None:
        client = client_for(vera)
        assert (
            client.post(
                "/api/teams/", {"slug": "x", "name": "X"}, content_type="application/json"
            ).status_code
            == 403
        )
        refused = client.post(
            "/api/teams/search/members/", {"person": "vera"}, content_type="application/json"
        )
        assert refused.status_code == 403


class TestProjectMembers:
    def test_a_lead_invites_an_annotator_by_email_and_takes_a_member_off(
        self, lena: User, alice: User
    ) -> None:
        project = build_project(lead=lena, annotators=[alice], slug="alpha", topics=1, docs_per_topic=2)
        client = client_for(lena)
        response = client.post(
            reverse("annotations:member-add", args=["alpha"]),
            {"username": "ann@example.org", "role": "annotator"},
            follow=True,
        )
        assert "Invited ann@example.org to the" in messages_of(response)[0]
        ann = User.objects.get(email="ann@example.org")
        assert list(ann.groups.values_list("name", flat=True)) == ["annotator"]
        assert ProjectMembership.objects.get(project=project, user=ann).role == "annotator"
        assert mail.outbox[0].to == ["ann@example.org"] and "/accounts/set-password/" in mail.outbox[0].body
        membership = ProjectMembership.objects.get(project=project, user=alice)
        remove = reverse("annotations:member-remove", args=["alpha", membership.pk])
        assert "can no longer claim" in client.get(remove).content.decode()
        assert client.post(remove).status_code == 400
        assert client.post(remove, {"confirm": "remove alice"}).status_code == 302
        assert not Project.objects.get(pk=project.pk).memberships.filter(user=alice).exists()

    def test_an_unknown_username_is_told(self, lena: User) -> None:
        build_project(lead=lena, annotators=[], slug="alpha", topics=1, docs_per_topic=2)
        response = client_for(lena).post(
            reverse("annotations:member-add", args=["alpha"]),
            {"username": "nobody", "role": "annotator"},
            follow=True,
        )
        assert "There is no account named 'nobody'" in messages_of(response)[0]


@pytest.mark.services
@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_editor_starts_a_team_invites_a_person_who_sets_a_password_and_reads_it(
    page: Any, live_server: Any, team: Team, theo: User
) -> None:
    otto = make_user(OTTO)
    browser_log_in(page, live_server, THEO.username, THEO.password)
    page.goto(f"{live_server.url}/teams/")
    page.get_by_role("link", name="Start a team").click()
    page.get_by_label("Name", exact=True).fill("Ranking")
    page.get_by_label("Slug", exact=True).fill("ranking")
    page.get_by_role("button", name="Start the team").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Members of Ranking"

    # A bad name is told beside the field; then otto by username, and a new person by email.
    page.get_by_label("Username or email").fill("nobody")
    page.get_by_role("button", name="Add member").click()
    assert "There is no account named 'nobody'" in page.locator("#member-add-form [role=alert]").inner_text()
    page.get_by_label("Username or email").fill("otto")
    page.get_by_label("Role", exact=True).select_option("editor")
    page.get_by_role("button", name="Add member").click()
    page.get_by_label("Username or email").fill("pat@example.org")
    page.get_by_role("button", name="Add member").click()
    assert "Invited pat@example.org" in page.get_by_role("status").inner_text()
    rows = page.locator("#member-table tbody tr")
    assert rows.count() == 3 and "invited" in rows.filter(has_text="pat@example.org").inner_text()
    page.screenshot(path=str(screenshot_path("team-members.png")), full_page=True)

    # Otto goes back to viewer, then off the team after the confirmation page.
    otto_row = rows.filter(has_text="otto")
    otto_row.get_by_label("Role of otto").select_option("viewer")
    otto_row.get_by_role("button", name="Set role").click()
    assert "otto is now viewer" in page.get_by_role("status").inner_text()
    page.locator("#member-table tbody tr", has_text="otto").get_by_role("link", name="Remove…").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Take otto off Ranking?"
    page.get_by_role("button", name="Remove otto").click()
    assert page.locator("#member-table tbody tr").count() == 2
    assert not TeamMembership.objects.filter(team__slug="ranking", user=otto).exists()

    # Pat follows the mailed link, sets a password, logs in and finds the team.
    link = LINK.search(mail.outbox[-1].body)
    assert link is not None
    page.context.clear_cookies()
    page.goto(live_server.url + link[1])
    page.get_by_label("New password", exact=True).fill("pats-own-password-42")
    page.get_by_label("New password confirmation").fill("pats-own-password-42")
    page.get_by_role("button", name="Set password").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Your password is set"
    browser_log_in(page, live_server, "pat@example.org", "pats-own-password-42")
    page.goto(f"{live_server.url}/teams/")
    assert page.locator("#team-table").get_by_role("link", name="Ranking").count() == 1
    assert VERA.username not in page.locator("#team-table").inner_text()


class TestMembersCommand:
    def test_it_lists_adds_invites_and_removes(self, team: Team, theo: User, settings: Any) -> None:
        from io import StringIO

        from django.core.management import CommandError, call_command

        settings.SITE_URL = "https://eval.example.org"
        out = StringIO()
        call_command(
            "team_members", "search", "--add", "kim@example.org", "--role", "editor", "--json", stdout=out
        )
        done = json.loads(out.getvalue())
        assert done["done"].startswith("kim@example.org is editor (invited")
        assert [(m["username"], m["role"], m["invited"]) for m in done["members"]] == [
            ("kim@example.org", "editor", True), ("theo", "editor", False), ("vera", "viewer", False),
        ]  # fmt: skip
        assert "https://eval.example.org/accounts/set-password/" in mail.outbox[0].body
        out = StringIO()
        call_command("team_members", "search", "--remove", "vera", stdout=out)
        assert out.getvalue().splitlines()[0] == "vera is off search"
        with pytest.raises(CommandError, match="There is no account named 'nobody'"):
            call_command("team_members", "search", "--add", "nobody")
        call_command("team_members", "search", "--remove", "kim@example.org", stdout=StringIO())
        with pytest.raises(CommandError, match="only editor"):
            call_command("team_members", "search", "--remove", "theo")
