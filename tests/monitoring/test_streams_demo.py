"""The demo stream: healthy hours raise nothing, the drift opens the drift alerts, the collapse the collapse
alerts; every run was made by the scheduled tick's service; loading it again changes nothing."""

from __future__ import annotations

import time
from typing import Any

import pytest

from evalplatform.models import Team
from monitoring.alerts import services as alerts
from monitoring.embeddings import demo as demo_streams
from monitoring.models import AlertEvent, MonitorRun, Notification


@pytest.mark.django_db
def test_it_loads_a_stream_that_drifts_then_collapses_and_raises_the_alerts(
    team: Team, queued: Any, django_capture_on_commit_callbacks: Any
) -> None:
    started = time.monotonic()
    # Its runs' values are announced when the capture ends (the test's transaction never commits), each
    # checked here, in the order the runs were computed, as the demo's own in-process checks would.
    with alerts.alerts_checked_here(), django_capture_on_commit_callbacks(execute=True):
        demo = demo_streams.demo_stream_load(team=team)
    took = time.monotonic() - started
    assert demo is not None
    stream = demo.stream
    assert (stream.slug, stream.dimension, stream.every_minutes) == ("query-encoder", 64, 60)
    assert stream.periodic_task is not None
    runs = demo.runs
    assert len(runs) == 1 + len(demo_streams.PHASES)
    assert {(run.status, run.error, run.device) for run in runs} == {("done", "", "cpu")}
    assert runs[0].snapshot_id == runs[0].reference_id == stream.reference_id

    phase_of = {run.observed_at: run.snapshot.label.split("(")[-1].rstrip(")") for run in runs[1:]}
    opened = {
        event.rule.name: phase_of[event.observed_at]
        for event in AlertEvent.objects.filter(
            rule__series__object_id=stream.pk, rule__series__kind="stream"
        ).select_related("rule")
    }
    assert opened["mmd_drift"] == "drift"
    assert opened["domain_classifier_drift"] == "drift"
    for name in ("dead_dimensions", "top10_variance_dominates", "low_effective_rank", "low_effective_dim"):
        assert opened[name] == "collapse", name
    assert "healthy" not in opened.values()
    assert AlertEvent.objects.filter(
        rule__series__object_id=stream.pk, rule__series__kind="stream", status="open"
    ).count() == len(opened)
    notifications = Notification.objects.filter(
        event__rule__series__object_id=stream.pk, event__rule__series__kind="stream", channel__kind="email"
    )
    assert notifications.count() == len(opened)
    assert queued.names().count("monitoring.tasks.notification_send") == len(opened)
    assert "monitoring.tasks.monitor_run" not in queued.names()  # computed here, in order

    again = demo_streams.demo_stream_load(team=team)
    assert again is not None and [run.pk for run in again.runs] == [run.pk for run in runs]
    assert stream.snapshots.count() == len(runs)
    assert MonitorRun.objects.count() == len(runs)
    assert AlertEvent.objects.count() == len(opened)
    print(f"[demo] stream loaded in {took:.2f} s; alerts {opened}")


@pytest.mark.django_db
def test_it_needs_the_demo_search_team(db: None) -> None:
    assert demo_streams.demo_stream_load() is None
