"""A real headless Chromium opens the recommendation and the fraud dashboards of the demo's two sets and
checks that every chart is drawn by the vendored plotly.js, with nothing fetched from elsewhere.

The dashboards are saved at 1280 px wide (to docs/recsys-dashboard.png and docs/fraud-dashboard.png with
UPDATE_SCREENSHOTS=1, as `make screenshots` sets).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from evalplatform.models import Team
from monitoring.demo import FRAUD_OPTIONS, demo_fraud_text, demo_recsys_texts
from monitoring.recsys_fraud import services as recsys_fraud
from tests.conftest import THEO, browser_log_in, screenshot_path

RECSYS_SCREENSHOT = screenshot_path("recsys-dashboard.png")
FRAUD_SCREENSHOT = screenshot_path("fraud-dashboard.png")


def csv_file(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="text/csv")


def log_in(page: Any, live_server: Any) -> None:
    browser_log_in(page, live_server, THEO.username, THEO.password)


def drawn(page: Any, figures: list[str]) -> None:
    for name in figures:
        page.wait_for_selector(f"#{name}-chart.js-plotly-plot .main-svg", timeout=20_000)
        assert (
            page.locator(f"#{name}-chart .scatterlayer .trace, #{name}-chart .barlayer .trace").count() >= 1
        )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_recommendation_and_fraud_dashboards_draw_every_chart(
    page: Any, live_server: Any, team: Team, theo: User
) -> None:
    files = {role: csv_file(f"{role}.csv", text) for role, text in demo_recsys_texts().items()}
    recommendations = recsys_fraud.recommendation_set_upload(
        team=team, name="popular-top20", uploaded_by=theo, **files
    )
    recsys = recsys_fraud.recommendation_evaluation_create(recommendation_set=recommendations, enqueue=False)
    scores = recsys_fraud.fraud_score_set_upload(
        team=team,
        name="card-model-v3",
        scores=csv_file("card-scores.csv", demo_fraud_text()),
        uploaded_by=theo,
    )
    fraud = recsys_fraud.fraud_evaluation_create(score_set=scores, options=FRAUD_OPTIONS, enqueue=False)
    assert recsys_fraud.recommendation_evaluation_run(evaluation_id=recsys.pk).status == "done"
    assert recsys_fraud.fraud_evaluation_run(evaluation_id=fraud.pk).status == "done"
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    log_in(page, live_server)

    page.get_by_role("link", name="Search").first.click()
    page.get_by_role("link", name="popular-top20").click()
    page.get_by_role("link", name=f"#{recsys.pk}").click()
    assert (
        page.get_by_role("heading", level=1).inner_text()
        == f"Recommendations popular-top20: evaluation #{recsys.pk}"
    )
    drawn(page, ["figure-lorenz", "figure-popularity"])
    assert page.locator("#coverage-table tbody tr").count() == 16  # all items, then 15 categories
    gini = recsys.metric_values()["gini"]
    assert page.locator("#stat-gini").inner_text() == f"{gini:.3f}".rstrip("0")
    page.screenshot(path=str(RECSYS_SCREENSHOT), full_page=True)
    assert RECSYS_SCREENSHOT.stat().st_size > 20_000

    page.goto(f"{live_server.url}/teams/search/")
    page.get_by_role("link", name="card-model-v3").click()
    page.get_by_role("link", name=f"#{fraud.pk}").click()
    drawn(page, ["figure-roc", "figure-pr", "figure-cost", "figure-ttd"])
    assert page.locator("#figure-roc-chart .scatterlayer .trace").count() == 3  # random, ROC, operating point
    fraud.refresh_from_db()
    assert page.locator("#confusion-tp").inner_text() == str(fraud.summary["confusion"]["tp"])
    page.screenshot(path=str(FRAUD_SCREENSHOT), full_page=True)
    assert FRAUD_SCREENSHOT.stat().st_size > 20_000

    assert all(url.startswith(live_server.url) for url in requests), [
        url for url in requests if not url.startswith(live_server.url)
    ]
