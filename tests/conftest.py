"""Shared fixtures: personas, the live services, a real Celery worker process and a real browser.

With CI=true a missing service or browser fails the run; elsewhere the tests that need it are skipped
with the reason. No skip is tolerated in CI at all (see pytest_runtest_makereport).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

# Playwright's sync API runs an event loop in the test thread; the ORM calls the tests make around it
# are still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
ROOT = Path(__file__).resolve().parent.parent


_ASSET = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*?\b(?:src|href)=["']([^"']+)["']""", re.IGNORECASE)
_REMOTE = re.compile(r"(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)


def remote_assets(html: str) -> list[str]:
    """The scripts, stylesheets, images and frames a page loads from another host (a CDN, say). Looking
    for the word "cdn" in the page instead failed now and then: a random CSRF token held it."""
    return [url for url in _ASSET.findall(html) if _REMOTE.match(url)]


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"CI requires this, but it is unavailable: {reason}", pytrace=False)
    pytest.skip(reason)


def _empty_the_filled_tables(test_case: Any) -> None:
    """A transactional test's teardown, as Django's `flush` leaves the database (every model's table
    empty, then the post_migrate signal, which makes the content types and permissions again), but by
    DELETE of the tables that hold a row instead of one TRUNCATE of all of them: TRUNCATE makes new files
    for each of the ~80 tables and their indexes, and took most of a transactional test's teardown."""
    from contextlib import suppress
    from importlib import import_module

    from django.apps import apps
    from django.core.management.sql import emit_post_migrate_signal
    from django.db import connections, transaction

    for app_config in apps.get_app_configs():  # as flush does: the handlers some apps connect there
        with suppress(ImportError):
            import_module(".management", app_config.name)
    for db_name in test_case._databases_names(include_mirrors=False):
        connection = connections[db_name]
        tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
        if not tables:
            continue
        quote = connection.ops.quote_name
        with connection.cursor() as cursor:
            cursor.execute(
                " UNION ALL ".join(
                    f"SELECT %s WHERE EXISTS (SELECT 1 FROM {quote(table)})" for table in tables
                ),
                list(tables),
            )
            filled = [row[0] for row in cursor.fetchall()]
            # Django's foreign keys are DEFERRABLE INITIALLY DEFERRED: checked at the commit, when every
            # row that referred to a deleted one is gone too.
            with transaction.atomic(using=db_name):
                for table in filled:
                    cursor.execute(f"DELETE FROM {quote(table)}")
        emit_post_migrate_signal(verbosity=0, interactive=False, db=db_name)


def _install_cheaper_flush() -> None:
    """Transactional tests (the worker's, the browser's) end with `_empty_the_filled_tables` on
    PostgreSQL; the cases it does not cover (available_apps, serialized rollback, sequences reset, another
    database) keep Django's flush."""
    from django.db import connections
    from django.test import TransactionTestCase

    flush = TransactionTestCase._fixture_teardown  # type: ignore[attr-defined]

    def _fixture_teardown(self: Any) -> None:
        names = self._databases_names(include_mirrors=False)
        if (
            self.available_apps is None
            and not self.serialized_rollback
            and not self.reset_sequences
            and all(connections[name].vendor == "postgresql" for name in names)
        ):
            _empty_the_filled_tables(self)
        else:
            flush(self)

    TransactionTestCase._fixture_teardown = _fixture_teardown  # type: ignore[attr-defined]


