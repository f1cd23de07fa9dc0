from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    name = "monitoring"
    verbose_name = "Evaluation and monitoring"

    def ready(self) -> None:
        from monitoring.models import FraudScoreEvaluation, RecommendationEvaluation
        from series.services import metric_values_follow

        # Their values live in the metric table, named by job: deleting an evaluation deletes them.
        for model in (RecommendationEvaluation, FraudScoreEvaluation):
            metric_values_follow(model)
