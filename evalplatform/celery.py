"""The Celery application. Configuration comes from Django settings (CELERY_* names)."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import celeryd_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalplatform.settings")

app = Celery("evalplatform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_configure.connect
def settings_refusal(sender: Any = None, **kwargs: Any) -> None:
    """The worker and beat read the Django settings when the app first reads its configuration (a Django
    process has loaded them by then): settings that cannot load stop them in one line."""
    from evalplatform.startup import refuse_unloadable_settings

    refuse_unloadable_settings("celery")


WORKER_SOCKET_TIMEOUT = 10.0  # seconds; above kombu's one-second BRPOP, so an idle queue is not a timeout


@celeryd_init.connect
def worker_broker_timeouts(conf: Any = None, **kwargs: Any) -> None:
    """A worker reads the broker with a longer socket timeout than a web request, which must fail fast."""
    options = dict(conf.broker_transport_options or {})
    if "socket_timeout" in options:
        options["socket_timeout"] = max(float(options["socket_timeout"]), WORKER_SOCKET_TIMEOUT)
        conf.broker_transport_options = options
