"""A real headless Chromium reads a long document on the rating page with the keyboard.

The documents are the standard library's help texts (`pydoc_data.topics`), hard-wrapped at 70 characters
with indented grammar and code, as the demo project's are. The rating page with a long document is saved
at 1280×800 (to docs/rating-long-document.png with `make screenshots`).
"""

from __future__ import annotations

from pydoc_data.topics import topics as PYDOC_TOPICS

import pytest
from django.contrib.auth.models import User

from annotations.models import Annotation, Document, Project, Topic
from tests.annotations.conftest import build_project
from tests.annotations.test_browser_judging import answer_by_key, log_in
from tests.conftest import ALICE, screenshot_path

SCREENSHOT = screenshot_path("rating-long-document.png")
QUERY = "how do I catch multiple exceptions"
GUIDELINES = "\n\n".join(f"Rule {n}: read the whole passage before you rate it." for n in range(60))


@pytest.fixture
def project(transactional_db: None, lena: User, alice: User) -> Project:
    """Alice's queue: the help of the `try` statement (215 lines) and of compound statements (1,468 lines),
    both long enough to open on their passages."""
    project = build_project(lead=lena, annotators=[alice], topics=1, docs_per_topic=2, guidelines=GUIDELINES)
    Topic.objects.filter(project=project).update(title=QUERY)
    for doc_id, topic in [("d0-0", "compound"), ("d0-1", "try")]:
        Document.objects.filter(project=project, doc_id=doc_id).update(
            title=f"help({topic!r})", text=PYDOC_TOPICS[topic]
        )
    return project


def open_queue(page, live_server, project: Project) -> None:  # type: ignore[no-untyped-def]
    log_in(page, live_server, ALICE.username, ALICE.password)
    page.goto(f"{live_server.url}/projects/{project.slug}/judge/")
    page.wait_for_load_state("load")


def current_term(page) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """The current term's index among the visible view's marks, its line and whether it is in sight."""
    return page.evaluate(
        """() => {
            const reader = document.getElementById('document-text');
            const view = reader.querySelector('.reading-view:not([hidden])');
            const marks = [...view.querySelectorAll('mark')];
            const mark = view.querySelector('mark.current');
            const box = mark.getBoundingClientRect(), frame = reader.getBoundingClientRect();
            return {
                index: marks.indexOf(mark), count: marks.length, scrollTop: reader.scrollTop,
                line: parseInt(mark.closest('[data-line]').dataset.line, 10),
                inSight: box.top >= frame.top && box.bottom <= frame.bottom,
                currents: reader.querySelectorAll('mark.current').length,
            };
        }"""
    )


def grade_boxes(page) -> list[dict]:  # type: ignore[no-untyped-def,type-arg]
    return [page.locator("button.grade").nth(n).bounding_box() for n in range(5)]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
