"""A real headless Chromium, a real Celery worker: a project's lead pools the linked team's runs from the
project's pages, follows the build to its end, and, once an annotator has answered, sees the pool's yield
chart with its numbers (saved to docs/pool.png with UPDATE_SCREENSHOTS=1)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.contrib.auth.models import User

from annotations import services as judging
from annotations.models import Project, Task
from evalplatform.models import Team
from evalplatform.teams import team_member_set
from monitoring.files import uploads
from monitoring.pooling.models import JudgingPool, PoolReprioritise
from tests.annotations.conftest import build_project
from tests.conftest import LENA, WorkerProcess, browser_log_in, screenshot_path
from tests.monitoring.conftest import upload
from tests.monitoring.test_pooling import DOCS, RUN_TEXTS, TOPICS

SCREENSHOT = screenshot_path("pool.png")
#: How long a job may take on the worker, in the browser's milliseconds (the worker starts cold).
JOB_TIMEOUT = 90_000


@pytest.mark.services
@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_lead_pools_the_teams_runs_and_follows_the_pool(
    page: Any, live_server: Any, celery_worker_process: WorkerProcess, team: Team, theo: User,
    lena: User, alice: User,
) -> None:  # fmt: skip
    team_member_set(team=team, user=lena, role="viewer")
    project = build_project(lead=lena, annotators=[alice], topics=TOPICS, docs_per_topic=DOCS, overlap=1)
    Task.objects.filter(project=project).delete()
    Project.objects.filter(pk=project.pk).update(team=team)
    for name, text in RUN_TEXTS.items():
        uploads.run_upload(team=team, upload=upload(f"{name}.run", text), uploaded_by=theo)

    browser_log_in(page, live_server, LENA.username, LENA.password)
    page.goto(f"{live_server.url}/projects/{project.slug}/")
    page.get_by_role("link", name="Pools from runs").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Pools from runs"
    assert page.locator("#no-pools").is_visible()
    for name in ("up", "down"):
        page.locator("#pool-form").get_by_text(name, exact=False).first.check()
    page.get_by_label("Strategy").select_option("mtf")
    page.get_by_label("Budget").fill("6")
    page.get_by_label("Depth").fill("5")
    assert page.get_by_label("Rank the simulated runs by").input_value() == "map"
    page.get_by_label("Rank the simulated runs by").fill("P_5")
    page.get_by_role("button", name="Create the pool").click()

    pool = JudgingPool.objects.get()
    assert page.url == f"{live_server.url}/projects/{project.slug}/pools/{pool.pk}/"
    assert pool.simulation_measure == "P_5"
    # The page polls the build and reloads once it is done.
    page.wait_for_selector("#pool-stage:has-text('Judging')", timeout=JOB_TIMEOUT)
    pool.refresh_from_db()
    assert (pool.status, pool.tasks_created, pool.pending) == ("done", 6, 6), celery_worker_process.log()[
        -3000:
    ]
    assert page.locator("#pool-judged").inner_text() == "0 / 6"
    assert "3 pooled pairs left out" in page.locator("#pool-skipped").inner_text()
    assert page.locator("#no-yield").is_visible()

    # An annotator answers two pairs; the answers re-order the pool on the worker (debounced). The project
    # is read afresh, as each request reads it: the build marked it as having priorities.
    project.refresh_from_db()
    for grade in (3, 0):
        claim = judging.task_claim(project=project, annotator=alice)
        assert claim.assignment is not None
        judging.annotation_submit(
            project=project, annotator=alice, assignment_id=claim.assignment.pk, grade=grade
        )
    deadline = time.monotonic() + JOB_TIMEOUT / 1000
    while time.monotonic() < deadline and not JudgingPool.objects.filter(pk=pool.pk, judged=2).exists():
        time.sleep(0.05)
    jobs = list(PoolReprioritise.objects.values("status", "error"))
    assert JudgingPool.objects.get(pk=pool.pk).judged == 2, (jobs, celery_worker_process.log()[-3000:])
    page.reload()
    page.wait_for_selector("#figure-yield-chart.js-plotly-plot .main-svg", timeout=20_000)
    assert page.locator("#pool-judged").inner_text() == "2 / 6"
    rows = page.locator("#yield-table tbody tr")
    assert rows.count() == 2 and rows.nth(1).locator("td").nth(1).inner_text() == "1"
    assert (
        page.locator("#yield-csv").get_attribute("href")
        == f"/projects/{project.slug}/pools/{pool.pk}/yield.csv"
    )
    SCREENSHOT.parent.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)
