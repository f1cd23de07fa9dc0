"""What each of the platform's programs does first: `manage.py`, the WSGI and ASGI applications (gunicorn)
and the Celery app (the worker and beat) refuse settings that cannot load in one line on stderr (no
`SECRET_KEY` with DEBUG off, a malformed variable or demo file), where Django's traceback of some 40 lines
buried the one that says what is missing."""

from __future__ import annotations

import sys

#: gunicorn's exit status for an application that failed to load: its master stops instead of starting
#: the worker again (any other status is a worker to replace, and the refusal would repeat forever).
APP_LOAD_ERROR = 4


def refuse_unloadable_settings(program: str, *, status: int = 1) -> None:
    """Exit with `program: <the reason>` on stderr, and `status`, when Django's settings refuse to load."""
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    from evalplatform.env import EnvError

    try:
        settings.INSTALLED_APPS  # noqa: B018 - loads the settings module
    except (ImproperlyConfigured, EnvError) as exc:
        print(f"{program}: {exc}", file=sys.stderr)
        sys.exit(status)
