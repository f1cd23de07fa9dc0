from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    name = "monitoring"
    verbose_name = "Evaluation and monitoring"

    def ready(self) -> None:
        # A monitor run's values live in the one metric table, named by the run's label and id: they go
        # with the run (and with its stream, whose deletion cascades to its runs).
        from monitoring.models import MonitorRun
        from series.services import metric_values_follow

        metric_values_follow(MonitorRun)
