from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    name = "monitoring"
    verbose_name = "Evaluation and monitoring"

    def ready(self) -> None:
        from django.db.models.signals import post_delete

        from annotations.hooks import answers_hook_register, project_links_register
        from annotations.signals import qrels_build_done
        from monitoring.alerts.services import series_observed, subject_deleted
        from monitoring.evaluations.loop import qrels_build_announced
        from monitoring.models import (
            Comparison,
            EmbeddingStream,
            Evaluation,
            FraudScoreEvaluation,
            MonitorRun,
            QrelsSource,
            RecommendationEvaluation,
        )
        from monitoring.pooling.planner import qrels_build_announced as pools_simulate_announced
        from monitoring.pooling.selectors import pool_links
        from monitoring.pooling.services import pool_answers_changed
        from series.services import metric_values_follow
        from series.signals import series_observed as observed

        # Their values live in the one metric table, named by the job's label and id: deleting a job
        # (or what it cascades from: a stream, a set, a run) deletes them.
        for model in (Evaluation, Comparison, MonitorRun, RecommendationEvaluation, FraudScoreEvaluation):
            metric_values_follow(model)
        # Every family's values reach the alert rules one way: the table's signal, once committed.
        observed.connect(series_observed, dispatch_uid="monitoring-alerts-series-observed")
        # A new qrels version of a project linked to a team re-scores the team's runs on it.
        qrels_build_done.connect(qrels_build_announced, dispatch_uid="monitoring-qrels-build-rescore")
        # ... and the planner's simulation of the project's pools replays the strategies on it.
        qrels_build_done.connect(pools_simulate_announced, dispatch_uid="monitoring-qrels-build-pools")
        for subject in (EmbeddingStream, QrelsSource):
            post_delete.connect(
                subject_deleted, sender=subject, dispatch_uid=f"monitoring-series-{subject.__name__}"
            )
        # New answers in a project with a pool built from runs re-order its pending tasks (a debounced job).
        answers_hook_register(pool_answers_changed)
        project_links_register(pool_links)
