"""A web process makes at start what its first job send would otherwise make (`evalplatform.wsgi`'s
warm-up): the Celery app's task registry finalized, the producer pool and the result backend's object.
None of it connects: with the broker down the WSGI module still loads, and a send then fails as it did."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from django.db import connection

from tests.conftest import ROOT, _database_url_for
from tests.evalplatform.test_broker_down import closed_port

PROBE = """
import json
import evalplatform.wsgi  # noqa: F401
from evalplatform.celery import app
made = {"finalized": app.finalized, "backend": type(app._backend).__name__,
        "producer_pool": app.amqp._producer_pool is not None}
try:
    app.tasks["annotations.tasks.quality_recompute"].apply_async((0,), countdown=30, retry=False)
except Exception as error:
    made["send"] = type(error).__name__
print(json.dumps(made))
"""


def test_the_web_process_warms_celery_without_the_broker(db: None) -> None:
    env = {
        **os.environ,
        "DATABASE_URL": _database_url_for(connection.settings_dict),
        "CELERY_BROKER_URL": closed_port(),
        "CELERY_RESULT_BACKEND": closed_port(),
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    made = json.loads(result.stdout.strip().splitlines()[-1])
    assert made["finalized"] is True
    assert made["backend"] == "RedisBackend"
    assert made["producer_pool"] is True
    assert made["send"] == "OperationalError"  # the broker down: the send fails, the process loaded
