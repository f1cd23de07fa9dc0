"""A real headless Chromium draws a series page of one observation: each chart's container as tall as its
plot (no white space under it), the time axis ticked in hours and dates (not in fractions of a
millisecond), the CI as one point's error bar, and a metric whose every value is undefined saying so in
place of empty axes; the numbers stay in the tables beside."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from evalplatform.models import WorkerHeartbeat
from evalplatform.teams import team_create, team_member_set
from series.services import MetricValueIn, metric_values_write
from series.subjects import fraud_series
from tests.conftest import THEO, browser_log_in


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_single_observation_reads_as_one_point_with_its_interval(
    page: Any, live_server: Any, theo: User
) -> None:
    team = team_create(slug="search", name="Search")
    team_member_set(team=team, user=theo, role="viewer")
    series = fraud_series(team.pk, "cards")
    job = WorkerHeartbeat.objects.create(hostname="job-0", last_seen=timezone.now())
    metric_values_write(job=job, series=series, observed_at=timezone.now(), values=[
        MetricValueIn("detection_rate", 0.5146, ci_low=0.334, ci_high=0.695), MetricValueIn("savings", None)])  # fmt: skip
    browser_log_in(page, live_server, THEO.username, THEO.password)
    page.goto(f"{live_server.url}/teams/search/series/{series.pk}/")
    for index in (0, 1):
        page.wait_for_selector(f"#series-figure-{index}-chart.js-plotly-plot .main-svg", timeout=20_000)
    rate, savings = page.locator("#series-figure-0-chart"), page.locator("#series-figure-1-chart")

    for chart in (rate, savings):
        box, plot = chart.bounding_box(), chart.locator(".main-svg").first.bounding_box()
        assert box["height"] - plot["height"] <= 4  # the container fits the plot (its border only)
    ticks = rate.locator(".xtick text").all_text_contents()
    assert ticks and not any("." in tick for tick in ticks), (
        ticks
    )  # hours and dates, no fractions of a second
    assert rate.locator(".scatterlayer .point").count() == 1  # one point, not three dots
    assert rate.locator(".errorbars .errorbar").count() == 1
    assert "No value to plot yet" in savings.locator(".annotation-text").text_content()
    assert savings.locator(".xtick").count() == 0  # no empty axes
    assert page.locator("#metric-savings td.value").inner_text() == "undefined"  # the numbers beside
    assert page.locator("#metric-detection_rate td.value").inner_text() == "0.5146"
