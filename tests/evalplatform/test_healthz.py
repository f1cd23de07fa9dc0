"""/healthz reports the database, the broker and the workers, each with a status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client

from tests.conftest import WorkerProcess, _database_url_for

ROOT = Path(__file__).resolve().parents[2]


def healthz_in_subprocess(**env: str) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-m", "tests.healthz_probe"],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
class TestHealthz:
    def test_it_reports_everything_ok_with_a_worker(
        self, client: Client, celery_worker_process: WorkerProcess
    ) -> None:
        response = client.get("/healthz")
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "ok"
        assert body["checks"]["database"]["status"] == "ok"
        assert body["checks"]["database"]["detail"] == "postgresql"
        assert body["checks"]["broker"]["status"] == "ok"
        assert body["checks"]["worker"]["status"] == "ok"
        assert celery_worker_process.hostname in body["checks"]["worker"]["workers"]

    def test_it_needs_no_login(self, client: Client, celery_worker_process: WorkerProcess) -> None:
        assert client.get("/healthz").status_code == 200

    def test_it_reports_a_missing_worker_as_degraded(self) -> None:
        # Redis database 13 has no worker listening.
        result = healthz_in_subprocess(
            DATABASE_URL=_database_url_for(connection.settings_dict),
            CELERY_BROKER_URL="redis://127.0.0.1:6379/13",
        )
        assert result["status_code"] == 200
        body = result["body"]
        assert isinstance(body, dict)
        assert body["status"] == "degraded"
        assert body["checks"]["database"]["status"] == "ok"
        assert body["checks"]["broker"]["status"] == "ok"
        assert body["checks"]["worker"] == {
            "status": "down",
            "latency_ms": body["checks"]["worker"]["latency_ms"],
            "detail": "no worker answered a ping",
        }

    def test_it_returns_503_when_the_database_is_down(self) -> None:
        # Nothing listens on port 1.
        result = healthz_in_subprocess(DATABASE_URL="postgres://postgres@127.0.0.1:1/evalplatform")
        assert result["status_code"] == 503
        body = result["body"]
        assert isinstance(body, dict)
        assert body["status"] == "down"
        assert body["checks"]["database"]["status"] == "down"
        assert "OperationalError" in body["checks"]["database"]["detail"]

    def test_it_reports_an_unreachable_broker(self) -> None:
        result = healthz_in_subprocess(
            DATABASE_URL=_database_url_for(connection.settings_dict),
            CELERY_BROKER_URL="redis://127.0.0.1:1/0",
        )
        assert result["status_code"] == 200
        body = result["body"]
        assert isinstance(body, dict)
        assert body["status"] == "degraded"
        assert body["checks"]["broker"]["status"] == "down"
        assert body["checks"]["worker"]["status"] == "down"
