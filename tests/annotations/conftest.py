"""Builders for judging tests: a project with topics, documents and tasks, in bulk; and answers in bulk."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.test import Client

from annotations import hotpath, services
from annotations.demo import demo_project_create
from annotations.models import (
    Annotation,
    Assignment,
    Document,
    GoldLabel,
    Project,
    ProjectMembership,
    Task,
    Topic,
)
from portal.demo import demo_accounts_create
from tests.conftest import ALICE, BOB, LENA, Persona, QueuedTasks, make_user


def build_project(
    *,
    lead: User,
    annotators: list[User] = (),  # type: ignore[assignment]
    topics: int = 2,
    docs_per_topic: int = 5,
    gold_per_topic: int = 0,
    slug: str = "web",
    **settings: Any,
) -> Project:
    """A project whose topic i has documents d{i}-{j}; the first `gold_per_topic` pairs of each are gold."""
    settings.setdefault("min_seconds_per_task", 0)
    project = services.project_create(creator=lead, slug=slug, name=slug.title(), **settings)
    for annotator in annotators:
        services.membership_set(project=project, user=annotator, role=ProjectMembership.Role.ANNOTATOR)
    topic_rows = Topic.objects.bulk_create(
        [Topic(project=project, qid=f"q{i}", title=f"query number {i} about python") for i in range(topics)]
    )
    docs = Document.objects.bulk_create(
        [
            Document(
                project=project, doc_id=f"d{i}-{j}", title=f"Doc {i}-{j}", text=f"Text of document {i}-{j}."
            )
            for i in range(topics)
            for j in range(docs_per_topic)
        ]
    )
    tasks = Task.objects.bulk_create(
        [
            Task(
                project=project,
                topic=topic_rows[i],
                document=docs[i * docs_per_topic + j],
                is_gold=j < gold_per_topic,
            )
            for i in range(topics)
            for j in range(docs_per_topic)
        ]
    )
    GoldLabel.objects.bulk_create([GoldLabel(task=task, grade=3) for task in tasks if task.is_gold])
    return project


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    """Personas are created in every test; the production hasher would dominate the run time."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def lead_client(client: Client, lena: User) -> Client:
    """The test client, signed in as lena (the lead of the projects `build_project` makes)."""
    client.force_login(lena)
    return client


@pytest.fixture
def demo(transactional_db: None) -> Project:
    """The demo project and accounts, with no answers yet and a one-second minimum time (browser tests)."""
    demo_accounts_create()
    project = demo_project_create()
    Project.objects.filter(pk=project.pk).update(min_seconds_per_task=1)
    project.refresh_from_db()
    return project


@pytest.fixture
def bob(db: None) -> User:
    return make_user(BOB)


@pytest.fixture
def annotators(db: None) -> Callable[[int], list[User]]:
    """`annotators(n, start=0)`: n annotator accounts, ann{start}..ann{start+n-1}."""

    def create(n: int, start: int = 0) -> list[User]:
        return [
            make_user(Persona(f"ann{i}", f"ann{i}-password-123", "annotator"))
            for i in range(start, start + n)
        ]

    return create


ANSWERED_FROM = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@contextmanager
def answer_and_claim_outcomes() -> Iterator[list[str]]:
    """The outcomes of the one-call answers and claims (`hotpath.answer_and_claim`) made inside, in order:
    what tells a test which way an answer went (`fallback`, `deferred`, `task`, `empty`, `break`)."""
    outcomes: list[str] = []
    call = hotpath.answer_and_claim

    def spied(*args: Any, **kwargs: Any) -> hotpath.AnsweredAndClaimed:
        done = call(*args, **kwargs)
        outcomes.append(done.outcome)
        return done

    with mock.patch.object(hotpath, "answer_and_claim", spied):
        yield outcomes


def record_answers(project: Project, answers: Iterable[tuple[Any, ...]]) -> list[Annotation]:
    """Store finished answers in bulk, as the services would leave them.

    Each answer is `(annotator, task, grade)` or `(annotator, task, grade, seconds)` or
    `(annotator, task, grade, seconds, flags)`, where `grade` None is a skip and `flags` is a dict such as
    `{"too_fast": True}` or `{"unclear": True}`. Answers are spaced a minute apart from a fixed time.
    """
    assignments, annotations = [], []
    for index, answer in enumerate(answers):
        user, task, grade = answer[:3]
        seconds = answer[3] if len(answer) > 3 else 20.0
        flags = answer[4] if len(answer) > 4 else {}
        start = ANSWERED_FROM + timedelta(minutes=index)
        counts = grade is not None and not flags.get("too_fast")
        assignments.append(
            Assignment(
                project=project, task=task, annotator=user,
                state=Assignment.State.LABELLED if counts else Assignment.State.RELEASED,
                reserved_at=start, expires_at=start + timedelta(hours=1),
                answered_at=start + timedelta(seconds=seconds),
            )
        )  # fmt: skip
        annotations.append(
            dict(
                project=project, task=task, annotator=user,
                grade=None if flags.get("unclear") else grade,
                seconds_spent=seconds, too_fast=bool(flags.get("too_fast")),
                skipped=grade is None and not flags.get("unclear"), unclear=bool(flags.get("unclear")),
                created_at=start + timedelta(seconds=seconds),
            )
        )  # fmt: skip
    created = Assignment.objects.bulk_create(assignments)
    return Annotation.objects.bulk_create(
        [Annotation(assignment=a, **fields) for a, fields in zip(created, annotations, strict=True)]
    )


__all__ = ["ALICE", "BOB", "LENA", "QueuedTasks", "build_project", "record_answers"]
