"""A real headless Chromium, a real Celery worker: an editor uploads qrels and two runs through the web
forms, evaluates them, sees them on the leaderboard and compares them with a significance test.

The leaderboard and the comparison are saved at 1280 px wide (to docs/leaderboard.png and
docs/comparison.png with UPDATE_SCREENSHOTS=1, as `make screenshots` sets).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from evalplatform.models import Team
from monitoring.models import Comparison, Evaluation, Run
from tests.conftest import THEO, WorkerProcess, browser_log_in, screenshot_path
from tests.monitoring.conftest import synthetic_collection

LEADERBOARD = screenshot_path("leaderboard.png")
COMPARISON = screenshot_path("comparison.png")
QRELS, RUN = synthetic_collection(queries=40, docs=40)
#: How long a job may take on the worker, in the browser's milliseconds (the worker starts cold).
JOB_TIMEOUT = 90_000


def log_in(page: Any, live_server: Any) -> None:
    browser_log_in(page, live_server, THEO.username, THEO.password)


def text_file(name: str, text: str) -> dict[str, Any]:
    return {"name": name, "mimeType": "text/plain", "buffer": text.encode()}


def upload_run(page: Any, name: str, text: str, *, tags: str, evaluate: bool) -> None:
    page.get_by_role("link", name="Search", exact=True).click()
    page.get_by_role("link", name="Upload a run").click()
    page.get_by_label("Run file", exact=True).set_input_files(text_file(f"{name}.run", text))
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Tags", exact=True).fill(tags)
    if not evaluate:
        page.get_by_label("Evaluate on", exact=True).select_option(label="Do not evaluate yet")
    page.get_by_role("button", name="Upload").click()


def wait_for_chart(page: Any, figure: str, worker: WorkerProcess) -> None:
    """The page polls its job and reloads when it is done; then plotly draws the chart."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_selector(f"#{figure}-chart.js-plotly-plot .main-svg", timeout=JOB_TIMEOUT)
    except PlaywrightTimeout:
        jobs = list(Evaluation.objects.values("pk", "status", "error", "attempts", "queued_at"))
        jobs += list(Comparison.objects.values("pk", "status", "error", "attempts", "queued_at"))
        raise AssertionError(
            f"no {figure} on {page.url}; jobs {jobs}; worker log:\n{worker.log()[-4000:]}"
        ) from None


@pytest.mark.services
@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_editor_uploads_evaluates_and_compares_runs_through_the_web(
    page: Any, live_server: Any, celery_worker_process: WorkerProcess, team: Team, theo: User
) -> None:
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    # Chromium logs each load or inline code the Content-Security-Policy refused: a broken chart page.
    csp_refusals: list[str] = []
    page.on(
        "console",
        lambda message: (
            csp_refusals.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    log_in(page, live_server)
    page.get_by_role("link", name="Search").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Search"

    # Qrels first: uploaded as a file.
    page.get_by_role("link", name="Add qrels").first.click()
    page.get_by_label("Qrels file", exact=True).set_input_files(text_file("judged.qrels", QRELS))
    page.locator("#qrels-upload-form").get_by_label("Name", exact=True).fill("pilot judgments")
    page.get_by_role("button", name="Upload qrels").click()
    assert page.get_by_role("status").inner_text().startswith("Uploaded the qrels pilot judgments")

    # A malformed run is refused on the page, naming the line.
    upload_run(page, "broken", "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 high t\n", tags="", evaluate=False)
    assert "broken.run:2:" in page.get_by_role("alert").first.inner_text()

    # The first run: uploaded, then evaluated from its page with one more measure.
    upload_run(page, "bm25", RUN(1, 1.5, "bm25"), tags="bm25, baseline", evaluate=False)
    page.get_by_role("link", name="Evaluate this run").click()
    page.get_by_label("More measures", exact=True).fill("nDCG@5")
    page.get_by_role("button", name="Evaluate").click()
    wait_for_chart(page, "figure-histogram", celery_worker_process)
    assert page.locator("#worst-table tbody tr").count() == 20
    query_ticks = page.locator("#figure-histogram-chart .ytick text").all_text_contents()
    assert len(query_ticks) >= 2 and all(tick.isdigit() for tick in query_ticks), query_ticks  # no 0.5

    # The second run: evaluated on upload with the default measures.
    upload_run(page, "dense", RUN(2, 0.4, "dense"), tags="dense", evaluate=True)
    wait_for_chart(page, "figure-histogram", celery_worker_process)
    assert Evaluation.objects.filter(status="done").count() == 2, celery_worker_process.log()

    page.get_by_role("link", name="See the leaderboard").click()
    wait_for_chart(page, "figure-leaderboard", celery_worker_process)
    names = page.locator("#leaderboard-table tbody th[scope=row] a").all_inner_texts()
    assert names == ["bm25", "dense"]  # map, higher is better, best first
    assert page.locator("#figure-leaderboard-chart .point, #figure-leaderboard-chart .bars path").count() >= 2
    page.get_by_role("link", name="ndcg_cut_10").first.click()
    assert "sort=ndcg_cut_10" in page.url
    wait_for_chart(page, "figure-leaderboard", celery_worker_process)
    page.screenshot(path=str(LEADERBOARD), full_page=True)
    assert LEADERBOARD.stat().st_size > 20_000

    page.get_by_role("link", name="Compare these runs").click()
    page.get_by_label("Test", exact=True).select_option("randomization")
    page.get_by_role("button", name="Compare").click()
    wait_for_chart(page, "figure-differences", celery_worker_process)
    comparison = Comparison.objects.get()
    pair = comparison.pairs.get(measure="map")
    assert page.locator("#wins").inner_text() == str(pair.wins)
    assert page.locator("#test-result .verdict").inner_text().startswith("Significant at α = 0.05")
    assert page.locator("#significance-table tbody tr").count() == 2
    page.screenshot(path=str(COMPARISON), full_page=True)
    assert COMPARISON.stat().st_size > 20_000

    assert set(Run.objects.values_list("name", flat=True)) == {"bm25", "dense"}
    assert csp_refusals == []
    assert all(url.startswith(live_server.url) for url in requests), [
        u for u in requests if not u.startswith(live_server.url)
    ]
