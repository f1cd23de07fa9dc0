"""Embedding streams' services: creating a stream with its rules and schedule, uploading snapshots (`.npy`
checked on its header, or JSON vectors), the scheduled tick, and a monitor run computed in this process
equal to `eval_embeddings`' suite, with its values, spectrum, thresholds and alerts.

The data helpers and fixtures here are shared by the other `test_streams*` files.
"""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

import monitoring.embeddings.streams
from evalcore.alerts import DEFAULT_EMBEDDING_RULES
from evalcore.embeddings import MonitorParams, evaluate_embeddings
from evalplatform.models import Team
from monitoring.embeddings import services as monitors
from monitoring.models import AlertEvent, AlertRule, EmbeddingStream, MonitorRun
from series.selectors import job_values
from series.subjects import stream_series
from tests.conftest import QueuedTasks
from tests.monitoring.conftest import alerts_checked

DIM = 32
#: Small and quick: every row in the sample, 100 permutations (p >= 1/101, under the rule's 0.01), 10 splits.
PARAMS = {"n_permutations": 100, "calibration_splits": 10, "uniformity_pairs": 5000, "sample_size": 2000}


def embeddings(
    rows: int, *, seed: int, shift: float = 0.0, collapse: bool = False, dim: int = DIM
) -> np.ndarray:
    """Healthy vectors around a fixed mean; `shift` moves them; `collapse` puts the variance into three
    directions and zeroes a quarter of the coordinates (dead dimensions)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, dim))
    if collapse:
        x = rng.normal(size=(rows, 3)) @ rng.normal(size=(3, dim)) + 0.01 * x
        x[:, : dim // 4] = 0.0
    return (x + np.linspace(-1.0, 1.0, dim) + shift).astype(np.float32)


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def npy_upload(array: np.ndarray, name: str = "snapshot.npy") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, npy_bytes(array), content_type="application/octet-stream")


def make_stream(team: Team, **options: Any) -> EmbeddingStream:
    values = {"slug": "query-encoder", "name": "Query encoder", "dimension": DIM, "params": PARAMS, **options}
    return monitors.stream_create(team=team, **values)


def values_of(run: MonitorRun) -> dict[str, float | None]:
    """A run's values as the one metric table holds them (subgroup "": the metrics themselves)."""
    return {row.metric: row.value for row in job_values(run)}


@pytest.fixture
def stream(team: Team, theo: User) -> EmbeddingStream:
    return make_stream(team, created_by=theo)


@pytest.fixture
def reference(stream: EmbeddingStream, queued: QueuedTasks) -> Any:
    return monitors.snapshot_upload(
        stream=stream, upload=npy_upload(embeddings(1500, seed=1), "reference.npy"), reference=True,
        observed_at=timezone.now() - timedelta(hours=3),
    )  # fmt: skip


@pytest.mark.django_db
class TestStreams:
    def test_it_creates_a_stream_with_the_default_rules(self, team: Team, theo: User) -> None:
        stream = make_stream(team, created_by=theo)
        rules = AlertRule.objects.filter(series__kind="stream", series__object_id=stream.pk)
        assert sorted(rules.values_list("name", flat=True)) == sorted(r.name for r in DEFAULT_EMBEDDING_RULES)
        assert stream.periodic_task is None
        assert monitors.schedule_text(stream) == "not scheduled"

    def test_it_keeps_the_periodic_task_in_step_with_the_schedule(self, team: Team) -> None:
        stream = make_stream(team, every_minutes=15)
        task = PeriodicTask.objects.get(pk=stream.periodic_task_id)
        assert (task.task, task.args, task.interval.every, task.interval.period, task.crontab) == (
            "monitoring.tasks.stream_tick", f"[{stream.pk}]", 15, "minutes", None,
        )  # fmt: skip
        monitors.stream_schedule_set(stream=stream, crontab="*/5  2-4 * * mon-fri")
        task.refresh_from_db()
        assert task.interval is None
        cron = task.crontab
        assert (cron.minute, cron.hour, cron.day_of_month, cron.month_of_year, cron.day_of_week) == (
            "*/5", "2-4", "*", "*", "mon-fri",
        )  # fmt: skip
        assert stream.crontab == "*/5 2-4 * * mon-fri"
        assert PeriodicTask.objects.filter(task="monitoring.tasks.stream_tick").count() == 1
        monitors.stream_schedule_set(stream=stream)
        assert not PeriodicTask.objects.filter(pk=task.pk).exists()
        stream.refresh_from_db()
        assert stream.periodic_task_id is None

    @pytest.mark.parametrize(
        ("options", "field", "message"),
        [
            ({"every_minutes": 5, "crontab": "* * * * *"}, "every_minutes", "not both"),
            ({"every_minutes": 0}, "every_minutes", "between 1 and"),
            ({"crontab": "* * *"}, "crontab", "five fields"),
            ({"crontab": "61 * * * *"}, "crontab", "not a cron schedule"),
            ({"params": {"n_permutation": 3}}, "params", "Unknown monitor parameter(s) n_permutation"),
            ({"params": {"alpha": 2}}, "params", "alpha"),
            ({"slug": "no spaces"}, "slug", "letters, digits"),
            ({"dimension": 0}, "dimension", "positive"),
        ],
    )
    def test_it_refuses_a_bad_stream_naming_the_field(
        self, team: Team, options: dict[str, Any], field: str, message: str
    ) -> None:
        with pytest.raises(
            monitors.MonitorInputError, match=message.replace("(", r"\(").replace(")", r"\)")
        ) as caught:
            make_stream(team, **options)
        assert caught.value.field == field
        assert not EmbeddingStream.objects.exists()

    def test_it_refuses_a_second_stream_of_the_same_slug(self, stream: EmbeddingStream) -> None:
        with pytest.raises(monitors.MonitorInputError, match="already has a stream query-encoder"):
            make_stream(stream.team)


