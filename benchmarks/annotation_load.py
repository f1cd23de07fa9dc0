"""Load benchmark: concurrent annotators claiming and answering through the real HTTP API and judge page.

Starts gunicorn against the PostgreSQL database at DATABASE_URL (migrated first), with the benchmark's
own settings (`benchmarks.load_site`: the site's URLs plus the floor endpoint), creates a project of its
own (`load-<id>`: topics, documents, tasks, 10% gold, overlap 3, no minimum time, no break prompt) with one
annotator, password and API token per simulated client, and drives them from one asyncio process over
HTTP/1.1 on 127.0.0.1. The modes (`--mode`):

- `submit-next` (the default): each client claims its first task (`POST .../next/`), then answers each
  task (`POST .../submit/`) with `"next": true`, whose reply holds the next task;
- `next-submit`: a claim and an answer, two requests per task;
- `page`: the judge page's own requests. Each client signs in through the login page (its session cookie
  and CSRF token), GETs the judge page once, then answers each task as judge.js does: a POST of the
  form's fields to the form's `data-answer-next` URL with the CSRF token in `X-CSRFToken`, `Accept:
  application/json` and the session cookie; the reply holds the next task's part of the page;
- `floor`: the least a signed-in write costs on the same server: `POST /bench/floor/` with the API token,
  which inserts one row into a table of the benchmark's own (`benchmarks.load_urls`);
- `all`: floor, submit-next, page and next-submit, one after the other, each on a fresh project and server.

Every mode runs in `--rounds` slices (3), with a slice of the floor on its own server, closed loop (its
capacity, in requests/s), before each and after the last (`--floor-seconds` each, 4), and reports its
answers/s over its slices as a share of the floor's requests/s over the floor's: the same server,
database and warm processes, seconds apart, so that a machine whose speed drifts from one minute to the
next weighs on both alike (the vacuum pass below runs during the mode's slices alone; the clients keep
their reservations, sign-ins and pages from one slice to the next). The clients are paced at `--rate`
answers/s in all (300, the target; open loop: a request's latency counts from when it was due; 0: closed loop, each client asks again as soon as
answered). Then it checks the database: every answer the server accepted is stored exactly once, no task
has more annotators than its cap, and no annotator holds a task twice. The project, users and tokens are
deleted at the end (`--keep` keeps them). Before the clock starts, each client claims its first task;
the first `--ramp-up` seconds (3) are reported apart; the judging tables are vacuumed and analysed before
the run and every `--vacuum-every` seconds (5) during it, as autovacuum would (0 leaves it to
autovacuum), and compacted (VACUUM FULL) after the clean-up.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/evalplatform_load \\
        .venv/bin/python benchmarks/annotation_load.py [--clients 50] [--seconds 20] [--web-workers 4] \\
        [--mode submit-next|next-submit|page|floor|all] [--rate 300] [--ramp-up 3] [--vacuum-every 5] \\
        [--rounds 3] [--floor-seconds 4] [--timeline]

Each mode's last line is one JSON object: throughput_per_s (accepted answers per second; the floor's
requests), p50_ms, p95_ms, p99_ms (over every request after the ramp-up, claims and answers), errors
(responses other than 200/201 and connection failures), lost, duplicated, over_assigned, the ramp-up's
ramp_up_p99_ms, floor_per_s (the mean of floor_runs_per_s, the floor's slices) and share_of_floor,
slice_shares_of_floor (each of the mode's slices against the mean of the floor's just before and after),
web_cpu_ms_per_answer and db_cpu_ms_per_answer (the CPU time of gunicorn's processes and of the
database's backends over the timed span, ramp-up included, per answer accepted: per row for the floor),
generator_cpu_ms_per_answer (this process's own, the clients', which share the machine's cores with the
server), the floor's own per row beside them (floor_web_cpu_ms_per_row, floor_db_cpu_ms_per_row,
floor_generator_cpu_ms_per_row), vacuum_cpu_s
(the vacuum pass's backend, left out of the database's figure), load_average, and the run's settings,
with target_met. The exit status is 1 when an integrity check fails, 0 otherwise (the throughput target
is reported, not enforced).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TARGET_PER_S = 300
TARGET_P99_MS = 100
#: The share of the floor's requests/s that the API's and the page's answers/s are to reach.
TARGET_SHARE_OF_FLOOR = 0.5
MODES = ("floor", "submit-next", "page", "next-submit")
#: The simulated annotators' password (hashed with the benchmark settings' fast hasher).
PASSWORD = "load-benchmark-password"


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
        "--mode", choices=[*MODES, "all"], default="submit-next",
        help="submit-next (the default): claim the first task (POST next/), then answer each with "
        "`next: true` (POST submit/), whose reply holds the next task, as the API's clients are meant to; "
        "next-submit: claim (POST next/), then answer (POST submit/), two requests per answer; page: sign "
        "in through the login page, open the judge page, then answer as judge.js does (one POST per answer, "
        "whose reply holds the next task); floor: POST /bench/floor/ (token sign-in, one row inserted); "
        "all: floor, submit-next, page and next-submit in turn. Every mode measures the floor on its own server "
        "in slices between its own (--rounds, --floor-seconds)",
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
        "--floor-seconds", type=float, default=4.0,
        help="how long each of the floor's slices runs (closed loop, after a ramp-up of half a second) on "
        "the mode's own server (4): before the mode's run, between its rounds and after it (--rounds)",
    )  # fmt: skip
    parser.add_argument(
        "--rounds", type=int, default=3,
        help="the slices a mode's run is cut into, with a slice of the floor before each and one after the "
        "last (3): the share of the floor is the mode's answers/s over its slices against the floor's "
        "requests/s over its own, so that a machine whose speed drifts from one minute to the next weighs "
        "on both alike (1: the floor just before and just after one run)",
    )  # fmt: skip
    parser.add_argument(
        "--timeline", action="store_true", help="print requests, p50 and p99 for each second of the run"
    )
    parser.add_argument("--keep", action="store_true", help="keep the project, users and tokens")
    parser.add_argument(
        "--pool", choices=("mtf", "bandit-mm-ns"), default=None,
        help="add an adaptive pool of that strategy to the project (three synthetic runs of a team linked "
        "to it, read to depth 20, budget --pool-budget): its tasks are served first and a Celery worker, "
        "started here, re-orders them from the answers as they arrive",
    )  # fmt: skip
    parser.add_argument("--pool-budget", type=int, default=5000, help="the pool's budget (5,000 pairs)")
    return parser.parse_args()


# --- set-up and checks (the ORM, in this process) ---------------------------------------------------------


def django_setup() -> None:
    sys.path.insert(0, str(ROOT))
    # The web server's settings (`start_gunicorn`), here too: its password hasher makes the passwords.
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks.load_site"
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


def create_project(
    run_id: str, *, tasks: int, clients: int, overlap: int, pool: str | None = None, pool_budget: int = 0
) -> tuple[str, list[str]]:
    """The project (its slug) and one API token per annotator; each annotator `<run_id>-a<i>` signs in
    to the pages with `PASSWORD`. With `pool`, an adaptive pool of that strategy built in it (`add_pool`)."""
    from django.contrib.auth.hashers import make_password
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
    password = make_password(PASSWORD)
    users = User.objects.bulk_create(
        [User(username=f"{run_id}-a{i}", password=password) for i in range(clients)]
    )
    ProjectMembership.objects.bulk_create(
        [
            ProjectMembership(project=project, user=user, role=ProjectMembership.Role.ANNOTATOR)
            for user in users
        ]
    )
    tokens = Token.objects.bulk_create([Token(user=user, key=Token.generate_key()) for user in users])
    if pool is not None and tasks:
        add_pool(
            project, lead, strategy=pool, budget=pool_budget, topics=n_topics, docs_per_topic=docs_per_topic
        )
    hotpath.tasks_analyze_after(len(rows))  # as a judging import does (outside a transaction: at once)
    return project.slug, [token.key for token in tokens]


#: The pool's runs: each ranks this many of a topic's documents, in an order of its own.
POOL_RUNS, POOL_DEPTH = 3, 20


def add_pool(
    project: Any, lead: Any, *, strategy: str, budget: int, topics: int, docs_per_topic: int
) -> None:
    """A team `<slug>` linked to the project with `POOL_RUNS` synthetic runs over its topics (each a seeded
    permutation of the topic's documents, so the runs overlap in part), pooled by `strategy` to depth
    `POOL_DEPTH` within `budget`, built here: its tasks get their priorities before the clock starts."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from evalplatform.models import Team
    from monitoring.files import uploads
    from monitoring.pooling import services as pooling

    team = Team.objects.create(slug=project.slug, name=f"Load {project.slug}")
    project.team = team
    project.save(update_fields=["team"])
    rng = np.random.default_rng(0)
    runs = []
    for number in range(POOL_RUNS):
        lines = []
        for topic in range(topics):
            docs = topic * docs_per_topic + rng.permutation(docs_per_topic)[:POOL_DEPTH]
            lines += [f"q{topic} Q0 d{doc} {rank} {100 - rank} r{number}" for rank, doc in enumerate(docs, 1)]
        text = "\n".join(lines) + "\n"
        upload = SimpleUploadedFile(f"r{number}.run", text.encode(), content_type="text/plain")
        runs.append(uploads.run_upload(team=team, upload=upload, uploaded_by=lead))
    pool = pooling.pool_create(
        project=project, runs=runs, strategy=strategy, budget=budget, depth=POOL_DEPTH, enqueue=False
    )
    outcome = pooling.pool_build_run(pool_id=pool.pk)
    pool.refresh_from_db()
    print(f"pool: {strategy}, {pool.candidates_count:,} pairs pooled, {pool.pending:,} prioritised tasks "
          f"({outcome.status})")  # fmt: skip


#: The application name of the pool worker's database connections.
WORKER_APP_NAME = "annotation-load-worker"


def start_worker() -> subprocess.Popen[bytes]:
    """A Celery worker (one process, `--pool solo`: its CPU is one pid's) on the benchmark's database and
    broker, for the pool's re-prioritisation jobs."""
    # The worker keeps its database connection between tasks (Celery's Django fix-up closes it after each
    # by default): a backend that lives through the run is one the CPU meter reads at its start and end.
    launch = ("import sys; from evalplatform.celery import app; app.conf['CELERY_DB_REUSE_MAX'] = 10**9; "
              "app.worker_main(sys.argv[1:])")  # fmt: skip
    command = [sys.executable, "-c", launch, "worker", "-Q", "default,heavy",
               "--pool", "solo", "--hostname", f"load-{os.getpid()}@%h", "--without-mingle",
               "--without-gossip", "--loglevel", "warning"]  # fmt: skip
    # Its database connections carry WORKER_APP_NAME (libpq reads PGAPPNAME), so that the CPU of their
    # backends is told apart from the web's (`CpuMeter`).
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "evalplatform.settings", "PGAPPNAME": WORKER_APP_NAME}
    worker = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    from evalplatform.celery import app

    deadline = time.monotonic() + 60  # ready before the clock starts
    while time.monotonic() < deadline and worker.poll() is None:
        if app.control.ping(destination=[f"load-{os.getpid()}@{socket.gethostname()}"], timeout=1.0):
            break
    else:
        raise SystemExit("the Celery worker did not answer a ping within 60 s")
    return worker


