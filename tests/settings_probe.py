"""Run in a subprocess by the tests: import the settings under a given environment and print them."""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "evalplatform.settings"
    try:
        from django.conf import settings

        settings.DEBUG  # noqa: B018 - forces the settings module to load
    except Exception as exc:
        print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
        sys.exit(3)
    print(
        json.dumps(
            {
                "DEBUG": settings.DEBUG,
                "SECRET_KEY": settings.SECRET_KEY,
                "ALLOWED_HOSTS": settings.ALLOWED_HOSTS,
                "DATABASE_ENGINE": settings.DATABASES["default"]["ENGINE"],
                "DATABASE_NAME": str(settings.DATABASES["default"]["NAME"]),
                "DATABASE_HOST": settings.DATABASES["default"].get("HOST", ""),
                "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
                "CELERY_BROKER_TRANSPORT_OPTIONS": {
                    key: str(value) for key, value in settings.CELERY_BROKER_TRANSPORT_OPTIONS.items()
                },
                "CELERY_TASK_ACKS_LATE": settings.CELERY_TASK_ACKS_LATE,
                "CELERY_TASK_REJECT_ON_WORKER_LOST": settings.CELERY_TASK_REJECT_ON_WORKER_LOST,
                "CELERY_TASK_SERIALIZER": settings.CELERY_TASK_SERIALIZER,
                "CELERY_BEAT_SCHEDULER": settings.CELERY_BEAT_SCHEDULER,
                "SITE_URL": settings.SITE_URL,
            }
        )
    )


if __name__ == "__main__":
    main()
