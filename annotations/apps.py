from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    name = "annotations"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from annotations.models import QualityRecompute
        from series.services import metric_values_follow

        metric_values_follow(QualityRecompute)