def pool_jobs(slug: str) -> dict[str, int]:
    """The pool's re-prioritisation jobs by status, and its judged pairs."""
    from django.db.models import Count

    from monitoring.pooling.models import JudgingPool, PoolReprioritise

    jobs = dict(
        PoolReprioritise.objects.filter(pool__project__slug=slug)
        .values_list("status")
        .annotate(n=Count("pk"))
        .values_list("status", "n")
    )
    judged = JudgingPool.objects.filter(project__slug=slug).values_list("judged", flat=True).first() or 0
    done = PoolReprioritise.objects.filter(pool__project__slug=slug, status="done", finished_at__isnull=False)
    seconds = [job.seconds for job in done if job.seconds is not None]
    changed = list(done.values_list("changed", flat=True))
    return {
        **jobs,
        "judged": judged,
        "job_s_max": round(max(seconds, default=0.0), 3),
        "job_s_mean": round(sum(seconds) / len(seconds), 3) if seconds else 0.0,
        "changed_mean": round(sum(changed) / len(changed)) if changed else 0,
    }


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
    from evalplatform.models import Team

    Project.objects.filter(slug=run_id).delete()
    Team.objects.filter(slug=run_id).delete()  # the pool's team and runs (`--pool`)
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
        self.connected, self.backend_pid, self.cpu_at_start = threading.Event(), 0, 0.0
        #: Set while the mode's clients run: the pass counts `every` seconds of those slices alone, and
        #: runs none during the floor's (`pause` waits for one under way to end).
        self.active, self.busy = threading.Event(), threading.Lock()

    def pause(self) -> None:
        self.active.clear()
        with self.busy:
            pass

    def cpu_seconds(self) -> float:
        """The vacuum pass's backend's CPU since it connected (0 when it never ran)."""
        return process_cpu_seconds(self.backend_pid) - self.cpu_at_start if self.backend_pid else 0.0

    def run(self) -> None:
        import psycopg

        from annotations.models import Assignment, Task

        # The tables a claim and an answer write to: a task's counters change twice per answer, and the
        # index the claims read (by assigned count) takes a new entry each time, so dead rows pile up fast.
        tables = ", ".join(model._meta.db_table for model in (Task, Assignment))
        with psycopg.connect(
            dbname=self.config["NAME"], autocommit=True, **connect_params(self.config)
        ) as db:
            self.backend_pid = db.info.backend_pid
            self.cpu_at_start = process_cpu_seconds(self.backend_pid)
            self.connected.set()
            left, last = self.every, time.monotonic()
            while not self.stop.wait(min(0.1, self.every)):
                with self.busy:
                    if self.active.is_set():
                        left -= time.monotonic() - last
                        if left <= 0:
                            db.execute(f"VACUUM (ANALYZE) {tables}")
                            left = self.every
                last = time.monotonic()


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float:
    """A live process's user and system CPU time so far, from /proc (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime and stime, fields 14 and 15


class CpuMeter:
    """The CPU time the web server's workers and the database's backends spend between `start` and `stop`:
    the processes that serve the requests, read from /proc (the vacuum pass's backend is left out). A
    process that appears meanwhile counts from its start. Apart from them, the generator's own (this
    process, `generator`), which takes its CPU from the same cores: a browser's parsing would not."""

    def __init__(self, config: dict[str, Any], server_pid: int, *, exclude: set[int]) -> None:
        self.config, self.server_pid, self.exclude = config, server_pid, exclude
        self.started: dict[str, dict[int, float]] = {}

    def pids(self) -> dict[str, list[int]]:
        import psycopg

        children = Path(f"/proc/{self.server_pid}/task/{self.server_pid}/children").read_text().split()
        with psycopg.connect(dbname=self.config["NAME"], **connect_params(self.config)) as db:
            rows = db.execute(
                "SELECT pid, application_name FROM pg_stat_activity WHERE datname = current_database() "
                "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
            ).fetchall()
        backends = [(int(pid), name) for pid, name in rows if int(pid) not in self.exclude]
        # "database" is every backend, the pool worker's included; "worker_database" the worker's alone.
        return {
            "web": [self.server_pid, *map(int, children)],
            "database": [pid for pid, _ in backends],
            "worker_database": [pid for pid, name in backends if name == WORKER_APP_NAME],
            "generator": [os.getpid()],
        }

    def snapshot(self) -> dict[str, dict[int, float]]:
        return {kind: {pid: process_cpu_seconds(pid) for pid in pids} for kind, pids in self.pids().items()}

    def start(self) -> None:
        self.started = self.snapshot()

    def stop(self) -> dict[str, float]:
        """The seconds of CPU each kind of process spent since `start`."""
        ended = self.snapshot()
        return {
            kind: sum(cpu - self.started.get(kind, {}).get(pid, 0.0) for pid, cpu in ended[kind].items())
            for kind in ended
        }


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
    # Each worker keeps its database connection through the run (the site's default closes it after 60 s):
    # the CPU meter reads the backends alive at the start and at the end, and a backend that ended
    # meanwhile took its CPU with it (a 90 s run reported half the database's CPU).
    env = {**os.environ, "DEBUG": "false", "ALLOWED_HOSTS": "127.0.0.1", "LOG_LEVEL": "WARNING",
           "DJANGO_SETTINGS_MODULE": "benchmarks.load_site", "DATABASE_CONN_MAX_AGE": "86400"}  # fmt: skip
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
    """One keep-alive HTTP/1.1 connection; reconnects when the server closed it. `headers`: the lines sent
    with every request (the API token's, or none: the page's cookies travel per request)."""

    def __init__(self, port: int, headers: str = "") -> None:
        self.port = port
        # The port in Host, as a browser sends it: the CSRF check compares a POST's Origin with it.
        self.headers = f"Host: 127.0.0.1:{port}\r\n{headers}"
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    @classmethod
    def with_token(cls, port: int, token: str) -> Connection:
        return cls(port, f"Authorization: Token {token}\r\nContent-Type: application/json\r\n")

    async def post(
        self, path: str, body: dict[str, Any], *, method: str = "POST"
    ) -> tuple[int, dict[str, Any]]:
        """A JSON request (the API's); its status and JSON reply."""
        payload = json.dumps(body).encode() if method == "POST" else b""
        status, _, data = await self.send(method, path, payload)
        return status, json.loads(data) if data else {}

    async def send(
        self, method: str, path: str, payload: bytes = b"", headers: str = ""
    ) -> tuple[int, dict[str, str], bytes]:
        """One request with `headers` besides the connection's: its status, the cookies it sets, its body."""
        head = f"{method} {path} HTTP/1.1\r\n{self.headers}{headers}Content-Length: {len(payload)}\r\n\r\n"
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
                length, close, cookies = 0, False, {}
                for line in lines:
                    name, _, value = line.partition(":")
                    name = name.lower()
                    if name == "content-length":
                        length = int(value)
                    elif name == "connection" and value.strip().lower() == "close":
                        close = True
                    elif name == "set-cookie":
                        cookie, _, _ = value.strip().partition(";")
                        key, _, cookie_value = cookie.partition("=")
                        cookies[key] = cookie_value
                data = await self.reader.readexactly(length) if length else b""
                if close:
                    await self.close()
                return status, cookies, data
            except (ConnectionError, asyncio.IncompleteReadError):
                await self.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


