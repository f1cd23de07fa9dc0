"""gunicorn's settings file: gunicorn reads `./gunicorn.conf.py` from the directory it starts in (the
checkout, the image's /app) unless given `-c`. Its one setting is a check: the master loads Django's
settings before it starts any worker, so that settings that cannot load (no `SECRET_KEY` with DEBUG off,
a malformed variable) stop it with the one line `evalplatform.wsgi` would print, and the status of an
application that failed to load (4). Without it each of several workers printed the line, and the master
then raised its own "App failed to load" with a traceback while stopping the others."""

import os


def on_starting(server: object) -> None:
    from evalplatform.startup import APP_LOAD_ERROR, refuse_unloadable_settings

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalplatform.settings")
    refuse_unloadable_settings("evalplatform.wsgi", status=APP_LOAD_ERROR)
