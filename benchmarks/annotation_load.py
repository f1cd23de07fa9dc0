"""Load benchmark: concurrent annotators claiming and answering through the real HTTP API.

Starts gunicorn against the PostgreSQL database at DATABASE_URL (migrated first), creates a project of
its own (`load-<id>`: topics, documents, tasks, 10% gold, overlap 3, no minimum time, no break prompt)
with one annotator and API token per simulated client, and drives them from one asyncio process over
HTTP/1.1 on 127.0.0.1: each client claims its first task (`POST .../next/`), then answers each task
(`POST .../submit/`) with `"next": true`, whose reply holds the next task (`--mode next-submit`: a claim
and an answer, two requests per task), until the queue is empty or the time is up. The clients are
paced at `--rate` answers/s in all (300, the target; open loop: a request's latency counts from when it
was due; 0: closed loop, each client asks again as soon as answered). Then it checks the database: every
answer the API accepted is stored exactly once, no task has more annotators than its cap, and no
annotator holds a task twice. The project, users and tokens are deleted at the end (`--keep` keeps
them). Before the clock starts, each client claims its first task; the first `--ramp-up` seconds (3) are
reported apart; the judging tables are vacuumed and analysed before the run and every `--vacuum-every`
seconds (5) during it, as autovacuum would (0 leaves it to autovacuum), and compacted (VACUUM FULL)
after the clean-up.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/evalplatform_load \\
        .venv/bin/python benchmarks/annotation_load.py [--clients 50] [--seconds 20] [--web-workers 4] \\
        [--mode submit-next|next-submit] [--rate 300] [--ramp-up 3] [--vacuum-every 5] [--timeline]

The last line of output is one JSON object: throughput_per_s (accepted answers per second), p50_ms,
p95_ms, p99_ms (over every request after the ramp-up, claims and answers), errors (responses other than
200/201 and connection failures), lost, duplicated, over_assigned, the ramp-up's ramp_up_p99_ms, and
the run's settings, with target_met. The exit status is 1 when an integrity check fails, 0 otherwise
(the throughput target is reported, not enforced).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TARGET_PER_S = 300
TARGET_P99_MS = 100


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=50, help="concurrent simulated annotators (50)")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the clients run at most (20)")
    parser.add_argument("--tasks", type=int, default=20_000, help="ordinary tasks in the project (20,000)")
    parser.add_argument("--overlap", type=int, default=3, help="annotators per task (3)")
    parser.add_argument("--web-workers", type=int, default=4, help="gunicorn worker processes (4)")
    parser.add_argument(
        "--threads", type=int, default=1, help="threads per gunicorn worker (1: sync workers)"
    )
    parser.add_argument(
        "--mode", choices=["next-submit", "submit-next"], default="submit-next",
        help="submit-next (the default): claim the first task (POST next/), then answer each with "
        "`next: true` (POST submit/), whose reply holds the next task, as the API's clients are meant to; "
        "next-submit: claim (POST next/), then answer (POST submit/), two requests per answer",
    )  # fmt: skip
    parser.add_argument(
        "--rate", type=float, default=float(TARGET_PER_S),
        help=f"answers per second for all clients together, paced (open loop): each client starts its "
        f"answers on a fixed schedule and a request's latency counts from when it was due, so a server that "
        f"falls behind shows it ({TARGET_PER_S}, the target). 0: closed loop, each client asks again as soon "
        "as answered (the server's capacity)",
    )  # fmt: skip
    parser.add_argument(
        "--ramp-up", type=float, default=3.0,
        help="seconds at the start whose requests are reported apart, not in the figures (3): the clients "
        "run as in the rest, while the web processes make their first connections and prepared statements",
    )  # fmt: skip
    parser.add_argument(
        "--vacuum-every", type=float, default=5.0,
        help="VACUUM and ANALYZE the task and assignment tables every so many seconds during the run, as autovacuum "
        "would (5; 0: never, for a server whose autovacuum runs)",
    )  # fmt: skip
    parser.add_argument(
        "--timeline", action="store_true", help="print requests, p50 and p99 for each second of the run"
    )
    parser.add_argument("--keep", action="store_true", help="keep the project, users and tokens")
    return parser.parse_args()


# --- set-up and checks (the ORM, in this process) ---------------------------------------------------------


def django_setup() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalplatform.settings")
    os.environ.setdefault("SECRET_KEY", "load-benchmark-" + secrets.token_hex(24))
    import django

    django.setup()
    from django.conf import settings

    if "postgresql" not in settings.DATABASES["default"]["ENGINE"]:
        sys.exit("annotation_load: set DATABASE_URL to a PostgreSQL database (it is migrated and written to)")
    ensure_database(settings.DATABASES["default"])
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def connect_params(config: dict[str, Any]) -> dict[str, Any]:
    """psycopg's connection parameters, less the database name, for Django's database settings."""
    return {"host": config["HOST"] or None, "port": config["PORT"] or None, "user": config["USER"] or None,
            "password": config["PASSWORD"] or None}  # fmt: skip


def ensure_database(config: dict[str, Any]) -> None:
    """Create the benchmark's database when the server does not have it yet."""
    import psycopg
    from psycopg import sql

    params = connect_params(config)
    try:
        psycopg.connect(dbname=config["NAME"], **params).close()
    except psycopg.OperationalError as exc:
        if "does not exist" not in str(exc):
            raise
        with psycopg.connect(dbname="postgres", autocommit=True, **params) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(config["NAME"])))
        print(f"created database {config['NAME']}")


