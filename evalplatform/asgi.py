"""ASGI entry point."""

import os

from django.core.asgi import get_asgi_application

from evalplatform.startup import APP_LOAD_ERROR, refuse_unloadable_settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalplatform.settings")
refuse_unloadable_settings("evalplatform.asgi", status=APP_LOAD_ERROR)

application = get_asgi_application()
