"""The stream dashboard: a chart per metric with its numbers, thresholds and alert markers, the scree of the
latest snapshot against the reference, the alerts (editors acknowledge them), the runs; CSVs of every chart;
the team page's streams; permissions and a fixed number of queries."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from evalplatform.models import Team
from monitoring.embeddings import services as monitors
from monitoring.models import AlertEvent, EmbeddingStream
from tests.conftest import QueuedTasks, remote_assets
from tests.monitoring.conftest import alerts_checked
from tests.monitoring.test_streams import DIM, embeddings, make_stream, npy_upload

PAGE = "/teams/search/streams/query-encoder/"


@pytest.fixture
def monitored(team: Team, queued: QueuedTasks) -> EmbeddingStream:
    """A stream with a reference, a healthy and a collapsed snapshot, all monitored."""
    stream = make_stream(team, every_minutes=30)
    reference = monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(600, seed=1), "ref.npy"))
    monitors.stream_reference_set(stream=stream, snapshot=reference, enqueue=False)
    for seed, collapse in ((2, False), (3, True)):
        upload = npy_upload(
            embeddings(600, seed=seed, collapse=collapse), f"{'bad' if collapse else 'good'}.npy"
        )
        monitors.snapshot_upload(stream=stream, upload=upload)
    with alerts_checked():  # checked here, as the worker's alert task would
        for run in monitors.stream_monitor_now(stream=stream, enqueue=False):
            monitors.monitor_run(run_id=run.pk)
    return stream


def figures(html: str) -> dict[str, Any]:
    """The page's figures by id (not its other JSON block, the charts' template)."""
    found = re.findall(r'<script id="(figure-[^"]+)" type="application/json">(.*?)</script>', html, re.S)
    return {name: json.loads(body) for name, body in found}


def rows(response: Any) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(response.content.decode())))


@pytest.mark.django_db
class TestDashboard:
    def test_it_draws_each_metric_with_its_threshold_and_alert_markers(
        self, client: Client, vera: User, monitored: EmbeddingStream
    ) -> None:
        client.force_login(vera)
        response = client.get(PAGE + "?all=1")
        assert response.status_code == 200
        html = response.content.decode()
        charts = figures(html)
        dead = next(
            figure
            for figure in charts.values()
            if figure["layout"]["title"]["text"].endswith("(dead_dim_ratio)")
        )
        names = [trace["name"] for trace in dead["data"]]
        assert names == ["dead_dim_ratio", "dead_dimensions: > 0.1", "alert opened"]
        assert dead["data"][0]["y"] == [0.0, 0.0, 0.25]
        assert dead["data"][1]["y"] == [0.1, 0.1] and dead["data"][1]["line"]["dash"] == "dash"
        assert dead["data"][2]["y"] == [0.25]
        assert len(charts) == len(monitors.QUALITY_METRICS) + len(monitors.DRIFT_METRICS) + 1  # + the scree
        scree = charts["figure-spectrum"]
        assert scree["layout"]["yaxis"]["type"] == "log"
        assert [trace["name"].split(" ")[0] for trace in scree["data"]] == ["reference", "snapshot"]
        assert "plotly" in html and remote_assets(html) == []
        # The numbers beside: the table of the dead-dimension chart, and the alert list.
        assert '<table class="data" id="stream-alerts">' in html
        assert "dead_dimensions" in html and "Acknowledge" not in html  # vera only views
        assert html.count('<td class="num value">') == 3 * len(monitors.QUALITY_METRICS) + 2 * len(
            monitors.DRIFT_METRICS
        )
        assert 'id="spectrum-numbers"' in html and html.count('<tr><th scope="row" class="num">') == DIM

    def test_it_lets_an_editor_acknowledge_an_alert_and_comes_back(
        self, client: Client, theo: User, monitored: EmbeddingStream
    ) -> None:
        client.force_login(theo)
        html = client.get(PAGE).content.decode()
        event = AlertEvent.objects.get(rule__name="dead_dimensions")
        form = re.search(
            rf'action="(/teams/search/alerts/{event.pk}/acknowledge/)".*?name="next" value="([^"]+)"',
            html,
            re.S,
        )
        assert form is not None
        response = client.post(form.group(1), {"next": form.group(2)})
        assert response.status_code == 302 and response["Location"] == f"{PAGE}#alerts-heading"
        event.refresh_from_db()
        assert (event.status, event.acknowledged_by) == ("acknowledged", theo)
        page = client.get(PAGE).content.decode()
        assert "by theo" in page

    def test_it_serves_every_charts_numbers_as_csv(
        self, client: Client, vera: User, monitored: EmbeddingStream
    ) -> None:
        client.force_login(vera)
        series = rows(client.get(PAGE + "series.csv"))
        assert [row["snapshot"] for row in series] == ["ref", "good", "bad"]
        assert [row["is_reference"] for row in series] == ["true", "false", "false"]
        assert series[2]["dead_dim_ratio"] == "0.25" and series[0]["mmd_p_value"] == ""
        spectrum = rows(client.get(PAGE + "spectrum.csv"))
        assert len(spectrum) == DIM and list(spectrum[0]) == [
            "rank",
            "snapshot_eigenvalue",
            "reference_eigenvalue",
        ]
        alerts = rows(client.get(PAGE + "alerts.csv"))
        assert {row["rule"] for row in alerts} == set(AlertEvent.objects.values_list("rule__name", flat=True))
        response = client.get(PAGE + "alerts.csv")
        assert response["Content-Disposition"] == 'attachment; filename="search-query-encoder-alerts.csv"'

    def test_it_reads_in_a_fixed_number_of_queries(
        self, client: Client, vera: User, monitored: EmbeddingStream
    ) -> None:
        client.force_login(vera)
        with CaptureQueriesContext(connection) as queries:
            client.get(PAGE)
        few = len(queries)
        for seed in (4, 5):
            monitors.snapshot_upload(
                stream=monitored, upload=npy_upload(embeddings(300, seed=seed, collapse=True))
            )
        with alerts_checked():  # checked here, as the worker's alert task would
            for run in monitors.stream_monitor_now(stream=monitored, enqueue=False):
                monitors.monitor_run(run_id=run.pk)
        with CaptureQueriesContext(connection) as queries:
            assert client.get(PAGE).status_code == 200
        assert len(queries) == few <= 16, [query["sql"][:120] for query in queries.captured_queries]

    def test_it_says_when_nothing_is_monitored_yet(self, client: Client, vera: User, team: Team) -> None:
        stream = make_stream(team)
        monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(20, seed=0)))
        client.force_login(vera)
        html = client.get(PAGE).content.decode()
        assert html.count("No finished monitor run yet.") == 2 and "No alert on this stream." in html
        assert '<strong id="snapshots-waiting">1</strong>' in html
        assert '<strong id="stream-schedule">not scheduled</strong>' in html

    def test_it_serves_a_runs_state_for_polling(
        self, client: Client, vera: User, monitored: EmbeddingStream
    ) -> None:
        client.force_login(vera)
        run = monitored.monitor_runs.first()
        assert run is not None
        state = client.get(f"{PAGE}runs/{run.pk}.json").json()
        assert state["status"] == "done" and state["percent"] == 100

    def test_it_hides_a_stream_from_another_team(
        self, client: Client, otto: User, monitored: EmbeddingStream
    ) -> None:
        client.force_login(otto)
        for path in (
            "",
            "series.csv",
            "spectrum.csv",
            "alerts.csv",
            f"runs/{monitored.monitor_runs.first().pk}.json",
        ):  # type: ignore[union-attr]
            assert client.get(PAGE + path).status_code == 404, path

    def test_it_asks_anonymous_visitors_to_log_in(self, client: Client, monitored: EmbeddingStream) -> None:
        assert client.get(PAGE).status_code == 302


@pytest.mark.django_db
def test_it_lists_the_teams_streams_on_the_team_page(client: Client, vera: User, team: Team) -> None:
    make_stream(team, every_minutes=15)
    make_stream(team, slug="docs", name="Document encoder", crontab="0 * * * *")
    client.force_login(vera)
    html = client.get("/teams/search/").content.decode()
    assert 'id="stream-table"' in html
    assert f'href="{PAGE}"' in html and "every 15 min" in html and "cron <code>0 * * * *</code>" in html
