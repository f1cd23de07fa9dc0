"""WSGI entry point (gunicorn evalplatform.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

from evalplatform.startup import APP_LOAD_ERROR, refuse_unloadable_settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalplatform.settings")
refuse_unloadable_settings("evalplatform.wsgi", status=APP_LOAD_ERROR)

application = get_wsgi_application()


def _warm() -> None:
    """Import at start what the first requests of each web process would otherwise: the URLconf (and so
    every view), the Celery task modules (sending a job looks its task up) and the broker's transport
    (its producer pool, created without connecting: the web starts with the broker down). They cost the
    first requests about 0.5 s, which under load queued the requests behind them."""
    from django.urls import get_resolver

    from evalplatform.celery import app

    get_resolver().url_patterns  # noqa: B018 - the property imports the URLconf
    app.loader.import_default_modules()
    app.amqp.producer_pool  # noqa: B018 - the property imports the transport and makes the pool


_warm()
