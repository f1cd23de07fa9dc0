from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


def _project_saved(sender: type, instance: Any, **kwargs: Any) -> None:
    from series.subjects import project_series_move

    project_series_move(instance)


def _project_deleted(sender: type, instance: Any, **kwargs: Any) -> None:
    from series.subjects import project_series_delete

    project_series_delete(instance)


class AnnotationsConfig(AppConfig):
    name = "annotations"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from annotations.models import Project, QualityRecompute
        from series.services import metric_values_follow

        metric_values_follow(QualityRecompute)
        post_save.connect(_project_saved, sender=Project, dispatch_uid="annotations-project-series-team")
        post_delete.connect(
            _project_deleted, sender=Project, dispatch_uid="annotations-project-series-delete"
        )
