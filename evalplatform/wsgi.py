"""WSGI entry point (gunicorn evalplatform.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalplatform.settings")

application = get_wsgi_application()