class TestReadingInTheBrowser:
    def test_it_opens_a_long_document_on_its_passages_at_a_readable_measure(
        self, page, live_server, project: Project
    ) -> None:  # type: ignore[no-untyped-def]
        project.tasks.filter(document__doc_id="d0-1").delete()  # the screenshot shows the 1,468-line one
        open_queue(page, live_server, project)
        assert page.locator("#passage-view").is_visible() and not page.locator("#full-view").is_visible()
        assert page.locator("#passage-view .passage").count() >= 3
        assert page.locator("#passage-view .passage-gap").count() >= 2
        assert "Show the full text" in page.locator("#view-switch").inner_text()
        # Paragraphs are reflowed (one <p> per paragraph) and keep a comfortable measure in the wide panel.
        measure = page.evaluate(
            """() => {
                // Characters per rendered line of the longest paragraph: its length over its line count.
                const ps = [...document.querySelectorAll('#passage-view .block-paragraph')];
                const p = ps.reduce((a, b) => (b.textContent.length > a.textContent.length ? b : a));
                const lines = p.getBoundingClientRect().height / parseFloat(getComputedStyle(p).lineHeight);
                return {chars: p.textContent.length / Math.round(lines), lines: Math.round(lines),
                        pre: document.querySelectorAll('#full-view pre').length,
                        panel: document.querySelector('.judge-document').getBoundingClientRect().width};
            }"""
        )
        assert measure["lines"] >= 3, measure
        assert 65 <= measure["chars"] <= 85, measure
        assert measure["pre"] >= 3, "the grammar and code blocks stay preformatted"
        assert measure["panel"] > 800, "the document uses the width beside the rating column"
        assert (
            page.locator("#judge-form").bounding_box()["x"]
            < page.locator(".judge-document").bounding_box()["x"]
        )
        page.wait_for_selector("#judge-form:not(.waiting)")
        page.keyboard.press("n")
        page.screenshot(path=str(SCREENSHOT))
        assert SCREENSHOT.stat().st_size > 10_000

    def test_it_fits_a_phone_with_a_long_document(self, page, live_server, project: Project) -> None:  # type: ignore[no-untyped-def]
        page.set_viewport_size({"width": 390, "height": 844})
        open_queue(page, live_server, project)
        page.keyboard.press("v")  # the full text, with its widest preformatted blocks
        assert page.locator("#full-view").is_visible()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"no horizontal scrolling ({width}px): wide code scrolls inside its block"

    def test_it_moves_between_the_query_terms_with_n_and_p(self, page, live_server, project: Project) -> None:  # type: ignore[no-untyped-def]
        open_queue(page, live_server, project)
        assert page.locator("#term-nav").is_visible()
        assert page.locator(".judge-document mark.current").count() == 0
        page.keyboard.press("n")
        first = current_term(page)
        assert first["index"] == 0 and first["inSight"] and first["currents"] == 1
        for _ in range(5):
            page.keyboard.press("n")
        sixth = current_term(page)
        assert sixth["index"] == 5 and sixth["inSight"] and sixth["currents"] == 1
        assert sixth["scrollTop"] > first["scrollTop"], "the document scrolled to the term"
        assert sixth["line"] > first["line"]
        assert page.locator("#term-position").inner_text() == f"term 6 of {sixth['count']}"
        page.keyboard.press("p")
        assert current_term(page)["index"] == 4 and current_term(page)["inSight"]
        page.keyboard.press("p")
        page.keyboard.press("p")
        page.keyboard.press("p")
        page.keyboard.press("p")
        page.keyboard.press("p")
        last = current_term(page)
        assert last["index"] == last["count"] - 1 and last["inSight"], "p before the first wraps to the last"
        assert not Annotation.objects.exists(), "moving between terms rates nothing"

    def test_it_starts_from_the_place_in_sight(self, page, live_server, project: Project) -> None:  # type: ignore[no-untyped-def]
        open_queue(page, live_server, project)
        page.evaluate(
            "() => { const r = document.getElementById('document-text'); r.scrollTop = r.scrollHeight / 2; }"
        )
        scrolled = page.evaluate("document.getElementById('document-text').scrollTop")
        page.keyboard.press("n")
        term = current_term(page)
        assert term["inSight"] and term["index"] > 0, term
        assert term["scrollTop"] >= scrolled - 400, "n went on from the place in sight, not from the top"

    def test_it_switches_between_the_passages_and_the_full_text_with_v(
        self, page, live_server, project: Project
    ) -> None:  # type: ignore[no-untyped-def]
        open_queue(page, live_server, project)
        passage_marks = page.locator("#passage-view mark").count()
        for _ in range(4):
            page.keyboard.press("n")
        in_passages = current_term(page)
        page.keyboard.press("v")
        assert page.locator("#full-view").is_visible() and not page.locator("#passage-view").is_visible()
        assert "Show only the passages" in page.locator("#view-switch").inner_text()
        assert page.locator("#full-view mark").count() >= passage_marks
        in_full = current_term(page)
        assert in_full["inSight"], "the full text opens at the same place"
        assert abs(in_full["line"] - in_passages["line"]) <= 12, (in_full, in_passages)
        assert page.get_by_role("status").last.inner_text() == "Showing the full text."
        page.keyboard.press("v")
        assert page.locator("#passage-view").is_visible() and not page.locator("#full-view").is_visible()
        # Without the script the switch is a link that asks the server for the other view.
        page.goto(page.url.split("?")[0] + "?view=full")
        assert page.locator("#full-view").is_visible() and not page.locator("#passage-view").is_visible()

    def test_it_keeps_the_rating_buttons_in_place_after_an_answer(
        self, page, live_server, project: Project
    ) -> None:  # type: ignore[no-untyped-def]
        open_queue(page, live_server, project)
        before = grade_boxes(page)
        document_before = page.locator(".judge-document").bounding_box()
        page.wait_for_selector("#judge-form:not(.waiting)")
        answer_by_key(page, "3")
        assert page.get_by_role("status").first.inner_text().startswith("Saved 3")
        assert page.locator(".messages").is_visible()
        assert grade_boxes(page) == before, "the Saved message did not push the buttons"
        assert page.locator(".judge-document").bounding_box()["y"] == document_before["y"]

    def test_it_opens_the_guidelines_at_their_top(self, page, live_server, project: Project) -> None:  # type: ignore[no-untyped-def]
        open_queue(page, live_server, project)
        dialog = page.locator("#guidelines-dialog")
        page.keyboard.press("?")
        assert dialog.is_visible()
        sizes = dialog.evaluate("d => ({top: d.scrollTop, height: d.scrollHeight, view: d.clientHeight})")
        assert sizes["height"] > 2 * sizes["view"], "long guidelines scroll"
        assert sizes["top"] == 0, "opens at its top, not at its close button"
        assert page.get_by_role("heading", name="Guidelines").is_visible()
        dialog.evaluate("d => { d.scrollTop = d.scrollHeight; }")
        assert page.get_by_role("button", name="Close").is_visible(), "the close button stays in sight"
        page.keyboard.press("Escape")
        assert not dialog.is_visible()
        page.get_by_role("link", name="Guidelines").click()
        assert dialog.is_visible() and dialog.evaluate("d => d.scrollTop") == 0

    def test_it_takes_a_comment_in_which_digits_do_not_rate(
        self, page, live_server, project: Project
    ) -> None:  # type: ignore[no-untyped-def]
        open_queue(page, live_server, project)
        page.wait_for_selector("#judge-form:not(.waiting)")
        textarea = page.locator("textarea[name=comment]")
        assert not textarea.is_visible()
        page.keyboard.press("c")
        assert textarea.is_visible() and textarea.evaluate("t => t === document.activeElement")
        assert textarea.get_attribute("maxlength") == "2000"
        page.keyboard.type("Only 2 of the 4 except clauses apply, s u z 0 1 2 3 4")
        assert textarea.input_value() == "Only 2 of the 4 except clauses apply, s u z 0 1 2 3 4"
        assert not Annotation.objects.exists(), "digits typed in the comment rate nothing"
        page.keyboard.press("Control+Enter")
        assert textarea.is_visible(), "a comment with text stays in sight"
        assert not textarea.evaluate("t => t === document.activeElement")
        assert "Comment kept" in page.locator("#judge-status").inner_text()
        answer_by_key(page, "2")
        # Helper 3's judge_answer stores request.POST["comment"] (commit 5d301af).
        answer = Annotation.objects.get()
        assert (answer.grade, answer.comment) == (2, "Only 2 of the 4 except clauses apply, s u z 0 1 2 3 4")

    def test_it_closes_an_empty_comment_with_escape(self, page, live_server, project: Project) -> None:  # type: ignore[no-untyped-def]
        open_queue(page, live_server, project)
        page.wait_for_selector("#judge-form:not(.waiting)")
        page.keyboard.press("c")
        textarea = page.locator("textarea[name=comment]")
        assert textarea.is_visible()
        page.keyboard.press("Escape")
        assert not textarea.is_visible()
        answer_by_key(page, "1")
        answer = Annotation.objects.get()
        assert (answer.grade, answer.comment) == (1, "")
