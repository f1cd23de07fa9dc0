"""A real headless Chromium goes through the annotator's own answers: the history page, changing an answer
from it, and undo pressed twice in a row.

The history page is saved at 1280×800 (to docs/history-page.png with `make screenshots`).
"""

from __future__ import annotations

import pytest

from annotations.demo import DEMO_SLUG
from annotations.models import Annotation, Project
from tests.annotations.test_browser_judging import log_in, open_queue, rate
from tests.conftest import screenshot_path

SCREENSHOT = screenshot_path("history-page.png")


def open_history(page, live_server) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{live_server.url}/projects/{DEMO_SLUG}/judge/history/")


def history_rows(page) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """(answer id, the answer's cell) per row, top to bottom."""
    rows = page.locator("#history tbody tr")
    return [
        (rows.nth(i).get_attribute("data-answer"), rows.nth(i).locator(".outcome").inner_text())
        for i in range(rows.count())
    ]


def alices_answers() -> list[Annotation]:
    return list(Annotation.objects.filter(annotator__username="alice").order_by("-created_at"))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
class TestHistoryInTheBrowser:
    def test_it_changes_an_answer_from_the_history(self, page, live_server, demo: Project) -> None:  # type: ignore[no-untyped-def]
        log_in(page, live_server)
        open_queue(page, live_server)
        for key in ["1", "2", "3"]:
            rate(page, key)
        open_history(page, live_server)
        answers = alices_answers()
        assert [row[0] for row in history_rows(page)] == [str(a.pk) for a in answers], "newest first"
        assert [row[1] for row in history_rows(page)][0].startswith("3")
        SCREENSHOT.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)
        second = answers[1]
        title = second.task.document.title
        with page.expect_navigation():
            page.locator(f'tr[data-answer="{second.pk}"]').get_by_role("button", name="Change").click()
        assert page.url.endswith(f"/projects/{DEMO_SLUG}/judge/")
        assert "Here is that task again" in page.get_by_role("status").first.inner_text()
        assert page.locator(".document-title").inner_text() == title
        rate(page, "0")
        changed = Annotation.objects.get(annotator__username="alice", task=second.task)
        assert changed.grade == 0 and Annotation.objects.filter(annotator__username="alice").count() == 3
        open_history(page, live_server)
        rows = history_rows(page)
        assert rows[0][0] == str(changed.pk) and rows[0][1].startswith("0 ")
        assert len(rows) == 3 and SCREENSHOT.stat().st_size > 10_000

    def test_it_undoes_twice_in_a_row(self, page, live_server, demo: Project) -> None:  # type: ignore[no-untyped-def]
        log_in(page, live_server)
        open_queue(page, live_server)
        titles = []
        for key in ["4", "3", "2"]:
            page.wait_for_load_state("load")
            titles.append(page.locator(".document-title").inner_text())
            rate(page, key)
        for _ in range(2):
            page.wait_for_load_state("load")
            with page.expect_navigation():
                page.keyboard.press("z")
            assert "Undone" in page.get_by_role("status").first.inner_text()
        assert [a.grade for a in alices_answers()] == [4]
        assert page.locator(".document-title").inner_text() == titles[1], "the second answer's task is back"
        rate(page, "1")
        assert sorted(a.grade for a in alices_answers()) == [1, 4]

    def test_the_page_sends_one_undo_however_often_it_is_asked(
        self, page, live_server, demo: Project
    ) -> None:  # type: ignore[no-untyped-def]
        # Undo reaches back over the session, so a second submit of the same page (a double click, or a
        # click while the first request is slow) would take back two answers: the page sends only the first.
        log_in(page, live_server)
        open_queue(page, live_server)
        for key in ["4", "3"]:
            page.wait_for_load_state("load")
            rate(page, key)
        page.wait_for_load_state("load")
        refused = page.evaluate(
            """() => {
                const form = document.getElementById("undo-form");
                const seen = [];
                form.addEventListener("submit", (event) => { seen.push(event.defaultPrevented); event.preventDefault(); });
                for (let i = 0; i < 3; i++) form.dispatchEvent(new Event("submit", {cancelable: true}));
                return seen;
            }"""
        )
        assert refused == [False, True, True]
        assert [a.grade for a in alices_answers()] == [3, 4], "nothing was sent"
