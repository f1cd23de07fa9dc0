"""A real headless Chromium adjudicates the demo project's disagreements with the keyboard, end to end:
disagreeing labels -> the queue lists the pair -> the lead's digit key sets its grade -> the next build has
it, with its provenance. The pair page is saved at 1280×800 (to docs/adjudication.png with
`make screenshots`)."""

from __future__ import annotations

import json

import pytest

from annotations import qrels
from annotations.demo import DEMO_SLUG, demo_annotations_simulate, demo_project_create
from annotations.models import Adjudication, Annotation, Project, QrelsBuild, Task
from annotations.quality.services import quality_snapshot_refresh
from portal.demo import demo_accounts_create
from tests.annotations.test_browser_judging import log_in
from tests.conftest import screenshot_path

SCREENSHOT = screenshot_path("adjudication.png")


@pytest.fixture
def demo(transactional_db: None) -> Project:
    demo_accounts_create()
    project = demo_project_create()
    demo_annotations_simulate(project)
    assert quality_snapshot_refresh(project_id=project.pk) == "done"
    return project


def pair_of(page) -> Task:  # type: ignore[no-untyped-def]
    task_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    return Task.objects.select_related("topic", "document").get(pk=task_id)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
class TestAdjudicationInTheBrowser:
    def test_a_lead_adjudicates_a_disagreement_with_the_keyboard(
        self, page, live_server, demo: Project
    ) -> None:  # type: ignore[no-untyped-def]
        log_in(page, live_server, "lead", "demo-lead-pass")
        page.goto(f"{live_server.url}/projects/{DEMO_SLUG}/")
        link = page.locator("#adjudication-link")
        assert "3 waiting" in link.inner_text()
        link.click()
        assert page.locator("#waiting-count").inner_text() == "3"
        assert page.locator("#waiting tbody tr").count() == 3
        page.locator("#start-adjudicating").click()
        page.wait_for_load_state("load")
        first = pair_of(page)
        grades = sorted(
            Annotation.objects.filter(task=first, grade__isnull=False).values_list("grade", flat=True)
        )
        assert grades[-1] - grades[0] > 1, "the annotators disagree beyond the tolerance"
        rows = page.locator(".label-row")
        assert rows.count() == len(grades)
        assert page.locator(".label-comment").count() >= 1, "the careful annotators' comments are shown"
        assert "%" in rows.first.inner_text(), "each annotator's accuracy on gold"
        assert page.locator(".judge-document mark").count() > 0, "query terms are highlighted"
        page.screenshot(path=str(SCREENSHOT))

        with page.expect_navigation():
            page.keyboard.press("3")
        assert "Final grade 3" in page.get_by_role("status").first.inner_text()
        second = pair_of(page)
        assert second.pk != first.pk
        assert Adjudication.objects.get(task=first).grade == 3
        # A note typed before the key goes with the grade; digits typed in the note are text.
        page.locator("#note").fill("Section 2 answers it")
        page.locator("#note").press("Escape")
        with page.expect_navigation():
            page.keyboard.press("1")
        assert Adjudication.objects.get(task=second).note == "Section 2 answers it"

        page.goto(f"{live_server.url}/projects/{DEMO_SLUG}/adjudication/")
        assert page.locator("#waiting-count").inner_text() == "1"
        assert page.locator("#done tbody tr").count() == 2

        build = qrels.qrels_build_create(project=demo, created_by=None, enqueue=False)
        assert qrels.qrels_build_run(build_id=build.pk).status == QrelsBuild.Status.DONE
        build.refresh_from_db()
        assert build.adjudicated == 2 and build.counts["pairs"]["dropped"]["disagreement"] == 1
        lines = [json.loads(line) for line in qrels.qrels_export(build, fmt="jsonl").splitlines()]
        line = next(x for x in lines if (x["qid"], x["doc_id"]) == (first.topic.qid, first.document.doc_id))
        assert line["rel"] == 3 and line["source"] == "adjudication"
        assert line["adjudication"]["adjudicator"] == "lead"
        assert sorted(label["grade"] for label in line["labels"]) != []
        assert (
            f"{first.topic.qid} 0 {first.document.doc_id} 3"
            in qrels.qrels_export(build, fmt="trec").splitlines()
        )
        assert SCREENSHOT.stat().st_size > 10_000

    def test_it_fits_a_phone_screen(self, page, live_server, demo: Project) -> None:  # type: ignore[no-untyped-def]
        log_in(page, live_server, "lead", "demo-lead-pass")
        page.goto(f"{live_server.url}/projects/{DEMO_SLUG}/adjudication/")
        page.locator("#start-adjudicating").click()
        page.set_viewport_size({"width": 390, "height": 844})
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"no horizontal scrolling ({width}px)"
        labels, document = (
            page.locator(".adjudicate-labels").bounding_box(),
            page.locator(".judge-document").bounding_box(),
        )
        assert labels["y"] + labels["height"] <= document["y"], "the labels above the document on a phone"
