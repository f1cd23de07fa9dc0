"""The one table of metric values: keyed writes, undefined values, the series' family, the observation
reader every alert rule uses, a series' history, and values following their job's deletion."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from evalplatform.models import Team, WorkerHeartbeat
from series.models import MetricValue, Series
from series.selectors import THRESHOLD_SUBGROUP, job_values, jobs_values, series_history, series_observations
from series.services import MetricValueIn, metric_values_follow, metric_values_write, series_get, series_key
from series.signals import series_observed

pytestmark = pytest.mark.django_db


@pytest.fixture
def team() -> Team:
    return Team.objects.create(slug="t", name="T")


@pytest.fixture
def run_series(team: Team) -> Series:
    return series_get(kind=Series.Kind.RUN, key=series_key("run", 1, "nightly"), team=team, label="nightly")


def _jobs(team: Team, n: int) -> list[WorkerHeartbeat]:
    # Any saved model row stands for a job: values name their job by model label and id.
    return [
        WorkerHeartbeat.objects.create(hostname=f"{team.slug}-{i}", last_seen=timezone.now())
        for i in range(n)
    ]


def test_it_writes_one_row_per_job_metric_and_subgroup_and_updates_on_a_rerun(
    team: Team, run_series: Series
) -> None:
    (job,) = _jobs(team, 1)
    now = timezone.now()
    metric_values_write(job=job, series=run_series, observed_at=now, values=[
        MetricValueIn("map", 0.3, ci_low=0.2, ci_high=0.4), MetricValueIn("ndcg_cut_10", 0.5)])  # fmt: skip
    metric_values_write(job=job, series=run_series, observed_at=now, values=[
        MetricValueIn("map", 0.35), MetricValueIn("ndcg_cut_10", 0.55)])  # fmt: skip
    rows = job_values(job)
    assert [(r.metric, r.value, r.ci_low, r.family) for r in rows] == [
        ("map", 0.35, None, "retrieval"), ("ndcg_cut_10", 0.55, None, "retrieval")]  # fmt: skip
    assert MetricValue.objects.count() == 2


def test_it_drops_the_metrics_a_rerun_no_longer_reports(team: Team, run_series: Series) -> None:
    (job,) = _jobs(team, 1)
    now = timezone.now()
    metric_values_write(job=job, series=run_series, observed_at=now,
                        values=[MetricValueIn("map", 0.3), MetricValueIn("P_10", 0.1)])  # fmt: skip
    metric_values_write(job=job, series=run_series, observed_at=now, values=[MetricValueIn("P_10", 0.2)])
    assert [(r.metric, r.value) for r in job_values(job)] == [("P_10", 0.2)]


def test_it_stores_undefined_values_as_null_never_nan(team: Team, run_series: Series) -> None:
    (job,) = _jobs(team, 1)
    metric_values_write(job=job, series=run_series, observed_at=timezone.now(), values=[
        MetricValueIn("map", float("nan")), MetricValueIn("P_10", float("inf"), ci_low=float("-inf"))])  # fmt: skip
    assert [(r.value, r.ci_low) for r in job_values(job)] == [(None, None), (None, None)]
    with pytest.raises(IntegrityError), transaction.atomic():
        MetricValue.objects.filter(job_id=job.pk).update(value=float("nan"))


def test_it_refuses_a_metric_of_another_family_than_its_series(team: Team, run_series: Series) -> None:
    (job,) = _jobs(team, 1)
    with pytest.raises(ValueError, match="embedding metric"):
        metric_values_write(job=job, series=run_series, observed_at=timezone.now(),
                            values=[MetricValueIn("effective_rank", 3.0)])  # fmt: skip
    assert not MetricValue.objects.exists()


def test_it_announces_the_series_observed_after_commit(team: Team, run_series: Series) -> None:
    (job,) = _jobs(team, 1)
    heard: list[dict] = []

    def listener(**kwargs: object) -> None:
        heard.append({k: kwargs[k] for k in ("series_ids", "job_type", "job_id")})

    series_observed.connect(listener)
    try:
        with transaction.atomic():
            metric_values_write(job=job, series=run_series, observed_at=timezone.now(),
                                values=[MetricValueIn("map", 0.3)])  # fmt: skip
            assert heard == []
            for callback in connection.run_on_commit:  # pytest-django's transaction never commits
                callback[1]()
    finally:
        series_observed.disconnect(listener)
    assert heard == [
        {"series_ids": [run_series.pk], "job_type": "evalplatform.workerheartbeat", "job_id": job.pk}
    ]


def test_it_reads_the_latest_observations_up_to_a_job_oldest_first(team: Team, run_series: Series) -> None:
    jobs = _jobs(team, 5)
    start = timezone.now()
    # Job 3 and job 4 share a time: job ids break the tie. Job 2 lacks the metric.
    times = [start, start + timedelta(hours=1), start + timedelta(hours=2), start + timedelta(hours=3),
             start + timedelta(hours=3)]  # fmt: skip
    for i, (job, at) in enumerate(zip(jobs, times, strict=True)):
        values = [MetricValueIn("P_10", 0.1 * i)] + ([] if i == 2 else [MetricValueIn("map", 0.2 * i)])
        metric_values_write(job=job, series=run_series, observed_at=at, values=values)
    window = series_observations(run_series, ["map", "P_10"], last=3)
    assert [o.job_id for o in window] == [jobs[1].pk, jobs[3].pk, jobs[4].pk]
    assert window[-1].values == {"map": pytest.approx(0.8), "P_10": pytest.approx(0.4)}
    upto = series_observations(run_series, ["map"], last=2, upto=("evalplatform.workerheartbeat", jobs[3].pk))
    assert [o.job_id for o in upto] == [jobs[1].pk, jobs[3].pk]
    assert (
        series_observations(run_series, ["map"], last=2, upto=("evalplatform.workerheartbeat", jobs[2].pk))
        == []
    )


def test_it_reads_calibrated_thresholds_beside_the_values(team: Team) -> None:
    stream = series_get(kind=Series.Kind.STREAM, key="1", team=team, label="s")
    (job,) = _jobs(team, 1)
    metric_values_write(job=job, series=stream, observed_at=timezone.now(), values=[
        MetricValueIn("mmd_p_value", 0.001), MetricValueIn("mmd2", 0.4),
        MetricValueIn("mmd2", 0.1, subgroup=THRESHOLD_SUBGROUP)])  # fmt: skip
    (observation,) = series_observations(stream, ["mmd_p_value", "mmd2"], last=5)
    assert observation.values == {"mmd_p_value": 0.001, "mmd2": 0.4}
    assert observation.effect_thresholds == {"mmd2": 0.1}


def test_it_gives_a_series_history_and_many_jobs_values(team: Team, run_series: Series) -> None:
    jobs = _jobs(team, 3)
    start = timezone.now()
    for i, job in enumerate(reversed(jobs)):  # written out of time order
        metric_values_write(job=job, series=run_series, observed_at=start - timedelta(days=i),
                            values=[MetricValueIn("map", float(i))])  # fmt: skip
    assert [v for _, v in series_history(run_series)["map"]] == [2.0, 1.0, 0.0]
    table = jobs_values(WorkerHeartbeat, [j.pk for j in jobs], metrics=["map"])
    assert {job_id: rows["map"].value for job_id, rows in table.items()} == {
        jobs[0].pk: 2.0,
        jobs[1].pk: 1.0,
        jobs[2].pk: 0.0,
    }


def test_it_deletes_a_jobs_values_with_the_job(team: Team, run_series: Series) -> None:
    metric_values_follow(WorkerHeartbeat)
    job, other = _jobs(team, 2)
    for each in (job, other):
        metric_values_write(
            job=each, series=run_series, observed_at=timezone.now(), values=[MetricValueIn("map", 1.0)]
        )
    job.delete()
    assert list(MetricValue.objects.values_list("job_id", flat=True)) == [other.pk]


def test_it_keeps_one_series_per_subject_and_follows_renames(team: Team) -> None:
    first = series_get(kind="recsys", key=series_key(team.pk, "two-tower"), team=team, label="two-tower")
    again = series_get(kind="recsys", key=series_key(team.pk, "two-tower"), team=team, label="two-tower v2")
    assert first.pk == again.pk and Series.objects.get().label == "two-tower v2"
    assert again.family == "recsys"
