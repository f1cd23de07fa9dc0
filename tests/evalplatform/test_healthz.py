"""/healthz reports the database, the broker and the workers, each with a status, in well under a second.

The worker check reads fresh heartbeat rows; without one it pings with a short timeout and keeps the
answer a few seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.utils import timezone

from evalplatform.health import PING_TIMEOUT
from evalplatform.models import WorkerHeartbeat, heartbeat_fresh_for
from evalplatform.tasks import record_heartbeat
from tests.conftest import WorkerProcess, _database_url_for
from tests.evalplatform.test_heartbeat import wait_for

ROOT = Path(__file__).resolve().parents[2]
# Redis database 13 has no worker listening.
NO_WORKER_BROKER = "redis://127.0.0.1:6379/13"
# The ping's timeout (0.5 s) and the request around it, in a fresh process on a shared machine.
UNDER_A_SECOND = 1.0
TOKEN = "health-token-for-the-tests-0123456789"


def healthz_in_subprocess(*, requests: int = 1, public: bool = False, **env: str) -> dict[str, object]:
    """GET /healthz from another process: with the health token (the details), or `public`ly."""
    result = subprocess.run(
        [sys.executable, "-m", "tests.healthz_probe", str(requests), *(["--public"] if public else [])],
        cwd=ROOT,
        env={**os.environ, "HEALTHZ_TOKEN": TOKEN, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def timed_get(client: Client) -> tuple[float, dict[str, object]]:
    started = time.monotonic()
    response = client.get("/healthz", headers={"Authorization": f"Bearer {TOKEN}"})
    seconds = time.monotonic() - started
    assert response.status_code == 200
    return seconds, response.json()


@pytest.fixture(autouse=True)
def no_cached_ping() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def health_token(settings: Any) -> None:
    settings.HEALTHZ_TOKEN = TOKEN


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
class TestHealthz:
    def test_it_reports_everything_ok_with_a_worker(
        self, client: Client, celery_worker_process: WorkerProcess
    ) -> None:
        seconds, body = timed_get(client)
        assert body["status"] == "ok"
        assert body["checks"]["database"]["status"] == "ok"
        assert body["checks"]["database"]["detail"] == "postgresql"
        assert body["checks"]["broker"]["status"] == "ok"
        assert body["checks"]["worker"]["status"] == "ok"
        assert body["checks"]["worker"]["workers"] == [celery_worker_process.hostname]
        assert seconds < UNDER_A_SECOND

    def test_it_pings_a_worker_without_a_fresh_heartbeat_and_stops_at_its_answer(
        self, client: Client, celery_worker_process: WorkerProcess
    ) -> None:
        WorkerHeartbeat.objects.all().delete()
        seconds, body = timed_get(client)
        worker = body["checks"]["worker"]
        assert worker == {
            "status": "ok",
            "latency_ms": worker["latency_ms"],
            "detail": "no fresh heartbeat, a worker answered a ping",
            "workers": [celery_worker_process.hostname],
        }
        assert worker["latency_ms"] < 400  # the ping's timeout is 500 ms: it did not wait for it
        assert seconds < UNDER_A_SECOND

    def test_it_reads_the_heartbeat_of_a_real_worker(
        self, client: Client, celery_worker_process: WorkerProcess
    ) -> None:
        WorkerHeartbeat.objects.all().delete()
        record_heartbeat.delay()
        assert wait_for(lambda: WorkerHeartbeat.objects.exists()), celery_worker_process.log()
        seconds, body = timed_get(client)
        worker = body["checks"]["worker"]
        window = int(heartbeat_fresh_for().total_seconds())
        assert worker == {
            "status": "ok",
            "latency_ms": worker["latency_ms"],
            "detail": f"1 worker(s) sent a heartbeat in the last {window} s",
            "workers": [celery_worker_process.hostname],
        }
        assert seconds < UNDER_A_SECOND

    def test_it_needs_no_login(self, client: Client, celery_worker_process: WorkerProcess) -> None:
        assert client.get("/healthz").status_code == 200

    def test_it_reports_a_missing_worker_as_degraded_in_under_a_second(self) -> None:
        result = healthz_in_subprocess(
            DATABASE_URL=_database_url_for(connection.settings_dict), CELERY_BROKER_URL=NO_WORKER_BROKER
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
            "detail": "no fresh heartbeat and no worker answered a ping",
        }
        assert result["seconds"][0] < UNDER_A_SECOND

    def test_it_keeps_a_ping_answer_a_few_seconds(self) -> None:
        result = healthz_in_subprocess(
            requests=2,
            DATABASE_URL=_database_url_for(connection.settings_dict),
            CELERY_BROKER_URL=NO_WORKER_BROKER,
        )
        body = result["body"]
        assert isinstance(body, dict)
        assert (
            body["checks"]["worker"]["detail"] == "no fresh heartbeat and no worker answered a ping (cached)"
        )
        first, second = result["seconds"]
        # A ping waits its whole timeout for an answer that never comes; the cached answer waits for none.
        assert second < PING_TIMEOUT <= first

    def test_it_trusts_a_fresh_heartbeat_without_pinging(self) -> None:
        WorkerHeartbeat.objects.record(hostname="celery@web1")
        result = healthz_in_subprocess(
            DATABASE_URL=_database_url_for(connection.settings_dict), CELERY_BROKER_URL=NO_WORKER_BROKER
        )
        body = result["body"]
        assert isinstance(body, dict)
        assert body["status"] == "ok"
        assert body["checks"]["worker"]["workers"] == ["celery@web1"]
        # Quicker than a ping, which waits its whole timeout here (no worker answers).
        assert result["seconds"][0] < PING_TIMEOUT

    def test_it_ignores_a_stale_heartbeat(self) -> None:
        WorkerHeartbeat.objects.create(
            hostname="celery@gone", last_seen=timezone.now() - heartbeat_fresh_for() - timedelta(seconds=1)
        )
        result = healthz_in_subprocess(
            DATABASE_URL=_database_url_for(connection.settings_dict), CELERY_BROKER_URL=NO_WORKER_BROKER
        )
        body = result["body"]
        assert isinstance(body, dict)
        assert body["status"] == "degraded"
        assert body["checks"]["worker"]["status"] == "down"

    def test_it_returns_503_when_the_database_is_down(self) -> None:
        # Nothing listens on port 1.
        result = healthz_in_subprocess(DATABASE_URL="postgres://postgres@127.0.0.1:1/evalplatform")
        assert result["status_code"] == 503
        body = result["body"]
        assert isinstance(body, dict)
        assert body["status"] == "down"
        assert body["checks"]["database"]["status"] == "down"
        assert "OperationalError" in body["checks"]["database"]["detail"]

    def test_it_reports_an_unreachable_broker_without_waiting_for_retries(self) -> None:
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
        assert result["seconds"][0] < UNDER_A_SECOND


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
class TestHealthzAccess:
    """The probe found /healthz telling anyone the worker hostnames and the broker's host and port."""

    def test_it_tells_anyone_the_status_and_nothing_else(self, client: Client) -> None:
        WorkerHeartbeat.objects.record(hostname="celery@secret-host")
        response = client.get("/healthz")
        assert response.status_code == 200
        assert response.json() == {"status": "ok"}
        assert b"secret-host" not in response.content and b"6379" not in response.content

    def test_it_keeps_the_public_status_a_few_seconds(
        self, client: Client, django_assert_num_queries: Any
    ) -> None:
        WorkerHeartbeat.objects.record(hostname="celery@web1")
        assert client.get("/healthz").json() == {"status": "ok"}
        with django_assert_num_queries(0):
            assert client.get("/healthz").json() == {"status": "ok"}

    def test_it_shows_the_details_to_staff(self, client: Client, lena: User) -> None:
        WorkerHeartbeat.objects.record(hostname="celery@web1")
        lena.is_staff = True
        lena.save(update_fields=["is_staff"])
        client.force_login(lena)
        body = client.get("/healthz").json()
        assert body["checks"]["worker"]["workers"] == ["celery@web1"]

    def test_it_hides_the_details_from_a_user_who_is_not_staff(self, client: Client, lena: User) -> None:
        WorkerHeartbeat.objects.record(hostname="celery@web1")
        client.force_login(lena)
        assert client.get("/healthz").json() == {"status": "ok"}

    def test_it_shows_the_details_to_the_token_in_the_header_or_the_query(self, client: Client) -> None:
        WorkerHeartbeat.objects.record(hostname="celery@web1")
        by_header = client.get("/healthz", headers={"Authorization": f"Bearer {TOKEN}"}).json()
        by_query = client.get(f"/healthz?token={TOKEN}").json()
        assert (
            by_header["checks"]["worker"]["workers"]
            == by_query["checks"]["worker"]["workers"]
            == ["celery@web1"]
        )

    def test_it_shows_nothing_more_to_a_wrong_token(self, client: Client) -> None:
        WorkerHeartbeat.objects.record(hostname="celery@web1")
        assert client.get("/healthz", headers={"Authorization": "Bearer guess"}).json() == {"status": "ok"}
        assert client.get(f"/healthz?token={TOKEN[:-1]}").json() == {"status": "ok"}

    def test_it_takes_no_token_when_none_is_set(self, client: Client, settings: Any) -> None:
        settings.HEALTHZ_TOKEN = ""
        WorkerHeartbeat.objects.record(hostname="celery@web1")
        assert client.get("/healthz", headers={"Authorization": "Bearer "}).json() == {"status": "ok"}
        assert client.get("/healthz?token=").json() == {"status": "ok"}

    def test_it_tells_anyone_a_missing_worker_as_degraded(self) -> None:
        result = healthz_in_subprocess(
            public=True,
            DATABASE_URL=_database_url_for(connection.settings_dict),
            CELERY_BROKER_URL=NO_WORKER_BROKER,
        )
        assert result["status_code"] == 200
        assert result["body"] == {"status": "degraded"}

    def test_it_tells_anyone_503_when_the_database_is_down(self) -> None:
        result = healthz_in_subprocess(
            public=True, DATABASE_URL="postgres://postgres@127.0.0.1:1/evalplatform"
        )
        assert result["status_code"] == 503
        assert result["body"] == {"status": "down"}
