"""Retrieval results in the one metric table: an evaluation's values in its run's series, a comparison's
summaries in no series, re-runs that update, undefined values as NULL, the migration that carried the
old result tables' rows, and the comparison parameters declared once."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.utils import timezone

from evalcore.comparison import DEFAULT_MEASURES, ComparisonParams, ComparisonParamsError
from evalplatform.jobs import JobStatus
from evalplatform.models import Team
from monitoring.common.serializers import ComparisonIn, EvaluationIn
from monitoring.evaluations import forms
from monitoring.evaluations import services as evaluations
from monitoring.files import uploads
from monitoring.models import Comparison, Evaluation
from series.models import MetricValue, Series
from series.selectors import series_history
from series.subjects import run_series
from tests.monitoring.conftest import synthetic_collection, upload
from tests.monitoring.stored import comparison_rows, evaluation_rows

QRELS, RUN = synthetic_collection()


@pytest.fixture
def sources(team: Team, theo: User) -> tuple[Any, Any, Any]:
    qrels = uploads.qrels_upload(team=team, upload=upload("judged.qrels", QRELS), uploaded_by=theo)
    good = uploads.run_upload(team=team, upload=upload("bm25.run", RUN(1, 1.5, "bm25")), uploaded_by=theo)
    weak = uploads.run_upload(team=team, upload=upload("dense.run", RUN(2, 0.3, "dense")), uploaded_by=theo)
    return qrels, good, weak


def run_again(model: type[Evaluation] | type[Comparison], pk: int) -> None:
    """Reset a done job and run it again, as a re-queued job would (a re-delivered message of a done job
    writes nothing: this one computes and stores again)."""
    model.objects.filter(pk=pk).update(status=JobStatus.PENDING, attempts=0)
    runner = evaluations.evaluation_run if model is Evaluation else evaluations.comparison_run
    key = "evaluation_id" if model is Evaluation else "comparison_id"
    assert runner(**{key: pk}).status == "done"


@pytest.mark.django_db
class TestValues:
    def test_it_writes_an_evaluation_into_its_run_series_and_a_rerun_updates_it(self, sources: Any) -> None:
        qrels, good, _ = sources
        evaluation = evaluations.evaluation_create(
            run=good, qrels=qrels, measures=["map", "P_10"], enqueue=False
        )
        assert evaluations.evaluation_run(evaluation_id=evaluation.pk).status == "done"
        first = list(MetricValue.objects.filter(job_type="monitoring.evaluation").order_by("position"))
        series = run_series(qrels, "bm25")
        assert [(v.metric, v.series_id, v.family, v.subgroup) for v in first] == [
            ("map", series.pk, "retrieval", ""), ("P_10", series.pk, "retrieval", ""),
            ("Judged@10", series.pk, "retrieval", ""), ("Judged@100", series.pk, "retrieval", "")]  # fmt: skip
        evaluation.refresh_from_db()
        assert evaluation.finished_at is not None
        assert abs((first[0].observed_at - evaluation.finished_at).total_seconds()) < 5
        run_again(Evaluation, evaluation.pk)
        again = list(MetricValue.objects.filter(job_type="monitoring.evaluation").order_by("position"))
        assert [(v.metric, v.value) for v in again] == [
            (v.metric, v.value) for v in first
        ]  # replaced, never added
        assert [v.value for v in again] == [v.value for v in first]
        assert (
            list(series_history(series)) == ["map", "P_10", "Judged@10", "Judged@100"]
            and len(series_history(series)["map"]) == 1
        )
        assert Series.objects.filter(kind="run").count() == 1

    def test_it_writes_a_comparisons_summaries_in_no_series_and_a_rerun_updates_them(
        self, sources: Any
    ) -> None:
        qrels, good, weak = sources
        comparison = evaluations.comparison_create(qrels=qrels, runs=[good, weak], enqueue=False)
        assert evaluations.comparison_run(comparison_id=comparison.pk).status == "done"
        values = MetricValue.objects.filter(job_type="monitoring.comparison", job_id=comparison.pk)
        before = sorted(values.values_list("metric", "subgroup", "value"))
        assert {(metric, subgroup) for metric, subgroup, _ in before} == {
            (m, str(r.pk)) for m in ("map", "ndcg_cut_10") for r in (good, weak)}  # fmt: skip
        assert not values.filter(series__isnull=False).exists()
        run_again(Comparison, comparison.pk)
        assert sorted(values.values_list("metric", "subgroup", "value")) == before
        stored = comparison_rows(comparison)
        assert {row.num_queries for row in stored.values()} == {20}
        assert all(len(row.per_query) == 20 for row in stored.values())

    def test_it_stores_undefined_values_as_null_and_serves_them_as_null(
        self, sources: Any, client: Client, vera: User
    ) -> None:
        qrels, good, weak = sources
        evaluation = evaluations.evaluation_create(
            run=good, qrels=qrels, measures=["map", "P_10"], enqueue=False
        )
        output = evaluations.EvaluationOutput(
            qids=["q1", "q2"], num_queries=2, num_missing=0,
            rows=[evaluations.MeasureRow("map", float("nan"), float("-inf"), float("inf"), [None, 0.5]),
                  evaluations.MeasureRow("P_10", 0.25, None, None, [0.2, 0.3])],
        )  # fmt: skip
        evaluations._store_evaluation(evaluation, output)
        evaluation.status, evaluation.finished_at = JobStatus.DONE, timezone.now()
        evaluation.save()
        rows = MetricValue.objects.filter(job_type="monitoring.evaluation").order_by("position")
        assert list(rows.values_list("metric", "value", "ci_low", "ci_high")) == [
            ("map", None, None, None), ("P_10", 0.25, None, None)]  # fmt: skip
        client.force_login(vera)
        body = client.get(f"/api/teams/search/evaluations/{evaluation.pk}/").json()
        assert [(r["measure"], r["value"], r["ci_low"]) for r in body["results"]] == [
            ("map", None, None), ("P_10", 0.25, None)]  # fmt: skip
        per_query = client.get(f"/api/teams/search/evaluations/{evaluation.pk}/per-query/").json()
        assert [row["values"]["map"] for row in per_query["results"]] == [None, 0.5]

        comparison = evaluations.comparison_create(
            qrels=qrels, runs=[good, weak], measures=["map"], enqueue=False
        )
        summary = {
            "measure": "map",
            "ci_low": None,
            "ci_high": None,
            "num_queries": 2,
            "per_query": [0.1, 0.2],
        }
        evaluations._store_comparison(comparison, evaluations.ComparisonOutput(
            qids=["q1", "q2"], pairs=[],
            summaries=[{"run_id": good.pk, "mean": float("nan"), **summary},
                       {"run_id": weak.pk, "mean": 0.15, **summary}],
        ))  # fmt: skip
        assert [(s.run_id, s.mean) for s in Comparison.objects.get(pk=comparison.pk).summaries] == [
            (weak.pk, 0.15), (good.pk, None)]  # fmt: skip

    def test_it_forgets_a_jobs_values_with_the_job(self, sources: Any) -> None:
        qrels, good, weak = sources
        evaluation = evaluations.evaluation_create(run=good, qrels=qrels, measures=["map"], enqueue=False)
        evaluations.evaluation_run(evaluation_id=evaluation.pk)
        comparison = evaluations.comparison_create(
            qrels=qrels, runs=[good, weak], measures=["map"], enqueue=False
        )
        evaluations.comparison_run(comparison_id=comparison.pk)
        assert MetricValue.objects.count() == 5  # map and the two coverage measures; map of each run
        good.delete()  # its evaluation and its comparison's pairs go with it
        comparison.delete()
        assert not MetricValue.objects.exists() and not evaluation_rows(evaluation.pk)


class TestParams:
    def test_it_declares_the_comparison_parameters_once(self) -> None:
        params = ComparisonParams()
        assert (params.alpha, params.test, params.correction, params.measures) == (
            0.05, "t", "holm", ("map", "ndcg_cut_10"))  # fmt: skip
        for field, model_default in [
            ("alpha", Comparison._meta.get_field("alpha").default),
            ("test", Comparison._meta.get_field("test").default),
            ("correction", Comparison._meta.get_field("correction").default),
            ("rel_level", Evaluation._meta.get_field("rel_level").default),
            ("confidence", Evaluation._meta.get_field("confidence").default),
            ("alpha", ComparisonIn().fields["alpha"].default),
            ("rel_level", EvaluationIn().fields["rel_level"].default),
            ("alpha", forms.ComparisonForm.base_fields["alpha"].initial),
            ("alpha", inspect.signature(evaluations.comparison_create).parameters["alpha"].default),
        ]:
            assert model_default == getattr(params, field), field
        assert list(inspect.signature(evaluations.evaluation_create).parameters["measures"].default) == list(
            DEFAULT_MEASURES
        )

    def test_it_refuses_parameters_it_cannot_use_naming_the_field(self) -> None:
        with pytest.raises(ComparisonParamsError) as refused:
            ComparisonParams(correction="sidak")  # type: ignore[arg-type]
        assert refused.value.field == "correction" and "holm" in str(refused.value)
        with pytest.raises(ComparisonParamsError, match="alpha"):
            ComparisonParams(alpha=0.0)

    def test_it_gives_compare_runs_the_same_defaults(self) -> None:
        from monitoring.management.commands.compare_runs import Command

        parser = Command().create_parser("manage.py", "compare_runs")
        defaults = {a.dest: a.default for a in parser._actions}
        assert (defaults["alpha"], defaults["test"], defaults["correction"]) == (0.05, "t", "holm")


@pytest.mark.django_db(transaction=True)
def test_it_carries_the_old_result_rows_into_the_metric_table_and_back(team: Team) -> None:
    """Back to the node before the copy, old rows written there, forward: the values are in the table
    and the arrays on the jobs; back again: the old rows come back as they were."""
    executor = MigrationExecutor(connection)
    before = [
        key
        for key in executor.loader.disk_migrations
        if key[1].endswith("_retrieval_results_per_query_fields")
    ]
    leaves = executor.loader.graph.leaf_nodes()
    try:
        executor.migrate(before)
        old = MigrationExecutor(connection).loader.project_state(before).apps
        team_id = team.pk
        QrelsSource, Run = old.get_model("monitoring", "QrelsSource"), old.get_model("monitoring", "Run")
        Evaluation_, Comparison_ = (
            old.get_model("monitoring", "Evaluation"),
            old.get_model("monitoring", "Comparison"),
        )
        qrels = QrelsSource.objects.create(team_id=team_id, name="judged", kind="upload", file="q.qrels")
        runs = [Run.objects.create(team_id=team_id, name="nightly", file=f"r{i}.run") for i in range(2)]
        finished = timezone.now()
        jobs = [
            Evaluation_.objects.create(
                team_id=team_id,
                run=run,
                qrels=qrels,
                measures=["map", "P_10"],
                options_key="k",
                status="done",
                finished_at=finished,
                qids=["q1", "q2"],
            )  # fmt: skip
            for run in runs
        ]
        old.get_model("monitoring", "EvaluationResult").objects.bulk_create(
            old.get_model("monitoring", "EvaluationResult")(
                evaluation=job,
                measure=measure,
                position=position,
                value=0.1 * (i + 1) if measure == "map" else None,
                ci_low=0.05,
                ci_high=0.2,
                per_query=[0.1, None],
            )  # fmt: skip
            for i, job in enumerate(jobs)
            for position, measure in enumerate(["map", "P_10"])
        )
        comparison = Comparison_.objects.create(team_id=team_id, qrels=qrels, measures=["map"], status="done",
                                                qids=["q1", "q2"])  # fmt: skip
        comparison.runs.set(runs)
        old.get_model("monitoring", "ComparisonSummary").objects.bulk_create(
            old.get_model("monitoring", "ComparisonSummary")(
                comparison=comparison,
                run=run,
                measure="map",
                mean=0.1 * (i + 1),
                ci_low=None,
                ci_high=None,
                num_queries=2 if i else None,
                per_query=[0.3, 0.4],
            )  # fmt: skip
            for i, run in enumerate(runs)
        )

        MigrationExecutor(connection).migrate(leaves)
        series = Series.objects.get(kind="run")
        assert (series.key, series.name, series.family, series.team_id) == (
            f"{qrels.pk}:nightly", "nightly", "retrieval", team_id)  # fmt: skip
        values = MetricValue.objects.filter(job_type="monitoring.evaluation")
        assert sorted(values.values_list("job_id", "metric", "value", "ci_low", "series_id", "observed_at")) == sorted(
            (job.pk, measure, (0.1 * (i + 1) if measure == "map" else None), 0.05, series.pk, finished)
            for i, job in enumerate(jobs) for measure in ["map", "P_10"]
        )  # fmt: skip
        assert Evaluation.objects.get(pk=jobs[0].pk).per_query == {"map": [0.1, None], "P_10": [0.1, None]}
        assert sorted(
            MetricValue.objects.filter(job_type="monitoring.comparison").values_list(
                "subgroup", "value", "series"
            )
        ) == sorted([(str(runs[0].pk), 0.1, None), (str(runs[1].pk), 0.2, None)])
        moved = Comparison.objects.get(pk=comparison.pk)
        assert moved.num_queries == {str(runs[0].pk): {"map": None}, str(runs[1].pk): {"map": 2}}
        assert moved.per_query[str(runs[1].pk)] == {"map": [0.3, 0.4]}

        MigrationExecutor(connection).migrate(before)  # and back: the old rows as they were
        back = MigrationExecutor(connection).loader.project_state(before).apps
        assert sorted(
            back.get_model("monitoring", "EvaluationResult").objects.values_list(
                "measure", "value", "per_query"
            )
        ) == sorted(
            [("P_10", None, [0.1, None])] * 2 + [("map", 0.1, [0.1, None]), ("map", 0.2, [0.1, None])]
        )
        assert sorted(
            back.get_model("monitoring", "ComparisonSummary").objects.values_list(
                "run_id", "mean", "num_queries"
            )
        ) == [(runs[0].pk, 0.1, None), (runs[1].pk, 0.2, 2)]
        assert not MetricValue.objects.exists()
    finally:
        MigrationExecutor(connection).migrate(leaves)
    call_command("migrate", "--check", verbosity=0)
