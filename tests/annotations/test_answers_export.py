"""A lead exports every raw answer of a project as CSV and JSON Lines: who, which pair, the grade, the
flags, the gold flag, when, seconds spent, the comment; streamed; formulas neutralised; leads only."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.contrib.auth.models import User

from annotations.models import Annotation, Task
from tests.annotations.conftest import build_project, record_answers
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def body(response: object) -> str:
    return b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]


def test_every_answer_comes_out_in_both_formats(lena: User, alice: User) -> None:
    project = build_project(
        lead=lena, annotators=[alice], slug="alpha", topics=1, docs_per_topic=3, gold_per_topic=1
    )
    tasks = list(Task.objects.filter(project=project).order_by("pk"))
    record_answers(
        project,
        [(alice, tasks[0], 3, 12.5), (alice, tasks[1], None), (alice, tasks[2], 1, 2.0, {"too_fast": True})],
    )
    Annotation.objects.filter(task=tasks[2]).update(comment='=HYPERLINK("http://x","y")')
    client = client_for(lena)
    rows = list(csv.reader(io.StringIO(body(client.get("/projects/alpha/answers.csv")))))
    assert rows[0] == ["annotator", "qid", "doc_id", "grade", "skipped", "unclear", "too_fast", "gold", "answered_at",
                       "seconds_spent", "comment"]  # fmt: skip
    assert [r[:8] + r[9:10] for r in rows[1:]] == [
        ["alice", "q0", "d0-0", "3", "false", "false", "false", "true", "12.5"],
        ["alice", "q0", "d0-1", "", "true", "false", "false", "false", "20.0"],
        ["alice", "q0", "d0-2", "1", "false", "false", "true", "false", "2.0"],
    ]
    assert rows[3][10] == '\'=HYPERLINK("http://x","y")'  # a formula is text in a spreadsheet
    lines = [json.loads(line) for line in body(client.get("/projects/alpha/answers.jsonl")).splitlines()]
    assert [(x["doc_id"], x["grade"], x["gold"], x["skipped"]) for x in lines] == [
        ("d0-0", 3, True, False), ("d0-1", None, False, True), ("d0-2", 1, False, False),
    ]  # fmt: skip
    assert lines[2]["comment"] == '=HYPERLINK("http://x","y")' and lines[0]["answered_at"].startswith("20")


def test_annotators_never_get_it(lena: User, alice: User) -> None:
    build_project(lead=lena, annotators=[alice], slug="alpha", topics=1, docs_per_topic=2)
    for fmt in ("csv", "jsonl"):
        assert client_for(alice).get(f"/projects/alpha/answers.{fmt}").status_code == 403


def test_it_reads_a_fixed_number_of_queries_whatever_the_size(
    lena: User, alice: User, django_assert_max_num_queries: Any
) -> None:
    project = build_project(lead=lena, annotators=[alice], slug="alpha", topics=4, docs_per_topic=50)
    tasks = list(Task.objects.filter(project=project).order_by("pk"))
    record_answers(project, [(alice, task, 2) for task in tasks[:2]])
    client = client_for(lena)
    with django_assert_max_num_queries(30) as few:
        body(client.get("/projects/alpha/answers.csv"))
    counted = len(few.captured_queries)
    record_answers(project, [(alice, task, 2) for task in tasks[2:]])
    with django_assert_max_num_queries(counted):
        text = body(client.get("/projects/alpha/answers.csv"))
    assert text.count("\n") == 201