def pytest_configure(config: pytest.Config) -> None:
    _install_cheaper_flush()
    if not IN_CI:
        return
    from django.conf import settings

    engine = settings.DATABASES["default"]["ENGINE"]
    if "postgresql" not in engine:
        raise pytest.UsageError(f"CI=true requires PostgreSQL (DATABASE_URL), got {engine}")
    if not settings.CELERY_BROKER_URL.startswith("redis://"):
        raise pytest.UsageError(f"CI=true requires a Redis broker, got {settings.CELERY_BROKER_URL}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("services"):
            item.fixturenames.insert(0, "live_services")  # type: ignore[attr-defined]
        if item.get_closest_marker("browser"):
            item.fixturenames.insert(0, "chromium_path")  # type: ignore[attr-defined]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which is not allowed: {report.longrepr}"


# --- services -------------------------------------------------------------------------------------


def redis_ping(url: str) -> str | None:
    """None when Redis answers, else the reason it does not."""
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        return f"Redis at {url} is unreachable: {exc}"
    return None


@pytest.fixture(scope="session")
def live_services(django_db_setup: None, django_db_blocker: pytest.FixtureRequest) -> None:
    from django.conf import settings
    from django.db import connection

    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        if connection.vendor != "postgresql":
            _unavailable(f"needs PostgreSQL, the database is {connection.vendor} (set DATABASE_URL)")
    broker = settings.CELERY_BROKER_URL
    if not broker.startswith("redis://"):
        _unavailable(f"needs a Redis broker, CELERY_BROKER_URL is {broker}")
    problem = redis_ping(broker)
    if problem:
        _unavailable(problem)


@dataclass
class WorkerProcess:
    hostname: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def stop_process_group(process: subprocess.Popen[bytes], *, timeout: float = 20) -> None:
    """SIGTERM a process started with `start_new_session=True` and its children; SIGKILL if they linger."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)


def start_beat(folder: Path, **env: str) -> WorkerProcess:
    """A real `celery beat` with the database scheduler on the test database; `env` adds settings."""
    from django.db import connection

    environ = {**os.environ, "DATABASE_URL": _database_url_for(connection.settings_dict), **env}
    log_path = folder / "beat.log"
    command = [sys.executable, "-m", "celery", "-A", "evalplatform", "beat", "--scheduler",
               "django_celery_beat.schedulers:DatabaseScheduler", "--max-interval", "1",
               "--pidfile", str(folder / "beat.pid"), "--loglevel", "info"]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, env=environ, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    return WorkerProcess("beat", process, log_path)


def _database_url_for(settings_dict: dict[str, object]) -> str:
    user = settings_dict.get("USER") or ""
    password = settings_dict.get("PASSWORD") or ""
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{auth}{host}:{port}/{settings_dict['NAME']}"


@pytest.fixture(scope="session")
def media_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where uploads go during the tests: shared by the test process and the worker process."""
    return tmp_path_factory.mktemp("media")


@pytest.fixture(autouse=True)
def uploads_in_media_root(settings: Any, media_root: Path) -> None:
    settings.MEDIA_ROOT = media_root


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    """Personas are created, and sign in, in many tests: the production hasher (PBKDF2, a quarter of a
    second of CPU per hash) would take a good part of the run. Processes the tests start (a demo, a
    benchmark, the worker) keep the production hasher; no test signs in there as a user made here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def judging_counts_exact(settings: Any) -> None:
    """Tests read queue counts right after the writes they check: no per-process caching of the open
    totals, skipped expiry sweeps nor remembered pending recomputes (production's load settings;
    `test_claim_load_settings` tests those)."""
    settings.JUDGING_OPEN_TOTALS_SECONDS = 0
    settings.JUDGING_EXPIRY_SWEEP_SECONDS = 0
    settings.QUALITY_JOIN_MEMO_SECONDS = 0


@pytest.fixture(scope="session")
def celery_worker_process(
    live_services: None,
    django_db_blocker: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    media_root: Path,
) -> Iterator[WorkerProcess]:
    """A real `celery worker` process on Redis, writing to the test database."""
    from django.db import connection

    from evalplatform.celery import app

    # Messages left by earlier runs (ids restart with each test database) must not reach this worker;
    # `control.purge()` only knows the queues this process has routed to, so purge both by name.
    with app.connection_for_write() as broker:
        for queue in ("default", "heavy", "notifications"):
            broker.default_channel.queue_purge(queue)
    hostname = f"pytest-{uuid.uuid4().hex[:8]}@localhost"
    log_path = tmp_path_factory.mktemp("worker") / "worker.log"
    env = {
        **os.environ,
        "DATABASE_URL": _database_url_for(connection.settings_dict),
        "MEDIA_ROOT": str(media_root),
        # The tests' webhooks listen on 127.0.0.1, which the sender refuses unless allowed.
        "WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
    }
    command = [sys.executable, "-m", "celery", "-A", "evalplatform", "worker", "-Q", "default,heavy,notifications",
               "--concurrency", "1", "--hostname", hostname, "--without-mingle", "--without-gossip",
               "--loglevel", "info"]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    worker = WorkerProcess(hostname, process, log_path)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"the Celery worker exited early:\n{worker.log()}")
            if app.control.ping(destination=[hostname], timeout=1.0):
                break
        else:
            pytest.fail(f"the Celery worker did not answer a ping within 60 s:\n{worker.log()}")
        yield worker
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="class")
def demo_loaded(
    django_db_setup: None, django_db_blocker: pytest.FixtureRequest, media_root: Path
) -> Iterator[dict[str, Any]]:
    """`load_demo --json` once for a test class, read by each of its tests (its summary is the value), as
    Django's `TestCase.setUpTestData` does: in a transaction that each test's own nests in as a savepoint
    (so a test's writes are rolled back before the next), itself rolled back after the class's last test.
    The settings are the ones the autouse fixtures give each test. Only for classes of non-transactional
    tests whose every test reads the demo as it loads (a test that loads it itself, on an empty database,
    belongs in another class)."""
    import json
    from io import StringIO

    from django.core.management import call_command
    from django.db import transaction
    from django.test import override_settings

    overrides = override_settings(
        MEDIA_ROOT=media_root,
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
        JUDGING_OPEN_TOTALS_SECONDS=0,
        JUDGING_EXPIRY_SWEEP_SECONDS=0,
        QUALITY_JOIN_MEMO_SECONDS=0,
    )
    with django_db_blocker.unblock(), overrides, transaction.atomic():  # type: ignore[attr-defined]
        out = StringIO()
        call_command("load_demo", "--json", stdout=out)
        yield json.loads(out.getvalue())
        transaction.set_rollback(True)


# --- the queue ----------------------------------------------------------------------------------------


@dataclass
class QueuedTasks:
    """The Celery messages the code under test sent, as (task name, args, options)."""

    sent: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = field(default_factory=list)
    broker_down: bool = False

    def names(self) -> list[str]:
        return [name for name, _, _ in self.sent]


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> QueuedTasks:
    """Record `apply_async` of the platform's own tasks instead of publishing to the broker (the broker is
    the network, the one thing tests stub). Set `queued.broker_down = True` to make publishing fail as it
    does without Redis."""
    from kombu.exceptions import OperationalError

    from evalplatform.celery import app

    record = QueuedTasks()
    app.loader.import_default_modules()
    ours = [
        task
        for name, task in app.tasks.items()
        if name.split(".")[0] in {"annotations", "monitoring", "evalplatform"}
    ]
    for task in ours:

        def apply_async(args: tuple[Any, ...] = (), name: str = task.name, **options: Any) -> None:
            if record.broker_down:
                raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
            record.sent.append((name, tuple(args), options))

        monkeypatch.setattr(task, "apply_async", apply_async)
    return record


# --- browser --------------------------------------------------------------------------------------

CHROMIUM_ARGS = [
    "--no-sandbox", "--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        _unavailable("Debian chromium is not installed (apt-get install chromium)")
    return str(path)


@pytest.fixture(scope="session")
def browser(chromium_path: str) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=chromium_path, args=CHROMIUM_ARGS, headless=True
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    page = context.new_page()
    yield page
    context.close()


# --- personas -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Persona:
    username: str
    password: str
    role: str | None


ALICE = Persona("alice", "alice-password-123", "annotator")
BOB = Persona("bob", "bob-password-123", "annotator")
LENA = Persona("lena", "lena-password-123", "project_lead")
THEO = Persona("theo", "theo-password-123", "team_member")


def client_for(user: Any) -> Any:
    """A Django test client signed in as `user` (`force_login`)."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


def make_user(persona: Persona, **extra: object):  # type: ignore[no-untyped-def]
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user(
        persona.username, f"{persona.username}@example.org", persona.password, **extra
    )
    if persona.role:
        user.groups.add(Group.objects.get_or_create(name=persona.role)[0])
    return user


@pytest.fixture
def alice(db: None):  # type: ignore[no-untyped-def]
    return make_user(ALICE)


@pytest.fixture
def lena(db: None):  # type: ignore[no-untyped-def]
    return make_user(LENA)


@pytest.fixture
def theo(db: None):  # type: ignore[no-untyped-def]
    return make_user(THEO)


# --- screenshots ----------------------------------------------------------------------------------


def browser_log_in(page: Any, live_server: Any, username: str, password: str) -> None:
    """Sign in through the login form in the browser tests' Chromium page, and wait for the home page."""
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")


def screenshot_path(name: str) -> Path:
    """Where a browser test saves its screenshot: docs/ with UPDATE_SCREENSHOTS=1 (`make screenshots`),
    else a temporary folder, so an ordinary test run leaves the work tree clean."""
    if os.environ.get("UPDATE_SCREENSHOTS") == "1":
        folder = ROOT / "docs"
    else:
        import tempfile

        folder = Path(tempfile.gettempdir()) / "evalplatform-screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name
