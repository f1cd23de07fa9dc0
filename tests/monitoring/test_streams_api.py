"""The embedding streams' API: streams (create, read, schedule), snapshots (multipart `.npy` or JSON
vectors), monitoring now, runs with their values and spectrum, the series and the stream's alerts.
Viewers read, editors write, other teams get 404s, bad input is a 400 naming the field; list reads run in
a fixed number of queries."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django_celery_beat.models import PeriodicTask

from evalcore.embeddings import MonitorParams
from evalplatform.models import Team
from monitoring.embeddings import services as monitors
from monitoring.models import EmbeddingStream, MonitorRun
from series.subjects import stream_series
from tests.conftest import QueuedTasks
from tests.monitoring.conftest import alerts_checked
from tests.monitoring.test_streams import DIM, PARAMS, embeddings, make_stream, npy_upload

API = "/api/teams/search/streams/"


@pytest.fixture
def editor(client: Client, theo: User, team: Team) -> Client:
    client.force_login(theo)
    return client


@pytest.fixture
def viewer(client: Client, vera: User, team: Team) -> Client:
    client.force_login(vera)
    return client


@pytest.fixture
def stream(team: Team) -> EmbeddingStream:
    return make_stream(team)


@pytest.fixture
def monitored(stream: EmbeddingStream, queued: QueuedTasks) -> EmbeddingStream:
    """A stream with a reference and a collapsed snapshot, both monitored (in this process)."""
    reference = monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(600, seed=1), "ref.npy"))
    monitors.stream_reference_set(stream=stream, snapshot=reference, enqueue=False)
    monitors.snapshot_upload(
        stream=stream, upload=npy_upload(embeddings(600, seed=2, collapse=True), "bad.npy")
    )
    with alerts_checked():  # checked here, as the worker's alert task would
        for run in monitors.stream_monitor_now(stream=stream, enqueue=False):
            monitors.monitor_run(run_id=run.pk)
    return stream


def post_json(client: Client, url: str, body: Any, **extra: Any) -> Any:
    return client.post(url, body, content_type="application/json", **extra)


def put_json(client: Client, url: str, body: Any) -> Any:
    return client.put(url, body, content_type="application/json")


@pytest.mark.django_db
class TestStreams:
    def test_it_creates_a_scheduled_stream_with_the_default_rules(self, editor: Client) -> None:
        body = {"slug": "docs", "name": "Document encoder", "dimension": 768, "every_minutes": 30,
                "params": {"n_permutations": 500}}  # fmt: skip
        response = post_json(editor, API, body)
        assert response.status_code == 201, response.json()
        data = response.json()
        assert (data["slug"], data["dimension"], data["schedule"], data["reference"]) == (
            "docs", 768, "every 30 minutes", None,
        )  # fmt: skip
        assert data["params"] == {"n_permutations": 500}
        assert data["periodic_task"]["enabled"] is True and data["periodic_task"]["total_run_count"] == 0
        assert data["url"].endswith("/api/teams/search/streams/docs/")
        assert data["dashboard_url"].endswith("/teams/search/streams/docs/")
        stream = EmbeddingStream.objects.get(slug="docs")
        assert stream_series(stream).alert_rules.count() == 7 and stream.periodic_task is not None

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({"slug": "x", "name": "X"}, "dimension"),
            ({"slug": "x", "name": "X", "dimension": 0}, "dimension"),
            ({"slug": "x", "name": "X", "dimension": 2**31}, "dimension"),  # was a 500 (integer out of range)
            ({"slug": "x y", "name": "X", "dimension": 4}, "slug"),
            ({"slug": "x", "name": "X", "dimension": 4, "crontab": "every day"}, "crontab"),
            (
                {"slug": "x", "name": "X", "dimension": 4, "every_minutes": 5, "crontab": "* * * * *"},
                "every_minutes",
            ),
            ({"slug": "x", "name": "X", "dimension": 4, "params": {"alpha": 5}}, "params"),
            ({"slug": "x", "name": "X", "dimension": 4, "params": {"n_permutations": 2**40}}, "params"),
            ({"slug": "x", "name": "X", "dimension": 4, "params": {"mmd_sample_size": 10**9}}, "params"),
        ],
    )
    def test_it_refuses_a_bad_stream_naming_the_field(
        self, editor: Client, body: dict[str, Any], field: str
    ) -> None:
        response = post_json(editor, API, body)
        assert response.status_code == 400
        assert list(response.json()) == [field]
        assert not EmbeddingStream.objects.exists()

    def test_it_refuses_a_slug_taken_in_the_team(self, editor: Client, stream: EmbeddingStream) -> None:
        response = post_json(editor, API, {"slug": stream.slug, "name": "Again", "dimension": 4})
        assert response.status_code == 400
        assert response.json() == {"slug": ["The team search already has a stream query-encoder."]}

    def test_it_schedules_and_unschedules_a_stream(self, editor: Client, stream: EmbeddingStream) -> None:
        url = f"{API}{stream.slug}/schedule/"
        response = put_json(editor, url, {"crontab": "0 */6 * * *"})
        assert response.status_code == 200
        assert response.json()["schedule"] == "cron 0 */6 * * *"
        task = PeriodicTask.objects.get(task="monitoring.tasks.stream_tick")
        assert task.crontab.hour == "*/6"
        refused = put_json(editor, url, {"crontab": "0 25 * * *"})
        assert refused.status_code == 400
        assert refused.json()["crontab"][0].startswith("'0 25 * * *' is not a cron schedule")
        response = put_json(editor, url, {})
        assert response.json()["schedule"] == "not scheduled" and response.json()["periodic_task"] is None
        assert not PeriodicTask.objects.filter(task="monitoring.tasks.stream_tick").exists()

    def test_it_lets_viewers_read_but_not_write(self, viewer: Client, stream: EmbeddingStream) -> None:
        assert viewer.get(API).json()["count"] == 1
        assert viewer.get(f"{API}{stream.slug}/").status_code == 200
        assert post_json(viewer, API, {"slug": "x", "name": "X", "dimension": 4}).status_code == 403
        assert put_json(viewer, f"{API}{stream.slug}/schedule/", {"every_minutes": 5}).status_code == 403
        assert post_json(viewer, f"{API}{stream.slug}/monitor/", {}).status_code == 403
        response = viewer.post(f"{API}{stream.slug}/snapshots/", {"file": npy_upload(embeddings(4, seed=0))})
        assert response.status_code == 403

    def test_it_hides_another_teams_streams(
        self, client: Client, otto: User, stream: EmbeddingStream
    ) -> None:
        client.force_login(otto)
        for path in ("", f"{stream.slug}/", f"{stream.slug}/snapshots/", f"{stream.slug}/runs/",
                     f"{stream.slug}/series/", f"{stream.slug}/alerts/"):  # fmt: skip
            assert client.get(API + path).status_code == 404, path
        assert client.get("/api/teams/search/streams/nope/").status_code == 404


@pytest.mark.django_db
class TestSnapshots:
    def test_it_takes_a_npy_file_as_multipart(self, editor: Client, stream: EmbeddingStream) -> None:
        body = {
            "file": npy_upload(embeddings(40, seed=0), "monday.npy"),
            "observed_at": "2026-11-20T08:00:00Z",
        }
        response = editor.post(f"{API}{stream.slug}/snapshots/", body)
        assert response.status_code == 201, response.json()
        data = response.json()
        assert (data["kind"], data["label"], data["rows"], data["dimension"], data["dtype"]) == (
            "current", "monday", 40, DIM, "float32",
        )  # fmt: skip
        assert data["observed_at"] == "2026-11-20T08:00:00Z" and data["uploaded_by"] == "theo"
        assert editor.get(data["url"]).json() == data

    def test_it_takes_vectors_as_json_and_makes_a_reference(
        self,
        editor: Client,
        stream: EmbeddingStream,
        queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        vectors = embeddings(6, seed=1).tolist()
        with django_capture_on_commit_callbacks(execute=True):
            response = post_json(
                editor,
                f"{API}{stream.slug}/snapshots/",
                {"vectors": vectors, "reference": True, "label": "ref"},
            )
        assert response.status_code == 201, response.json()
        assert response.json()["kind"] == "reference"
        assert editor.get(f"{API}{stream.slug}/").json()["reference"] == response.json()["id"]
        assert queued.names() == ["monitoring.tasks.monitor_run"]

    @pytest.mark.parametrize(
        ("body", "json_body", "field", "message"),
        [
            (
                {"file": npy_upload(embeddings(5, seed=0, dim=8), "small.npy")},
                False,
                "file",
                "small.npy: 8 columns, but the stream's dimension is 32",
            ),
            (
                {"file": npy_upload(np.ones((5, DIM), dtype=np.int32), "ints.npy")},
                False,
                "file",
                "ints.npy: dtype int32",
            ),
            ({}, False, "file", "Send a .npy file, or vectors as JSON (one of them)."),
            ({"vectors": [[1.0] * DIM, [1.0] * 2]}, True, "vectors", "vector 1: 2 numbers"),
            (
                {"vectors": [[1.0] * DIM] * 3, "observed_at": "yesterday"},
                True,
                "observed_at",
                "Datetime has wrong format",
            ),
        ],
    )
    def test_it_refuses_a_bad_snapshot_naming_the_field(
        self,
        editor: Client,
        stream: EmbeddingStream,
        body: dict[str, Any],
        json_body: bool,
        field: str,
        message: str,
    ) -> None:
        url = f"{API}{stream.slug}/snapshots/"
        response = post_json(editor, url, body) if json_body else editor.post(url, body)
        assert response.status_code == 400
        errors = response.json()
        assert list(errors) == [field] and message in errors[field][0]
        assert not stream.snapshots.exists()

    def test_it_lists_snapshots_newest_first_in_a_fixed_number_of_queries(
        self, viewer: Client, stream: EmbeddingStream
    ) -> None:
        for hour in range(3):
            monitors.snapshot_upload(
                stream=stream, upload=npy_upload(embeddings(4, seed=hour), f"h{hour}.npy"),
                observed_at=datetime(2026, 11, 20, hour, tzinfo=UTC),
            )  # fmt: skip
        with CaptureQueriesContext(connection) as queries:
            data = viewer.get(f"{API}{stream.slug}/snapshots/").json()
        assert [row["label"] for row in data["results"]] == ["h2", "h1", "h0"]
        assert len(queries) <= 8


@pytest.mark.django_db
class TestSnapshotValues:
    """Values a monitor run cannot use are refused at upload, where they stand, as JSON vectors are."""

    @pytest.mark.parametrize(("bad", "name"), [(np.nan, "nan"), (-np.inf, "inf")])
    @pytest.mark.parametrize("dtype", [np.float32, np.float64])
    def test_it_refuses_a_npy_with_a_non_finite_row_naming_it(
        self, editor: Client, stream: EmbeddingStream, bad: float, name: str, dtype: type
    ) -> None:
        array = embeddings(3_000, seed=0).astype(dtype)
        array[2_345, 7] = bad
        array[2_900, 0] = bad
        response = editor.post(f"{API}{stream.slug}/snapshots/", {"file": npy_upload(array, f"{name}.npy")})
        assert response.status_code == 400
        assert response.json() == {"file": [f"{name}.npy: row 2345: NaN or infinite values"]}
        assert not stream.snapshots.exists()

    def test_it_names_the_row_of_a_column_major_npy(self, editor: Client, stream: EmbeddingStream) -> None:
        array = np.asfortranarray(embeddings(50, seed=0))
        array[40, 0] = np.nan  # first in the file's (column) order
        array[12, 5] = np.nan  # the first row
        response = editor.post(f"{API}{stream.slug}/snapshots/", {"file": npy_upload(array, "f.npy")})
        assert response.json() == {"file": ["f.npy: row 12: NaN or infinite values"]}

    @pytest.mark.parametrize(
        ("value", "message"),
        [
            (True, "vector 2: every entry must be a number; component 5 is true"),
            (False, "vector 2: every entry must be a number; component 5 is false"),
            (
                10**40,
                "vector 2: a value past float32's range (±3.4e38) would be stored as infinity (component 5)",
            ),
            (
                10**400,
                "vector 2: a value past float32's range (±3.4e38) would be stored as infinity (component 5)",
            ),
        ],
    )
    def test_it_refuses_json_vectors_with_a_boolean_or_a_huge_integer_where_it_stands(
        self, editor: Client, stream: EmbeddingStream, value: Any, message: str
    ) -> None:
        vectors = embeddings(4, seed=0).tolist()
        vectors[2][5] = value
        body = '{"vectors": ' + str(vectors).replace("True", "true").replace("False", "false") + "}"
        response = editor.post(f"{API}{stream.slug}/snapshots/", body, content_type="application/json")
        assert response.status_code == 400
        assert response.json() == {"vectors": [message]}
        assert not stream.snapshots.exists()


@pytest.mark.django_db(transaction=True)  # runs are queued on commit, inside the request
class TestBrokerDown:
    def test_monitor_answers_503_listing_the_runs_it_could_not_queue(
        self, editor: Client, stream: EmbeddingStream, queued: QueuedTasks
    ) -> None:
        for seed in (1, 2):
            monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(20, seed=seed)))
        queued.broker_down = True
        response = post_json(editor, f"{API}{stream.slug}/monitor/", {})
        assert response.status_code == 503
        runs = response.json()
        assert [run["status"] for run in runs] == ["failed", "failed"]
        assert all("task queue is unreachable" in run["error"] for run in runs)
        queued.broker_down = False
        again = post_json(editor, f"{API}{stream.slug}/monitor/", {})
        assert again.status_code == 202 and [run["status"] for run in again.json()] == ["pending", "pending"]

    def test_a_reference_uploaded_during_an_outage_is_kept_with_a_503_saying_its_run_failed(
        self, editor: Client, stream: EmbeddingStream, queued: QueuedTasks
    ) -> None:
        queued.broker_down = True
        body = {"file": npy_upload(embeddings(20, seed=1), "ref.npy"), "reference": "true"}
        response = editor.post(f"{API}{stream.slug}/snapshots/", body)
        assert response.status_code == 503
        data = response.json()
        assert data["kind"] == "reference" and editor.get(data["url"]).status_code == 200
        run = data["monitor_run"]
        assert run["status"] == "failed" and "task queue is unreachable" in run["error"]
        assert data["detail"].startswith("The snapshot is kept, but its monitor run could not be queued")
        assert "POST the stream's monitor/" in data["detail"]
        queued.broker_down = False
        again = post_json(editor, f"{API}{stream.slug}/monitor/", {})
        assert again.status_code == 202 and [r["id"] for r in again.json()] == [run["id"]]
        assert queued.names() == ["monitoring.tasks.monitor_run"]


@pytest.mark.django_db
class TestRuns:
    def test_it_queues_the_new_snapshots_now_and_answers_202(
        self,
        editor: Client,
        stream: EmbeddingStream,
        queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        for seed in (1, 2):
            monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(20, seed=seed)))
        with django_capture_on_commit_callbacks(execute=True):
            response = post_json(editor, f"{API}{stream.slug}/monitor/", {})
        assert response.status_code == 202
        runs = response.json()
        assert [run["status"] for run in runs] == ["pending", "pending"]
        assert [args for _, args, _ in queued.sent] == [(runs[0]["id"],), (runs[1]["id"],)]
        with django_capture_on_commit_callbacks(execute=True):
            again = post_json(editor, f"{API}{stream.slug}/monitor/", {})
        assert [run["id"] for run in again.json()] == [
            run["id"] for run in runs
        ]  # still unfinished, not queued twice
        assert len(queued.sent) == 2

    def test_it_serves_a_runs_values_thresholds_and_spectrum(
        self, viewer: Client, monitored: EmbeddingStream
    ) -> None:
        runs = viewer.get(f"{API}{monitored.slug}/runs/").json()["results"]
        assert [(run["status"], run["snapshot_label"]) for run in runs] == [("done", "bad"), ("done", "ref")]
        detail = viewer.get(runs[0]["url"]).json()
        assert detail["device"] == "cpu" and detail["chunks"] == 1
        assert detail["values"]["dead_dim_ratio"] == {"value": 0.25, "section": "current"}
        assert detail["values"]["mmd_p_value"]["section"] == "drift"
        assert set(detail["effect_thresholds"]) == {"mmd2", "mean_cosine_distance", "drifted_dim_share"}
        assert detail["params"] == MonitorParams(**PARAMS).to_dict()  # what it ran with, every field
        assert len(detail["spectrum"]["current"]) == len(detail["spectrum"]["reference"]) == DIM
        assert viewer.get(f"{API}{monitored.slug}/runs/?status=nope").status_code == 400
        assert viewer.get(f"{API}{monitored.slug}/runs/?status=failed").json()["count"] == 0

    def test_it_serves_the_series_with_rules_and_events(
        self, viewer: Client, monitored: EmbeddingStream
    ) -> None:
        with CaptureQueriesContext(connection) as queries:
            response = viewer.get(f"{API}{monitored.slug}/series/")
        assert len(queries) <= 10
        metrics = {row["metric"]: row for row in response.json()["metrics"]}
        dead = metrics["dead_dim_ratio"]
        assert [point["value"] for point in dead["points"]] == [0.0, 0.25]
        assert [point["is_reference"] for point in dead["points"]] == [True, False]
        assert dead["rules"] == [
            {"name": "dead_dimensions", "comparator": ">", "threshold": 0.1, "severity": "critical"}
        ]
        assert [(event["rule_name"], event["status"], event["value"]) for event in dead["events"]] == [
            ("dead_dimensions", "open", 0.25)
        ]
        assert dead["spec"]["direction"] == "lower"
        assert metrics["mmd_p_value"]["section"] == "drift" and len(metrics["mmd_p_value"]["points"]) == 1
        ruled = [row["metric"] for row in response.json()["metrics"] if row["rules"]]
        assert ruled == [row["metric"] for row in response.json()["metrics"]][: len(ruled)]

    def test_it_lists_the_streams_alerts_open_first(self, viewer: Client, monitored: EmbeddingStream) -> None:
        events = viewer.get(f"{API}{monitored.slug}/alerts/").json()
        assert {event["rule_name"] for event in events} >= {"dead_dimensions", "low_effective_rank"}
        assert {event["status"] for event in events} == {"open"}

    def test_it_lists_runs_in_a_fixed_number_of_queries(
        self, viewer: Client, monitored: EmbeddingStream
    ) -> None:
        with CaptureQueriesContext(connection) as queries:
            viewer.get(f"{API}{monitored.slug}/runs/")
        few = len(queries)
        snapshot = monitors.snapshot_upload(stream=monitored, upload=npy_upload(embeddings(20, seed=5)))
        monitors.monitor_run_create(snapshot=snapshot, reference=monitored.reference, enqueue=False)
        with CaptureQueriesContext(connection) as queries:
            assert viewer.get(f"{API}{monitored.slug}/runs/").json()["count"] == 3
        assert len(queries) == few <= 8
        assert MonitorRun.objects.count() == 3


@pytest.mark.django_db
def test_it_documents_the_stream_endpoints_in_the_schema(client: Client, theo: User) -> None:
    client.force_login(theo)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = [path for path in schema["paths"] if "/streams/" in path]
    assert "/api/teams/{team}/streams/{stream}/snapshots/" in paths
    assert "/api/teams/{team}/streams/{stream}/series/" in paths
    assert PARAMS  # the shared test parameters keep the runs above quick


@pytest.mark.django_db
def test_it_refuses_json_vectors_over_the_request_size_on_vectors(
    editor: Client, stream: EmbeddingStream, settings: Any
) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    response = post_json(
        editor, f"{API}{stream.slug}/snapshots/", {"vectors": embeddings(200, seed=0).tolist()}
    )
    assert response.status_code == 400
    assert response.json() == {
        "vectors": ["The request is over the 10,000 bytes taken as JSON; upload a .npy file instead."]
    }
    assert not stream.snapshots.exists()
