"""The judging API's hot replies and lookups, written out for speed, against what the ORM and DRF give.

`annotations.api` writes the claim and answer replies without running their serializers, and the token,
the membership and the task served are read by hand-written SQL (`evalplatform.sqlrows`). Each is held
here to the serializer or queryset it stands for, on real requests.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token

from annotations import hotpath, selectors, services
from annotations.api import AnswerOut, NextOut, SubmitIn, plain_submit
from annotations.models import Annotation, Assignment, Project, ProjectMembership
from tests.annotations.conftest import build_project


@pytest.fixture
def project(lena: User, alice: User) -> Project:
    project = build_project(lead=lena, annotators=[alice], topics=2, docs_per_topic=3, gold_per_topic=1)
    # A level without a definition, and a topic with a description: both shapes of each field.
    project.scale = [*project.scale[:4], {"grade": 4, "label": "Perfect"}]
    project.save(update_fields=["scale"])
    project.topics.filter(qid="q0").update(description="What the query means.")
    return project


@pytest.fixture
def api(client: Client, alice: User) -> Client:
    token = Token.objects.create(user=alice)
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {token.key}"
    return client


def post(client: Client, url: str, body: dict[str, Any] | None = None) -> Any:
    return client.post(url, json.dumps(body or {}), content_type="application/json")


def as_serialized(serializer: Any) -> Any:
    """The serializer's output as it reaches the client: through JSON."""
    return json.loads(json.dumps(serializer.data))


@pytest.mark.django_db
class TestReplies:
    def test_claims_and_answers_are_what_their_serializers_write(self, api: Client, project: Project) -> None:
        base = f"/api/projects/{project.slug}"
        reply = post(api, f"{base}/next/").json()
        held = reply["task"]["assignment"]
        assert reply == as_serialized(NextOut(reply))
        descriptions = {reply["task"]["query"]["description"]}
        assert [level.get("definition") for level in reply["scale"]][-1] is None
        for body in (
            {"assignment": held, "grade": 3, "comment": "  fine  ", "next": True},
            {"unclear": True, "next": True},
            {"skip": True, "next": True},
        ):
            path = "skip" if body.pop("skip", False) else "submit"
            body.setdefault("assignment", held)
            answered = post(api, f"{base}/{path}/", body)
            assert answered.status_code == 201, answered.content
            data = answered.json()
            stored = Annotation.objects.get(assignment_id=body["assignment"])
            assert {k: v for k, v in data.items() if k != "next"} == as_serialized(AnswerOut(stored))
            assert data["next"] == as_serialized(NextOut(data["next"]))
            held = data["next"]["task"]["assignment"]
            descriptions.add(data["next"]["task"]["query"]["description"])
        while (reply := post(api, f"{base}/next/").json())["status"] == "task":
            descriptions.add(reply["task"]["query"]["description"])
            assert reply == as_serialized(NextOut(reply))
            post(api, f"{base}/submit/", {"assignment": reply["task"]["assignment"], "grade": 1})
        assert descriptions == {"", "What the query means."}
        assert reply["status"] == "empty" and reply["task"] is None
        assert reply == as_serialized(NextOut(reply))


