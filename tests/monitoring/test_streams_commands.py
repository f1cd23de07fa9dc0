"""`upload_snapshot TEAM STREAM FILE` and `monitor_stream TEAM STREAM [--sync|--wait]`: snapshots from the
shell, monitor runs computed here or followed on a real worker, text or `--json`, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from evalplatform.models import Team
from monitoring.embeddings import services as monitors
from monitoring.models import AlertEvent, EmbeddingStream, MonitorRun
from tests.conftest import ROOT, QueuedTasks, WorkerProcess, _database_url_for
from tests.monitoring.test_streams import DIM, embeddings, make_stream
from tests.monitoring.test_streams_chord import wait_until


def command(name: str, *args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def stream(team: Team) -> EmbeddingStream:
    return make_stream(team, every_minutes=60)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    paths = {
        "reference": tmp_path / "reference.npy",
        "collapsed": tmp_path / "collapsed.npy",
        "batch": tmp_path / "batch.json",
    }
    np.save(paths["reference"], embeddings(600, seed=1))
    np.save(paths["collapsed"], embeddings(600, seed=2, collapse=True))
    paths["batch"].write_text(json.dumps({"vectors": embeddings(5, seed=3).tolist()}))
    return {name: str(path) for name, path in paths.items()}


@pytest.mark.django_db
class TestUploadSnapshot:
    def test_it_uploads_a_reference_and_queues_its_run(
        self, stream: EmbeddingStream, files: dict[str, str], queued: QueuedTasks, theo: Any
    ) -> None:
        out, _ = command(
            "upload_snapshot", "search", stream.slug, files["reference"], "--reference", "--user", "theo",
            "--observed-at", "2026-11-20T08:00:00+00:00", "--json",
        )  # fmt: skip
        data = json.loads(out)
        assert (data["kind"], data["label"], data["rows"], data["dimension"], data["dtype"]) == (
            "reference", "reference", 600, DIM, "float32",
        )  # fmt: skip
        assert data["observed_at"] == "2026-11-20T08:00:00+00:00"
        assert data["run"]["status"] == "pending"
        stream.refresh_from_db()
        assert stream.reference_id == data["snapshot"]

    def test_it_uploads_json_vectors_and_says_the_schedule_monitors_them(
        self, stream: EmbeddingStream, files: dict[str, str]
    ) -> None:
        out, _ = command(
            "upload_snapshot", "search", stream.slug, files["batch"], "--observed-at", "2026-11-21"
        )
        assert out.startswith(
            f"Uploaded snapshot {stream.snapshots.get().pk} 'batch' to the stream search/query-encoder"
        )
        assert "(5 x 32 float32, observed 2026-11-21 00:00" in out
        assert "It waits for the stream's schedule (every 60 minutes)" in out

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (("nope", "query-encoder", "x.npy"), "There is no team 'nope'."),
            (
                ("search", "nope", "x.npy"),
                "The team search has no stream 'nope' (its streams: query-encoder).",
            ),
            (("search", "query-encoder", "missing.npy"), "missing.npy: no such file"),
            (
                ("search", "query-encoder", "{collapsed}", "--observed-at", "monday"),
                "--observed-at: 'monday' is not",
            ),
        ],
    )
    def test_it_stops_with_one_line(
        self, stream: EmbeddingStream, files: dict[str, str], args: tuple[str, ...], message: str
    ) -> None:
        with pytest.raises(CommandError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
            command("upload_snapshot", *(arg.format(**files) for arg in args))
        assert not stream.snapshots.exists()

    def test_it_refuses_a_file_of_another_dimension(self, stream: EmbeddingStream, tmp_path: Path) -> None:
        path = tmp_path / "small.npy"
        np.save(path, embeddings(4, seed=0, dim=8))
        with pytest.raises(CommandError, match="^small.npy: 8 columns, but the stream's dimension is 32$"):
            command("upload_snapshot", "search", stream.slug, str(path))


@pytest.mark.django_db
class TestMonitorStream:
    # Committed for real: the command checks each run's alert rules here once its values are committed.
    @pytest.mark.django_db(transaction=True)
    def test_it_computes_the_new_snapshots_here_and_prints_the_open_alerts(
        self,
        stream: EmbeddingStream,
        files: dict[str, str],
        queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            command(
                "upload_snapshot",
                "search",
                stream.slug,
                files["reference"],
                "--reference",
                "--observed-at",
                "2026-11-20T08:00Z",
            )
        command(
            "upload_snapshot", "search", stream.slug, files["collapsed"], "--observed-at", "2026-11-20T09:00Z"
        )
        out, err = command("monitor_stream", "search", stream.slug, "--sync")
        lines = out.splitlines()
        assert lines[0] == "2 monitor run(s) of search/query-encoder:"
        assert lines[1].split()[:4] == ["2026-11-20", "08:00", "reference", "done"]
        assert lines[2].split()[:4] == ["2026-11-20", "09:00", "collapsed", "done"]
        assert "dead_dim_ratio 0.25" in lines[2] and "mmd_p_value" in lines[2]
        assert "Open alerts: " in out and "[critical] dead_dimensions: dead_dim_ratio 0.25 > 0.1" in out
        assert "Monitoring 'collapsed'" in err
        again, _ = command("monitor_stream", "search", stream.slug, "--sync", "--json")
        data = json.loads(again)
        assert data["runs"] == []  # nothing new
        opened = AlertEvent.objects.filter(status="open").values_list("rule__name", flat=True)
        assert {alert["rule"] for alert in data["open_alerts"]} == set(opened)
        assert queued.names() == ["monitoring.tasks.monitor_run"]  # the reference's, on upload

    def test_it_queues_and_returns_by_default(
        self,
        stream: EmbeddingStream,
        files: dict[str, str],
        queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        with open(files["collapsed"], "rb") as handle:
            monitors.snapshot_upload(stream=stream, upload=handle)
        with django_capture_on_commit_callbacks(execute=True):
            out, _ = command("monitor_stream", "search", stream.slug)
        assert out.startswith(
            "Queued 1 monitor run(s) of search/query-encoder on the worker (--wait to follow them):"
        )
        assert queued.names() == ["monitoring.tasks.monitor_run"]


@pytest.mark.django_db(transaction=True)  # the run is queued when the command's transaction commits
def test_it_says_when_a_run_could_not_be_queued(
    stream: EmbeddingStream, files: dict[str, str], queued: QueuedTasks
) -> None:
    queued.broker_down = True
    with open(files["collapsed"], "rb") as handle:
        monitors.snapshot_upload(stream=stream, upload=handle)
    with pytest.raises(
        CommandError, match=r"1 monitor run\(s\) failed: .*task queue is unreachable.*--sync\.$"
    ):
        command("monitor_stream", "search", stream.slug)
    # The same command with --sync computes it here.
    queued.broker_down = False
    command("monitor_stream", "search", stream.slug, "--sync")
    assert MonitorRun.objects.get().status == "done"


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_waits_for_the_worker_and_stops_with_one_line_from_manage_py(
    celery_worker_process: WorkerProcess, team: Team, files: dict[str, str], media_root: Path
) -> None:
    make_stream(team)
    env = {
        **os.environ,
        "DATABASE_URL": _database_url_for(connection.settings_dict),
        "MEDIA_ROOT": str(media_root),
    }

    def manage(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    upload = manage("upload_snapshot", "search", "query-encoder", files["reference"], "--reference")
    assert upload.returncode == 0, upload.stderr
    manage("upload_snapshot", "search", "query-encoder", files["collapsed"])
    done = manage("monitor_stream", "search", "query-encoder", "--wait", "--json")
    assert done.returncode == 0, done.stderr + celery_worker_process.log()[-3000:]
    data = json.loads(done.stdout)
    # The reference's run was queued on upload (and may be done already); the collapsed one by the command.
    assert [(run["label"], run["status"], run["chunks"]) for run in data["runs"]][-1] == (
        "collapsed",
        "done",
        1,
    )
    assert {run["status"] for run in data["runs"]} == {"done"}
    # A run's alert check follows its done status in the same task: the events come a moment later.
    opened = AlertEvent.objects.filter(status="open").values_list("rule__name", flat=True)
    assert wait_until(lambda: {"dead_dimensions", "mmd_drift"} <= set(opened), timeout=30)
    bad = manage("upload_snapshot", "search", "query-encoder", files["batch"].replace("batch", "nothing"))
    assert bad.returncode == 1
    assert (
        bad.stderr.strip().endswith("nothing.json: no such file")
        and len(bad.stderr.strip().splitlines()) == 1
    )
