"""Routing a machine judge's doubtful pair that people have answered already asks one more judgment of it:
the task gets a place beyond the overlap, claims serve it first, and it closes after that one answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from annotations import hotpath, services
from annotations.machine_judges import routing
from annotations.machine_judges.services import judge_labels_import
from annotations.models import Assignment, MachineJudge, MachineRouting, Project, Task
from tests.annotations.conftest import build_project, record_answers
from tests.annotations.test_machine_judges import answer_all, human_build, machine_rows, write_jsonl

pytestmark = pytest.mark.django_db


def judge_of(project: Project, path: Path, grade: Any, confidence: Any = None) -> MachineJudge:
    result = judge_labels_import(
        project=project, name="gpt", path=write_jsonl(path, machine_rows(project, grade, confidence))
    )
    return MachineJudge.objects.select_related("project").get(pk=result.judge)


def counters_set(project: Project) -> None:
    """The task counters the services keep, for answers stored in bulk (`record_answers`)."""
    for task in Task.objects.filter(project=project):
        n = Assignment.objects.filter(task=task, state=Assignment.State.LABELLED).count()
        Task.objects.filter(pk=task.pk).update(assigned_count=n, label_count=n)


def open_ordinary(project: Project) -> int:
    return hotpath.open_totals(project_id=project.pk, overlap=project.overlap, gold_overlap=None).ordinary


def test_an_answered_pair_gets_one_more_judgment_served_first_then_closes(
    lena: User, annotators: Any, tmp_path: Path
) -> None:
    people = annotators(4)
    project = build_project(
        lead=lena, annotators=people, topics=2, docs_per_topic=4, gold_per_topic=1, overlap=2, min_gold_items=0,
        min_gold_accuracy=0.0,
    )  # fmt: skip
    gold = Task.objects.get(project=project, document__doc_id="d0-0")
    tasks = list(Task.objects.filter(project=project, is_gold=False).order_by("pk"))
    # Both answer q0's gold pair right (3: reliable) and its other pairs 2: q0's ordinary tasks are full.
    record_answers(
        project, [(people[a], t, 3 if t.is_gold else 2) for t in [gold, *tasks[:3]] for a in (0, 1)]
    )
    counters_set(project)
    human_build(project)
    Task.objects.filter(project=project, is_gold=True).delete()  # so no claim takes its gold turn below
    assert open_ordinary(project) == 3  # q1's pairs
    # The machine disagrees with people on d0-1, agrees on the other answered pairs and grades q1's
    # unanswered pairs, sure of every one.
    grade = lambda i, t: 0 if t.document.doc_id == "d0-1" else 2  # noqa: E731
    judge = judge_of(project, tmp_path / "m.jsonl", grade, lambda i, t: 0.9)
    done = routing.judge_route(judge=judge, params=routing.RouteParams(budget=10, sample_share=0.0))
    assert (done.routed["disagrees"], done.judgments_added, done.tasks_created) == (1, 1, 0)
    assert dict(Task.objects.filter(project=project).values_list("document__doc_id", "extra_places")) == {
        "d0-1": 1, "d0-2": 0, "d0-3": 0, "d1-1": 0, "d1-2": 0, "d1-3": 0,
    }  # fmt: skip
    project.refresh_from_db()
    assert project.has_extra_places and open_ordinary(project) == 4
    # Served first to someone who has not judged it; never again to those who have.
    first = services.task_claim(project=project, annotator=people[2])
    assert first.status == "task" and first.assignment.task_id == tasks[0].pk
    own = services.task_claim(project=project, annotator=people[0])
    assert own.status == "task" and own.assignment.task_id != tasks[0].pk
    services.annotation_submit(
        project=project, annotator=people[2], assignment_id=first.assignment.pk, grade=0
    )
    tasks[0].refresh_from_db()
    assert (tasks[0].label_count, tasks[0].assigned_count) == (3, 3)
    # One more judgment, not more: the task is closed for everyone else.
    other = services.task_claim(project=project, annotator=people[3])
    assert other.status == "task" and other.assignment.task_id != tasks[0].pk
    assert not hotpath.task_has_place(task_id=tasks[0].pk, cap=2)
    # Routing again asks nothing more of it.
    again = routing.judge_route(judge=judge, params=routing.RouteParams(budget=10, sample_share=0.0))
    assert (again.total, again.judgments_added) == (0, 0)
    assert Task.objects.get(pk=tasks[0].pk).extra_places == 1


def test_people_who_disagree_go_to_adjudication_and_the_budget_bounds_the_rest(
    lena: User, annotators: Any, tmp_path: Path
) -> None:
    project = build_project(
        lead=lena, annotators=annotators(3), topics=3, docs_per_topic=6, gold_per_topic=1, min_gold_items=0,
        min_gold_accuracy=0.0,
    )  # fmt: skip
    answer_all(project, {**{i: [2, 2, 2] for i in range(5)}, 5: [0, 3, 0]})
    counters_set(project)
    human_build(project)
    # The machine disagrees with people on d0-1 to d0-4 (answered ordinary tasks) and on d0-5.
    judge = judge_of(project, tmp_path / "m.jsonl", lambda i, t: 1 if 0 < i < 6 else 3, lambda i, t: 0.9)
    done = routing.judge_route(judge=judge, params=routing.RouteParams(budget=3, sample_share=0.0))
    assert done.routed["humans_disagree"] == 1 and done.routed["disagrees"] == 2
    extra = dict(
        Task.objects.filter(project=project, extra_places__gt=0).values_list(
            "document__doc_id", "extra_places"
        )
    )
    routed = set(
        MachineRouting.objects.filter(judge=judge, reason="disagrees").values_list(
            "document__doc_id", flat=True
        )
    )
    assert extra == dict.fromkeys(routed, 1) and len(extra) == done.judgments_added == 2  # within the budget
    assert (
        Task.objects.get(project=project, document__doc_id="d0-5").extra_places == 0
    )  # adjudication instead
    assert MachineRouting.objects.get(judge=judge, document__doc_id="d0-5").queue == "adjudication"
