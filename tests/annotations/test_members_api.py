"""A project's members over the API (`annotations.members_api`): leads list them, add or invite, change
roles and take members off, as on the project page. Who may call what is in the permission matrix
(tests/evalplatform/test_permission_matrix.py); here, what each call does."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotations import services
from annotations.models import Annotation, Assignment, Project, ProjectMembership
from evalplatform.roles import Role as PlatformRole
from evalplatform.roles import user_has_role
from tests.annotations.conftest import build_project

Role = ProjectMembership.Role


@pytest.fixture
def project(lena: User, alice: User) -> Project:
    return build_project(lead=lena, annotators=[alice], topics=1, docs_per_topic=4)


def members_url(project: Project, pk: int | None = None) -> str:
    return f"/api/projects/{project.slug}/members/" + (f"{pk}/" if pk is not None else "")


def send(client: Client, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
    if method == "get":
        return client.get(url)
    return getattr(client, method)(url, json.dumps(body or {}), content_type="application/json")


@pytest.mark.django_db
class TestMembersApi:
    def test_it_lists_the_members_with_their_roles_as_the_project_page_does(
        self, project: Project, lead_client: Client, lena: User, alice: User
    ) -> None:
        response = lead_client.get(members_url(project))
        assert response.status_code == 200
        rows = response.json()
        # By role, then username: the project page's order.
        assert [(row["username"], row["role"], row["invited"]) for row in rows] == [
            (alice.username, Role.ANNOTATOR, False),
            (lena.username, Role.LEAD, False),
        ]
        assert {row["email"] for row in rows} == {alice.email, lena.email}
        ids = {row["username"]: row["id"] for row in rows}
        assert ids[alice.username] == project.memberships.get(user=alice).pk
        one = lead_client.get(members_url(project, ids[alice.username])).json()
        assert one == next(row for row in rows if row["username"] == alice.username)

    def test_the_list_reads_a_fixed_number_of_statements_however_many_members(
        self, project: Project, lead_client: Client, annotators: Any, django_assert_max_num_queries: Any
    ) -> None:
        for user in annotators(3):
            services.membership_set(project=project, user=user, role=Role.ANNOTATOR)
        with CaptureQueriesContext(connection) as few:
            assert len(lead_client.get(members_url(project)).json()) == 5
        for user in annotators(20, start=3):
            services.membership_set(project=project, user=user, role=Role.ANNOTATOR)
        with django_assert_max_num_queries(len(few)):
            assert len(lead_client.get(members_url(project)).json()) == 25

    def test_it_adds_by_username_then_changes_the_role_by_adding_again(
        self, project: Project, lead_client: Client, bob: User
    ) -> None:
        added = send(lead_client, "post", members_url(project), {"person": bob.username})
        assert added.status_code == 201, added.json()
        body = added.json()
        assert (body["username"], body["role"], body["invited"], body["mail_error"]) == (
            bob.username, Role.ANNOTATOR, False, ""
        )  # fmt: skip
        assert project.memberships.get(user=bob).role == Role.ANNOTATOR
        again = send(lead_client, "post", members_url(project), {"person": bob.username, "role": Role.LEAD})
        assert again.status_code == 201 and again.json()["id"] == body["id"]
        assert project.memberships.get(user=bob).role == Role.LEAD
        assert mail.outbox == []

    def test_it_invites_an_email_with_no_account(self, project: Project, lead_client: Client) -> None:
        invited = send(lead_client, "post", members_url(project), {"person": "new.annotator@example.org"})
        assert invited.status_code == 201, invited.json()
        body = invited.json()
        assert body["invited"] is True and body["email"] == "new.annotator@example.org"
        assert body["mail_error"] == ""
        user = User.objects.get(email="new.annotator@example.org")
        assert project.memberships.get(user=user).role == Role.ANNOTATOR
        assert user_has_role(user, PlatformRole.ANNOTATOR) and not user.has_usable_password()
        (message,) = mail.outbox
        assert message.to == ["new.annotator@example.org"] and project.name in message.body
        assert reverse("password-set", kwargs={"uidb64": "x", "token": "y"}).split("x/")[0] in message.body

    @pytest.mark.parametrize(
        "body",
        [{"person": "nobody-has-this-name"}, {}, {"person": "bob", "role": "owner"}],
        ids=["unknown username", "no person", "unknown role"],
    )
    def test_it_refuses_what_it_cannot_add_and_changes_nothing(
        self, project: Project, lead_client: Client, bob: User, body: dict[str, Any]
    ) -> None:
        before = list(ProjectMembership.objects.values_list("pk", "user_id", "role").order_by("pk"))
        users = User.objects.count()
        response = send(lead_client, "post", members_url(project), body)
        assert response.status_code == 400
        assert set(response.json()) <= {"person", "role"} and response.json()
        assert list(ProjectMembership.objects.values_list("pk", "user_id", "role").order_by("pk")) == before
        assert User.objects.count() == users and mail.outbox == []

    def test_a_new_role_hands_back_the_tasks_held_and_keeps_the_answers(
        self, project: Project, lead_client: Client, alice: User
    ) -> None:
        claim = services.task_claim(project=project, annotator=alice)
        assert claim.assignment is not None
        services.annotation_submit(
            project=project, annotator=alice, assignment_id=claim.assignment.pk, grade=2
        )
        held = services.task_claim(project=project, annotator=alice).assignment
        assert held is not None and held.state == Assignment.State.RESERVED
        pk = project.memberships.get(user=alice).pk
        changed = send(lead_client, "patch", members_url(project, pk), {"role": Role.LEAD})
        assert changed.status_code == 200 and changed.json()["role"] == Role.LEAD
        assert not Assignment.objects.filter(pk=held.pk).exists()
        assert Annotation.objects.filter(annotator=alice).count() == 1
        refused = send(lead_client, "patch", members_url(project, pk), {"role": "owner"})
        assert refused.status_code == 400 and "role" in refused.json()
        assert project.memberships.get(user=alice).role == Role.LEAD

    def test_it_takes_a_member_off_the_project(
        self, project: Project, lead_client: Client, alice: User
    ) -> None:
        held = services.task_claim(project=project, annotator=alice).assignment
        assert held is not None
        pk = project.memberships.get(user=alice).pk
        assert send(lead_client, "delete", members_url(project, pk)).status_code == 204
        assert not project.memberships.filter(user=alice).exists()
        assert not Assignment.objects.filter(pk=held.pk).exists()
        assert send(lead_client, "delete", members_url(project, pk)).status_code == 404

    def test_it_finds_no_member_of_another_project(
        self, project: Project, lead_client: Client, lena: User, bob: User
    ) -> None:
        other = build_project(lead=lena, annotators=[bob], slug="other", topics=1, docs_per_topic=1)
        pk = other.memberships.get(user=bob).pk
        for method in ("get", "patch", "delete"):
            response = send(lead_client, method, members_url(project, pk), {"role": Role.LEAD})
            assert response.status_code == 404, method
        assert other.memberships.get(user=bob).role == Role.ANNOTATOR

    def test_a_lead_uses_their_api_token(self, project: Project, lena: User, bob: User) -> None:
        token = Token.objects.create(user=lena)
        client = Client(HTTP_AUTHORIZATION=f"Token {token.key}")
        assert client.get(members_url(project)).status_code == 200
        added = send(client, "post", members_url(project), {"person": bob.username, "role": Role.ANNOTATOR})
        assert added.status_code == 201
        assert project.memberships.get(user=bob).role == Role.ANNOTATOR


@pytest.mark.django_db
class TestAProjectKeepsALead:
    """Neither the API nor the project page takes the only lead off or makes them an annotator (409, or
    the page's error); with a second lead, either may go."""

    def test_the_api_refuses_to_leave_no_lead(
        self, project: Project, lead_client: Client, lena: User
    ) -> None:
        pk = project.memberships.get(user=lena).pk
        demoted = send(lead_client, "patch", members_url(project, pk), {"role": Role.ANNOTATOR})
        assert demoted.status_code == 409 and "only lead" in demoted.json()["detail"]
        again = send(
            lead_client, "post", members_url(project), {"person": lena.username, "role": Role.ANNOTATOR}
        )
        assert again.status_code == 409
        assert send(lead_client, "delete", members_url(project, pk)).status_code == 409
        assert project.memberships.get(user=lena).role == Role.LEAD

    def test_with_a_second_lead_the_first_may_go(
        self, project: Project, lead_client: Client, lena: User, bob: User
    ) -> None:
        send(lead_client, "post", members_url(project), {"person": bob.username, "role": Role.LEAD})
        pk = project.memberships.get(user=lena).pk
        assert send(lead_client, "delete", members_url(project, pk)).status_code == 204
        assert list(project.memberships.filter(role=Role.LEAD).values_list("user__username", flat=True)) == [
            bob.username
        ]
        # lena is no member now: the project is not found for her.
        assert lead_client.get(members_url(project)).status_code == 404

    def test_the_page_refuses_to_take_the_only_lead_off(
        self, project: Project, lead_client: Client, lena: User
    ) -> None:
        member = project.memberships.get(user=lena)
        url = f"/projects/{project.slug}/members/{member.pk}/remove/"
        response = lead_client.post(url, {"confirm": f"remove {lena.username}"}, follow=True)
        assert response.status_code == 200
        assert "only lead" in response.content.decode()
        assert project.memberships.get(user=lena).role == Role.LEAD
        added = lead_client.post(
            f"/projects/{project.slug}/members/",
            {"username": lena.username, "role": Role.ANNOTATOR},
            follow=True,
        )
        assert "only lead" in added.content.decode()
        assert project.memberships.get(user=lena).role == Role.LEAD