#: What the page's script reads from the judge form: where it posts the answer, and the CSRF token.
ANSWER_NEXT = re.compile(r'data-answer-next="([^"]+)"')
CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class PageSession:
    """An annotator in a browser: signed in through the login page, then answering on the judge page with
    the requests judge.js makes (annotations/static/annotations/judge.js, `send`)."""

    def __init__(self, port: int) -> None:
        self.connection = Connection(port)
        self.origin = f"http://127.0.0.1:{port}"
        self.cookies: dict[str, str] = {}
        #: The judge form's `data-answer-next` URL (None: the queue is empty) and its CSRF token.
        self.answer_url: str | None = None
        self.token = ""

    async def request(
        self, method: str, path: str, payload: bytes = b"", headers: str = ""
    ) -> tuple[int, bytes]:
        cookie = "; ".join(f"{key}={value}" for key, value in self.cookies.items())
        status, cookies, data = await self.connection.send(
            method, path, payload, f"Cookie: {cookie}\r\n{headers}" if cookie else headers
        )
        self.cookies.update(cookies)
        return status, data

    async def sign_in(self, username: str) -> None:
        """The login page's GET (its CSRF cookie and token), then its form's POST (the session cookie)."""
        status, page = await self.request("GET", "/accounts/login/")
        token = CSRF_FIELD.search(page.decode())
        assert status == 200 and token, f"the login page: HTTP {status}"
        form = urlencode({"csrfmiddlewaretoken": token.group(1), "username": username, "password": PASSWORD})
        status, _ = await self.request(
            "POST", "/accounts/login/", form.encode(), self.form_headers("text/html")
        )
        assert status == 302 and "sessionid" in self.cookies, f"signing in as {username}: HTTP {status}"

    def form_headers(self, accept: str) -> str:
        return (
            f"Origin: {self.origin}\r\nContent-Type: application/x-www-form-urlencoded;charset=UTF-8\r\n"
            f"Accept: {accept}\r\n"
        )

    async def open_judge_page(self, slug: str) -> None:
        """GET the judge page (which claims the first task) and read its form."""
        status, page = await self.request("GET", f"/projects/{slug}/judge/", headers="Accept: text/html\r\n")
        assert status == 200, f"the judge page: HTTP {status}"
        self.read_form(page.decode())

    def read_form(self, html: str) -> None:
        url, token = ANSWER_NEXT.search(html), CSRF_FIELD.search(html)
        self.answer_url = url.group(1) if url else None
        self.token = token.group(1) if token else self.token

    async def answer(self, grade: int) -> int:
        """The page's one-request answer, as judge.js sends it: the form's fields (its CSRF token and the
        empty comment) and the pressed button's, URL-encoded, with the token in X-CSRFToken. Reads the next
        task's form from the reply; the reply's status."""
        assert self.answer_url is not None
        body = urlencode({"csrfmiddlewaretoken": self.token, "comment": "", "grade": grade}).encode()
        headers = self.form_headers("application/json") + f"X-CSRFToken: {self.token}\r\n"
        status, data = await self.request("POST", self.answer_url, body, headers)
        if status == 200:
            self.read_form(json.loads(data)["html"])
        return status


