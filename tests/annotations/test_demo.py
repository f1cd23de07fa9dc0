"""The demo judging project for `make demo`: real text, idempotent, ready for alice and bob, with simulated
careful and careless annotators, its quality figures and a first qrels build."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.http import HttpRequest
from django.test import Client

from annotations.demo import DEMO_QUERIES, DEMO_SLUG, demo_annotations_simulate
from annotations.models import (
    Annotation,
    Assignment,
    AttentionCheck,
    Document,
    GoldLabel,
    Project,
    ProjectMembership,
    QrelsBuild,
    QualitySnapshot,
    Task,
)


def pool_added(project: Project) -> int:
    from monitoring.pooling.models import JudgingPool

    return sum(JudgingPool.objects.filter(project=project).values_list("tasks_created", flat=True))


@pytest.mark.django_db
class TestDemoProject:
    def test_it_creates_the_demo_project_idempotently(self) -> None:
        first = StringIO()
        call_command("load_demo", "--json", stdout=first)
        call_command("load_demo", "--json", stdout=StringIO())
        loaded = json.loads(first.getvalue())
        summary = loaded["project"]
        # Each login with the name the pages greet it by, as the README's table gives them.
        names = {row["username"]: row["name"] for row in loaded["accounts"]}
        assert names == {"admin": "Ada", "lead": "Lena", "alice": "Alice", "bob": "Bob", "analyst": "Theo"}
        assert all(User.objects.get(username=login).first_name == name for login, name in names.items())
        printed = StringIO()
        call_command("load_demo", stdout=printed)
        assert any(
            line.split()[:3] == ["lead", "demo-lead-pass", "Lena"] for line in printed.getvalue().splitlines()
        )
        project = Project.objects.get(slug=DEMO_SLUG)
        # The imported pairs, the attention check, and the pairs the search team's pool added.
        pairs = sum(len(query.expected) for query in DEMO_QUERIES) + pool_added(project)
        assert summary == {
            "slug": DEMO_SLUG,
            "topics": 10,
            "documents": 80,
            "tasks": pairs + 1,
            "gold_tasks": 11,
            "answers": summary["answers"],
        }
        assert summary["answers"] == Annotation.objects.filter(project=project).count() > 100
        assert Task.objects.filter(project=project).count() == pairs + 1
        assert GoldLabel.objects.filter(task__project=project).count() == 11
        assert AttentionCheck.objects.filter(task__project=project).count() == 1
        roles = dict(ProjectMembership.objects.filter(project=project).values_list("user__username", "role"))
        assert roles == {
            "lead": "lead", "alice": "annotator", "bob": "annotator",
            "carol": "annotator", "dave": "annotator", "eve": "annotator", "mallory": "annotator",
        }  # fmt: skip
        assert project.overlap == 3
        assert (
            QrelsBuild.objects.filter(project=project).count() == 2
        )  # v1, the loop's v2; none on the second run
        assert QualitySnapshot.objects.filter(project=project).count() == 1


@pytest.mark.django_db
class TestTheLoadedDemo:
    """The demo as `load_demo` leaves it, loaded once for the class (`demo_loaded`)."""

    def test_it_uses_the_standard_librarys_help_texts(self, demo_loaded: dict[str, object]) -> None:
        document = Document.objects.get(project__slug=DEMO_SLUG, doc_id="try")
        assert document.title == 'The "try" statement'
        assert "exception handlers" in document.text
        assert Project.objects.get(slug=DEMO_SLUG).topics.get(qid="q01").description

    def test_it_lets_the_demo_annotators_judge(self, demo_loaded: dict[str, object], client: Client) -> None:
        client.login(request=HttpRequest(), username="alice", password="demo-alice-pass")
        page = client.get(f"/projects/{DEMO_SLUG}/judge/").content.decode()
        assert 'id="judge-form"' in page
        assert not Annotation.objects.filter(annotator__username__in=["alice", "bob"]).exists()

    def test_it_simulates_careful_and_careless_annotators(self, demo_loaded: dict[str, object]) -> None:
        project = Project.objects.get(slug=DEMO_SLUG)
        rows = {row["username"]: row for row in QualitySnapshot.objects.get(project=project).annotators}
        for careful in ("carol", "dave"):
            assert rows[careful]["included"] and rows[careful]["gold_seen"] == 11
            assert rows[careful]["median_seconds"] > 15 and rows[careful]["too_fast"] == 0
        for careless in ("eve", "mallory"):
            assert not rows[careless]["included"] and rows[careless]["reason"] == "low_accuracy"
            assert rows[careless]["median_seconds"] < 10 and rows[careless]["too_fast"] > 0
        # alice and bob still have a queue: the pairs of q08-q10 have no answers yet.
        open_pairs = Task.objects.filter(project=project, is_gold=False, topic__qid__in=["q08", "q09", "q10"])
        assert open_pairs.count() > 10 and not Annotation.objects.filter(task__in=open_pairs).exists()
        # The simulation is deterministic: same grades on a fresh load (of the imported pairs: the tasks the
        # search team's pool created are answered by the judging loop, `monitoring.demo.demo_loop_load`).
        imported = Annotation.objects.filter(project=project).exclude(task__pool_links__created=True)
        grades = list(imported.order_by("task_id", "annotator__username")
                      .values_list("annotator__username", "task_id", "grade", "seconds_spent"))  # fmt: skip
        Assignment.objects.filter(project=project).delete()  # and their annotations
        demo_annotations_simulate(project)
        again = list(Annotation.objects.filter(project=project).order_by("task_id", "annotator__username")
                     .values_list("annotator__username", "task_id", "grade", "seconds_spent"))  # fmt: skip
        assert again == grades


@pytest.mark.django_db
class TestDemoAccounts:
    def test_it_keeps_existing_passwords_and_sessions(self, client: Client) -> None:
        call_command("load_demo", stdout=StringIO())
        assert client.login(request=HttpRequest(), username="alice", password="demo-alice-pass")
        lead = User.objects.get(username="lead")
        lead.set_password("lenas-own-password-42")
        lead.save()
        call_command("load_demo", stdout=StringIO())
        assert client.get("/").status_code == 200  # alice is still logged in
        assert User.objects.get(username="lead").check_password("lenas-own-password-42")
        assert User.objects.get(username="alice").check_password("demo-alice-pass")

    def test_it_creates_a_missing_account_with_its_demo_password(self) -> None:
        call_command("load_demo", stdout=StringIO())
        User.objects.filter(username="bob").delete()
        call_command("load_demo", stdout=StringIO())
        bob = User.objects.get(username="bob")
        assert bob.check_password("demo-bob-pass")
        assert bob.groups.filter(name="annotator").exists()
        assert bob.project_memberships.filter(project__slug=DEMO_SLUG).exists()
