"""Run in a subprocess by the tests: an annotator's answer and a lead's job request with the broker down.

The environment points CELERY_BROKER_URL at a closed port or at a server that accepts and never answers;
the test process's own broker connection is untouched. Arguments: project slug, annotator, lead,
assignment id. Prints one JSON line: each request's status, body and seconds.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any


def main() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "evalplatform.settings"
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.urls import resolve

    setup_test_environment()
    slug, annotator, lead, assignment = sys.argv[1:5]
    resolve(f"/api/projects/{slug}/submit/")
    out: dict[str, Any] = {}
    for name, username, path, body in (
        ("answer", annotator, "submit/", {"assignment": int(assignment), "grade": 2}),
        ("build", lead, "qrels/", {}),
    ):
        client = Client()
        client.force_login(User.objects.get(username=username))
        started = time.monotonic()
        response = client.post(
            f"/api/projects/{slug}/{path}", json.dumps(body), content_type="application/json"
        )
        out[name] = {
            "status_code": response.status_code,
            "body": response.json(),
            "seconds": time.monotonic() - started,
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
