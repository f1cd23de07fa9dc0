"""A real headless Chromium, a real Celery worker: an editor fuses two runs from the team's page, first
with a weight missing (refused beside the field), then with weights optimised on the qrels; the worker
fuses them, the page shows each fold's held-out score, and the fused run is a run of the team with a
link back to how it was made."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from evalplatform.models import Team
from monitoring.files import uploads
from monitoring.models import Fusion, Run
from tests.conftest import THEO, WorkerProcess, browser_log_in, screenshot_path
from tests.monitoring.conftest import synthetic_collection, upload

QRELS, RUN = synthetic_collection(queries=15, docs=20)
JOB_TIMEOUT = 90_000


@pytest.mark.services
@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_editor_fuses_two_runs_with_optimised_weights_through_the_web(
    page: Any, live_server: Any, celery_worker_process: WorkerProcess, team: Team, theo: User
) -> None:
    qrels = uploads.qrels_upload(
        team=team, upload=upload("judged.qrels", QRELS), name="pilot", uploaded_by=theo
    )
    bm25 = uploads.run_upload(team=team, upload=upload("bm25.run", RUN(1, 1.5, "bm25")), uploaded_by=theo)
    dense = uploads.run_upload(team=team, upload=upload("dense.run", RUN(2, 0.4, "dense")), uploaded_by=theo)
    browser_log_in(page, live_server, THEO.username, THEO.password)
    page.get_by_role("link", name="Search", exact=True).click()
    page.get_by_role("link", name="Fuse runs").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Fuse runs"

    page.get_by_label(f"bm25 (#{bm25.pk})").check()
    page.get_by_label(f"dense (#{dense.pk})").check()
    page.get_by_label("Method", exact=True).select_option("wsum")
    page.get_by_label("Weights", exact=True).fill("0.5")
    page.get_by_role("button", name="Fuse").click()
    assert (
        page.locator("#id_weights ~ [role=alert]").inner_text()
        == "Give one weight per run: 1 weights for 2 runs."
    )

    page.get_by_label("Weights", exact=True).fill("")
    page.get_by_label("Optimise on", exact=True).select_option(str(qrels.pk))
    page.get_by_label("Folds", exact=True).fill("3")
    page.get_by_label("Weight grid step", exact=True).fill("0.25")
    page.get_by_label("Name of the fused run", exact=True).fill("hybrid")
    page.get_by_role("button", name="Fuse").click()
    assert page.get_by_role("heading", level=1).inner_text().startswith("Fusion #")
    try:
        page.wait_for_selector("#fused-run", timeout=JOB_TIMEOUT)  # the page polls and reloads when done
    except Exception:
        jobs = list(Fusion.objects.values("pk", "status", "error", "attempts"))
        raise AssertionError(
            f"no fused run on {page.url}; {jobs}; worker log:\n{celery_worker_process.log()[-4000:]}"
        ) from None
    fusion = Fusion.objects.get()
    assert fusion.optimization is not None
    assert f"{fusion.optimization['mean_test_score']:.4f}" in page.locator("#held-out").inner_text()
    assert page.locator("#fusion-folds tbody tr").count() == 3
    page.screenshot(path=str(screenshot_path("fusion.png")), full_page=True)

    page.locator("#fused-run").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Run hybrid"
    assert "Made by fusion" in page.locator("#run-fusion").inner_text()
    assert Run.objects.get(name="hybrid").num_queries == 15