class Pace:
    """A client's schedule: with `interval` > 0, request k is due at a random phase + k * interval (and its
    latency counts from then); with 0, each as soon as the last is answered."""

    def __init__(self, interval: float, rng: np.random.Generator) -> None:
        self.interval = interval
        self.due = time.perf_counter() + (rng.uniform(0, interval) if interval else 0.0)

    async def next(self) -> float:
        """Wait for the next request's time; that time."""
        if not self.interval:
            return time.perf_counter()
        await asyncio.sleep(max(0.0, self.due - time.perf_counter()))
        started, self.due = self.due, self.due + self.interval
        return started


def timed(tally: Tally, since: float) -> None:
    ended = time.perf_counter()
    tally.latencies.append(ended - since)
    tally.due.append(since)
    tally.ended.append(ended)


#: What an API client's slice ends with when its queue came up empty: it asks for nothing more.
EMPTY = -1


async def annotator(
    port: int, slug: str, token: str, deadline: float, tally: Tally, seed: int, *, mode: str, interval: float,
    held: int | None,
) -> int | None:  # fmt: skip
    """One simulated annotator of the API, holding the reservation `held` (claimed in the warm-up or by an
    earlier slice), until `deadline`: the reservation it holds then (None: none; `EMPTY`: its queue is
    empty)."""
    if held == EMPTY:
        return EMPTY
    rng = np.random.default_rng(seed)
    connection = Connection.with_token(port, token)
    base = f"/api/projects/{slug}"
    pace = Pace(interval, rng)

    async def request(path: str, body: dict[str, Any], what: str, since: float) -> tuple[int, dict[str, Any]]:
        try:
            status, reply = await connection.post(path, body)
        except (OSError, asyncio.IncompleteReadError) as exc:
            tally.error(f"{what}: {type(exc).__name__}")
            return 0, {}
        timed(tally, since)
        return status, reply

    try:
        while time.monotonic() < deadline:
            started = await pace.next()
            if held is None:
                status, claim = await request(f"{base}/next/", {}, "next", started)
                if status != 200:
                    if status:
                        tally.error(f"next: HTTP {status}")
                    continue
                if claim["status"] != "task":
                    return EMPTY
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
                    return EMPTY
            elif status:
                tally.error(f"submit: HTTP {status}")
    finally:
        await connection.close()
    return held