@pytest.mark.django_db
class TestSnapshots:
    def test_it_keeps_a_npy_snapshot_with_its_shape_and_hash(self, stream: EmbeddingStream) -> None:
        array = embeddings(40, seed=0)
        snapshot = monitors.snapshot_upload(stream=stream, upload=npy_upload(array, "monday.npy"))
        assert (snapshot.rows, snapshot.dimension, snapshot.dtype, snapshot.kind) == (
            40,
            DIM,
            "float32",
            "current",
        )
        assert snapshot.label == "monday"
        assert snapshot.size == len(npy_bytes(array))
        np.testing.assert_array_equal(np.load(snapshot.file.path), array)
        assert not MonitorRun.objects.exists()  # periodic snapshots wait for the schedule

    @pytest.mark.parametrize(
        ("content", "message"),
        [
            (npy_bytes(embeddings(10, seed=0, dim=8)), "8 columns, but the stream's dimension is 32"),
            (npy_bytes(np.ones((10, DIM), dtype=np.int64)), "dtype int64: snapshots are float32 or float64"),
            (npy_bytes(np.ones((10, DIM), dtype=np.float16)), "dtype float16"),
            (npy_bytes(np.ones(DIM, dtype=np.float32)), "shape (32,): a snapshot is a 2-d"),
            (npy_bytes(np.ones((1, DIM), dtype=np.float32)), "at least 2 rows"),
            (npy_bytes(embeddings(10, seed=0))[:-4], "but its header announces 10 x 32 float32"),
            (b"rows,of,text\n1,2,3\n", "not a .npy file"),
            (b"", "not a .npy file"),
        ],
    )
    def test_it_refuses_a_bad_file_on_its_header_and_keeps_nothing(
        self, stream: EmbeddingStream, content: bytes, message: str
    ) -> None:
        upload = SimpleUploadedFile("bad.npy", content)
        with pytest.raises(monitors.MonitorInputError) as caught:
            monitors.snapshot_upload(stream=stream, upload=upload)
        assert str(caught.value).startswith("bad.npy: ") and message in str(caught.value)
        assert caught.value.field == "file"
        assert not stream.snapshots.exists()

    def test_it_writes_json_vectors_to_a_float32_npy(self, stream: EmbeddingStream) -> None:
        array = embeddings(5, seed=3)
        snapshot = monitors.snapshot_from_vectors(stream=stream, vectors=array.tolist(), label="batch 7")
        assert (snapshot.rows, snapshot.dtype, snapshot.label) == (5, "float32", "batch 7")
        assert snapshot.file.name.endswith(".npy")
        np.testing.assert_array_equal(np.load(snapshot.file.path), array)

    @pytest.mark.parametrize(
        ("vectors", "message"),
        [
            ([[0.0] * DIM], "at least 2 vectors"),
            ("not a list", "at least 2 vectors"),
            ([[0.0] * DIM, [0.0] * 3], "vector 1: 3 numbers, but the stream's dimension is 32"),
            ([[0.0] * DIM, [0.0] * (DIM - 1) + ["x"]], "vector 1: every entry must be a number"),
            ([[0.0] * DIM, [0.0] * (DIM - 1) + [None]], "vector 1: every entry must be a number"),
            ([[0.0] * DIM, [0.0] * (DIM - 1) + [[1.0]]], "vector 1: every entry must be a number"),
            ([[0.0] * DIM, [0.0] * (DIM - 1) + [float("nan")]], "vector 1: NaN or infinite"),
            ([[0.0] * DIM, [0.0] * (DIM - 1) + [-1e308]], "vector 1: a value past float32's range"),
        ],
    )
    def test_it_refuses_bad_vectors_naming_the_first(
        self, stream: EmbeddingStream, vectors: Any, message: str
    ) -> None:
        with pytest.raises(monitors.MonitorInputError, match=message) as caught:
            monitors.snapshot_from_vectors(stream=stream, vectors=vectors)
        assert caught.value.field == "vectors"

    def test_it_refuses_too_many_vectors_for_json(self, stream: EmbeddingStream, monkeypatch: Any) -> None:
        monkeypatch.setattr(monitoring.embeddings.streams, "MAX_JSON_VECTORS", 3)
        with pytest.raises(monitors.MonitorInputError, match="upload a .npy file instead"):
            monitors.snapshot_from_vectors(stream=stream, vectors=embeddings(4, seed=0).tolist())

    def test_it_makes_a_reference_and_queues_its_run_at_once(
        self, stream: EmbeddingStream, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            snapshot = monitors.snapshot_upload(
                stream=stream, upload=npy_upload(embeddings(30, seed=0)), reference=True
            )
        stream.refresh_from_db()
        assert stream.reference_id == snapshot.pk and snapshot.kind == "reference"
        run = MonitorRun.objects.get()
        assert (run.snapshot_id, run.reference_id, run.status) == (snapshot.pk, snapshot.pk, "pending")
        assert queued.sent == [("monitoring.tasks.monitor_run", (run.pk,), {"countdown": 0, "retry": False})]


@pytest.mark.django_db
class TestTick:
    def test_it_queues_a_run_for_each_new_snapshot_reference_first_then_by_time(
        self, stream: EmbeddingStream, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        now = timezone.now()
        later = monitors.snapshot_upload(
            stream=stream, upload=npy_upload(embeddings(20, seed=2)), observed_at=now
        )
        earlier = monitors.snapshot_upload(
            stream=stream, upload=npy_upload(embeddings(20, seed=3)), observed_at=now - timedelta(hours=1)
        )
        reference = monitors.snapshot_upload(
            stream=stream, upload=npy_upload(embeddings(20, seed=1)), observed_at=now - timedelta(hours=5)
        )
        monitors.stream_reference_set(stream=stream, snapshot=reference, enqueue=False)
        reference_run = MonitorRun.objects.get()
        with django_capture_on_commit_callbacks(execute=True):
            runs = monitors.stream_tick(stream_id=stream.pk)
        assert [(run.snapshot_id, run.reference_id) for run in runs] == [
            (earlier.pk, reference.pk), (later.pk, reference.pk),
        ]  # fmt: skip
        assert [args for _, args, _ in queued.sent] == [(runs[0].pk,), (runs[1].pk,)]
        assert reference_run.pk not in [run.pk for run in runs]  # it already had its run
        with django_capture_on_commit_callbacks(execute=True):
            assert monitors.stream_tick(stream_id=stream.pk) == []
        assert len(queued.sent) == 2

    def test_it_monitors_quality_only_without_a_reference(
        self, stream: EmbeddingStream, queued: QueuedTasks
    ) -> None:
        snapshot = monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(20, seed=2)))
        (run,) = monitors.stream_tick(stream_id=stream.pk, enqueue=False)
        assert (run.snapshot_id, run.reference_id) == (snapshot.pk, None)
        assert monitors.monitor_run(run_id=run.pk).status == "done"  # type: ignore[union-attr]
        assert set(values_of(run)) == set(monitors.QUALITY_METRICS)

    def test_it_does_nothing_for_a_deleted_stream(self, db: None) -> None:
        assert monitors.stream_tick(stream_id=987654) == []

    def test_it_finds_the_same_run_again_and_queues_a_failed_one_again(
        self,
        stream: EmbeddingStream,
        reference: Any,
        queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        snapshot = monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(20, seed=2)))
        with django_capture_on_commit_callbacks(execute=True):
            first = monitors.monitor_run_create(snapshot=snapshot, reference=reference)
            again = monitors.monitor_run_create(snapshot=snapshot, reference=reference)
        assert first.pk == again.pk and len(queued.sent) == 1
        MonitorRun.objects.filter(pk=first.pk).update(status="failed", error="boom", attempts=3)
        with django_capture_on_commit_callbacks(execute=True):
            retried = monitors.monitor_run_create(snapshot=snapshot, reference=reference)
        assert (retried.pk, retried.status, retried.attempts, retried.error) == (first.pk, "pending", 0, "")
        assert len(queued.sent) == 2


