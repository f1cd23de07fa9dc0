"""A lead disqualifies and removes annotators while they are answering, through the whole stack on PostgreSQL.

Four annotators claim and answer from their own threads (each with its own database connection, through
Django's test client: middleware, views and services as in production). Meanwhile the lead excludes one
of them from the qrels (the quality override), then makes that one a lead instead, and removes a second
from the project as the admin does. No request may answer 500, no accepted answer may be lost, no task
may go over its overlap, and the reservations the two held go back to the pool at once.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.test import Client

from annotations import services
from annotations.models import Annotation, Assignment, Project, ProjectMembership, Task
from tests.annotations.conftest import build_project
from tests.annotations.test_assignment import assert_counters_match
from tests.conftest import QueuedTasks

TRIALS = 6
OVERLAP = 2
Role = ProjectMembership.Role


@dataclass(frozen=True)
class Reply:
    who: str
    what: str
    status: int
    started: float
    ended: float
    assignment: int | None


def _client(user: User) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def annotate(user: User, slug: str, replies: list[Reply], start: threading.Barrier) -> None:
    """Claim and answer until the queue is empty or the project turns the annotator away."""
    client, base = _client(user), f"/api/projects/{slug}"
    try:
        start.wait(timeout=30)
        for _ in range(20):
            began = time.monotonic()
            claim = client.post(f"{base}/next/")
            replies.append(Reply(user.username, "next", claim.status_code, began, time.monotonic(), None))
            if claim.status_code != 200 or claim.json()["status"] != "task":
                return
            assignment = claim.json()["task"]["assignment"]
            began = time.monotonic()
            answer = client.post(
                f"{base}/submit/", {"assignment": assignment, "grade": 2}, content_type="application/json"
            )
            replies.append(
                Reply(user.username, "submit", answer.status_code, began, time.monotonic(), assignment)
            )
    finally:
        connection.close()


def lead_acts(lead: User, project: Project, excluded: User, removed: User, done: dict[str, float],
              replies: list[Reply], start: threading.Barrier, delay: float) -> None:  # fmt: skip
    """Exclude one annotator, make them a lead, and remove another (as the admin's delete does)."""
    client = _client(lead)
    try:
        start.wait(timeout=30)
        time.sleep(delay)
        override = client.post(
            f"/api/projects/{project.slug}/quality/annotators/{excluded.username}/override/",
            {"decision": "exclude"},
            content_type="application/json",
        )
        replies.append(Reply(lead.username, "override", override.status_code, 0, time.monotonic(), None))
        role = client.post(
            f"/projects/{project.slug}/members/", {"username": excluded.username, "role": Role.LEAD}
        )
        replies.append(Reply(lead.username, "role", role.status_code, 0, time.monotonic(), None))
        done["role"] = time.monotonic()
        services.membership_remove(project=project, user=removed)
        done["removed"] = time.monotonic()
    finally:
        connection.close()


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
class TestDisqualifyingMidSession:
    def test_no_500_no_lost_answer_and_the_reservations_go_back(
        self, lena: User, annotators: Any, queued: QueuedTasks
    ) -> None:
        people = annotators(4)
        excluded, removed = people[0], people[1]
        turned_away: set[str] = set()
        answered: set[str] = set()
        for trial in range(TRIALS):
            project = build_project(lead=lena, annotators=people, topics=2, docs_per_topic=8, overlap=OVERLAP,
                                    slug=f"dq-{trial}")  # fmt: skip
            replies: list[Reply] = []
            done: dict[str, float] = {}
            start = threading.Barrier(len(people) + 1)
            threads = [
                threading.Thread(target=annotate, args=(p, project.slug, replies, start)) for p in people
            ]
            threads.append(
                threading.Thread(
                    target=lead_acts,
                    args=(lena, project, excluded, removed, done, replies, start, random.uniform(0, 0.15)),
                )
            )
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=120)
            assert not any(thread.is_alive() for thread in threads), "a request hung"

            assert [r for r in replies if r.status >= 500] == [], trial
            assert {r.status for r in replies if r.who == lena.username} <= {200, 302}, replies
            # Once the change is made, the project turns them away: 403 to the new lead, 404 to the removed.
            late = [r for r in replies if r.who == excluded.username and r.started > done["role"]]
            assert {r.status for r in late} <= {403}, late
            late = [r for r in replies if r.who == removed.username and r.started > done["removed"]]
            assert {r.status for r in late} <= {404}, late

            accepted = [r.assignment for r in replies if r.what == "submit" and r.status == 201]
            assert accepted
            for assignment in accepted:
                assert Annotation.objects.filter(assignment_id=assignment).count() == 1
            refused = {r.status for r in replies if r.what == "submit" and r.status != 201}
            assert refused <= {403, 404}, refused  # turned away, or the reservation was handed back

            held = Assignment.objects.filter(project=project, state=Assignment.State.RESERVED)
            assert not held.filter(annotator__in=[excluded, removed]).exists()
            for task in Task.objects.filter(project=project):
                assert Assignment.objects.filter(task=task).occupying().count() <= OVERLAP
            assert_counters_match(project)
            membership = ProjectMembership.objects.get(project=project, user=excluded)
            assert (membership.role, membership.quality_override) == (Role.LEAD, "exclude")
            assert not ProjectMembership.objects.filter(project=project, user=removed).exists()
            # The two who stayed finish the queue: every task reaches its overlap. One of them may have
            # found it empty while the other two still held reservations and stopped asking; the released
            # reservations are in the pool at once, so a second round finds them.
            for person in people[2:]:
                annotate(person, project.slug, replies, threading.Barrier(1))
            assert set(Task.objects.filter(project=project).values_list("label_count", flat=True)) == {
                OVERLAP
            }
            turned_away |= {r.who for r in replies if r.status in (403, 404) and r.what == "next"}
            answered |= {r.who for r in replies if r.status == 201}
            Project.objects.filter(pk=project.pk).delete()
        # Mid-session indeed: both answered, and both were turned away while still asking for work.
        assert turned_away == {excluded.username, removed.username}, turned_away
        assert answered >= turned_away, answered


