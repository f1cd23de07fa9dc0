"""WSGI entry point (gunicorn evalplatform.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

from evalplatform.startup import APP_LOAD_ERROR, refuse_unloadable_settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalplatform.settings")
refuse_unloadable_settings("evalplatform.wsgi", status=APP_LOAD_ERROR)

application = get_wsgi_application()


def _warm() -> None:
    """Make at start what the first requests of each web process would otherwise: the URLconf (and so
    every view), the Celery task modules (sending a job looks its task up), the Celery app's task registry
    (finalized on a first send's look-up), the broker's transport (its producer pool) and the result
    backend's object (each send makes its result handle on it), none of them connecting: the web starts
    with the broker down. They cost the first requests about 0.5 s, which under load queued the requests
    behind them; the registry and the backend, left to the first answer that queues a quality recompute,
    were 0.1-0.3 s of CPU in each web process (py-spy, the load benchmark's `submit-next` mode)."""
    from django.urls import get_resolver

    from evalplatform.celery import app

    get_resolver().url_patterns  # noqa: B018 - the property imports the URLconf
    app.loader.import_default_modules()
    app.finalize(auto=True)
    app.amqp.producer_pool  # noqa: B018 - the property imports the transport and makes the pool
    app.backend  # noqa: B018 - the property makes the backend (a Redis one connects on first use)


_warm()
