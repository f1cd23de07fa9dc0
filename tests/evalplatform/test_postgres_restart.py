"""PostgreSQL restarted under load: the clients get errors during the outage, then recover, and the
database holds every accepted answer once and no half-written one (issue 13).

The machine's shared PostgreSQL is never touched: the test creates a throwaway cluster of its own
(`initdb` into a temporary folder, trust authentication, a free port), migrates a database there and
starts gunicorn (2 sync workers) on it. Ten annotator clients (threads, keep-alive HTTP) claim and answer
through the API while the cluster is restarted with `pg_ctl restart -m fast`, which ends every backend
connection the web workers hold.
"""

from __future__ import annotations

import glob
import http.client
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest

from tests.conftest import ROOT, _unavailable, stop_process_group

CLIENTS = 10
RESTART_AFTER = 3.0  # seconds of load before the restart
RECOVERY_BOUND = 5.0  # seconds after the restart by which every request must succeed again
LOAD_AFTER_RESTART = 9.0
SETUP = """
import json, sys
sys.argv = ["annotation_load"]
from benchmarks import annotation_load as load
load.django_setup()
slug, tokens = load.create_project("restart", tasks=3000, clients=CLIENTS, overlap=3)
print(json.dumps({"slug": slug, "tokens": tokens}))
""".replace("CLIENTS", str(CLIENTS))


def postgres_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    if not found and shutil.which("pg_ctl"):
        found = [str(shutil.which("pg_ctl"))]
    if not found:
        _unavailable("needs PostgreSQL's server binaries (pg_ctl, initdb; apt-get install postgresql)")
    if os.geteuid() == 0:  # the server refuses to run as root: it runs as `postgres`
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            _unavailable("runs as root, and there is no `postgres` user to run the throwaway server as")
    return Path(found[-1]).parent


@dataclass
class Cluster:
    bin: Path
    data: Path
    port: int
    log: Path

    def run(self, *command: str) -> None:
        """A server command, as the `postgres` user when this is root (the server refuses to run as root)."""
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=60)

    def pg_ctl(self, *args: str) -> None:
        self.run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", *args)

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/restart"


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    folder = Path(tempfile.mkdtemp(prefix="pg-restart-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    cluster = Cluster(postgres_bin(), folder / "data", free_port(), folder / "server.log")
    cluster.run(str(cluster.bin / "initdb"), "-D", str(cluster.data), "-A", "trust", "-U", "postgres",
                "--no-sync")  # fmt: skip
    options = (
        f"-p {cluster.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={folder} -c fsync=off"
    )
    cluster.pg_ctl("-o", options, "start")
    try:
        yield cluster
    finally:
        try:
            cluster.pg_ctl("-m", "immediate", "stop")
        finally:
            shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Outcome:
    started: float
    ended: float
    what: str  # "next", "submit"
    status: int | None  # None: the connection failed
    assignment: int | None = None


@dataclass
class Load:
    port: int
    slug: str
    until: float
    outcomes: list[Outcome] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, outcome: Outcome) -> None:
        with self.lock:
            self.outcomes.append(outcome)

    def annotator(self, token: str) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
        headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        base = f"/api/projects/{self.slug}"
        assignment: int | None = None
        while time.monotonic() < self.until:
            what, body = (
                ("next", {}) if assignment is None else ("submit", {"assignment": assignment, "grade": 2})
            )
            started = time.monotonic()
            try:
                connection.request("POST", f"{base}/{what}/", json.dumps(body), headers)
                response = connection.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException):
                connection.close()
                self.record(Outcome(started, time.monotonic(), what, None, assignment))
                time.sleep(0.05)
                continue
            self.record(Outcome(started, time.monotonic(), what, response.status, assignment))
            if what == "next" and response.status == 200:
                claim = json.loads(data)
                if claim["status"] != "task":
                    return
                assignment = claim["task"]["assignment"]
            elif what == "submit" and response.status in (201, 404, 409):
                assignment = None  # stored, or not (any longer) ours: claim again
            elif response.status >= 500:
                time.sleep(0.05)
        connection.close()


def start_gunicorn(database_url: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DATABASE_URL": database_url, "DEBUG": "false", "ALLOWED_HOSTS": "127.0.0.1",
           "LOG_LEVEL": "WARNING"}  # fmt: skip
    command = [sys.executable, "-m", "gunicorn", "evalplatform.wsgi", "--bind", f"127.0.0.1:{port}",
               "--workers", "2", "--keep-alive", "30", "--timeout", "30", "--log-level", "warning"]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            probe = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            probe.request("GET", "/healthz")
            probe.getresponse().read()
            return process
        except OSError:
            if process.poll() is not None:
                pytest.fail(f"gunicorn exited:\n{log.read_text(errors='replace')}")
            time.sleep(0.2)
    stop_process_group(process)
    pytest.fail("gunicorn did not answer within 60 s")


