from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    name = "monitoring"
    verbose_name = "Evaluation and monitoring"

    def ready(self) -> None:
        from monitoring.models import (
            Comparison,
            Evaluation,
            FraudScoreEvaluation,
            MonitorRun,
            RecommendationEvaluation,
        )
        from series.services import metric_values_follow

        # Their values live in the one metric table, named by the job's label and id: deleting a job
        # (or what it cascades from: a stream, a set, a run) deletes them.
        for model in (Evaluation, Comparison, MonitorRun, RecommendationEvaluation, FraudScoreEvaluation):
            metric_values_follow(model)
