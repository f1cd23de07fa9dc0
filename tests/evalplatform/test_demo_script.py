"""bin/demo, the process supervisor behind `make demo`: it refuses a port in use before starting anything,
and web, worker and beat stop together, whether one of them dies or the user presses Ctrl-C. Links point at
its host and port (SITE_URL), and a command typed later in a bare shell runs with the demo's settings.

These run the real script with the embedded defaults (SQLite and the filesystem broker in a temporary
EVALPLATFORM_VAR_DIR) on a free port.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = str(ROOT / "bin" / "demo")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def children(pid: int) -> dict[int, str]:
    """The direct children of ``pid`` and their command lines, read from /proc."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if parent == pid:
                found[int(stat.parent.name)] = (stat.parent / "cmdline").read_text().replace("\0", " ")
        except (OSError, IndexError, ValueError):
            continue  # the process ended while we looked
    return found


def descendants(pid: int) -> set[int]:
    direct = set(children(pid))
    return direct.union(*(descendants(child) for child in direct))


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_until(predicate, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    var_dir = tmp_path_factory.mktemp("demo-var")
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL"}}
    env.update(PY=sys.executable, EVALPLATFORM_VAR_DIR=str(var_dir), DEBUG="true", HOST="127.0.0.1")
    return env


@pytest.fixture(scope="module")
def migrated_demo_env(demo_env: dict[str, str]) -> dict[str, str]:
    # Beat's database scheduler needs its tables.
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT, env=demo_env, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return demo_env


class RunningDemo:
    def __init__(self, env: dict[str, str], output: Path, args: Sequence[str] = ()) -> None:
        self.env = env
        self.port = free_port()
        self.output = output
        # Ctrl-C as a terminal delivers it: a test run started in the background of a shell without job
        # control inherits SIGINT ignored, and a shell started with it ignored cannot trap it (POSIX), so
        # bin/demo would see its children stop instead. A handler here, not SIG_IGN, is SIG_DFL after exec.
        inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            with output.open("wb") as out:
                self.process = subprocess.Popen(
                    [DEMO, *args], cwd=ROOT, env={**env, "PORT": str(self.port)}, stdout=out,
                    stderr=subprocess.STDOUT, start_new_session=True,  # its own process group, as a terminal gives it
                )  # fmt: skip
        finally:
            signal.signal(signal.SIGINT, inherited)
        self.processes: set[int] = set()

    def wait_until_up(self, timeout: float = 90) -> dict[int, str]:
        """Wait for the web server to listen; returns the three processes, and records every descendant."""
        assert wait_until(lambda: listening(self.port), timeout=timeout), self.log()
        three = {pid: command for pid, command in children(self.process.pid).items() if "python" in command}
        assert len(three) == 3, three
        self.processes = descendants(self.process.pid)
        return three

    def log(self) -> str:
        return self.output.read_text(errors="replace")

    def kill_all(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@pytest.fixture
def demo(migrated_demo_env: dict[str, str], tmp_path: Path) -> Iterator[RunningDemo]:
    running = RunningDemo(migrated_demo_env, tmp_path / "demo.out")
    yield running
    running.kill_all()


#: What a new shell lacks: `make demo` sets these for its own processes only.
DEMO_ONLY = {"DEBUG", "SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "SITE_URL"}


def later_command(var_dir: str, code: str) -> str:
    """Run ``code`` in `manage.py shell` as a user would in another shell after `make demo`."""
    env = {key: value for key, value in os.environ.items() if key not in DEMO_ONLY}
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=ROOT, env={**env, "EVALPLATFORM_VAR_DIR": var_dir}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def process_environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().partition("=")[::2] for item in raw if item)


class TestDemoScript:
    def test_it_refuses_a_port_in_use_and_starts_nothing(self, demo_env: dict[str, str]) -> None:
        log_dir = Path(demo_env["EVALPLATFORM_VAR_DIR"]) / "log"
        log_dir.mkdir(exist_ok=True)
        (log_dir / "worker.log").write_text("the live worker's log\n")
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            result = subprocess.run(
                [DEMO],
                cwd=ROOT,
                env={**demo_env, "PORT": str(port)},
                capture_output=True,
                text=True,
                timeout=60,
            )
        assert result.returncode == 1
        assert result.stderr == (
            f"bin/demo: cannot use 127.0.0.1:{port} (Address already in use); is another demo running? "
            "Stop it or set PORT.\n"
        )
        assert result.stdout == ""
        assert (log_dir / "worker.log").read_text() == "the live worker's log\n"
        assert not (log_dir / "beat.log").exists()

    def test_it_stops_web_and_beat_when_the_worker_dies(self, demo: RunningDemo) -> None:
        three = demo.wait_until_up()
        worker = next(pid for pid, command in three.items() if " worker " in command)
        os.kill(worker, signal.SIGKILL)
        assert demo.process.wait(timeout=30) == 1
        assert "bin/demo: the worker exited (status 137); stopping the others." in demo.log()
        assert wait_until(lambda: not any(alive(pid) for pid in demo.processes), timeout=10), [
            pid for pid in demo.processes if alive(pid)
        ]

    def test_it_stops_all_three_on_ctrl_c(self, demo: RunningDemo) -> None:
        demo.wait_until_up()
        os.killpg(demo.process.pid, signal.SIGINT)  # what a terminal sends on Ctrl-C
        assert demo.process.wait(timeout=30) == 130, demo.log()[-3000:]
        assert "Stopping web, worker and beat..." in demo.log()
        assert not any(alive(pid) for pid in demo.processes)

    def test_it_points_links_at_its_own_host_and_port(self, demo: RunningDemo) -> None:
        three = demo.wait_until_up()
        site_url = f"http://127.0.0.1:{demo.port}"
        assert {process_environ(pid)["SITE_URL"] for pid in three} == {site_url}
        var_dir = demo.env["EVALPLATFORM_VAR_DIR"]
        shown = later_command(
            var_dir,
            "from django.conf import settings as s; print(s.SITE_URL, s.DEBUG, s.DATABASES['default']['NAME'])",
        )
        assert shown == f"{site_url} True {Path(var_dir) / 'db.sqlite3'}\n"

    def test_it_keeps_a_site_url_the_environment_sets(
        self, migrated_demo_env: dict[str, str], tmp_path: Path
    ) -> None:
        demo = RunningDemo(
            {**migrated_demo_env, "SITE_URL": "https://eval.example.org"}, tmp_path / "demo.out"
        )
        try:
            three = demo.wait_until_up()
            assert {process_environ(pid)["SITE_URL"] for pid in three} == {"https://eval.example.org"}
            shown = later_command(
                migrated_demo_env["EVALPLATFORM_VAR_DIR"],
                "from django.conf import settings; print(settings.SITE_URL)",
            )
            assert shown == "https://eval.example.org\n"
        finally:
            demo.kill_all()