@pytest.mark.django_db
class TestMonitorRun:
    def test_it_computes_what_eval_embeddings_computes(self, stream: EmbeddingStream, reference: Any) -> None:
        current = embeddings(1200, seed=5, shift=0.4)
        snapshot = monitors.snapshot_upload(stream=stream, upload=npy_upload(current, "tuesday.npy"))
        runs = monitors.stream_tick(stream_id=stream.pk, enqueue=False)
        assert [run.snapshot_id for run in runs] == [snapshot.pk]
        reference_run = MonitorRun.objects.get(snapshot=reference)
        for run in (reference_run, runs[0]):
            assert monitors.monitor_run(run_id=run.pk).status == "done"  # type: ignore[union-attr]
        run = MonitorRun.objects.get(pk=runs[0].pk)
        want = evaluate_embeddings(
            embeddings(1500, seed=1), current, params=MonitorParams(**PARAMS), device="cpu"
        )
        sections = {metric: item["section"] for metric, item in monitors.run_values(run).items()}
        assert sections == {**dict.fromkeys(want.current, "current"), **dict.fromkeys(want.drift, "drift")}  # type: ignore[arg-type]
        got = values_of(run)
        for name, value in {**want.current, **want.drift}.items():  # type: ignore[dict-item]
            assert got[name] == pytest.approx(value, rel=1e-9, abs=1e-12), name
        assert run.effect_thresholds == pytest.approx(want.calibration.thresholds)  # type: ignore[union-attr]
        assert (run.device, run.chunks, run.status, run.error) == ("cpu", 1, "done", "")
        assert run.spectrum["rank"] == list(range(1, DIM + 1))
        np.testing.assert_allclose(
            run.spectrum["current"], np.linalg.eigvalsh(np.cov(current, rowvar=False))[::-1], rtol=1e-6
        )
        assert len(run.spectrum["reference"]) == DIM
        # The reference's own run: its quality, its calibration kept on the snapshot with its summary.
        reference.refresh_from_db()
        assert set(values_of(reference_run)) == set(monitors.QUALITY_METRICS)
        assert reference.summary.name.endswith(".npz") and reference.summary_key == "sample2000-seed0"
        assert reference.calibration["thresholds"] == pytest.approx(want.calibration.thresholds)  # type: ignore[union-attr]
        assert reference.calibration["bandwidth"] == pytest.approx(want.calibration.bandwidth)  # type: ignore[union-attr]

    def test_it_opens_alerts_on_a_collapsed_snapshot_and_resolves_them_on_a_healthy_one(
        self, stream: EmbeddingStream, reference: Any
    ) -> None:
        now = timezone.now()
        monitors.snapshot_upload(
            stream=stream,
            upload=npy_upload(embeddings(1000, seed=6, collapse=True)),
            observed_at=now - timedelta(hours=2),
        )
        with alerts_checked():  # checked here, as the worker's alert task would
            for run in monitors.stream_tick(stream_id=stream.pk, enqueue=False):
                monitors.monitor_run(run_id=run.pk)
        opened = set(AlertEvent.objects.filter(status="open").values_list("rule__name", flat=True))
        assert {"dead_dimensions", "low_effective_rank", "top10_variance_dominates", "mmd_drift"} <= opened
        monitors.snapshot_upload(
            stream=stream, upload=npy_upload(embeddings(1000, seed=7)), observed_at=now - timedelta(hours=1)
        )
        with alerts_checked():  # checked here, as the worker's alert task would
            for run in monitors.stream_tick(stream_id=stream.pk, enqueue=False):
                monitors.monitor_run(run_id=run.pk)
        assert not AlertEvent.objects.filter(status="open").exists()
        assert (
            set(AlertEvent.objects.filter(status="resolved").values_list("rule__name", flat=True)) == opened
        )

    def test_it_fails_with_the_row_of_a_nan(self, stream: EmbeddingStream, reference: Any) -> None:
        array = embeddings(30, seed=8)
        snapshot = monitors.snapshot_upload(stream=stream, upload=npy_upload(array))
        # An upload with a NaN is refused now; a file kept before that was checked still fails its run.
        array[17, 3] = np.nan
        np.save(snapshot.file.path, array)
        (run,) = monitors.stream_tick(stream_id=stream.pk, enqueue=False)
        assert monitors.monitor_run(run_id=run.pk).status == "failed"  # type: ignore[union-attr]
        run.refresh_from_db()
        assert run.error == "row 17 contains NaN or infinite values"
        assert not job_values(run, subgroup=None)

    def test_it_computes_a_planned_split_in_one_task_without_a_result_backend(
        self, stream: EmbeddingStream, reference: Any, settings: Any
    ) -> None:
        settings.MONITOR_CHUNK_ROWS = 100
        monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(450, seed=9)))
        (run,) = monitors.stream_tick(stream_id=stream.pk, enqueue=False)
        assert run.chunks == 5
        settings.CELERY_RESULT_BACKEND = None
        assert monitors.monitor_run(run_id=run.pk).status == "done"  # type: ignore[union-attr]
        run.refresh_from_db()
        assert run.chunks == 1


