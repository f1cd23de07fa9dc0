"""A real headless Chromium walks the fraud comparison journey: from one model's evaluation page, "compare
with…" the other, and read the comparison (the difference in ROC-AUC with its interval, DeLong's z and p,
and both models' ROC, precision-recall and cost curves drawn on one chart each by the vendored plotly.js,
nothing fetched from elsewhere). Saved to docs/fraud-comparison.png with UPDATE_SCREENSHOTS=1."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User

from evalplatform.models import Team
from monitoring.models import FraudComparison
from monitoring.recsys_fraud import comparisons
from tests.conftest import THEO, QueuedTasks, browser_log_in, screenshot_path
from tests.monitoring.test_recsys_fraud_comparisons import evaluated_scores, scores_text, two_models

SCREENSHOT = screenshot_path("fraud-comparison.png")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_editor_compares_two_fraud_models_from_an_evaluation_page(
    page: Any, live_server: Any, team: Team, theo: User, queued: QueuedTasks
) -> None:
    labels, a, b = two_models()
    first = evaluated_scores(team, "gradient-boosting", scores_text(labels, a))
    second = evaluated_scores(
        team, "rules", scores_text(labels, b, np.random.default_rng(1).permutation(a.size))
    )
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    browser_log_in(page, live_server, THEO.username, THEO.password)

    page.goto(f"{live_server.url}{first.get_absolute_url()}")
    page.get_by_label("Compare with", exact=True).select_option(
        label=f"rules: evaluation #{second.pk} (done)"
    )
    page.get_by_role("button", name="Compare").click()
    comparison = FraudComparison.objects.get()
    page.wait_for_url(f"{live_server.url}{comparison.get_absolute_url()}")
    assert queued.names() == ["monitoring.tasks.fraud_comparison_run"]
    assert (
        page.get_by_role("heading", level=1).inner_text()
        == "Fraud models compared: gradient-boosting against rules"
    )

    assert comparisons.fraud_comparison_run(comparison_id=comparison.pk).status == "done"
    comparison.refresh_from_db()
    page.wait_for_selector("#stat-z", timeout=20_000)  # the page follows the job and reloads when it is done
    delong = comparison.result["delong"]
    assert page.locator("#stat-z").inner_text() == f"{delong['z']:.3f}"
    assert page.locator("#stat-auc-a").inner_text() == f"{delong['auc_a']:.4f}"
    for name in ("figure-roc", "figure-pr", "figure-cost"):
        page.wait_for_selector(f"#{name}-chart.js-plotly-plot .main-svg", timeout=20_000)
        assert page.locator(f"#{name}-chart .scatterlayer .trace").count() >= 2  # both models on one chart
    assert page.locator("#roc-table tbody tr").count() == 2
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    assert SCREENSHOT.stat().st_size > 20_000

    page.get_by_role("link", name=f"gradient-boosting, evaluation #{first.pk}").click()
    assert page.locator("#comparison-list a").first.get_attribute("href") == comparison.get_absolute_url()
    assert [url for url in requests if not url.startswith(live_server.url)] == []
