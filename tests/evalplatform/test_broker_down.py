"""With the broker down, answering still works and a job request says so at once: no request hangs.

Each case runs the requests in a subprocess whose CELERY_BROKER_URL points at a closed port (Redis
stopped) or at a server that accepts connections and never answers (a hung broker). The bounds are the
settings' BROKER_CONNECT_TIMEOUT_MS (500 ms) with one quick retry.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.db import connection

from annotations import services
from annotations.models import Annotation, QrelsBuild
from tests.annotations.conftest import build_project
from tests.conftest import ROOT, _database_url_for

BOUND_SECONDS = 2.0  # generous for a loaded CI machine; before the bounds a closed port took about 19 s


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP server that accepts connections and never reads or writes."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    try:
        yield f"redis://127.0.0.1:{server.getsockname()[1]}/0"
    finally:
        server.close()


def closed_port() -> str:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"redis://127.0.0.1:{port}/0"


def requests_with_broker(broker_url: str, *args: str) -> dict[str, dict[str, object]]:
    env = {
        **os.environ,
        "DATABASE_URL": _database_url_for(connection.settings_dict),
        "CELERY_BROKER_URL": broker_url,
        "CELERY_RESULT_BACKEND": "",
    }
    result = subprocess.run(
        [sys.executable, "-m", "tests.broker_down_probe", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("broker", ["closed port", "silent server"])
def test_answers_are_kept_and_jobs_fail_fast_with_the_reason(
    broker: str, request: pytest.FixtureRequest, lena: User, alice: User
) -> None:
    url = closed_port() if broker == "closed port" else request.getfixturevalue("silent_server")
    project = build_project(lead=lena, annotators=[alice])
    held = services.task_claim(project=project, annotator=alice).assignment
    assert held is not None
    out = requests_with_broker(url, project.slug, alice.username, lena.username, str(held.pk))

    answer, build = out["answer"], out["build"]
    assert answer["status_code"] == 201, answer
    assert Annotation.objects.filter(assignment=held).count() == 1
    assert answer["seconds"] < BOUND_SECONDS, answer
    assert build["status_code"] == 503, build
    assert build["seconds"] < BOUND_SECONDS, build
    stored = QrelsBuild.objects.get(project=project)
    assert stored.status == QrelsBuild.Status.FAILED and "task queue is unreachable" in stored.error
