"""Django project for evalplatform. The Celery app is imported here so shared tasks bind to it."""

from evalplatform.celery import app as celery_app

__all__ = ["celery_app"]
