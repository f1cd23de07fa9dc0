"""Embedding streams from the browser: a new stream (its parameter fields from `MonitorParams` with their
bounds), an upload (.npy or JSON vectors; JSON answers for the progress script), "monitor now", the
recompute offered after a new reference; and the dashboard's groups, summary and chosen metrics."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from evalcore.embeddings import PARAM_BOUNDS, MonitorParams
from evalplatform.jobs import JobStatus
from evalplatform.models import Team
from monitoring.embeddings import services as monitors
from monitoring.embeddings.forms import PARAM_NAMES, StreamForm
from monitoring.models import EmbeddingSnapshot, EmbeddingStream, MonitorRun
from tests.conftest import QueuedTasks
from tests.monitoring.test_streams import DIM, PARAMS, embeddings, make_stream, npy_bytes, npy_upload
from tests.monitoring.test_streams_pages import figures, rows

TEAM_URL = "/teams/search/"
PAGE = "/teams/search/streams/query-encoder/"


def monitor_all(stream: EmbeddingStream) -> None:
    for run in monitors.stream_monitor_now(stream=stream, enqueue=False):
        monitors.monitor_run(run_id=run.pk)


@pytest.fixture
def monitored(team: Team, queued: QueuedTasks) -> EmbeddingStream:
    stream = make_stream(team)
    reference = monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(400, seed=1), "ref.npy"))
    monitors.stream_reference_set(stream=stream, snapshot=reference, enqueue=False)
    monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(400, seed=2, shift=0.5), "s.npy"))
    monitor_all(stream)
    return stream


@pytest.mark.django_db
class TestStreamForm:
    def test_it_makes_a_field_per_parameter_with_its_default_and_bound(self, team: Team) -> None:
        form = StreamForm(team=team)
        assert [field.name for field in form.param_fields()] == list(PARAM_NAMES)
        assert tuple(MonitorParams().to_dict()) == PARAM_NAMES
        permutations = form.fields["n_permutations"]
        assert permutations.initial == 200 and permutations.max_value == 100_000
        assert permutations.help_text == "Default 200; an integer from 0 to 100,000."
        assert form.fields["dimension_test"].choices == [("ks", "ks"), ("psi", "psi")]
        assert form.fields["bandwidth"].required is False
        assert PARAM_BOUNDS["alpha"].text() in form.fields["alpha"].help_text

    def test_it_creates_a_stream_keeping_only_the_changed_parameters(
        self, client: Client, theo: User, team: Team
    ) -> None:
        client.force_login(theo)
        data = {"name": "Encoder", "slug": "enc", "dimension": DIM, "every_minutes": 60, "crontab": ""}
        data |= {name: value for name, value in MonitorParams().to_dict().items() if value is not None}
        data |= {"n_permutations": 100, "dead_relative": "on"}
        response = client.post(TEAM_URL + "streams/new/", data)
        assert response.status_code == 302 and response["Location"] == TEAM_URL + "streams/enc/upload/"
        stream = EmbeddingStream.objects.get(team=team, slug="enc")
        assert stream.params == {"n_permutations": 100}
        assert stream.every_minutes == 60 and stream.periodic_task is not None
        assert stream.monitor_runs.count() == 0 and stream.name == "Encoder"

    def test_it_shows_each_refusal_beside_its_field(self, client: Client, theo: User, team: Team) -> None:
        client.force_login(theo)
        data = {
            "name": "Encoder",
            "slug": "new",
            "dimension": DIM,
            "every_minutes": 5,
            "crontab": "* * * * *",
        }
        data |= {name: value for name, value in MonitorParams().to_dict().items() if value is not None}
        data |= {"alpha": 1.5, "n_permutations": 10**6}
        response = client.post(TEAM_URL + "streams/new/", data)
        assert response.status_code == 400
        errors = response.context["form"].errors
        assert errors["slug"] == ["“new” is the address of the new-stream page: choose another."]
        assert errors["every_minutes"] == ["Choose every_minutes or a crontab, not both."]
        assert errors["alpha"] == ["alpha must be strictly between 0 and 1, got 1.5"]
        assert errors["n_permutations"] == ["Ensure this value is less than or equal to 100000."]
        assert not EmbeddingStream.objects.filter(slug="new").exists()

    def test_it_keeps_viewers_out(self, client: Client, vera: User, team: Team) -> None:
        client.force_login(vera)
        assert client.get(TEAM_URL + "streams/new/").status_code == 403


@pytest.mark.django_db
class TestUpload:
    def test_it_keeps_a_reference_then_a_snapshot_and_answers_the_progress_script_in_json(
        self, client: Client, theo: User, team: Team, queued: QueuedTasks
    ) -> None:
        stream = make_stream(team)
        client.force_login(theo)
        upload = PAGE + "upload/"
        reference = SimpleUploadedFile("ref.npy", npy_bytes(embeddings(50, seed=1)))
        response = client.post(upload, {"file": reference, "reference": "on"}, HTTP_ACCEPT="application/json")
        assert response.status_code == 201 and response.json() == {"redirect": PAGE}
        stream.refresh_from_db()
        assert stream.reference is not None and stream.reference.rows == 50
        vectors = json.dumps(embeddings(3, seed=2).tolist()).encode()
        response = client.post(upload, {"file": SimpleUploadedFile("batch.json", vectors), "label": ""})
        assert response.status_code == 302 and response["Location"] == PAGE
        snapshot = stream.snapshots.get(kind=EmbeddingSnapshot.Kind.CURRENT)
        assert (snapshot.rows, snapshot.label, snapshot.dtype) == (3, "batch", "float32")

    def test_it_refuses_a_file_of_the_wrong_width_beside_the_file_field(
        self, client: Client, theo: User, team: Team
    ) -> None:
        make_stream(team)
        client.force_login(theo)
        wrong = SimpleUploadedFile("wide.npy", npy_bytes(embeddings(10, seed=1, dim=DIM + 1)))
        response = client.post(PAGE + "upload/", {"file": wrong}, HTTP_ACCEPT="application/json")
        assert response.status_code == 400
        assert response.json() == {
            "errors": {"file": [f"wide.npy: {DIM + 1} columns, but the stream's dimension is {DIM}"]}
        }
        bad_json = SimpleUploadedFile("v.json", b"[[1, 2]]")
        response = client.post(PAGE + "upload/", {"file": bad_json})
        assert response.status_code == 400
        assert response.context["form"].errors["file"] == ["v.json: Send a list of at least 2 vectors."]
        assert EmbeddingSnapshot.objects.count() == 0


@pytest.mark.django_db
class TestMonitorNowAndRecompute:
    def test_monitor_now_queues_a_run_for_every_new_snapshot(
        self, client: Client, theo: User, team: Team, queued: QueuedTasks
    ) -> None:
        stream = make_stream(team)
        for seed in (1, 2):
            monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(20, seed=seed)))
        client.force_login(theo)
        response = client.post(PAGE + "monitor/")
        assert response.status_code == 302 and response["Location"] == PAGE + "#runs-heading"
        assert stream.monitor_runs.count() == 2
        assert client.get(PAGE + "monitor/").status_code == 405
        assert 'id="monitor-now"' in client.get(PAGE).content.decode()

    def test_a_new_reference_offers_and_recomputes_the_earlier_runs_once(
        self, client: Client, theo: User, monitored: EmbeddingStream, queued: QueuedTasks
    ) -> None:
        client.force_login(theo)
        new_reference = SimpleUploadedFile("ref2.npy", npy_bytes(embeddings(400, seed=7)))
        response = client.post(PAGE + "upload/", {"file": new_reference, "reference": "on"})
        assert response.status_code == 302 and response["Location"] == PAGE + "recompute/"
        page = client.get(PAGE + "recompute/")
        assert page.status_code == 200 and "2 snapshot(s) monitored against an earlier reference" in (
            page.content.decode()
        )
        assert client.post(PAGE + "recompute/", {}).status_code == 400  # a stray POST changes nothing
        monitored.refresh_from_db()
        before = MonitorRun.objects.filter(stream=monitored).count()
        response = client.post(PAGE + "recompute/", {"confirm": "recompute query-encoder"})
        assert response.status_code == 302
        against_new = MonitorRun.objects.filter(stream=monitored, reference=monitored.reference)
        # The old reference and the snapshot, against the new one; plus the new reference's own run.
        assert against_new.count() == 3 and MonitorRun.objects.filter(stream=monitored).count() == before + 2
        assert monitors.stream_recompute(stream=monitored) == []  # idempotent: asked again, none made
        assert MonitorRun.objects.filter(stream=monitored).count() == before + 2
        for run in against_new:
            monitors.monitor_run(run_id=run.pk)
        assert monitors.stream_recompute_pending(stream=monitored) == 0
        # The dashboard shows one point per snapshot: its run against the current reference.
        series = {s.metric: s for s in monitors.stream_series(stream=monitored)}
        mmd = series["mmd2"]
        assert len(mmd.points) == 2
        assert {p.run_id for p in mmd.points} <= set(against_new.values_list("pk", flat=True))
        assert [(run.status, run.error) for run in against_new.all()] == [(JobStatus.DONE, "")] * 3


@pytest.mark.django_db
class TestDashboardChoice:
    def test_it_groups_the_summary_and_charts_only_the_chosen_metrics_kept_in_the_url(
        self, client: Client, vera: User, monitored: EmbeddingStream
    ) -> None:
        client.force_login(vera)
        with CaptureQueriesContext(connection) as queries:
            response = client.get(PAGE + "?metric=mmd2&metric=uniformity&metric=nope")
        assert response.status_code == 200
        assert (
            len(queries) <= 15
        )  # 14 today: session, user, membership, stream, runs, values, rules, events...
        html = response.content.decode()
        charts = figures(html)
        titles = sorted(
            f["layout"]["title"]["text"] for name, f in charts.items() if name != "figure-spectrum"
        )
        assert [title.rsplit(" ", 1)[1] for title in titles] == [
            "(mmd2)",
            "(uniformity)",
        ]  # figures: chosen only
        assert re.findall(r'id="group-(\w+)"', html) == ["drift", "quality"]
        assert 'id="monitor-now"' not in html and "/upload/" not in html  # a viewer reads only
        assert re.findall(r'<tbody id="summary-(\w+)"', html) == ["drift", "collapse", "quality"]
        assert 'name="metric" value="mmd2" id="pick-mmd2" checked' in html
        assert 'value="dead_dim_ratio" id="pick-dead_dim_ratio">' in html  # not ticked
        latest = next(s for s in monitors.stream_series(stream=monitored) if s.metric == "mmd2").points[-1]
        row = re.search(r'<tr id="summary-mmd2".*?</tr>', html, re.S)
        assert row is not None and f"{latest.value:.4f}" in row[0]
        rule = re.search(r'<tr id="summary-dead_dim_ratio".*?</tr>', html, re.S)
        assert rule is not None and "&gt; 0.1" in rule[0]

    def test_the_query_count_does_not_grow_with_the_charts_shown(
        self, client: Client, vera: User, monitored: EmbeddingStream
    ) -> None:
        client.force_login(vera)
        counts = []
        for query in ("?metric=mmd2", "?all=1"):
            with CaptureQueriesContext(connection) as queries:
                assert client.get(PAGE + query).status_code == 200
            counts.append(len(queries))
        assert counts[0] == counts[1]

    def test_each_chart_links_its_own_csv(
        self, client: Client, vera: User, monitored: EmbeddingStream
    ) -> None:
        client.force_login(vera)
        response = client.get(PAGE + "series.csv?metric=mmd2")
        table = rows(response)
        assert list(table[0]) == ["observed_at", "run", "snapshot", "is_reference", "mmd2"]
        latest = next(s for s in monitors.stream_series(stream=monitored) if s.metric == "mmd2").points[-1]
        assert float(table[-1]["mmd2"]) == pytest.approx(latest.value)
        assert 'series.csv?metric=mmd2"' in client.get(PAGE + "?metric=mmd2").content.decode()


def test_the_parameters_in_the_stream_fixture_stay_within_their_bounds() -> None:
    for name, value in PARAMS.items():
        PARAM_BOUNDS[name].check(value, name=name)


@pytest.mark.django_db
def test_the_api_recomputes_against_a_new_reference_once(
    client: Client, theo: User, monitored: EmbeddingStream, queued: QueuedTasks
) -> None:
    client.force_login(theo)
    url = "/api/teams/search/streams/query-encoder/recompute/"
    assert client.post(url, {}, content_type="application/json").json() == []  # nothing to recompute yet
    reference = monitors.snapshot_upload(
        stream=monitored, upload=npy_upload(embeddings(400, seed=9), "r2.npy")
    )
    monitors.stream_reference_set(stream=monitored, snapshot=reference, enqueue=False)
    response = client.post(url, {}, content_type="application/json")
    assert response.status_code == 202
    body = response.json()
    assert [run["reference"] for run in body] == [reference.pk, reference.pk]
    assert [run["snapshot"] for run in body] == list(
        monitored.snapshots.exclude(pk=reference.pk)
        .order_by("observed_at", "pk")
        .values_list("pk", flat=True)
    )
    assert client.post(url, {}, content_type="application/json").json() == []