@pytest.mark.django_db
class TestMembershipChanges:
    def test_a_claim_by_an_annotator_removed_meanwhile_is_refused_not_a_crash(
        self, lena: User, alice: User
    ) -> None:
        # The view let the request in; the lead removed her before the service ran. This was a
        # ProjectMembership.DoesNotExist, a 500.
        project = build_project(lead=lena, annotators=[alice])
        services.membership_remove(project=project, user=alice)
        with pytest.raises(PermissionDenied, match="no longer an annotator"):
            services.task_claim(project=project, annotator=alice)

    def test_a_new_role_hands_the_held_task_back_at_once(self, lena: User, alice: User, bob: User) -> None:
        project = build_project(lead=lena, annotators=[alice, bob], topics=1, docs_per_topic=1, overlap=1)
        held = services.task_claim(project=project, annotator=alice).assignment
        assert held is not None
        assert services.task_claim(project=project, annotator=bob).status == "empty"
        services.membership_set(project=project, user=alice, role=Role.LEAD)
        assert not Assignment.objects.filter(pk=held.pk).exists()
        assert_counters_match(project)
        assert services.task_claim(project=project, annotator=bob).assignment.task_id == held.task_id

    def test_the_admins_delete_hands_the_held_task_back(
        self, lena: User, alice: User, admin_client: Client
    ) -> None:
        project = build_project(lead=lena, annotators=[alice], topics=1, docs_per_topic=2)
        held = services.task_claim(project=project, annotator=alice).assignment
        membership = ProjectMembership.objects.get(project=project, user=alice)
        url = f"/admin/annotations/projectmembership/{membership.pk}/delete/"
        assert admin_client.post(url, {"post": "yes"}).status_code == 302
        assert not ProjectMembership.objects.filter(pk=membership.pk).exists()
        assert not Assignment.objects.filter(pk=held.pk).exists()
        assert_counters_match(project)
        assert Annotation.objects.filter(project=project).count() == 0
