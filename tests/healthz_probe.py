"""Run in a subprocess by the tests: GET /healthz with the Django test client under a given environment.

A separate process lets a test point the database or the broker somewhere else without touching the
test process's own connections.
"""

from __future__ import annotations

import json
import os


def main() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "evalplatform.settings"
    import django

    django.setup()
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()
    response = Client().get("/healthz")
    print(json.dumps({"status_code": response.status_code, "body": response.json()}))


if __name__ == "__main__":
    main()