async def page_annotator(
    session: PageSession, deadline: float, tally: Tally, seed: int, *, interval: float
) -> None:
    """One simulated annotator on the judge page, signed in, the page open (`page_warm_up`), until
    `deadline`; its session stays open for the next slice (`alternate` closes it)."""
    rng = np.random.default_rng(seed)
    pace = Pace(interval, rng)
    while time.monotonic() < deadline and session.answer_url is not None:
        started = await pace.next()
        answered = int(session.answer_url.rstrip("/").split("/")[-2])
        try:
            status = await session.answer(int(rng.integers(0, 5)))
        except (OSError, asyncio.IncompleteReadError) as exc:
            tally.error(f"answer: {type(exc).__name__}")
            continue
        timed(tally, started)
        if status == 200:
            tally.accepted.add(answered)
            tally.accepted_at.append(time.perf_counter())
        else:
            tally.error(f"answer: HTTP {status}")
            session.answer_url = None  # what the page would show next is not known: this annotator stops


async def floor_client(
    port: int, token: str, deadline: float, tally: Tally, *, requests: int | None = None
) -> None:
    """Closed loop: POST /bench/floor/ as soon as the last one is answered, until `deadline` (or so many
    `requests`). Each row inserted counts as one accepted request (`accepted` holds the rows' ids)."""
    connection = Connection.with_token(port, token)
    try:
        while time.monotonic() < deadline if requests is None else len(tally.accepted_at) < requests:
            started = time.perf_counter()
            try:
                status, reply = await connection.post("/bench/floor/", {})
            except (OSError, asyncio.IncompleteReadError) as exc:
                tally.error(f"floor: {type(exc).__name__}")
                continue
            timed(tally, started)
            if status == 201:
                tally.accepted.add(int(reply["id"]))
                tally.accepted_at.append(time.perf_counter())
            else:
                tally.error(f"floor: HTTP {status}")
    finally:
        await connection.close()


async def warm_up(port: int, slug: str, tokens: list[str]) -> list[int | None]:
    """Untimed: every client reads its progress twice, so each web worker has connected, then claims its
    first task, so that the timed run starts as annotators at work do (answering), not with all of them
    claiming in the same instant. The reservations each client holds (None: nothing was left)."""

    async def read(token: str) -> None:
        connection = Connection.with_token(port, token)
        await connection.post(f"/api/projects/{slug}/progress/", {}, method="GET")
        await connection.close()

    async def claim(token: str) -> int | None:
        connection = Connection.with_token(port, token)
        try:
            status, reply = await connection.post(f"/api/projects/{slug}/next/", {})
        finally:
            await connection.close()
        return int(reply["task"]["assignment"]) if status == 200 and reply["status"] == "task" else None

    for _ in range(2):
        await asyncio.gather(*(read(token) for token in tokens))
    return list(await asyncio.gather(*(claim(token) for token in tokens)))


async def page_warm_up(port: int, slug: str, usernames: list[str]) -> list[PageSession]:
    """Untimed: every client signs in through the login page and opens the judge page (its first task),
    as an annotator starts the day; the sessions, each on its kept connection."""

    async def start(username: str) -> PageSession:
        session = PageSession(port)
        await session.sign_in(username)
        await session.open_judge_page(slug)
        return session

    return list(await asyncio.gather(*(start(username) for username in usernames)))


async def drive_floor(
    port: int, tokens: list[str], seconds: float, on_start: Callable[[], None]
) -> tuple[Tally, float, float]:
    """The floor mode's run: the clients closed loop for `seconds` after their untimed warm-up (`on_start`
    is called between the two); the tally, when they started (time.perf_counter()) and how long they ran."""
    tally = Tally()
    await floor_warm_up(port, tokens)
    on_start()
    begin, started = time.perf_counter(), time.monotonic()
    await floor_clients(port, tokens, started + seconds, tally)
    return tally, begin, time.monotonic() - started


