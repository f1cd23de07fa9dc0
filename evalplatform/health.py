"""Health checks for the database, the broker and the workers, as reported by /healthz."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Literal

from django.db import DatabaseError, connections

from evalplatform.celery import app as celery_app

Status = Literal["ok", "down"]


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


def check_broker(timeout: float = 2.0) -> CheckResult:
    started = time.monotonic()
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=timeout)
            transport = conn.transport_cls
    except Exception as exc:  # kombu raises many transport-specific errors
        return CheckResult("down", _elapsed_ms(started), f"{type(exc).__name__}: {exc}")
    return CheckResult("ok", _elapsed_ms(started), str(transport))


def check_workers(timeout: float = 1.0) -> CheckResult:
    started = time.monotonic()
    try:
        replies = celery_app.control.ping(timeout=timeout) or []
    except Exception as exc:
        return CheckResult("down", _elapsed_ms(started), f"{type(exc).__name__}: {exc}")
    names = sorted(name for reply in replies for name in reply)
    if not names:
        return CheckResult("down", _elapsed_ms(started), "no worker answered a ping")
    return CheckResult("ok", _elapsed_ms(started), f"{len(names)} worker(s) answered", names)


def health_report(*, worker_timeout: float = 1.0) -> tuple[int, dict[str, object]]:
    """The /healthz body and its HTTP status: 503 when the database is down, else 200."""
    database = check_database()
    broker = check_broker()
    workers = (
        check_workers(worker_timeout)
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