def create_project(run_id: str, *, tasks: int, clients: int, overlap: int) -> tuple[str, list[str]]:
    """The project (its slug) and one API token per annotator."""
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from annotations import hotpath, services
    from annotations.models import Document, GoldLabel, ProjectMembership, Task, Topic

    lead = User.objects.create_user(f"{run_id}-lead")
    project = services.project_create(
        creator=lead, slug=run_id, name=f"Load {run_id}", overlap=overlap, min_seconds_per_task=0,
        session_cap_minutes=0, reservation_minutes=30,
    )  # fmt: skip
    docs_per_topic = 100
    n_topics = -(-tasks // docs_per_topic)
    topics = Topic.objects.bulk_create(
        [Topic(project=project, qid=f"q{i}", title=f"query {i}") for i in range(n_topics)], batch_size=5000
    )
    documents = Document.objects.bulk_create(
        [
            Document(project=project, doc_id=f"d{i}", title=f"Doc {i}", text=f"Text {i}.")
            for i in range(tasks)
        ],
        batch_size=5000,
    )
    rows = Task.objects.bulk_create(
        [
            Task(project=project, topic=topics[i // docs_per_topic], document=doc, is_gold=i % 10 == 0)
            for i, doc in enumerate(documents)
        ],
        batch_size=5000,
    )
    GoldLabel.objects.bulk_create([GoldLabel(task=task, grade=2) for task in rows if task.is_gold])
    users = User.objects.bulk_create([User(username=f"{run_id}-a{i}") for i in range(clients)])
    ProjectMembership.objects.bulk_create(
        [
            ProjectMembership(project=project, user=user, role=ProjectMembership.Role.ANNOTATOR)
            for user in users
        ]
    )
    tokens = Token.objects.bulk_create([Token(user=user, key=Token.generate_key()) for user in users])
    hotpath.tasks_analyze_after(len(rows))  # as a judging import does (outside a transaction: at once)
    return project.slug, [token.key for token in tokens]


def integrity(slug: str, accepted: set[int]) -> dict[str, int]:
    """Accepted answers missing from or repeated in the database; tasks over their cap; tasks held twice."""
    from django.db.models import Count

    from annotations.models import Annotation, Assignment, Project

    project = Project.objects.get(slug=slug)
    stored = Counter(Annotation.objects.filter(project=project).values_list("assignment_id", flat=True))
    per_task = (
        Assignment.objects.filter(project=project).values("task_id", "task__is_gold").annotate(n=Count("id"))
    )
    over = sum(
        1
        for row in per_task
        if (cap := project.cap_for(is_gold=row["task__is_gold"])) is not None and row["n"] > cap
    )
    twice = (
        Assignment.objects.filter(project=project)
        .values("task_id", "annotator_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
    )
    return {
        "lost": len(accepted - set(stored)),
        "duplicated": sum(n - 1 for n in stored.values() if n > 1),
        "over_assigned": over,
        "held_twice": twice,
        "stored": sum(stored.values()),
    }


def delete_project(run_id: str) -> None:
    from django.contrib.auth.models import User

    from annotations.models import Project

    Project.objects.filter(slug=run_id).delete()
    User.objects.filter(username__startswith=f"{run_id}-").delete()


class Vacuumer(threading.Thread):
    """VACUUM the tables judging writes to every `every` seconds while the clients run, on a connection of
    its own, as autovacuum would at this write rate (a few thousand dead rows a second), and ANALYZE them as
    its analyze pass would (the assignment table grows from empty during a run: with its statistics of
    the start, the planner reads an annotator's assignments by a sequential scan). Where autovacuum
    runs, `--vacuum-every 0` leaves it to autovacuum."""

    def __init__(self, config: dict[str, Any], every: float) -> None:
        super().__init__(daemon=True)
        self.config, self.every, self.stop = config, every, threading.Event()

    def run(self) -> None:
        import psycopg

        from annotations.models import Assignment, Task

        # The tables a claim and an answer write to: a task's counters change twice per answer, and the
        # index the claims read (by assigned count) takes a new entry each time, so dead rows pile up fast.
        tables = ", ".join(model._meta.db_table for model in (Task, Assignment))
        with psycopg.connect(
            dbname=self.config["NAME"], autocommit=True, **connect_params(self.config)
        ) as db:
            while not self.stop.wait(self.every):
                db.execute(f"VACUUM (ANALYZE) {tables}")


def vacuum(*, full: bool = False) -> None:
    """VACUUM and ANALYZE the judging and sign-in tables, untimed, before a run and after its clean-up.

    Each run adds and deletes some 100,000 rows (20,000 tasks and documents, 50 users, tokens and
    memberships). Where autovacuum is off (as on the machine these figures come from) or behind, the
    dead rows of earlier runs would slow the next one's reads, and a vacuum started by autovacuum mid-run
    would take CPU from it: either way runs would differ by their history. After the clean-up, `full`
    rewrites the tables and their indexes compactly: a plain VACUUM leaves the task indexes as large as
    the most rows they ever held, and after some 60 runs (13 MB each instead of 1 MB) claims had slowed
    by half. The database is the benchmark's own (`evalplatform_load` by default): VACUUM FULL locks each
    table while it rewrites it."""
    from django.contrib.auth.models import User
    from django.db import connection
    from rest_framework.authtoken.models import Token

    from annotations.models import (
        Annotation,
        Assignment,
        Document,
        GoldLabel,
        ProjectMembership,
        Task,
        Topic,
    )

    models = (Task, Assignment, Annotation, Document, GoldLabel, Topic, ProjectMembership, Token, User)
    tables = ", ".join(model._meta.db_table for model in models)
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ({'FULL, ' if full else ''}ANALYZE) {tables}")


# --- the web server -------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_gunicorn(port: int, *, workers: int, threads: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DEBUG": "false", "ALLOWED_HOSTS": "127.0.0.1", "LOG_LEVEL": "WARNING"}
    command = [sys.executable, "-m", "gunicorn", "evalplatform.wsgi", "--bind", f"127.0.0.1:{port}",
               "--workers", str(workers), "--threads", str(threads), "--keep-alive", "30",
               "--log-level", "warning"]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return process
        except OSError:
            if process.poll() is not None:
                sys.exit("annotation_load: gunicorn did not start")
            time.sleep(0.1)
    process.terminate()
    sys.exit("annotation_load: gunicorn did not listen within 60 s")


# --- the clients ----------------------------------------------------------------------------------------


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    #: When each request was due and when it ended (time.perf_counter()), in the order of `latencies`.
    due: list[float] = field(default_factory=list)
    ended: list[float] = field(default_factory=list)
    accepted: set[int] = field(default_factory=set)
    #: When each accepted answer's reply came.
    accepted_at: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


class Connection:
    """One keep-alive HTTP/1.1 connection; reconnects when the server closed it."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.headers = (
            f"Host: 127.0.0.1\r\nAuthorization: Token {token}\r\nContent-Type: application/json\r\n"
        )
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(
        self, path: str, body: dict[str, Any], *, method: str = "POST"
    ) -> tuple[int, dict[str, Any]]:
        payload = json.dumps(body).encode() if method == "POST" else b""
        head = f"{method} {path} HTTP/1.1\r\n{self.headers}Content-Length: {len(payload)}\r\n\r\n"
        request = head.encode() + payload
        for attempt in (1, 2):
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
            assert self.reader is not None
            try:
                self.writer.write(request)
                await self.writer.drain()
                # The status line and headers in one read (the generator's own CPU is taken from the
                # server's on this machine: a read per header line cost a tenth of a millisecond a reply).
                try:
                    head_bytes = await self.reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError as exc:
                    if not exc.partial:
                        raise ConnectionResetError("closed by the server") from None
                    raise
                status_line, *lines = head_bytes.decode("latin-1").split("\r\n")
                status = int(status_line.split()[1])
                length, close = 0, False
                for line in lines:
                    name, _, value = line.partition(":")
                    name = name.lower()
                    if name == "content-length":
                        length = int(value)
                    elif name == "connection" and value.strip().lower() == "close":
                        close = True
                data = await self.reader.readexactly(length) if length else b""
                if close:
                    await self.close()
                return status, json.loads(data) if data else {}
            except (ConnectionError, asyncio.IncompleteReadError):
                await self.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


async def annotator(
    port: int, slug: str, token: str, deadline: float, tally: Tally, seed: int, *, mode: str, interval: float,
    held: int | None,
) -> None:  # fmt: skip
    """One simulated annotator, holding the reservation `held` (claimed in the warm-up). `interval` > 0
    paces it: answer k is due at a random phase + k * interval, and the latency of the request that
    starts it counts from that time."""
    rng = np.random.default_rng(seed)
    connection = Connection(port, token)
    base = f"/api/projects/{slug}"
    due = time.perf_counter() + (rng.uniform(0, interval) if interval else 0.0)

    async def request(path: str, body: dict[str, Any], what: str, since: float) -> tuple[int, dict[str, Any]]:
        try:
            status, reply = await connection.post(path, body)
        except (OSError, asyncio.IncompleteReadError) as exc:
            tally.error(f"{what}: {type(exc).__name__}")
            return 0, {}
        ended = time.perf_counter()
        tally.latencies.append(ended - since)
        tally.due.append(since)
        tally.ended.append(ended)
        return status, reply

    try:
        while time.monotonic() < deadline:
            if interval:
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                started, due = due, due + interval
            else:
                started = time.perf_counter()
            if held is None:
                status, claim = await request(f"{base}/next/", {}, "next", started)
                if status != 200:
                    if status:
                        tally.error(f"next: HTTP {status}")
                    continue
                if claim["status"] != "task":
                    return  # the queue is empty for this annotator
                held, started = claim["task"]["assignment"], time.perf_counter()
            body: dict[str, Any] = {"assignment": held, "grade": int(rng.integers(0, 5))}
            if mode == "submit-next":
                body["next"] = True
            status, answer = await request(f"{base}/submit/", body, "submit", started)
            answered, held = held, None
            if status == 201:
                tally.accepted.add(answered)
                tally.accepted_at.append(time.perf_counter())
                following = answer.get("next")
                if following and following["status"] == "task":
                    held = following["task"]["assignment"]
                elif following:
                    return  # the queue is empty for this annotator
            elif status:
                tally.error(f"submit: HTTP {status}")
    finally:
        await connection.close()


async def warm_up(port: int, slug: str, tokens: list[str]) -> list[int | None]:
    """Untimed: every client reads its progress twice, so each web worker has connected, then claims its
    first task, so that the timed run starts as annotators at work do (answering), not with all of them
    claiming in the same instant. The reservations each client holds (None: nothing was left)."""

    async def read(token: str) -> None:
        connection = Connection(port, token)
        await connection.post(f"/api/projects/{slug}/progress/", {}, method="GET")
        await connection.close()

    async def claim(token: str) -> int | None:
        connection = Connection(port, token)
        try:
            status, reply = await connection.post(f"/api/projects/{slug}/next/", {})
        finally:
            await connection.close()
        return int(reply["task"]["assignment"]) if status == 200 and reply["status"] == "task" else None

    for _ in range(2):
        await asyncio.gather(*(read(token) for token in tokens))
    return list(await asyncio.gather(*(claim(token) for token in tokens)))


async def drive(
    port: int, slug: str, tokens: list[str], seconds: float, *, mode: str, rate: float
) -> tuple[Tally, float, float]:
    """Run the clients for `seconds`: the tally, when they started (time.perf_counter()) and how long
    they ran."""
    first = await warm_up(port, slug, tokens)
    tally = Tally()
    interval = len(tokens) / rate if rate else 0.0
    begin, started = time.perf_counter(), time.monotonic()
    await asyncio.gather(
        *(
            annotator(
                port, slug, token, started + seconds, tally, seed, mode=mode, interval=interval, held=held
            )
            for seed, (token, held) in enumerate(zip(tokens, first, strict=True))
        )
    )
    return tally, begin, time.monotonic() - started


@dataclass(frozen=True)
class Figures:
    answers: int
    seconds: float
    requests: int
    p50: float
    p95: float
    p99: float

    @property
    def per_s(self) -> float:
        return self.answers / self.seconds if self.seconds > 0 else 0.0

    def line(self) -> str:
        return (
            f"{self.answers:,} answers accepted in {self.seconds:.1f} s: {self.per_s:.0f}/s; {self.requests:,} "
            f"requests, p50 {self.p50:.1f} ms, p95 {self.p95:.1f} ms, p99 {self.p99:.1f} ms"
        )


def figures(tally: Tally, start: float, end: float) -> Figures:
    """Answers accepted between `start` and `end` (time.perf_counter()), and the latency of the requests
    due in that span."""
    due = np.array(tally.due)
    latencies = np.array(tally.latencies)[(due >= start) & (due < end)] * 1000
    percentiles = np.percentile(latencies, [50, 95, 99]) if latencies.size else np.zeros(3)
    accepted_at = np.array(tally.accepted_at)
    answers = int(((accepted_at >= start) & (accepted_at < end)).sum())
    p50, p95, p99 = (float(value) for value in percentiles)
    return Figures(answers, end - start, int(latencies.size), p50, p95, p99)


def print_timeline(tally: Tally) -> None:
    """Requests ended, p50 and p99 latency for each second of the run: shows whether a tail is spread
    evenly or comes in bursts (a sweep, a checkpoint, autovacuum)."""
    ended = np.array(tally.ended)
    latencies = np.array(tally.latencies) * 1000
    second = (ended - ended.min()).astype(np.int64)
    order = np.argsort(second, kind="stable")
    bounds = np.searchsorted(second[order], np.arange(second.max() + 2))
    print("second  requests  p50 ms  p99 ms")
    for k in range(second.max() + 1):
        chunk = latencies[order[bounds[k] : bounds[k + 1]]]
        if chunk.size:
            p50, p99 = np.percentile(chunk, [50, 99])
            print(f"{k:6d}  {chunk.size:8d}  {p50:6.1f}  {p99:6.1f}")


# --- main -----------------------------------------------------------------------------------------------


def main() -> int:
    args = parse_args()
    django_setup()
    run_id = f"load-{secrets.token_hex(4)}"
    print(f"setting up {run_id}: {args.tasks:,} tasks, {args.clients} annotators, overlap {args.overlap}")
    slug, tokens = create_project(run_id, tasks=args.tasks, clients=args.clients, overlap=args.overlap)
    vacuum()
    from django.conf import settings

    vacuumer = Vacuumer(settings.DATABASES["default"], args.vacuum_every)
    port = free_port()
    server = start_gunicorn(port, workers=args.web_workers, threads=args.threads)
    try:
        pace = f"paced at {args.rate:g} answers/s" if args.rate else "closed loop"
        print(f"gunicorn: {args.web_workers} workers x {args.threads} threads on 127.0.0.1:{port}; "
              f"{args.clients} clients for up to {args.seconds:g} s, {args.mode}, {pace}")  # fmt: skip
        if args.vacuum_every > 0:
            vacuumer.start()
        tally, begin, elapsed = asyncio.run(
            drive(port, slug, tokens, args.ramp_up + args.seconds, mode=args.mode, rate=args.rate)
        )
    finally:
        if vacuumer.is_alive():
            vacuumer.stop.set()
            vacuumer.join()
        server.terminate()
        server.wait(timeout=30)
    checks = integrity(slug, tally.accepted)
    if not args.keep:
        delete_project(run_id)
        vacuum(full=True)
    # The figures end at the clients' deadline: after it no request starts, and the few still in flight
    # would stretch the span without adding to it (a paced run at N/s would read a little under N).
    end = begin + min(elapsed, args.ramp_up + args.seconds)
    cut = min(begin + args.ramp_up, end)
    ramp, run = figures(tally, begin, cut), figures(tally, cut, end)
    errors = sum(tally.errors.values())
    if args.ramp_up > 0:
        print(f"ramp-up, not counted: {ramp.line()}")
    print(run.line())
    print(f"errors: {errors} {tally.errors or ''}")
    if args.timeline and tally.ended:
        print_timeline(tally)
    print(f"database: {checks['stored']:,} answers stored; lost {checks['lost']}, duplicated "
          f"{checks['duplicated']}, tasks over their cap {checks['over_assigned']}, "
          f"tasks held twice by one annotator {checks['held_twice']}")  # fmt: skip
    # Throughput as reported, to the whole answer per second: a run paced at the target ends with a
    # request or two in flight at the deadline, and reads 299.9/s for the 300/s it kept up with.
    met = bool(round(run.per_s) >= TARGET_PER_S and run.p99 < TARGET_P99_MS)
    print(f"target ({TARGET_PER_S}/s with p99 < {TARGET_P99_MS} ms): {'met' if met else 'NOT met'}")
    print(json.dumps({
        "throughput_per_s": round(run.per_s, 1), "p50_ms": round(run.p50, 2), "p95_ms": round(run.p95, 2),
        "p99_ms": round(run.p99, 2), "errors": errors, "lost": checks["lost"],
        "duplicated": checks["duplicated"], "over_assigned": checks["over_assigned"] + checks["held_twice"],
        "requests": run.requests, "seconds": round(run.seconds, 2), "ramp_up_seconds": round(ramp.seconds, 2),
        "ramp_up_p99_ms": round(ramp.p99, 2), "clients": args.clients,
        "web_workers": args.web_workers, "threads": args.threads, "mode": args.mode, "rate": args.rate,
        "target_met": met,
    }))  # fmt: skip
    return (
        1 if checks["lost"] or checks["duplicated"] or checks["over_assigned"] or checks["held_twice"] else 0
    )


if __name__ == "__main__":
    raise SystemExit(main())