async def floor_warm_up(port: int, tokens: list[str]) -> None:
    """Untimed: two floor rows for each client, so that every web worker has started and connected."""
    await asyncio.gather(*(floor_client(port, token, 0.0, Tally(), requests=2) for token in tokens))


async def floor_clients(port: int, tokens: list[str], deadline: float, tally: Tally) -> None:
    """Every client on the floor, closed loop, until `deadline` (time.monotonic())."""
    await asyncio.gather(*(floor_client(port, token, deadline, tally) for token in tokens))


#: Each slice of the floor starts with so many seconds left out of its figures (not of its CPU).
FLOOR_RAMP_UP = 0.5


@dataclass(frozen=True)
class FloorBeside:
    """The floor's figures in one of its slices on a mode's own server: requests/s and CPU per row (web,
    database, and the generator's own)."""

    per_s: float
    web_ms: float
    db_ms: float
    generator_ms: float
    errors: int


async def floor_slice(port: int, tokens: list[str], meter: CpuMeter, seconds: float) -> FloorBeside:
    """The floor (`POST /bench/floor/`, closed loop) for `seconds` after a ramp-up (`FLOOR_RAMP_UP`), on
    the mode's server: what its answers/s are set against, on the same server, database and warm
    processes, seconds away from the mode's slices."""
    tally = Tally()
    meter.start()
    begin, started = time.perf_counter(), time.monotonic()
    await floor_clients(port, tokens, started + FLOOR_RAMP_UP + seconds, tally)
    cpu = meter.stop()
    window = begin + FLOOR_RAMP_UP
    run = figures(tally, [(window, min(window + seconds, begin + time.monotonic() - started))])
    rows = max(len(tally.accepted_at), 1)
    web_ms, db_ms, generator_ms = (1000 * cpu[kind] / rows for kind in ("web", "database", "generator"))
    floor = FloorBeside(run.per_s, web_ms, db_ms, generator_ms, sum(tally.errors.values()))
    print(f"floor beside: {floor.per_s:.0f} requests/s; CPU per row: web {floor.web_ms:.2f} ms, "
          f"database {floor.db_ms:.2f} ms, generator {floor.generator_ms:.2f} ms")  # fmt: skip
    return floor


@dataclass(frozen=True)
class Alternation:
    """A mode's run in slices with the floor's between them (`alternate`)."""

    tally: Tally
    #: The mode's slices, each from its start to its end (time.perf_counter()): the first begins with
    #: the ramp-up.
    slices: list[tuple[float, float]]
    #: The CPU seconds of each kind of process (`CpuMeter`) over the mode's slices, ramp-up included.
    cpu: dict[str, float]
    #: The floor's slices: before the first of the mode's, between each two and after the last.
    floors: list[FloorBeside]


async def alternate(
    port: int, slug: str, tokens: list[str], args: argparse.Namespace, *, mode: str, rate: float,
    run_id: str, meter: CpuMeter, vacuumer: Vacuumer,
) -> Alternation:  # fmt: skip
    """A mode's run of `args.seconds` (after `args.ramp_up`) in `args.rounds` slices, with a slice of the
    floor before each and one after the last (`floor_slice`), all on the same server and in one event
    loop: the clients keep their reservations, sign-ins and pages from one slice to the next, as
    annotators pausing would. The vacuum pass runs during the mode's slices alone."""
    interval = len(tokens) / rate if rate else 0.0
    # Untimed: the floor's clients warm up, then the mode's (their first task).
    await floor_warm_up(port, tokens)
    sessions: list[PageSession] = []
    held: list[int | None] = []
    if mode == "page":
        sessions = await page_warm_up(port, slug, [f"{run_id}-a{i}" for i in range(len(tokens))])
    else:
        held = await warm_up(port, slug, tokens)
    tally, slices, cpu = Tally(), [], Counter[str]()
    rounds = max(1, args.rounds)
    try:
        floors = [await floor_slice(port, tokens, meter, args.floor_seconds)]
        for k in range(rounds):
            length = args.seconds / rounds + (args.ramp_up if k == 0 else 0.0)
            vacuumer.active.set()
            meter.start()
            begin, deadline = time.perf_counter(), time.monotonic() + length
            seeds = range(k * len(tokens), (k + 1) * len(tokens))  # each slice its own grades and phases
            if mode == "page":
                await asyncio.gather(
                    *(
                        page_annotator(session, deadline, tally, seed, interval=interval)
                        for seed, session in zip(seeds, sessions, strict=True)
                    )
                )
            else:
                clients = (
                    annotator(
                        port, slug, token, deadline, tally, seed, mode=mode, interval=interval, held=holding
                    )
                    for seed, token, holding in zip(seeds, tokens, held, strict=True)
                )
                held = list(await asyncio.gather(*clients))
            # The slice ends at its deadline, after which no request starts (the few in flight would
            # stretch it without adding to it), or when every client stopped before it.
            slices.append((begin, min(begin + length, time.perf_counter())))
            cpu.update(meter.stop())
            vacuumer.pause()
            floors.append(await floor_slice(port, tokens, meter, args.floor_seconds))
    finally:
        for session in sessions:
            await session.connection.close()
    return Alternation(tally, slices, dict(cpu), floors)


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


