"""A real headless Chromium on the lead's pages: the drill-down from the kappa heatmap and from an
annotator's row, a qrels build's status turning to done without a reload, and the project form's rows."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from annotations import qrels
from annotations.demo import DEMO_SLUG
from annotations.models import Project, QualitySnapshot
from tests.conftest import LENA, browser_log_in, make_user, screenshot_path

SCREENSHOT = screenshot_path("quality-disagreements.png")


@pytest.fixture
def demo(transactional_db: None) -> Project:
    call_command("load_demo", stdout=StringIO())
    return Project.objects.get(slug=DEMO_SLUG)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
class TestLeadPagesInTheBrowser:
    def test_it_drills_down_from_a_heatmap_cell_and_from_an_annotator_row(
        self, page: Any, live_server: Any, demo: Project
    ) -> None:
        browser_log_in(page, live_server, "lead", "demo-lead-pass")
        page.goto(f"{live_server.url}/projects/{DEMO_SLUG}/quality/")
        page.wait_for_selector("#figure-kappa-chart.clickable .main-svg", timeout=20_000)
        names = QualitySnapshot.objects.get(project=demo).kappa["annotators"]
        ids = json.loads(page.locator("#kappa-links").text_content())["ids"]
        # The plot area is an n x n grid, first row at the top; click the cell of row 0, column 1.
        area = page.locator("#figure-kappa-chart .nsewdrag").first.bounding_box()
        n = len(names)
        with page.expect_navigation():
            page.mouse.click(area["x"] + 1.5 * area["width"] / n, area["y"] + 0.5 * area["height"] / n)
        assert page.url.endswith(f"/quality/disagreements/?a={ids[names[0]]}&b={ids[names[1]]}")
        heading = page.get_by_role("heading", level=1).inner_text()
        assert heading == f"Where {names[0]} and {names[1]} disagree"
        assert page.locator("#disagreement-table tbody tr").count() >= 1
        SCREENSHOT.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)

        page.goto(f"{live_server.url}/projects/{DEMO_SLUG}/quality/")
        page.locator("#annotator-table").get_by_role("link", name="eve", exact=True).click()
        page.wait_for_url("**/quality/disagreements/?a=*")
        assert (
            page.get_by_role("heading", level=1).inner_text()
            == "Where eve disagrees with gold and the others"
        )
        # eve is careless: many of her grades differ from gold or the others, gold ones marked.
        assert page.locator("#disagreement-table tbody tr").count() >= 5
        assert page.locator("#disagreement-table .badge", has_text="gold").count() >= 1

    def test_it_shows_a_build_turn_from_pending_to_done_without_a_reload(
        self, page: Any, live_server: Any, demo: Project
    ) -> None:
        build = qrels.qrels_build_create(project=demo, created_by=None, enqueue=False)  # no worker: pending
        browser_log_in(page, live_server, "lead", "demo-lead-pass")
        page.goto(f"{live_server.url}/projects/{DEMO_SLUG}/quality/")
        status = page.locator(f'#build-table [data-build="{build.version}"]')
        assert status.inner_text().strip().startswith("Pending")
        page.evaluate("window.__noReload = true")
        assert qrels.qrels_build_run(build_id=build.pk).status == "done"
        page.wait_for_selector(
            f'#build-table [data-build="{build.version}"][data-status="done"]', timeout=15_000
        )
        assert status.inner_text().strip().startswith("Done")
        assert page.evaluate("window.__noReload") is True, "the page was not reloaded"
        # The section is then refreshed in place (the badge turns first, the section's HTML follows): the
        # new build's export links arrive without a reload.
        row = page.locator("#build-table tbody tr", has=page.locator(f'[data-build="{build.version}"]'))
        row.get_by_role("link", name="TREC").wait_for(timeout=15_000)
        assert row.get_by_role("link", name="TREC").count() == 1
        assert page.evaluate("window.__noReload") is True, "the page was not reloaded"

    def test_it_edits_the_scale_and_examples_as_rows_and_fills_the_slug_from_the_name(
        self, page: Any, live_server: Any, transactional_db: None
    ) -> None:
        make_user(LENA)
        browser_log_in(page, live_server, LENA.username, LENA.password)
        page.goto(f"{live_server.url}/projects/new/")
        assert page.locator("textarea[name=scale]").is_hidden()
        page.get_by_label("Name").fill("Café Search Q3")
        assert page.locator("#id_slug").input_value() == "cafe-search-q3"
        scale = page.locator("#rows-scale tbody tr")
        assert scale.count() == 5  # the default 0-4 scale, one row per grade
        # Remove grade 4, relabel grade 3, add a grade (it gets the next number, 4) with a label.
        scale.nth(4).get_by_role("button", name="Remove grade").click()
        scale.nth(3).locator('[data-key="label"]').fill("Perfect")
        page.get_by_role("button", name="Add a grade").click()
        assert scale.count() == 5
        assert scale.nth(4).locator('[data-key="grade"]').input_value() == "4"
        scale.nth(4).locator('[data-key="label"]').fill("Beyond perfect")
        scale.nth(4).locator('[data-key="definition"]').fill("Better than the best.")
        examples = page.locator("#rows-guideline_examples tbody tr")
        defaults = examples.count()
        page.get_by_role("button", name="Add an example").click()
        assert examples.count() == defaults + 1
        example = examples.last
        example.locator('[data-key="query"]').fill("python try")
        example.locator('[data-key="document"]').fill("The try statement")
        example.locator('[data-key="grade"]').fill("3")
        example.locator('[data-key="reason"]').fill("It is the answer.")
        # A hand-edited slug stops following the name.
        page.locator("#id_slug").fill("cafe")
        page.get_by_label("Name").fill("Café Search Q4")
        assert page.locator("#id_slug").input_value() == "cafe"
        page.get_by_label("Guidelines").fill("Rate it.")
        with page.expect_navigation():
            page.get_by_role("button", name="Create project").click()
        errors = page.locator("[role=alert]").all_inner_texts()
        assert not errors, errors
        project = Project.objects.get(slug="cafe")
        assert project.name == "Café Search Q4"
        labels = ["Not relevant", "Marginally relevant", "Fairly relevant", "Perfect", "Beyond perfect"]
        assert [(level["grade"], level["label"]) for level in project.scale] == list(enumerate(labels))
        assert project.scale[4]["definition"] == "Better than the best."
        assert len(project.guideline_examples) == defaults + 1
        assert project.guideline_examples[-1] == {
            "query": "python try", "document": "The try statement", "grade": 3, "reason": "It is the answer."
        }  # fmt: skip
