from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    name = "monitoring"
    verbose_name = "Evaluation and monitoring"

    def ready(self) -> None:
        from monitoring.models import Comparison, Evaluation
        from series.services import metric_values_follow

        # Their scalars are rows of the metric table, naming their job by label and id.
        metric_values_follow(Evaluation)
        metric_values_follow(Comparison)