def figures(tally: Tally, spans: list[tuple[float, float]]) -> Figures:
    """Answers accepted within `spans` (each a start and an end, time.perf_counter()), and the latency of
    the requests due within them."""

    def within(times: list[float]) -> np.ndarray:
        at = np.array(times)
        inside = np.zeros(at.shape, dtype=bool)
        for start, end in spans:
            inside |= (at >= start) & (at < end)
        return inside

    latencies = np.array(tally.latencies)[within(tally.due)] * 1000
    percentiles = np.percentile(latencies, [50, 95, 99]) if latencies.size else np.zeros(3)
    answers = int(within(tally.accepted_at).sum())
    p50, p95, p99 = (float(value) for value in percentiles)
    seconds = sum(max(0.0, end - start) for start, end in spans)
    return Figures(answers, seconds, int(latencies.size), p50, p95, p99)


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
    failed = False
    for mode in MODES if args.mode == "all" else [args.mode]:
        result = run_mode(args, mode)
        failed = failed or bool(result["lost"] or result["duplicated"] or result["over_assigned"])
    return 1 if failed else 0


def stop_beside(vacuumer: Vacuumer, worker: subprocess.Popen[bytes] | None) -> None:
    """Stop the vacuum pass and the pool's worker, where they still run."""
    if worker is not None and worker.poll() is None:
        worker.terminate()
        worker.wait(timeout=30)
    if vacuumer.is_alive():
        vacuumer.stop.set()
        vacuumer.join()


