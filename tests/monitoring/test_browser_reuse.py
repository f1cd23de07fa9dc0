"""The reusability page in a real headless Chromium: the verdicts, the full and left-out bars drawn from the
numbers the table beside them shows, and the planner (issue 23)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from evalplatform.models import Team
from monitoring.reuse import services
from tests.conftest import THEO, browser_log_in
from tests.monitoring.conftest import synthetic_collection, upload
from tests.monitoring.test_reuse import QUALITIES, add_runs, run_now


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_it_draws_the_leave_one_out_bars_beside_their_numbers(
    page: Any, live_server: Any, team: Team, theo: User
) -> None:
    from monitoring.files import uploads

    qrels_text, make_run = synthetic_collection(queries=8, docs=30, seed=1)
    source = uploads.qrels_upload(
        team=team, upload=upload("judged.qrels", qrels_text), name="judged", uploaded_by=theo
    )
    add_runs(
        team, theo, source, [(name, make_run(i, q), tags) for i, (name, q, tags) in enumerate(QUALITIES)]
    )
    analysis = run_now(
        services.reuse_analysis_create(qrels=source, kind="reusability", params={"depth": 5}, created_by=theo)
    )

    page.set_viewport_size({"width": 1400, "height": 900})
    browser_log_in(page, live_server, THEO.username, THEO.password)
    page.goto(f"{live_server.url}/teams/{team.slug}/qrels/{source.pk}/reuse/")
    page.wait_for_selector("#figure-reuse-chart.js-plotly-plot .main-svg")

    traces = page.evaluate(
        "() => document.getElementById('figure-reuse-chart').data.map(t => ({name: t.name, x: t.x, y: t.y}))"
    )
    rows = analysis.result["runs"]
    assert [t["name"] for t in traces] == ["full qrels", "left out"]
    assert traces[0]["x"] == [r["run"] for r in rows]
    assert traces[1]["y"] == pytest.approx([r["left_out"]["map"] for r in rows])
    assert page.locator("#figure-reuse-chart .bars .point").count() == 2 * len(rows)

    table = page.locator("#reuse-table tbody tr")
    assert table.count() == len(rows)
    first = table.first.locator("td").all_inner_texts()
    assert first[2] == f"{rows[0]['left_out']['map']:.4f}"
    verdicts = page.locator("#verdicts li").all_inner_texts()
    assert len(verdicts) == 4 and all("Judged@10" in v for v in verdicts)
    assert page.locator("#planner-table tbody tr").count() == 3
    assert page.locator("#run-reusability").is_visible()
