"""A real headless Chromium judges the demo project with the keyboard.

The demo project (Python questions against the standard library's help texts) gives the page real text;
the rating page is saved at 1280×800 (to docs/rating-page.png with `make screenshots`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from annotations.demo import DEMO_SLUG
from annotations.models import Annotation, Project
from tests.conftest import browser_log_in, screenshot_path

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = screenshot_path("rating-page.png")


def log_in(page, live_server, username: str = "alice", password: str = "demo-alice-pass") -> None:  # type: ignore[no-untyped-def]
    browser_log_in(page, live_server, username, password)


def open_queue(page, live_server) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{live_server.url}/projects/{DEMO_SLUG}/judge/")


def done_count(page) -> int:  # type: ignore[no-untyped-def]
    return int(page.locator("#queue-progress").get_attribute("value"))


def answer_by_key(page, key: str) -> None:  # type: ignore[no-untyped-def]
    """Press an answer's key and wait for the page's one-request answer: its reply, and the next task
    swapped in (or, refused, the task kept) by the page's script."""
    with page.expect_response(lambda response: response.request.method == "POST"):
        page.keyboard.press(key)
    # A locator's wait: a polled script (`wait_for_function`) would be refused by the page's CSP.
    page.locator("#judge-form.sending").wait_for(state="detached")


def rate(page, key: str) -> None:  # type: ignore[no-untyped-def]
    """Wait for the page's script, wait out the minimum time, press the key, and wait for the next task."""
    page.wait_for_load_state("load")
    page.wait_for_selector("#judge-form:not(.waiting)")
    answer_by_key(page, key)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
