"""The annotator's queue page without JavaScript: forms POST and redirect."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from annotations import selectors, services
from annotations.highlight import highlight, query_terms
from annotations.models import Annotation, Assignment, Document, Project, Task, Topic
from tests.annotations.conftest import build_project
from tests.annotations.test_assignment import answer_all


def judge_url(project: Project) -> str:
    return f"/projects/{project.slug}/judge/"


def answer_url(project: Project, client: Client) -> str:
    page = client.get(judge_url(project)).content.decode()
    match = re.search(rf'action="(/projects/{project.slug}/judge/\d+/)"', page)
    assert match, page
    return match.group(1)


@pytest.fixture
def project(lena: User, alice: User) -> Project:
    return build_project(lead=lena, annotators=[alice], topics=2, docs_per_topic=3, gold_per_topic=1)


@pytest.fixture
def alice_client(client: Client, alice: User) -> Client:
    client.force_login(alice)
    return client


@pytest.mark.django_db
class TestQueuePage:
    def test_it_shows_the_query_the_document_the_scale_and_the_progress(
        self, project: Project, alice_client: Client
    ) -> None:
        page = alice_client.get(judge_url(project)).content.decode()
        assert re.search(r"<p class=\"query-text\">query number \d about python</p>", page)
        assert "Text of document" in page
        for grade, label in [(0, "Not relevant"), (4, "Perfectly relevant")]:
            assert f'value="{grade}" class="grade" data-key="{grade}"' in page
            assert label in page
        assert 'data-key="s"' in page and 'data-key="u"' in page
        assert "<strong>0</strong> done · <strong>5</strong> remaining · 5 in your queue" in page
        assert 'role="status" aria-live="polite"' in page
        assert 'id="guidelines-dialog"' in page and "If you are unsure between two grades" in page

    def test_it_highlights_query_terms_and_escapes_the_document(
        self, lena: User, alice: User, alice_client: Client
    ) -> None:
        project = build_project(lead=lena, annotators=[alice], topics=1, docs_per_topic=1)
        Topic.objects.filter(project=project).update(title="catch multiple exceptions")
        Document.objects.filter(project=project).update(
            title="Exceptions <b>bold</b>",
            text='Catching an exception: <script>alert("x")</script> & more exceptions.',
        )
        page = alice_client.get(judge_url(project)).content.decode()
        assert "<mark>Exceptions</mark> &lt;b&gt;bold&lt;/b&gt;" in page
        assert (
            "<mark>Catching</mark> an <mark>exception</mark>: &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; "
            "&amp; more <mark>exceptions</mark>." in page
        )
        assert "<script>alert" not in page

    def test_it_saves_a_grade_and_redirects_to_the_next_task(
        self, project: Project, alice_client: Client
    ) -> None:
        response = alice_client.post(answer_url(project, alice_client), {"grade": "3"})
        assert response.status_code == 302 and response["Location"] == judge_url(project)
        assert Annotation.objects.get().grade == 3
        page = alice_client.get(judge_url(project)).content.decode()
        assert "Saved 3 (Highly relevant)." in page
        assert "<strong>1</strong> done · <strong>4</strong> remaining" in page
        assert "Undo last answer" in page

    def test_it_skips_and_marks_unclear(self, project: Project, alice_client: Client) -> None:
        alice_client.post(answer_url(project, alice_client), {"action": "skip"})
        alice_client.post(answer_url(project, alice_client), {"action": "unclear"})
        assert sorted(Annotation.objects.values_list("skipped", "unclear")) == [(False, True), (True, False)]

    def test_it_refuses_a_too_fast_answer_and_keeps_the_task(
        self, project: Project, alice_client: Client
    ) -> None:
        Project.objects.filter(pk=project.pk).update(min_seconds_per_task=30)
        url = answer_url(project, alice_client)
        page = alice_client.post(url, {"grade": "2"}, follow=True).content.decode()
        assert "Too fast: you spent" in page and "the minimum is 30 s" in page
        assert not Annotation.objects.exists()
        assert f'action="{url}"' in page, "the same task is served again"

    def test_it_undoes_the_last_answer(self, project: Project, alice_client: Client) -> None:
        first = answer_url(project, alice_client)
        alice_client.post(first, {"grade": "1"})
        page = alice_client.post(f"/projects/{project.slug}/judge/undo/", follow=True).content.decode()
        assert "Undone. Here is that task again." in page
        assert f'action="{first}"' in page
        assert not Annotation.objects.exists()

    @pytest.mark.parametrize("answer", [{"action": "skip"}, {"grade": "2"}], ids=["skipped", "too-fast"])
    @pytest.mark.parametrize("process", ["same", "another"])
    def test_its_counts_are_right_right_after_undoing_an_answer_that_gave_its_place_up(
        self, answer: dict[str, str], process: str, lena: User, alice: User, bob: User,
        alice_client: Client, settings: Any, monkeypatch: pytest.MonkeyPatch,
    ) -> None:  # fmt: skip
        # Production counts the open totals once a second per process, and the page after an undo comes at
        # once: held still here. The demo's "24 remaining · 29 in your queue" where 22 and 27 were right.
        settings.JUDGING_OPEN_TOTALS_SECONDS = 60
        monkeypatch.setattr(selectors, "_open_totals_cache", {})
        if process == "another":  # the page after the undo is served by a web process that did not undo
            monkeypatch.setattr(selectors, "open_totals_forget", lambda project: None)
        project = build_project(lead=lena, annotators=[alice, bob], topics=2, docs_per_topic=4, overlap=2)
        answer_all(project, bob)  # every task has one place left, for alice
        # As in the demo: a grade before the minimum time is kept, flagged, and gives its place up.
        Project.objects.filter(pk=project.pk).update(
            min_seconds_per_task=5, too_fast_policy=Project.TooFastPolicy.FLAG
        )
        figures = "<strong>{}</strong> done · <strong>{}</strong> remaining · {} in your queue"
        assert figures.format(0, 8, 8) in alice_client.get(judge_url(project)).content.decode()
        page = alice_client.post(answer_url(project, alice_client), answer, follow=True).content.decode()
        assert figures.format(1, 7, 8) in page
        page = alice_client.post(f"/projects/{project.slug}/judge/undo/", follow=True).content.decode()
        assert "Undone. Here is that task again." in page
        # The task undone is alice's again and full; the one she held since is back in the pool.
        settings.JUDGING_OPEN_TOTALS_SECONDS = 0
        exact = selectors.queue_counts(project=project, annotator=alice)
        assert (exact.done, exact.remaining, exact.assigned) == (0, 8, 8)
        shown = re.search(r'id="progress-text">(.*?)</p>', page)
        assert shown and shown.group(1) == figures.format(0, 8, 8)

    def test_it_says_when_the_queue_is_empty(self, project: Project, alice_client: Client) -> None:
        for _ in range(5):  # 4 ordinary tasks and the 1 gold task planned at the project's share
            alice_client.post(answer_url(project, alice_client), {"grade": "2"})
        page = alice_client.get(judge_url(project)).content.decode()
        assert "Your queue is empty" in page
        assert "you answered 5 tasks" in page
        assert 'id="judge-form"' not in page

    def test_it_prompts_for_a_break_at_the_session_cap(
        self, project: Project, alice: User, alice_client: Client
    ) -> None:
        Project.objects.filter(pk=project.pk).update(session_cap_minutes=1)
        start = timezone.now() - timedelta(minutes=2)
        project.refresh_from_db()
        assignment = services.task_claim(project=project, annotator=alice, now=start).assignment
        services.annotation_submit(
            project=project, annotator=alice, assignment_id=assignment.pk, grade=2, now=start
        )
        page = alice_client.get(judge_url(project)).content.decode()
        assert "Time for a break" in page
        page = alice_client.post(f"/projects/{project.slug}/judge/continue/", follow=True).content.decode()
        assert 'id="judge-form"' in page

    def test_it_shows_the_guidelines_page_without_javascript(
        self, project: Project, alice_client: Client
    ) -> None:
        page = alice_client.get(f"/projects/{project.slug}/guidelines/").content.decode()
        assert "Rate how well each document answers the query." in page
        assert "How to make sourdough bread" in page


@pytest.mark.django_db
class TestHiddenGold:
    def test_it_renders_a_gold_task_exactly_like_an_ordinary_one(
        self, lena: User, alice: User, alice_client: Client
    ) -> None:
        project = build_project(lead=lena, annotators=[alice], topics=1, docs_per_topic=10, gold_per_topic=1)
        Document.objects.filter(project=project).update(title="Same title", text="Same text")
        pages = []
        for task in Task.objects.filter(project=project).order_by("-is_gold")[:2]:
            now = timezone.now()
            Assignment.objects.filter(annotator=alice, state="reserved").delete()
            Assignment.objects.create(
                project=project,
                task=task,
                annotator=alice,
                reserved_at=now,
                expires_at=now + timedelta(minutes=5),
            )
            html = alice_client.get(judge_url(project)).content.decode()
            html = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", html)
            html = re.sub(r"/judge/\d+/", "/judge/N/", html)
            html = re.sub(r'data-seconds-left="[^"]*"', "", html)
            pages.append(html)
        assert "gold" not in pages[0].lower()
        assert pages[0] == pages[1]


class TestHighlight:
    def test_it_drops_stopwords_and_matches_word_forms(self) -> None:
        assert query_terms("how do I catch multiple exceptions") == {"catch", "multiple", "exception"}

    def test_it_escapes_everything_it_does_not_mark(self) -> None:
        marked = highlight("<i>sort</i> sorting & Sorted", query_terms("how to sort a dict"))
        assert marked == "&lt;i&gt;<mark>sort</mark>&lt;/i&gt; <mark>sorting</mark> &amp; <mark>Sorted</mark>"
