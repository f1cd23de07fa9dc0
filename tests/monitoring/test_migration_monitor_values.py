"""The migrations that move monitor runs onto the one metric table, run by the migration executor: from
the node before them, a stream's runs with `MonitorValue` rows (a NaN among them, stored before NULLs were
enforced) and calibrated thresholds come out as values of the stream's series, each run with the
parameters resolved from its stream; and back again, the rows return with their sections."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from evalcore.embeddings import MonitorParams
from monitoring.embeddings import services as monitors
from monitoring.models import MonitorRun
from series.models import MetricValue, Series
from series.selectors import THRESHOLD_SUBGROUP, series_observations

WHEN = datetime(2026, 1, 5, 12, tzinfo=UTC)


def migration_named(executor: MigrationExecutor, suffix: str) -> tuple[str, str]:
    """A monitoring migration by the end of its name (the integrator may renumber them)."""
    (name,) = [
        name for app, name in executor.loader.disk_migrations if app == "monitoring" and name.endswith(suffix)
    ]
    return ("monitoring", name)


def migrate(target: list[tuple[str, str]]) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    executor.loader.build_graph()
    return executor


@pytest.mark.django_db(transaction=True)
def test_it_carries_monitor_values_and_thresholds_into_the_table_and_back() -> None:
    executor = MigrationExecutor(connection)
    first = migration_named(executor, "_monitorrun_params_frozen")
    values_move = migration_named(executor, "_monitor_values_into_series")
    before = executor.loader.get_migration(*first).dependencies
    executor = migrate(list(before))
    old = executor.loader.project_state(list(before)).apps
    team = old.get_model("evalplatform", "Team").objects.create(slug="search", name="Search")
    stream = old.get_model("monitoring", "EmbeddingStream").objects.create(
        team=team, slug="docs", name="Docs", dimension=8, params={"n_permutations": 100}
    )
    Snapshot = old.get_model("monitoring", "EmbeddingSnapshot")
    Run = old.get_model("monitoring", "MonitorRun")
    reference = Snapshot.objects.create(stream=stream, file="r.npy", rows=10, dimension=8, observed_at=WHEN)
    snapshot = Snapshot.objects.create(stream=stream, file="s.npy", rows=10, dimension=8, observed_at=WHEN)
    run = Run.objects.create(
        stream=stream, snapshot=snapshot, reference=reference, observed_at=WHEN, status="done",
        effect_thresholds={"mmd2": 0.02, "mean_cosine_distance": 0.1},
    )  # fmt: skip
    old.get_model("monitoring", "MonitorValue").objects.bulk_create(
        [
            old.get_model("monitoring", "MonitorValue")(run=run, metric=metric, section=section, value=value)
            for metric, section, value in [
                ("effective_rank_ratio", "current", float("nan")),
                ("avg_cosine_similarity", "current", 0.4),
                ("mmd2", "drift", 0.05),
            ]
        ]
    )

    migrate(executor.loader.graph.leaf_nodes())
    migrated = MonitorRun.objects.select_related("stream").get(pk=run.pk)
    assert migrated.params == MonitorParams(n_permutations=100).to_dict()  # resolved from the stream
    series = Series.objects.get(kind="stream", key=str(stream.pk))
    assert (series.family, series.team_id, series.label) == ("embedding", team.pk, "stream Docs")
    stored = {
        (row.metric, row.subgroup): row.value
        for row in MetricValue.objects.filter(job_type="monitoring.monitorrun", job_id=run.pk, series=series)
    }
    assert stored == {
        ("effective_rank_ratio", ""): None,  # NaN became NULL
        ("avg_cosine_similarity", ""): 0.4,
        ("mmd2", ""): 0.05,
        ("mmd2", THRESHOLD_SUBGROUP): 0.02,
        ("mean_cosine_distance", THRESHOLD_SUBGROUP): 0.1,
    }
    assert monitors.run_values(migrated) == {
        "avg_cosine_similarity": {"value": 0.4, "section": "current"},
        "effective_rank_ratio": {"value": None, "section": "current"},
        "mmd2": {"value": 0.05, "section": "drift"},
    }
    (point,) = series_observations(series, ["mmd2"], last=3)
    assert (point.observed_at, point.values, point.effect_thresholds) == (
        WHEN,
        {"mmd2": 0.05},
        {"mmd2": 0.02},
    )

    previous = [
        node for node in executor.loader.get_migration(*values_move).dependencies if node[0] == "monitoring"
    ]
    executor = migrate(previous)
    back = executor.loader.project_state(previous).apps
    assert sorted(
        back.get_model("monitoring", "MonitorValue").objects.values_list("metric", "section", "value")
    ) == [
        ("avg_cosine_similarity", "current", 0.4),
        ("effective_rank_ratio", "current", None),
        ("mmd2", "drift", 0.05),
    ]
    assert not MetricValue.objects.filter(job_type="monitoring.monitorrun").exists()
    migrate(executor.loader.graph.leaf_nodes())
