"""A real headless Chromium on the demo stream's dashboard: plotly draws every metric's time series with its
threshold and alert markers and the scree plot, all from this server (no CDN); an editor acknowledges an
alert from the list.

The dashboard is saved at 1280 px wide (to docs/stream-dashboard.png with UPDATE_SCREENSHOTS=1).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from evalplatform.models import Team
from monitoring.embeddings import demo as demo_streams
from monitoring.models import AlertEvent, AlertRule
from tests.conftest import THEO, browser_log_in, screenshot_path

SCREENSHOT = screenshot_path("stream-dashboard.png")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_it_draws_the_demo_streams_dashboard_and_acknowledges_an_alert(
    page: Any, live_server: Any, team: Team, theo: User, queued: Any
) -> None:
    demo = demo_streams.demo_stream_load(team=team)
    assert demo is not None
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    browser_log_in(page, live_server, THEO.username, THEO.password)
    page.goto(f"{live_server.url}/teams/search/")
    page.get_by_role("link", name="Query encoder").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Query encoder"

    page.wait_for_selector("#figure-spectrum-chart.js-plotly-plot .main-svg")
    watched = {
        rule.metric for rule in AlertRule.objects.filter(series__object_id=demo.stream.pk, enabled=True)
    }
    charts = page.locator(".chart.js-plotly-plot")
    assert charts.count() == len(watched) + 1  # by default the metrics a rule watches, and the scree
    page.get_by_role("link", name="Show every metric").click()
    page.wait_for_url(f"{live_server.url}/teams/search/streams/query-encoder/?all=1")
    page.wait_for_selector("#figure-spectrum-chart.js-plotly-plot .main-svg")
    assert charts.count() == 18  # 12 quality and 5 drift metrics, and the scree
    dead = page.locator("#metric-dead_dim_ratio")
    assert (
        dead.locator(".js-plotly-plot .scatterlayer .trace").count() == 3
    )  # values, threshold, alert marker
    assert dead.locator("td.value .alert-mark").count() == 1
    assert page.locator("#figure-spectrum-chart .scatterlayer .trace").count() == 2  # snapshot and reference

    alerts = page.locator("#stream-alerts tbody tr")
    assert (
        alerts.count()
        == AlertEvent.objects.filter(
            rule__series__kind="stream", rule__series__object_id=demo.stream.pk
        ).count()
        >= 5
    )
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    assert SCREENSHOT.stat().st_size > 50_000

    page.get_by_role("button", name="Acknowledge dead_dimensions").click()
    page.wait_for_url(f"{live_server.url}/teams/search/streams/query-encoder/#alerts-heading")
    row = page.locator("#stream-alerts tr", has_text="dead_dimensions")
    assert "Acknowledged" in row.inner_text() and "by theo" in row.inner_text()
    assert (
        AlertEvent.objects.get(
            rule__name="dead_dimensions", rule__series__kind="stream", rule__series__object_id=demo.stream.pk
        ).acknowledged_by
        == theo
    )
    assert all(url.startswith(live_server.url) for url in requests), [
        url for url in requests if not url.startswith(live_server.url)
    ]