def run_mode(args: argparse.Namespace, mode: str) -> dict[str, Any]:
    """One mode's run on a project and a web server of its own: its figures, printed, its JSON line last.
    The floor runs closed loop whatever `--rate` says: its capacity is what the others are set against;
    every other mode measures it on its own server in slices between its own (`alternate`)."""
    from django.conf import settings

    rate = 0.0 if mode == "floor" else args.rate
    run_id = f"load-{secrets.token_hex(4)}"
    tasks = 0 if mode == "floor" else args.tasks
    print(
        f"\n== {mode}: setting up {run_id}: {tasks:,} tasks, {args.clients} annotators, overlap {args.overlap}"
    )
    pool = args.pool if mode != "floor" else None
    slug, tokens = create_project(
        run_id,
        tasks=tasks,
        clients=args.clients,
        overlap=args.overlap,
        pool=pool,
        pool_budget=args.pool_budget,
    )
    worker = start_worker() if pool else None
    floor_table(create=True)
    vacuum()
    vacuumer = Vacuumer(settings.DATABASES["default"], args.vacuum_every)
    port = free_port()
    server = start_gunicorn(port, workers=args.web_workers, threads=args.threads)
    try:
        pace = f"paced at {rate:g} answers/s" if rate else "closed loop"
        print(f"gunicorn: {args.web_workers} workers x {args.threads} threads on 127.0.0.1:{port}; "
              f"{args.clients} clients for up to {args.seconds:g} s, {mode}, {pace}")  # fmt: skip
        if args.vacuum_every > 0 and mode != "floor":
            vacuumer.start()  # paused: it runs during the mode's slices alone
            vacuumer.connected.wait(30)
        meter = CpuMeter(settings.DATABASES["default"], server.pid, exclude={vacuumer.backend_pid})
        worker_cpu = process_cpu_seconds(worker.pid) if worker else 0.0
        if mode == "floor":
            tally, begin, elapsed = asyncio.run(
                drive_floor(port, tokens, args.ramp_up + args.seconds, meter.start)
            )
            cpu = meter.stop()
            end = begin + min(elapsed, args.ramp_up + args.seconds)
            slices, beside = [(begin, end)], []
        else:
            alternation = asyncio.run(
                alternate(port, slug, tokens, args, mode=mode, rate=rate, run_id=run_id, meter=meter,
                          vacuumer=vacuumer)
            )  # fmt: skip
            tally, slices, beside = alternation.tally, alternation.slices, alternation.floors
            cpu = alternation.cpu
        vacuum_cpu = vacuumer.cpu_seconds()
        # The worker's CPU over the run (its jobs' database backends are among the database's above, and apart).
        worker_cpu = process_cpu_seconds(worker.pid) - worker_cpu if worker else 0.0
        jobs = pool_jobs(slug) if pool else {}
    finally:
        stop_beside(vacuumer, worker)
        server.terminate()
        server.wait(timeout=30)
    load = os.getloadavg()
    if mode == "floor":
        stored = floor_rows()
        checks = {"lost": max(0, len(tally.accepted) - stored), "duplicated": 0, "over_assigned": 0,
                  "held_twice": 0, "stored": stored}  # fmt: skip
    else:
        checks = integrity(slug, tally.accepted)
    floor_table(create=False)
    if not args.keep:
        delete_project(run_id)
        vacuum(full=True)
    # The first slice's first seconds are the ramp-up; every slice ends at its clients' deadline.
    (begin, first_end), *rest = slices
    cut = min(begin + args.ramp_up, first_end)
    ramp, run = figures(tally, [(begin, cut)]), figures(tally, [(cut, first_end), *rest])
    elapsed = sum(end - start for start, end in slices)
    errors = sum(tally.errors.values())
    if args.ramp_up > 0:
        print(f"ramp-up, not counted: {ramp.line()}")
    print(run.line())
    print(f"errors: {errors} {tally.errors or ''}")
    if args.timeline and tally.ended:
        print_timeline(tally)
    what = "rows inserted" if mode == "floor" else "answers stored"
    print(f"database: {checks['stored']:,} {what}; lost {checks['lost']}, duplicated "
          f"{checks['duplicated']}, tasks over their cap {checks['over_assigned']}, "
          f"tasks held twice by one annotator {checks['held_twice']}")  # fmt: skip
    # CPU per answer (per row for the floor) over the timed span, ramp-up included: the warm-up is not.
    answers = len(tally.accepted_at)
    web_ms, db_ms, generator_ms = (
        1000 * cpu[kind] / answers if answers else 0.0 for kind in ("web", "database", "generator")
    )
    print(f"CPU over the timed {elapsed:.1f} s, {answers:,} {'rows' if mode == 'floor' else 'answers'}: web "
          f"workers {cpu['web']:.1f} s ({web_ms:.2f} ms each), database backends {cpu['database']:.1f} s "
          f"({db_ms:.2f} ms each), the generator {cpu['generator']:.1f} s ({generator_ms:.2f} ms each); "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")  # fmt: skip
    # The floor's slices are equally long: the mean of their rates is the rate over all of them.
    floor_per_s = sum(floor.per_s for floor in beside) / len(beside) if beside else None
    share = run.per_s / floor_per_s if floor_per_s else None
    # Each slice of the mode against the mean of the floor's just before and just after it.
    slice_shares = [
        figures(tally, [span]).per_s * 2 / (before.per_s + after.per_s)
        for span, before, after in zip([(cut, first_end), *rest], beside, beside[1:], strict=False)
        if before.per_s + after.per_s > 0
    ]
    # Throughput as reported, to the whole answer per second: a run paced at the target ends with a
    # request or two in flight at the deadline, and reads 299.9/s for the 300/s it kept up with.
    met = bool(round(run.per_s) >= TARGET_PER_S and run.p99 < TARGET_P99_MS)
    if mode != "floor":
        print(f"target ({TARGET_PER_S}/s with p99 < {TARGET_P99_MS} ms): {'met' if met else 'NOT met'}")
    if share is not None:
        wanted = f" (target at least {TARGET_SHARE_OF_FLOOR:.0%} for submit-next and page)"
        runs = ", ".join(f"{floor.per_s:.0f}" for floor in beside)
        print(f"share of the floor ({floor_per_s:.0f} requests/s, the mean of its {len(beside)} slices: "
              f"{runs}): {share:.1%}{wanted}; slice by slice, against the floor's just before and after: "
              f"{', '.join(f'{value:.1%}' for value in slice_shares)}")  # fmt: skip
    result = {
        "throughput_per_s": round(run.per_s, 1), "p50_ms": round(run.p50, 2), "p95_ms": round(run.p95, 2),
        "p99_ms": round(run.p99, 2), "errors": errors, "lost": checks["lost"],
        "duplicated": checks["duplicated"], "over_assigned": checks["over_assigned"] + checks["held_twice"],
        "requests": run.requests, "seconds": round(run.seconds, 2), "ramp_up_seconds": round(ramp.seconds, 2),
        "ramp_up_p99_ms": round(ramp.p99, 2), "clients": args.clients,
        "web_workers": args.web_workers, "threads": args.threads, "mode": mode, "rate": rate,
        "floor_per_s": None if floor_per_s is None else round(floor_per_s, 1), "share_of_floor": None if share is None else round(share, 3),
        "web_cpu_ms_per_answer": round(web_ms, 3), "db_cpu_ms_per_answer": round(db_ms, 3),
        "generator_cpu_ms_per_answer": round(generator_ms, 3), "load_average": [round(value, 2) for value in load],
        "target_met": met,
    }  # fmt: skip
    if beside:
        result["rounds"] = len(slices)
        result["floor_runs_per_s"] = [round(floor.per_s, 1) for floor in beside]
        result["slice_shares_of_floor"] = [round(value, 3) for value in slice_shares]
        result["floor_web_cpu_ms_per_row"] = round(sum(floor.web_ms for floor in beside) / len(beside), 3)
        result["floor_db_cpu_ms_per_row"] = round(sum(floor.db_ms for floor in beside) / len(beside), 3)
        result["floor_generator_cpu_ms_per_row"] = round(
            sum(floor.generator_ms for floor in beside) / len(beside), 3
        )
        result["floor_errors"] = sum(floor.errors for floor in beside)
    if args.vacuum_every > 0 and mode != "floor":
        result["vacuum_cpu_s"] = round(vacuum_cpu, 2)
    if pool:
        worker_db_ms = 1000 * cpu.get("worker_database", 0.0) / answers if answers else 0.0
        result["pool"] = {"strategy": pool, "budget": args.pool_budget, "reprioritisations": jobs,
                          "worker_cpu_s": round(worker_cpu, 2),
                          "worker_db_cpu_s": round(cpu.get("worker_database", 0.0), 2),
                          "worker_db_cpu_ms_per_answer": round(worker_db_ms, 3)}  # fmt: skip
        print(f"pool {pool}: re-prioritisations {jobs}; worker CPU {worker_cpu:.1f} s, its database "
              f"backends {cpu.get('worker_database', 0.0):.1f} s ({worker_db_ms:.2f} ms per answer, "
              "among the database's above)")  # fmt: skip
    print(json.dumps(result))
    return result


def floor_table(*, create: bool) -> None:
    """Create the floor's table (`benchmarks.load_urls`), or drop it after the floor's run."""
    from django.db import connection

    from benchmarks.load_urls import FLOOR_TABLE, FLOOR_TABLE_SQL

    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {FLOOR_TABLE}")  # a table left by a run that was stopped
        if create:
            cursor.execute(FLOOR_TABLE_SQL)


def floor_rows() -> int:
    from django.db import connection

    from benchmarks.load_urls import FLOOR_TABLE

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {FLOOR_TABLE}")
        return int(cursor.fetchone()[0])


if __name__ == "__main__":
    raise SystemExit(main())