def test_it_splits_rows_into_equal_contiguous_ranges() -> None:
    assert monitors.chunk_ranges(10, 3) == [(0, 3), (3, 7), (7, 10)]
    assert monitors.chunk_ranges(2, 5) == [(0, 1), (1, 2)]
    assert monitors.chunk_ranges(7, 1) == [(0, 7)]


def test_it_keeps_the_whole_spectrum_of_a_small_dimension_and_log_spaced_ranks_of_a_large_one() -> None:
    from evalcore.embeddings import summarize

    small = monitors.spectrum_points(summarize(embeddings(50, seed=0)), None)
    assert small["rank"] == list(range(1, DIM + 1)) and "reference" not in small
    big = summarize(np.random.default_rng(0).normal(size=(400, 300)))
    points = monitors.spectrum_points(big, big, points=40)
    assert points["rank"][0] == 1 and points["rank"][-1] == 300 and len(points["rank"]) <= 40
    assert points["current"] == sorted(points["current"], reverse=True) == points["reference"]


@pytest.mark.django_db
class TestAdmin:
    @pytest.fixture
    def admin(self, client: Any, django_user_model: Any) -> Any:
        client.force_login(
            django_user_model.objects.create_superuser("root", "root@example.org", "root-pass-123")
        )
        return client

    def test_it_creates_a_stream_with_its_rules_and_periodic_task(self, admin: Any, team: Team) -> None:
        form = {"team": team.pk, "slug": "docs", "name": "Docs", "description": "", "dimension": 16,
                "params": "{}", "every_minutes": 10, "crontab": ""}  # fmt: skip
        response = admin.post("/admin/monitoring/embeddingstream/add/", form)
        assert response.status_code == 302, response.content.decode()[-2000:]
        stream = EmbeddingStream.objects.get(slug="docs")
        assert stream_series(stream).alert_rules.count() == len(DEFAULT_EMBEDDING_RULES)
        assert PeriodicTask.objects.get(pk=stream.periodic_task_id).interval.every == 10
        form.update(every_minutes="", crontab="99 * * * *")
        response = admin.post(f"/admin/monitoring/embeddingstream/{stream.pk}/change/", form)
        assert response.status_code == 200 and "is not a cron schedule" in response.content.decode()
        form.update(crontab="30 6 * * *")
        assert admin.post(f"/admin/monitoring/embeddingstream/{stream.pk}/change/", form).status_code == 302
        task = PeriodicTask.objects.get(pk=stream.periodic_task_id)
        assert (task.interval, task.crontab.minute, task.crontab.hour) == (None, "30", "6")
        admin.post(f"/admin/monitoring/embeddingstream/{stream.pk}/delete/", {"post": "yes"})
        assert not EmbeddingStream.objects.exists() and not PeriodicTask.objects.filter(pk=task.pk).exists()

    def test_it_lists_every_monitor_and_alert_model(
        self, admin: Any, stream: EmbeddingStream, reference: Any
    ) -> None:
        for model in ("embeddingstream", "embeddingsnapshot", "monitorrun", "alertrule",
                      "alertevent", "notificationchannel", "notification"):  # fmt: skip
            assert admin.get(f"/admin/monitoring/{model}/").status_code == 200, model
        run = MonitorRun.objects.get(snapshot=reference)  # its values are listed on its page (none yet)
        page = admin.get(f"/admin/monitoring/monitorrun/{run.pk}/change/")
        assert page.status_code == 200 and "Values (in the metric table" in page.content.decode()
