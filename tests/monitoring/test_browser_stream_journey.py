"""A real headless Chromium walks an editor's stream journey without the API or the command line: a new
stream from the team page (its parameter fields with their defaults), a reference (.npy) and a snapshot
(JSON vectors) uploaded through the progress script, "monitor now", and the dashboard with two chosen
metrics kept in the address.

The dashboard with its chosen metrics is saved at 1280 px wide (to docs/stream-dashboard-picked.png with
UPDATE_SCREENSHOTS=1).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User

from evalplatform.jobs import JobStatus
from evalplatform.models import Team
from monitoring.embeddings import services as monitors
from monitoring.models import EmbeddingStream, MonitorRun
from tests.conftest import THEO, browser_log_in, screenshot_path
from tests.monitoring.test_streams import PARAMS, embeddings

SCREENSHOT = screenshot_path("stream-dashboard-picked.png")
DIM = 16


def run_queued_monitors() -> None:
    """What the worker does with the runs "monitor now" and the reference's upload queued."""
    for run in MonitorRun.objects.filter(status=JobStatus.PENDING).order_by("pk"):
        monitors.monitor_run(run_id=run.pk)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_editor_creates_uploads_monitors_and_reads_a_chosen_dashboard(
    page: Any, live_server: Any, team: Team, theo: User, queued: Any, tmp_path: Path
) -> None:
    reference = tmp_path / "reference.npy"
    np.save(reference, embeddings(300, seed=1, dim=DIM))
    vectors = tmp_path / "today.json"
    vectors.write_text(json.dumps(embeddings(300, seed=2, shift=0.8, dim=DIM).tolist()))
    uploads: list[str] = []
    page.on(
        "request",
        lambda request: (
            uploads.append(request.headers.get("accept", ""))
            if request.method == "POST" and request.url.endswith("/upload/")
            else None
        ),
    )
    browser_log_in(page, live_server, THEO.username, THEO.password)
    page.goto(f"{live_server.url}/teams/search/")
    page.get_by_role("link", name="New stream").click()
    assert page.get_by_label("N permutations").input_value() == "200"  # the default, shown
    page.get_by_label("Name", exact=True).fill("Doc encoder")
    page.get_by_label("Slug", exact=True).fill("doc-encoder")
    page.get_by_label("Dimension", exact=True).fill(str(DIM))
    for name, value in PARAMS.items():
        page.get_by_label(name.replace("_", " ").capitalize(), exact=True).fill(str(value))
    page.get_by_role("button", name="Create the stream").click()
    page.wait_for_url(f"{live_server.url}/teams/search/streams/doc-encoder/upload/")
    stream = EmbeddingStream.objects.get(slug="doc-encoder")
    assert stream.params == PARAMS

    page.get_by_label("File", exact=True).set_input_files(str(reference))
    page.get_by_label("Reference", exact=True).check()
    page.get_by_role("button", name="Upload").click()
    dashboard = f"{live_server.url}/teams/search/streams/doc-encoder/"
    page.wait_for_url(dashboard)
    page.get_by_role("link", name="Upload a snapshot or a reference").click()
    page.get_by_label("File", exact=True).set_input_files(str(vectors))
    page.get_by_role("button", name="Upload").click()
    page.wait_for_url(dashboard)
    assert uploads == ["application/json"] * 2  # sent by the progress script, not a plain form post
    assert stream.snapshots.count() == 2

    page.get_by_role("button", name="Monitor now").click()
    page.wait_for_url(dashboard + "#runs-heading")
    assert "Queued 2 monitor run(s)" in page.locator("body").inner_text()
    run_queued_monitors()
    page.goto(dashboard)
    summary = page.locator("#stream-summary")
    assert summary.locator("tbody").count() == 3  # drift, collapse, quality
    for box in page.locator("#metric-picker input[name=metric]").all():
        box.uncheck()
    page.get_by_label("MMD²").check()
    page.get_by_label("Uniformity (t=2)").check()
    page.get_by_role("button", name="Show the ticked charts").click()
    page.wait_for_url(dashboard + "?metric=mmd2&metric=uniformity")
    page.wait_for_selector("#figure-spectrum-chart.js-plotly-plot .main-svg")
    assert page.locator(".chart.js-plotly-plot").count() == 3  # the two chosen, and the scree
    assert page.locator(".group-heading").all_inner_texts() == ["Drift", "Quality"]
    assert page.locator("#metric-mmd2 td.value").count() == 1  # the reference's own run has no drift
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    assert SCREENSHOT.stat().st_size > 20_000
