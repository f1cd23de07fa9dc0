"""A real headless Chromium: a lead uploads a machine judge's labels and reads its calibration page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from annotations import qrels
from annotations.demo import DEMO_SLUG, demo_annotations_simulate, demo_machine_labels
from annotations.machine_judges import services
from annotations.models import MachineJudge, Project
from tests.conftest import browser_log_in


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
class TestMachineJudgeInTheBrowser:
    def test_it_uploads_labels_and_shows_the_calibration_charts(
        self, page: Any, live_server: Any, demo: Project, tmp_path: Path
    ) -> None:
        demo_annotations_simulate(demo)
        build = qrels.qrels_build_create(project=demo, created_by=None, enqueue=False)
        assert qrels.qrels_build_run(build_id=build.pk).status == "done"
        path = tmp_path / "judge.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in demo_machine_labels(demo)))

        browser_log_in(page, live_server, "lead", "demo-lead-pass")
        page.goto(f"{live_server.url}/projects/{DEMO_SLUG}/")
        page.locator("#machine-judges-link").click()
        page.wait_for_url("**/machine-judges/")
        page.set_input_files("#id_file", str(path))
        page.fill("#id_name", "gpt-judge")
        page.select_option("#id_kind", "llm")
        with page.expect_navigation():
            page.get_by_role("button", name="Upload").click()
        judge = MachineJudge.objects.get(project=demo, name="gpt-judge")
        assert page.url.endswith(f"/machine-judges/{judge.pk}/")
        figures = services.judge_calibration(judge)["consensus"]
        # Each chart is drawn, with its numbers beside it.
        for chart in ("consensus-confusion", "consensus-bias", "consensus-topics", "gold-confusion"):
            page.wait_for_selector(f"#{chart}-chart .main-svg", timeout=20_000)
        pairs = page.locator("#consensus-summary tbody td").first.inner_text()
        assert int(pairs) == figures["pairs"]
        rows = page.locator("#consensus-topics-table tbody tr")
        assert rows.count() == len(figures["per_topic"])
        with page.expect_download() as download:
            page.locator("#calibration-consensus figcaption a").first.click()
        assert download.value.suggested_filename.endswith("-consensus-confusion.csv")

        page.fill("#id_budget", "5")
        with page.expect_navigation():
            page.get_by_role("button", name="Route to people").click()
        assert page.locator("#routed-table tbody tr").count() >= 5
