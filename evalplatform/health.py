"""Health checks for the database, the broker and the workers, as reported by /healthz.

Anyone gets the overall status alone (`public_health_report`), kept a few seconds so that frequent
anonymous probes cost one round of checks; the checks' details (addresses, worker names, errors) are for
staff and holders of the health token (`evalplatform.views.healthz`).

The worker check reads the heartbeat rows that beat has the workers write every minute, so it costs one
query. Only when no heartbeat is fresh (no beat running, or a worker just started) does it ping, with a
short timeout, and it keeps that answer a few seconds so frequent probes do not each wait for it.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Literal

from django.core.cache import cache
from django.db import DatabaseError, connections

from evalplatform.celery import app as celery_app
from evalplatform.models import WorkerHeartbeat, heartbeat_fresh_for

Status = Literal["ok", "down"]

PING_TIMEOUT = 0.5  # seconds to wait for a worker's answer when no heartbeat is fresh
PING_CACHE_SECONDS = 10
PING_CACHE_KEY = "evalplatform.health.worker-ping"
PUBLIC_CACHE_SECONDS = 5
PUBLIC_CACHE_KEY = "evalplatform.health.public"


@dataclass(frozen=True)
class CheckResult:
    status: Status
    latency_ms: float
    detail: str = ""
    workers: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        data = asdict(self)
        if not self.workers:
            data.pop("workers")
        return data


def _elapsed_ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)


def check_database(alias: str = "default") -> CheckResult:
    started = time.monotonic()
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        connections[alias].close_if_unusable_or_obsolete()
        return CheckResult("down", _elapsed_ms(started), f"{type(exc).__name__}: {exc}".strip())
    return CheckResult("ok", _elapsed_ms(started), connections[alias].vendor)


def check_broker(timeout: float = 0.5) -> CheckResult:
    started = time.monotonic()
    try:
        with celery_app.connection_for_write(connect_timeout=timeout) as conn:
            conn.ensure_connection(max_retries=0)  # one attempt: kombu sleeps 2 s before a retry
            transport = conn.transport_cls
    except Exception as exc:  # kombu raises many transport-specific errors
        return CheckResult("down", _elapsed_ms(started), f"{type(exc).__name__}: {exc}")
    return CheckResult("ok", _elapsed_ms(started), str(transport))


def check_workers(*, database_ok: bool = True, ping_timeout: float = PING_TIMEOUT) -> CheckResult:
    """Workers with a fresh heartbeat row; only when there is none, a short ping, cached briefly."""
    started = time.monotonic()
    names = _fresh_heartbeats() if database_ok else []
    if names:
        window = int(heartbeat_fresh_for().total_seconds())
        detail = f"{len(names)} worker(s) sent a heartbeat in the last {window} s"
        return CheckResult("ok", _elapsed_ms(started), detail, names)
    cached = cache.get(PING_CACHE_KEY)
    if cached is not None:
        status, detail, workers = cached
        return CheckResult(status, _elapsed_ms(started), f"{detail} (cached)", workers)
    result = ping_workers(ping_timeout)
    cache.set(PING_CACHE_KEY, (result.status, result.detail, result.workers), PING_CACHE_SECONDS)
    return result


def _fresh_heartbeats() -> list[str]:
    try:
        return sorted(WorkerHeartbeat.objects.fresh().values_list("hostname", flat=True))
    except DatabaseError:
        return []


def ping_workers(timeout: float) -> CheckResult:
    """Ping the workers and stop at the first answer, so a live worker answers in milliseconds."""
    started = time.monotonic()
    try:
        replies = celery_app.control.ping(timeout=timeout, limit=1) or []
    except Exception as exc:
        return CheckResult("down", _elapsed_ms(started), f"{type(exc).__name__}: {exc}")
    names = sorted(name for reply in replies for name in reply)
    if not names:
        return CheckResult("down", _elapsed_ms(started), "no fresh heartbeat and no worker answered a ping")
    return CheckResult("ok", _elapsed_ms(started), "no fresh heartbeat, a worker answered a ping", names)


def health_report() -> tuple[int, dict[str, object]]:
    """The /healthz body and its HTTP status: 503 when the database is down, else 200."""
    database = check_database()
    broker = check_broker()
    workers = (
        check_workers(database_ok=database.status == "ok")
        if broker.status == "ok"
        else CheckResult("down", 0.0, "broker unreachable, workers not pinged")
    )
    checks = {"database": database, "broker": broker, "worker": workers}
    if database.status != "ok":
        overall = "down"
    elif all(check.status == "ok" for check in checks.values()):
        overall = "ok"
    else:
        overall = "degraded"
    body: dict[str, object] = {
        "status": overall,
        "checks": {name: check.as_dict() for name, check in checks.items()},
    }
    return (503 if overall == "down" else 200), body


def public_health_report() -> tuple[int, dict[str, object]]:
    """The overall status alone, with the same HTTP status as the full report; kept a few seconds."""
    cached = cache.get(PUBLIC_CACHE_KEY)
    if cached is None:
        code, body = health_report()
        cached = (code, {"status": body["status"]})
        cache.set(PUBLIC_CACHE_KEY, cached, PUBLIC_CACHE_SECONDS)
    return cached