def database_check(url: str, slug: str, accepted: set[int]) -> dict[str, object]:
    """What the database holds, read with plain SQL."""
    with psycopg.connect(url.replace("postgres://", "postgresql://")) as db:
        project = db.execute("SELECT id FROM annotations_project WHERE slug = %s", [slug]).fetchone()[0]

        def rows(sql: str) -> list[tuple[object, ...]]:
            return db.execute(sql.replace("$project", str(project))).fetchall()

        stored = dict(rows("SELECT assignment_id, count(*) FROM annotations_annotation "
                           "WHERE project_id = $project GROUP BY assignment_id"))  # fmt: skip
        return {
            "lost": sorted(accepted - set(stored)),
            "duplicated": sorted(a for a, n in stored.items() if n > 1),
            # An answer without its assignment marked answered, or an assignment marked answered without
            # its answer: a half-written answer.
            "answer_without_state": rows(
                "SELECT n.id FROM annotations_annotation n JOIN annotations_assignment a ON a.id = n.assignment_id "
                "WHERE n.project_id = $project AND a.state NOT IN ('labelled', 'released')"
            ),
            "state_without_answer": rows(
                "SELECT a.id FROM annotations_assignment a LEFT JOIN annotations_annotation n "
                "ON n.assignment_id = a.id WHERE a.project_id = $project AND a.state <> 'reserved' AND n.id IS NULL"
            ),
            "counters_off": rows(
                "SELECT t.id FROM annotations_task t LEFT JOIN annotations_assignment a ON a.task_id = t.id "
                "WHERE t.project_id = $project GROUP BY t.id, t.assigned_count, t.label_count "
                "HAVING t.assigned_count <> count(a.id) FILTER (WHERE a.state IN ('reserved', 'labelled')) "
                "OR t.label_count <> count(a.id) FILTER (WHERE a.state = 'labelled')"
            ),
            "over_overlap": rows(
                "SELECT t.id FROM annotations_task t JOIN annotations_project p ON p.id = t.project_id "
                "JOIN annotations_assignment a ON a.task_id = t.id AND a.state IN ('reserved', 'labelled') "
                "WHERE t.project_id = $project AND NOT t.is_gold GROUP BY t.id, p.overlap "
                "HAVING count(a.id) > p.overlap"
            ),
            "stored": sum(stored.values()),
        }


@pytest.mark.services
@pytest.mark.slow
def test_clients_recover_after_a_postgres_restart_and_no_answer_is_lost_or_half_written(
    cluster: Cluster, tmp_path: Path
) -> None:
    env = {**os.environ, "DATABASE_URL": cluster.url, "PYTHONPATH": str(ROOT)}
    setup = subprocess.run([sys.executable, "-c", SETUP], cwd=ROOT, env=env, capture_output=True, timeout=120)
    assert setup.returncode == 0, setup.stderr.decode(errors="replace")[-3000:]
    project = json.loads(setup.stdout.decode().strip().splitlines()[-1])
    port = free_port()
    server = start_gunicorn(cluster.url, port, tmp_path / "gunicorn.log")
    try:
        load = Load(port, project["slug"], until=time.monotonic() + RESTART_AFTER + LOAD_AFTER_RESTART)
        threads = [threading.Thread(target=load.annotator, args=(token,)) for token in project["tokens"]]
        for thread in threads:
            thread.start()
        time.sleep(RESTART_AFTER)
        restart_began = time.monotonic()
        cluster.pg_ctl("-m", "fast", "restart")
        restarted = time.monotonic()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in threads), "a client hung"
    finally:
        stop_process_group(server)
    log = (tmp_path / "gunicorn.log").read_text(errors="replace")
    outcomes = sorted(load.outcomes, key=lambda o: o.started)
    before = [o for o in outcomes if o.ended < restart_began]
    after = [o for o in outcomes if o.started > restarted + RECOVERY_BOUND]
    failed = [o for o in outcomes if o.status is None or o.status >= 500]

    assert before and all(o.status in (200, 201) for o in before), [
        o for o in before if o.status not in (200, 201)
    ]
    # The outage is seen: requests in flight or sent while it lasted failed, and no other did. They failed
    # as "unavailable, retry" (503 with Retry-After, evalplatform.dbdown) or a refused connection, never 500.
    assert failed, "no request failed in the outage"
    assert {o.status for o in failed} <= {503, None}, sorted({str(o.status) for o in failed})
    assert min(o.ended for o in failed) >= restart_began
    # ... and then every request succeeds again, for every client (no web worker stays broken).
    assert after, "no request after the recovery bound"
    assert [o for o in after if o.status not in (200, 201)] == [], log[-3000:]
    assert max(o.ended for o in failed) < restarted + RECOVERY_BOUND, (restarted, failed[-3:])
    assert sum(o.what == "submit" and o.status == 201 for o in after) >= CLIENTS

    print(f"restart took {restarted - restart_began:.2f} s; {len(failed)} failed requests "
        f"({sorted({str(o.status or 'connection error') for o in failed})}), the last ending "
          f"{max(o.ended for o in failed) - restarted:+.2f} s after it; {len(after)} requests after the bound, "
          f"all answered")  # fmt: skip
    accepted = {o.assignment for o in outcomes if o.what == "submit" and o.status == 201}
    assert accepted
    found = database_check(cluster.url, project["slug"], {a for a in accepted if a is not None})
    assert found["lost"] == [] and found["duplicated"] == [], found
    assert found["answer_without_state"] == [] and found["state_without_answer"] == [], found
    assert found["counters_off"] == [] and found["over_overlap"] == [], found
