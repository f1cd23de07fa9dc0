"""A gold import while annotators answer, on PostgreSQL: the import and an answer take their locks in one
order, so neither is killed as a deadlock's victim.

A task made gold moves its answers to the gold counts of each annotator who gave one (the trigger
`annotations_counts_task_kind`, at the end of the statement that marks it), and an answer, an undo or a
skip locks its task and then, at the end of its statement, the annotator's counts row (the trigger
`annotations_counts_assignment`). When the import marked its tasks in batches, an earlier batch's
trigger held an annotator's counts row while a later batch waited for a task that annotator's answer
held, and the answer then waited for the counts row: PostgreSQL killed one of the two after a second.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import F

from annotations import imports, services
from annotations.models import Assignment, Project, Task
from tests.annotations.conftest import build_project
from tests.annotations.test_assignment import assert_counters_match
from tests.conftest import _database_url_for


def _wait_for_lock_wait(monitor: psycopg.Connection[Any], pid: int) -> None:
    """Until the backend `pid` waits for a row lock (or 10 s). `monitor` is in autocommit: a transaction
    keeps its first reading of `pg_stat_activity`."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        row = monitor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()
        if row is not None and row[0] == "Lock":
            return
        time.sleep(0.02)
    raise AssertionError("the import never waited for the task's lock")


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_gold_import_and_an_answer_on_its_tasks_never_deadlock(
    lena: User, alice: User, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Alice answered one task and holds another; the import makes both gold, in batches of one where it
    # batches.
    monkeypatch.setattr(imports, "BATCH_SIZE", 1)
    project = build_project(lead=lena, annotators=[alice], topics=1, docs_per_topic=3, overlap=1)
    # Served in id order (priorities), so that the answered task is in the import's first batch (it marks
    # them in id order) and the held one in a later batch.
    Task.objects.filter(project=project).update(priority=F("id"))
    Project.objects.filter(pk=project.pk).update(has_priorities=True)
    project.refresh_from_db()
    first = services.task_claim(project=project, annotator=alice).assignment
    assert first is not None
    services.annotation_submit(project=project, annotator=alice, assignment_id=first.pk, grade=2)
    held = services.task_claim(project=project, annotator=alice).assignment
    assert held is not None
    assert first.task_id < held.task_id
    tasks = {first.task_id, held.task_id}
    qrels = tmp_path / "gold.qrels"
    gold = Task.objects.filter(pk__in=tasks).select_related("document")
    qrels.write_text("".join(f"q0 0 {task.document.doc_id} 3\n" for task in gold))

    # Alice's answer of the held task, as the answer takes its locks: the task's first ...
    url = _database_url_for(connection.settings_dict)
    answering, monitor = psycopg.connect(url), psycopg.connect(url, autocommit=True)
    answering.execute("SELECT 1 FROM annotations_task WHERE id = %s FOR NO KEY UPDATE", [held.task_id])
    outcome: dict[str, Any] = {}
    started = threading.Event()

    def importer() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                outcome["pid"] = cursor.fetchone()[0]
            started.set()
            outcome["import"] = imports.gold_import(project=project, path=qrels)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            outcome["import"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=importer)
    thread.start()
    try:
        assert started.wait(10)
        _wait_for_lock_wait(monitor, outcome["pid"])
        # ... then the answer's statement (`hotpath.answer_plain`, less the answer's row): the assignment
        # answered and the task's label counted, whose trigger writes alice's counts row at its end.
        answering.execute(
            "WITH answered AS (UPDATE annotations_assignment SET state = 'labelled', answered_at = now() "
            "WHERE id = %s RETURNING task_id) "
            "UPDATE annotations_task SET label_count = label_count + 1 WHERE id = (SELECT task_id FROM answered)",
            [held.pk],
        )
        answering.commit()
    finally:
        answering.close()
        monitor.close()
        thread.join(timeout=30)
    assert not thread.is_alive(), "the import hung"
    assert isinstance(outcome["import"], imports.ImportResult), outcome["import"]
    assert set(Task.objects.filter(is_gold=True).values_list("pk", flat=True)) == tasks
    assert Assignment.objects.get(pk=held.pk).state == Assignment.State.LABELLED
    assert_counters_match(project)