@pytest.mark.django_db
class TestLookups:
    def test_the_served_assignment_is_the_querysets(self, api: Client, project: Project, alice: User) -> None:
        claim = services.task_claim(
            project=project, annotator=alice
        )  # read with the reservation (PostgreSQL)
        assert claim.assignment is not None
        held = claim.assignment.pk
        orm = Assignment.objects.select_related("task__topic", "task__document").get(pk=held)
        assert orm.task.assigned_count == 1  # the count after the reservation, as the claim's copy says
        for mine in (claim.assignment, hotpath.served_assignment(held)):
            for ours, theirs in (
                (mine, orm),
                (mine.task, orm.task),
                (mine.task.topic, orm.task.topic),
                (mine.task.document, orm.task.document),
            ):
                fields = type(theirs)._meta.concrete_fields
                assert [getattr(ours, f.attname) for f in fields] == [
                    getattr(theirs, f.attname) for f in fields
                ]
                assert not ours._state.adding and ours._state.db == theirs._state.db
        with pytest.raises(Assignment.DoesNotExist):
            hotpath.served_assignment(held + 10_000)

    def test_the_membership_is_the_querysets(self, project: Project, alice: User, bob: User) -> None:
        mine = hotpath.membership_of(slug=project.slug, user_id=alice.pk)
        orm = ProjectMembership.objects.select_related("project").get(project=project, user=alice)
        assert mine is not None
        for ours, theirs in ((mine, orm), (mine.project, orm.project)):
            fields = type(theirs)._meta.concrete_fields
            assert [getattr(ours, f.attname) for f in fields] == [getattr(theirs, f.attname) for f in fields]
        assert mine.project.scale == orm.project.scale and isinstance(mine.project.scale, list)
        assert hotpath.membership_of(slug=project.slug, user_id=bob.pk) is None
        assert hotpath.membership_of(slug="no-such-project", user_id=alice.pk) is None
        assert selectors.get_project_for_member(alice, project.slug).project == project

    def test_a_token_signs_in_its_user_and_nothing_else(
        self, client: Client, project: Project, alice: User
    ) -> None:
        token = Token.objects.create(user=alice)
        url = f"/api/projects/{project.slug}/progress/"
        assert client.get(url, HTTP_AUTHORIZATION=f"Token {token.key}").status_code == 200
        wrong = client.get(url, HTTP_AUTHORIZATION="Token " + "0" * 40)
        assert wrong.status_code == 401 and wrong.json()["detail"] == "Invalid token."
        alice.is_active = False
        alice.save(update_fields=["is_active"])
        inactive = client.get(url, HTTP_AUTHORIZATION=f"Token {token.key}")
        assert inactive.status_code == 401 and inactive.json()["detail"] == "User inactive or deleted."

    def test_a_token_sign_in_reads_the_membership_in_the_same_statement(
        self, client: Client, project: Project, alice: User, bob: User, lena: User
    ) -> None:
        token = Token.objects.create(user=alice)
        found = hotpath.token_member_of(key=token.key, slug=project.slug)
        assert found is not None
        ours_token, ours_user, mine = found
        orm = ProjectMembership.objects.select_related("project").get(project=project, user=alice)
        assert mine is not None
        for ours, theirs in (
            (ours_token, token),
            (ours_user, alice),
            (mine, orm),
            (mine.project, orm.project),
        ):
            fields = type(theirs)._meta.concrete_fields
            assert [getattr(ours, f.attname) for f in fields] == [getattr(theirs, f.attname) for f in fields]
        assert hotpath.token_member_of(key=token.key, slug="no-such-project")[2] is None  # type: ignore[index]
        assert hotpath.token_member_of(key="0" * 40, slug=project.slug) is None
        # Through the API: one statement reads the token, its user and the membership; none reads it again.
        url = f"/api/projects/{project.slug}/progress/"
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url, HTTP_AUTHORIZATION=f"Token {token.key}").status_code == 200
        membership_reads = [q["sql"] for q in queries if hotpath.MEMBERSHIP in q["sql"]]
        assert len(membership_reads) == 1 and "authtoken_token" in membership_reads[0], membership_reads
        # Another member's project or no project: the same answers as before.
        outsider = Token.objects.create(user=bob)
        ProjectMembership.objects.filter(project=project, user=bob).delete()
        assert client.get(url, HTTP_AUTHORIZATION=f"Token {outsider.key}").status_code == 404
        lead_token = Token.objects.create(user=lena)
        assert client.get(url, HTTP_AUTHORIZATION=f"Token {lead_token.key}").status_code == 403
        assert client.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {token.key}").status_code == 200

    def test_the_hot_statements_are_prepared_in_postgresql(self, project: Project, alice: User) -> None:
        if connection.vendor != "postgresql":
            pytest.fail("prepared statements are PostgreSQL's; run the tests on it")
        for _ in range(8):  # psycopg prepares a statement on its fifth run on the connection
            assert hotpath.membership_of(slug=project.slug, user_id=alice.pk) is not None
            assert not User.objects.filter(username="nobody-by-this-name").exists()
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements")
            prepared = [row[0] for row in cursor.fetchall()]
        assert any(f"FROM {hotpath.MEMBERSHIP} m" in statement for statement in prepared), prepared
        # Django's own queries bind on the client and stay unprepared.
        assert not any('"auth_user"."username"' in statement for statement in prepared), prepared


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=6),
    st.sampled_from([2**63 - 1, 2**63, 10**30]),
    st.floats(allow_nan=False, max_value=10, min_value=-10),
    st.sampled_from(["", " ", "3", "true", "x", " note ", "a\x00b"]),
    st.lists(st.integers(), max_size=1),
)
_BODIES = st.dictionaries(
    st.sampled_from(["assignment", "grade", "unclear", "comment", "next", "skip"]), _VALUES, max_size=6
)


class TestPlainSubmit:
    """`api.plain_submit` reads an answer's body without the serializer: for every body it accepts,
    `SubmitIn` accepts it too, with the same fields."""

    @settings(max_examples=400, deadline=None)
    @given(body=st.one_of(_BODIES, st.lists(st.integers(), max_size=2), st.text(max_size=3)))
    def test_what_it_accepts_the_serializer_accepts_alike(self, body: Any) -> None:
        fast = plain_submit(body)
        if fast is None:
            return
        serializer = SubmitIn(data=body)
        assert serializer.is_valid(), serializer.errors
        assert {key: serializer.validated_data.get(key) for key in fast} == fast

    @pytest.mark.parametrize(
        "body",
        [
            {"assignment": 7, "grade": 2},
            {"assignment": 7, "grade": 0, "next": True},
            {"assignment": 7, "unclear": True, "next": False},
            {"assignment": 7, "grade": 4, "comment": "", "unclear": False},
        ],
    )
    def test_it_takes_the_everyday_shapes(self, body: dict[str, Any]) -> None:
        fast = plain_submit(body)
        assert fast is not None
        serializer = SubmitIn(data=body)
        assert serializer.is_valid()
        assert {key: serializer.validated_data.get(key) for key in fast} == fast

    @pytest.mark.parametrize(
        "body",
        [
            {"assignment": 7, "grade": 2, "comment": " a note "},  # trimmed by the serializer
            {"assignment": "7", "grade": 2},  # a string the serializer converts
            {"assignment": 7},  # no grade: the serializer says why
            {"assignment": 7, "grade": 2, "unclear": True},
            {"assignment": 7, "grade": True},
            {"assignment": 0, "grade": 1},
            {"assignment": 7, "grade": 1, "extra": 1},
        ],
    )
    def test_anything_else_goes_to_the_serializer(self, body: dict[str, Any]) -> None:
        assert plain_submit(body) is None
