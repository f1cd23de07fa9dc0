"""Run in a subprocess by the tests: GET /healthz with the Django test client under a given environment.

A separate process lets a test point the database or the broker somewhere else without touching the
test process's own connections. It prints one JSON line: the last response, and how long each of the
requests took (`python -m tests.healthz_probe 3` makes three requests; the URLconf is loaded first, so
only the view is timed). The requests carry `HEALTHZ_TOKEN` from the environment, when it is set, to get
the checks' details; with `--public` they carry nothing, as an anonymous probe.
"""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "evalplatform.settings"
    import django

    django.setup()
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.urls import resolve

    setup_test_environment()
    resolve("/healthz")
    client = Client()
    args = [arg for arg in sys.argv[1:] if arg != "--public"]
    token = os.environ.get("HEALTHZ_TOKEN", "")
    headers = {"Authorization": f"Bearer {token}"} if token and "--public" not in sys.argv else {}
    seconds = []
    for _ in range(int(args[0]) if args else 1):
        started = time.monotonic()
        response = client.get("/healthz", headers=headers)
        seconds.append(time.monotonic() - started)
    print(json.dumps({"status_code": response.status_code, "body": response.json(), "seconds": seconds}))


if __name__ == "__main__":
    main()