class TestJudgingInTheBrowser:
    def test_it_rates_five_tasks_with_the_keyboard(self, page, live_server, demo: Project) -> None:  # type: ignore[no-untyped-def]
        log_in(page, live_server)
        page.get_by_role("link", name="Projects").click()
        page.get_by_role("link", name="Judge").click()
        assert page.get_by_role("heading", name="Query").is_visible()
        highlighted = []
        assumed_total = int(page.locator("#queue-progress").get_attribute("max"))
        for number, key in enumerate(["3", "0", "4", "1", "2"], start=1):
            assert "gold" not in page.content().lower()
            highlighted.append(page.locator(".judge-document mark").count())
            rate(page, key)
            assert done_count(page) == number
            assert page.locator("#progress-text").inner_text().startswith(f"{number} done")
            assert page.get_by_role("status").first.inner_text().startswith("Saved")
            if number == 2:
                SCREENSHOT.parent.mkdir(exist_ok=True)
                page.wait_for_selector("#judge-form:not(.waiting)")
                page.screenshot(path=str(SCREENSHOT))
        assert int(page.locator("#queue-progress").get_attribute("max")) == assumed_total
        assert any(highlighted), "query terms are highlighted"
        grades = list(
            Annotation.objects.filter(annotator__username="alice")
            .order_by("created_at")
            .values_list("grade", flat=True)
        )
        assert grades == [3, 0, 4, 1, 2]
        assert SCREENSHOT.stat().st_size > 10_000

    def test_it_answers_in_one_request_each_and_a_reload_shows_the_task_held(
        self, page, live_server, demo: Project
    ) -> None:  # type: ignore[no-untyped-def]
        log_in(page, live_server)
        page.goto(f"{live_server.url}/projects/{DEMO_SLUG}/judge/?view=full")
        page.wait_for_load_state("load")
        sent: list[str] = []
        # Every request to the site but its static files (the favicon may come late).
        page.on(
            "request",
            lambda request: "/static/" in request.url or sent.append(f"{request.method} {request.url}"),
        )
        titles = [page.locator(".document-title").inner_text()]
        actions = [page.locator("#judge-form").get_attribute("action")]
        for number, key in enumerate(["2", "s", "4", "u", "1"], start=1):
            before = len(sent)
            rate(page, key)
            assert len(sent) == before + 1, sent[before:]
            assert re.fullmatch(rf"POST {live_server.url}/projects/{DEMO_SLUG}/judge/\d+/next/", sent[-1])
            assert done_count(page) == number
            titles.append(page.locator(".document-title").inner_text())
            actions.append(page.locator("#judge-form").get_attribute("action"))
            assert page.url == f"{live_server.url}/projects/{DEMO_SLUG}/judge/", "the page's own address"
        assert page.get_by_role("status").first.inner_text() == "Saved 1 (Marginally relevant)."
        assert len(set(actions)) == len(actions), "a new task after each answer"
        answers = Annotation.objects.filter(annotator__username="alice").order_by("created_at")
        assert [(a.grade, a.skipped, a.unclear) for a in answers] == [
            (2, False, False), (None, True, False), (4, False, False), (None, False, True), (1, False, False),
        ]  # fmt: skip
        held = page.locator("#judge-form").get_attribute("action")
        page.reload()
        assert page.locator("#judge-form").get_attribute("action") == held, "the task held, not a new one"
        assert page.locator(".document-title").inner_text() == titles[-1]
        assert done_count(page) == 5 and Annotation.objects.filter(annotator__username="alice").count() == 5
        # The undo button the reply brought takes back the last answer, as on a loaded page.
        with page.expect_navigation():
            page.keyboard.press("z")
        assert "Undone" in page.get_by_role("status").first.inner_text()
        assert page.locator(".document-title").inner_text() == titles[-2]

    def test_it_refuses_a_too_fast_answer(self, page, live_server, demo: Project) -> None:  # type: ignore[no-untyped-def]
        Project.objects.filter(pk=demo.pk).update(min_seconds_per_task=60)
        log_in(page, live_server)
        open_queue(page, live_server)
        assert "you can answer in" in page.locator("#countdown").inner_text()
        page.keyboard.press("2")
        page.wait_for_function("document.getElementById('judge-status').textContent.includes('Too fast')")
        assert done_count(page) == 0
        # Without the page's script the server refuses it too.
        with page.expect_navigation():
            page.evaluate(
                """() => {
                    const form = document.getElementById('judge-form');
                    form.insertAdjacentHTML('beforeend', '<input type="hidden" name="grade" value="2">');
                    form.submit();  // bypasses the submit handler, as a page without the script would
                }"""
            )
        assert "Too fast" in page.get_by_role("status").first.inner_text()
        assert not Annotation.objects.exists()

    def test_it_keeps_the_task_and_the_comment_when_the_server_refuses_a_too_fast_answer(
        self, page, live_server, demo: Project
    ) -> None:  # type: ignore[no-untyped-def]
        log_in(page, live_server)
        open_queue(page, live_server)
        page.wait_for_selector("#judge-form:not(.waiting)")
        held = page.locator("#judge-form").get_attribute("action")
        page.keyboard.press("c")
        page.keyboard.type("Half of it is about Python 2")
        page.keyboard.press("Escape")
        # The page counted down the second it was served with; the server now asks for a minute.
        Project.objects.filter(pk=demo.pk).update(min_seconds_per_task=60)
        answer_by_key(page, "3")
        assert "Too fast: you spent" in page.get_by_role("status").first.inner_text()
        assert page.locator("#judge-form").get_attribute("action") == held, "the same task, not swapped"
        assert page.locator("textarea[name=comment]").input_value() == "Half of it is about Python 2"
        assert "you can answer in" in page.locator("#countdown").inner_text()
        assert not Annotation.objects.exists()

    def test_it_flags_a_too_fast_answer_when_the_project_says_so(
        self, page, live_server, demo: Project
    ) -> None:  # type: ignore[no-untyped-def]
        Project.objects.filter(pk=demo.pk).update(min_seconds_per_task=60, too_fast_policy="flag")
        log_in(page, live_server)
        open_queue(page, live_server)
        assert "is flagged as too fast" in page.locator("#countdown").inner_text()
        answer_by_key(page, "4")
        assert "flagged as too fast" in page.get_by_role("status").first.inner_text()
        assert Annotation.objects.get().too_fast

    def test_it_opens_the_guidelines_with_the_question_mark(self, page, live_server, demo: Project) -> None:  # type: ignore[no-untyped-def]
        log_in(page, live_server)
        open_queue(page, live_server)
        dialog = page.locator("#guidelines-dialog")
        assert not dialog.is_visible()
        page.keyboard.press("?")
        assert dialog.is_visible()
        assert dialog.get_by_text("how do I open a file for reading").first.is_visible()
        page.keyboard.press("Escape")
        assert not dialog.is_visible()

    def test_it_opens_the_guidelines_from_the_button_after_an_answer(
        self, page, live_server, demo: Project
    ) -> None:  # type: ignore[no-untyped-def]
        """The header is part of the task swapped in after each answer: its button still opens the dialog
        in place (it had lost its handler, and went to the guidelines page instead)."""
        Project.objects.filter(pk=demo.pk).update(min_seconds_per_task=0)
        log_in(page, live_server)
        open_queue(page, live_server)
        rate(page, "3")
        address = page.url
        page.locator("#guidelines-link").click()
        dialog = page.locator("#guidelines-dialog")
        assert dialog.is_visible() and page.url == address
        page.keyboard.press("Escape")
        assert not dialog.is_visible()

    def test_it_skips_marks_unclear_and_undoes_with_keys(self, page, live_server, demo: Project) -> None:  # type: ignore[no-untyped-def]
        log_in(page, live_server)
        open_queue(page, live_server)
        first_query = page.locator(".query-text").inner_text()
        first_document = page.locator(".document-title").inner_text()
        rate(page, "s")
        rate(page, "u")
        assert sorted(Annotation.objects.values_list("skipped", "unclear")) == [(False, True), (True, False)]
        with page.expect_navigation():
            page.keyboard.press("z")
        assert "Undone" in page.get_by_role("status").first.inner_text()
        assert Annotation.objects.count() == 1
        rate(page, "2")
        assert Annotation.objects.filter(grade=2).exists()
        assert first_query and first_document

    def test_it_says_when_the_queue_is_empty(self, page, live_server, demo: Project) -> None:  # type: ignore[no-untyped-def]
        kept = demo.tasks.filter(is_gold=False).order_by("id")[:2]
        demo.tasks.exclude(pk__in=[t.pk for t in kept]).delete()
        log_in(page, live_server)
        open_queue(page, live_server)
        rate(page, "1")
        rate(page, "1")
        assert page.get_by_role("heading", name="Your queue is empty").is_visible()
        assert "you answered 2 tasks" in page.locator(".judge-message").inner_text()

    def test_it_fits_a_phone_and_a_laptop_screen(self, page, live_server, demo: Project) -> None:  # type: ignore[no-untyped-def]
        log_in(page, live_server)
        open_queue(page, live_server)
        query, document = (
            page.locator(".judge-query").bounding_box(),
            page.locator(".judge-document").bounding_box(),
        )
        assert query["x"] < document["x"] and abs(query["y"] - document["y"]) < 2, "side by side at 1280×800"
        buttons = page.locator("button.grade")
        assert buttons.last.bounding_box()["y"] + buttons.last.bounding_box()["height"] <= 800, (
            "rating buttons fit"
        )
        page.set_viewport_size({"width": 390, "height": 844})
        query, document = (
            page.locator(".judge-query").bounding_box(),
            page.locator(".judge-document").bounding_box(),
        )
        assert query["y"] + query["height"] <= document["y"], "stacked on a phone"
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"no horizontal scrolling ({width}px)"
        assert re.match(r"\d", page.locator("button.grade").first.inner_text())
