# ruff: noqa: F401, F811  (the fixtures of test_judging_loop, imported, are parameters here)
"""The leaderboard's machine-judge columns in a real headless Chromium: chosen in the selector, kept in the
URL as the table is re-sorted, with the job's human-only, machine-only and PPI figures in the table."""

from __future__ import annotations

from typing import Any

import pytest

from annotations.models import MachineJudge
from monitoring.machine_judges.models import MachineJudgeEvaluation
from tests.conftest import THEO, browser_log_in
from tests.monitoring.test_judging_loop import carol, linked
from tests.monitoring.test_machine_judge_leaderboard import computed, judge_create


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_it_shows_the_ppi_columns_of_the_chosen_judge_after_the_job_ran(
    page: Any, live_server: Any, linked: dict[str, Any]
) -> None:
    judge: MachineJudge = judge_create(linked["project"])
    job: MachineJudgeEvaluation = computed(linked, judge)
    source = linked["source"]
    browser_log_in(page, live_server, THEO.username, THEO.password)
    page.goto(f"{live_server.url}/teams/search/leaderboard/{source.pk}/?judge=none&sort=map")
    assert page.locator("#leaderboard-table thead th.ppi").count() == 0

    page.select_option("#judge-select", str(judge.pk))
    page.click("#judge-form button[type=submit]")
    page.wait_for_selector("#ppi-table")
    assert f"judge={judge.pk}" in page.url
    headers = page.locator("#leaderboard-table thead th.ppi").all_inner_texts()
    assert [h.split()[0] for h in headers] == ["Human", "Machine", "PPI"]

    page.click("#leaderboard-table thead a:has-text('P@5'), #leaderboard-table thead a:has-text('P_5')")
    page.wait_for_load_state()
    assert f"judge={judge.pk}" in page.url and "sort=P_5" in page.url
    row = page.locator("#leaderboard-table tbody tr", has_text=linked["runs"][0].name)
    cells = row.locator("td.ppi").all_inner_texts()
    want = job.estimates_of(linked["runs"][0].pk)["P_5"]
    for text, name in zip(cells, ("human_only", "machine_only", "ppi"), strict=True):
        assert text.startswith(f"{want[name]['estimate']:.4f}")
        if want[name]["ci_low"] is not None:
            assert f"[{want[name]['ci_low']:.4f}, {want[name]['ci_high']:.4f}]" in text
    assert page.locator("#compute-ppi").is_visible()  # theo edits the team
