"""The judging loop in a real headless Chromium (issue 23): coverage warnings and "judge the gaps" on the
leaderboard, then a new qrels version's diff page, its chart drawn with the numbers beside it."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from annotations.models import Task
from monitoring.evaluations import loop
from monitoring.evaluations import services as evaluations
from monitoring.models import GapsRequest, QrelsSource
from tests.conftest import THEO, browser_log_in
from tests.monitoring import test_judging_loop

linked, carol = test_judging_loop.linked, test_judging_loop.carol


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_lead_judges_the_gaps_and_reads_the_new_versions_diff(
    page: Any, live_server: Any, linked: dict[str, Any], carol: User
) -> None:
    project, source = linked["project"], linked["source"]
    page.set_viewport_size({"width": 1400, "height": 900})
    browser_log_in(page, live_server, THEO.username, THEO.password)
    page.goto(f"{live_server.url}/teams/search/leaderboard/{source.pk}/")
    assert page.locator("#leaderboard-table .coverage-warning").count() == 2
    before = Task.objects.filter(project=project).count()
    good = next(run for run in linked["runs"] if run.name == "good")
    page.locator(f"button[data-run='{good.pk}']").click()
    page.wait_for_selector(".messages .message")
    assert (
        "Judging the gaps of good in its top 10: queued." in page.locator(".messages .message").inner_text()
    )
    # The job (a worker's, run here): the leaderboard's table of gap requests then says what it added.
    job = GapsRequest.objects.get(run=good)
    loop.gaps_request_run(request_id=job.pk)  # "busy" if a live worker of the session took it first
    assert test_judging_loop.wait_for(lambda: GapsRequest.objects.get(pk=job.pk).status == "done")
    page.reload()
    outcome = page.locator("#gap-requests tbody tr").first.inner_text()
    assert "6 added to web as tasks, 3 already tasks, 5 skipped" in outcome
    assert Task.objects.filter(project=project).count() == before + 6

    # The annotators judge every task; a new version re-scores both runs on it.
    v2 = test_judging_loop.build_version(project, carol, list(Task.objects.filter(project=project)))
    for evaluation in loop.qrels_build_rescore(build_id=v2.pk):
        evaluations.evaluation_run(evaluation_id=evaluation.pk)
    v2_source = QrelsSource.objects.get(build=v2)
    page.goto(f"{live_server.url}/teams/search/leaderboard/{v2_source.pk}/")
    page.locator("#compare-previous").click()
    page.wait_for_selector("#figure-diff-chart.js-plotly-plot .main-svg")
    assert "web v1 → web v2" in page.locator("h1").inner_text()
    bars = page.evaluate(
        """() => document.getElementById('figure-diff-chart').data.map(t => ({name: t.name, y: t.y}))"""
    )
    assert [trace["name"] for trace in bars] == ["web v1", "web v2"]
    numbers = page.locator("#chart-numbers tbody tr").all()
    shown = [[float(cell) for cell in row.locator("td").all_inner_texts()[:2]] for row in numbers]
    assert [
        [round(old, 4), round(new, 4)] for old, new in zip(bars[0]["y"], bars[1]["y"], strict=True)
    ] == shown
    assert page.locator("#figure-diff-chart .bars .point").count() == 4
    assert page.locator("#tau-table tbody tr").count() == 4  # map, P_5, Judged@10, Judged@100
