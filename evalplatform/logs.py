"""Logging pieces named in `settings.LOGGING`."""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied
from django.http import Http404


class PlainRefusals(logging.Filter):
    """Keep `django.request`'s 403 and 404 warnings to one line: Django attaches the exception, so every
    plain permission denial or missing page printed a traceback to the console as if it were a bug."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], PermissionDenied | Http404):
            record.exc_info = None
            record.exc_text = None
        return True
