"""The leaderboard in a real headless Chromium: runs of one name drawn as bars of their own, and a table of
many measures that scrolls in its own box rather than being cut off at the page's edge."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from evalplatform.models import Team
from monitoring.models import QrelsSource, Run
from tests.conftest import THEO, browser_log_in
from tests.monitoring.test_pages import stored_evaluation

MEASURES = ["map", "P_5", "P_10", "P_20", "P_30", "P_100", "ndcg", "ndcg_cut_5", "ndcg_cut_10", "ndcg_cut_20",
            "recall_5", "recall_10", "recall_100", "Rprec", "bpref", "recip_rank"]  # fmt: skip


@pytest.fixture
def nightly(team: Team, theo: User) -> QrelsSource:
    """Two nightly runs uploaded under one name, and a third run, each with many measures."""
    qrels = QrelsSource.objects.create(team=team, name="judged", kind="upload", file="qrels/j.qrels")
    for name, value in [("bm25-noisy", 0.354), ("bm25-noisy", 0.340), ("dense", 0.2)]:
        run = Run.objects.create(team=team, name=name, file=f"runs/{name}.run")
        stored_evaluation(run, qrels, {measure: value for measure in MEASURES})
    return qrels


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_it_draws_same_name_runs_apart_and_scrolls_a_wide_table(
    page: Any, live_server: Any, nightly: QrelsSource
) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    browser_log_in(page, live_server, THEO.username, THEO.password)
    page.goto(f"{live_server.url}/teams/search/leaderboard/{nightly.pk}/?sort=map")
    page.wait_for_selector("#figure-leaderboard-chart.js-plotly-plot .main-svg")

    bars = page.evaluate(
        """() => { const trace = document.getElementById('figure-leaderboard-chart').data[0];
                   return {x: trace.x, y: trace.y}; }"""
    )
    assert len(set(bars["x"])) == 3 and bars["y"] == [0.354, 0.340, 0.2]
    assert page.locator("#figure-leaderboard-chart .bars .point").count() == 3
    tallest = page.evaluate(
        """() => Math.max(...[...document.querySelectorAll('#figure-leaderboard-chart .bars .point path')]
                   .map(bar => bar.getBBox().height))"""
    )
    axis = page.evaluate("() => document.getElementById('figure-leaderboard-chart')._fullLayout.yaxis.range")
    assert axis[1] < 1.1  # no bar stacked to 0.69 and beyond

    names = page.locator("#leaderboard-table tbody th[scope=row]").all_inner_texts()
    assert len(set(names)) == 3 and sum(name.startswith("bm25-noisy") for name in names) == 2
    assert tallest > 0

    # The table is wider than the page: it scrolls in its own box, and its last column can be reached.
    wrap = page.locator("#leaderboard-table").locator("xpath=..")
    sizes = wrap.evaluate("(box) => ({scroll: box.scrollWidth, client: box.clientWidth, "
                          "overflow: getComputedStyle(box).overflowX})")  # fmt: skip
    assert sizes["scroll"] > sizes["client"] and sizes["overflow"] == "auto"
    last = page.locator("#leaderboard-table thead th").last
    last.scroll_into_view_if_needed()
    box, view = last.bounding_box(), page.viewport_size
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= view["width"]
    assert page.evaluate("() => document.documentElement.scrollWidth") <= view["width"]
    # Scrolled to its end, the table still names each row's run.
    frame = wrap.bounding_box()
    for name in page.locator("#leaderboard-table tbody th[scope=row]").all():
        cell = name.bounding_box()
        assert (
            cell is not None and frame is not None and frame["x"] <= cell["x"] < frame["x"] + frame["width"]
        )
