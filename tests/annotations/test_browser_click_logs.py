"""A real headless Chromium: a lead uploads a search log, follows the job that fits a click model, and
reaches the click-model judge's calibration page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from annotations.machine_judges.imports import judge_import_run
from annotations.models import MachineJudge, MachineJudgeImport
from tests.annotations.conftest import build_project
from tests.annotations.test_machine_judge_imports import click_log
from tests.conftest import LENA, browser_log_in


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
class TestClickLogInTheBrowser:
    def test_it_uploads_a_log_follows_the_job_and_reaches_the_judge(
        self, page: Any, live_server: Any, lena: User, tmp_path: Path
    ) -> None:
        project = build_project(lead=lena, topics=3, docs_per_topic=3, gold_per_topic=1)
        path = tmp_path / "search-log.csv"
        path.write_text(click_log())

        browser_log_in(page, live_server, LENA.username, LENA.password)
        page.goto(f"{live_server.url}/projects/{project.slug}/machine-judges/")
        page.locator("#click-log-link").click()
        page.wait_for_url("**/machine-judges/click-log/")
        assert page.input_value("#id_grade_map") == "0,1,2,3,4"  # the default mapping, shown
        page.set_input_files("#id_file", str(path))
        page.select_option("#id_model", "pbm")
        page.fill("#id_min_impressions", "2")
        page.fill("#id_grade_map", "0,1,2,3,5")  # off the scale: named beside the field
        with page.expect_navigation():
            page.get_by_role("button", name="Import the log").click()
        assert "scale" in page.locator("#click-log-form .field-error").inner_text()
        page.set_input_files("#id_file", str(path))
        page.fill("#id_grade_map", "0,1,2,3,4")
        with page.expect_navigation():
            page.get_by_role("button", name="Import the log").click()
        job = MachineJudgeImport.objects.get(project=project)
        assert page.url.endswith(f"/machine-judges/import-jobs/{job.pk}/")
        assert page.locator("#import-status .job-badge").inner_text() == "Pending"
        assert judge_import_run(job_id=job.pk).status == "done"  # the worker's part
        page.wait_for_selector("#import-summary", timeout=20_000)  # the page reloads until it is done
        judge = MachineJudge.objects.get(project=project, name="clicks-pbm")
        assert f"{judge.labels.count()} new" in page.locator("#import-summary").inner_text()
        with page.expect_navigation():
            page.locator("#judge-link").click()
        assert page.url.endswith(f"/machine-judges/{judge.pk}/")
        page.wait_for_selector("#gold-confusion-chart .main-svg", timeout=20_000)  # measured against gold
