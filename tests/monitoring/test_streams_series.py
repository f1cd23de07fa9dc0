"""A monitor run's values in the one metric table (`series.MetricValue`, the stream's series): a re-run
updates its rows, an undefined metric is NULL, the calibrated effect thresholds are values too; and the
parameters a run computes with are frozen on it, so an admin's edit of the stream changes neither a
finished run's parameters nor what a re-run of it computes."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from evalcore.embeddings import DRIFT_METRICS, MonitorParams
from evalplatform.models import Team
from monitoring.embeddings import services as monitors
from monitoring.models import MonitorRun
from series.models import MetricValue
from series.selectors import THRESHOLD_SUBGROUP, job_values, series_history
from series.subjects import stream_series
from tests.monitoring.test_streams import PARAMS, embeddings, make_stream, npy_upload, values_of


def rows_of(run: MonitorRun) -> dict[tuple[str, str], tuple[int, float | None]]:
    """Every stored row of a run: (metric, subgroup) -> value."""
    return {(row.metric, row.subgroup): row.value for row in job_values(run, subgroup=None)}


def run_again(run: MonitorRun) -> MonitorRun:
    """Compute a done run once more, as the stale-job sweep does with a lost one: same row, pending again."""
    MonitorRun.objects.filter(pk=run.pk).update(status="pending", finished_at=None)
    assert monitors.monitor_run(run_id=run.pk).status == "done"  # type: ignore[union-attr]
    return MonitorRun.objects.get(pk=run.pk)


@pytest.fixture
def drift_run(team: Team, queued: Any) -> MonitorRun:
    """A done run of a shifted snapshot against a done reference run (computed in this process)."""
    stream = make_stream(team)
    reference = monitors.snapshot_upload(
        stream=stream, upload=npy_upload(embeddings(400, seed=1), "ref.npy"),
        observed_at=timezone.now() - timedelta(hours=2),
    )  # fmt: skip
    monitors.stream_reference_set(stream=stream, snapshot=reference, enqueue=False)
    snapshot = monitors.snapshot_upload(
        stream=stream, upload=npy_upload(embeddings(400, seed=2, shift=0.3), "tuesday.npy")
    )
    for run in monitors.stream_tick(stream_id=stream.pk, enqueue=False):
        assert monitors.monitor_run(run_id=run.pk).status == "done"  # type: ignore[union-attr]
    return MonitorRun.objects.select_related("stream").get(snapshot=snapshot)


@pytest.mark.django_db
class TestMonitorValuesInTheTable:
    def test_it_writes_the_values_and_thresholds_into_the_streams_series_and_a_re_run_updates_them(
        self, drift_run: MonitorRun
    ) -> None:
        series = stream_series(drift_run.stream)
        stored = job_values(drift_run, subgroup=None)
        assert {row.series_id for row in stored} == {series.pk} and series.family == "embedding"
        assert {row.observed_at for row in stored} == {drift_run.observed_at}  # the snapshot's time
        thresholds = {row.metric: row.value for row in stored if row.subgroup == THRESHOLD_SUBGROUP}
        assert thresholds == pytest.approx(drift_run.effect_thresholds) and set(thresholds) <= set(
            DRIFT_METRICS
        )
        assert set(DRIFT_METRICS) <= set(values_of(drift_run))
        before = rows_of(drift_run)
        again = run_again(drift_run)
        assert rows_of(again) == before  # the job's rows replaced, with equal values, none added
        assert MetricValue.objects.filter(
            job_id=drift_run.pk, job_type="monitoring.monitorrun"
        ).count() == len(before)
        history = series_history(series, ["mmd2"])["mmd2"]
        assert [when for when, _ in history] == [drift_run.observed_at]  # one point, not two
        # Each metric keeps its section (a property of the metric), as the API showed it.
        sections = {name: item["section"] for name, item in monitors.run_values(again).items()}
        assert {name for name, section in sections.items() if section == "drift"} == set(DRIFT_METRICS)
        assert sections["effective_rank_ratio"] == "current"

    def test_it_stores_an_undefined_metric_of_a_degenerate_snapshot_as_null(
        self, team: Team, queued: Any
    ) -> None:
        stream = make_stream(team)
        snapshot = monitors.snapshot_upload(stream=stream, upload=npy_upload(np.zeros((3, 32), np.float32)))
        run = monitors.monitor_run_create(snapshot=snapshot, reference=None, enqueue=False)
        assert monitors.monitor_run(run_id=run.pk).status == "done"  # type: ignore[union-attr]
        row = MetricValue.objects.get(
            job_type="monitoring.monitorrun", job_id=run.pk, metric="effective_rank_ratio"
        )
        assert row.value is None  # NULL, never NaN
        assert monitors.run_values(run)["effective_rank_ratio"] == {"value": None, "section": "current"}
        header, table = monitors.series_table(monitors.stream_series(stream=stream))
        assert table[0][header.index("effective_rank_ratio")] == monitors.UNDEFINED


@pytest.mark.django_db
class TestFrozenParameters:
    def test_it_freezes_the_streams_parameters_on_the_run_when_it_is_made(
        self, team: Team, queued: Any
    ) -> None:
        stream = make_stream(team)
        snapshot = monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(20, seed=3)))
        run = monitors.monitor_run_create(snapshot=snapshot, reference=None, enqueue=False)
        assert run.params == MonitorParams(**PARAMS).to_dict()
        assert run.params_changed == PARAMS  # what the dashboard lists: the settings off the defaults

    def test_an_admin_edit_of_the_stream_changes_neither_a_runs_params_nor_a_re_run_of_it(
        self, drift_run: MonitorRun, client: Client, django_user_model: Any, theo: User
    ) -> None:
        client.force_login(
            django_user_model.objects.create_superuser("root", "root@example.org", "root-pass-1")
        )
        stream = drift_run.stream
        frozen, values = dict(drift_run.params), values_of(drift_run)
        edited = {**PARAMS, "n_permutations": 30, "seed": 7, "uniformity_pairs": 900}
        form = {"team": stream.team_id, "slug": stream.slug, "name": stream.name, "description": "",
                "dimension": stream.dimension, "params": json.dumps(edited), "every_minutes": "", "crontab": ""}  # fmt: skip
        response = client.post(f"/admin/monitoring/embeddingstream/{stream.pk}/change/", form)
        assert response.status_code == 302, response.content.decode()[-2000:]
        stream.refresh_from_db()
        assert stream.params == edited
        again = run_again(drift_run)
        assert again.params == frozen == MonitorParams(**PARAMS).to_dict()
        assert values_of(again) == values  # computed with the run's parameters, not the stream's new ones
        # A run made after the edit takes the edited parameters; the dashboard and the API show each run's.
        later = monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(20, seed=4)))
        new = monitors.monitor_run_create(snapshot=later, reference=stream.reference, enqueue=False)
        assert new.params == MonitorParams(**edited).to_dict()
        client.force_login(theo)  # an editor of the team
        page = client.get(stream.get_absolute_url()).content.decode()
        assert "n_permutations=30" in page and "n_permutations=100" in page


@pytest.mark.django_db
def test_it_deletes_a_streams_series_values_and_rules_with_the_stream(drift_run: MonitorRun) -> None:
    from monitoring.alerts import services as alerts
    from monitoring.models import AlertRule
    from series.models import Series

    stream = drift_run.stream
    alerts.default_stream_rules(stream=stream)
    assert AlertRule.objects.exists() and MetricValue.objects.exists()
    monitors.stream_delete(stream=stream)
    assert not Series.objects.filter(kind="stream").exists()
    assert not AlertRule.objects.exists() and not MetricValue.objects.exists()
