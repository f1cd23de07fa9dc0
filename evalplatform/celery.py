"""The Celery application. Configuration comes from Django settings (CELERY_* names)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalplatform.settings")

app = Celery("evalplatform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
