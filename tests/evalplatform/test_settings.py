"""Settings come from the environment, with embedded defaults and refusals for unsafe production use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from evalplatform.env import DEMO_ENV_NAME, EnvError, demo_env_write, env_bool, env_int, env_list

ROOT = Path(__file__).resolve().parents[2]
CLEARED = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "REDIS_URL",
    "SECRET_KEY",
    "DEBUG",
    "ALLOWED_HOSTS",
    "DJANGO_ALLOW_ASYNC_UNSAFE",
)


def load_settings(**env: str | None) -> tuple[int, dict[str, object]]:
    """The settings under ``env`` (None: unset), in a var folder of their own unless ``env`` names one: a
    demo's var/demo.env in this checkout must not fill in what a test leaves out."""
    base = {key: value for key, value in os.environ.items() if key not in CLEARED}
    with tempfile.TemporaryDirectory(prefix="settings-var-") as own_var:
        merged = {**base, "EVALPLATFORM_VAR_DIR": own_var, **env}
        result = subprocess.run(
            [sys.executable, "-m", "tests.settings_probe"],
            cwd=ROOT,
            env={key: value for key, value in merged.items() if value is not None},
            capture_output=True,
            text=True,
            timeout=60,
        )
    return result.returncode, json.loads(result.stdout.strip().splitlines()[-1])


class TestEnvParsing:
    def test_it_reads_booleans(self) -> None:
        assert env_bool("X", False, {"X": "true"}) is True
        assert env_bool("X", True, {"X": "0"}) is False
        assert env_bool("X", True, {"X": " Off "}) is False
        assert env_bool("X", True, {}) is True

    def test_it_rejects_a_word_that_is_not_a_boolean(self) -> None:
        with pytest.raises(EnvError, match="X='maybe' is not a boolean"):
            env_bool("X", False, {"X": "maybe"})

    def test_it_reads_integers_and_rejects_garbage(self) -> None:
        assert env_int("N", 3, {"N": "42"}) == 42
        assert env_int("N", 3, {"N": ""}) == 3
        with pytest.raises(EnvError, match="not an integer"):
            env_int("N", 3, {"N": "4x"})

    def test_it_splits_lists_on_commas(self) -> None:
        assert env_list("H", ["a"], {"H": "example.org, www.example.org,"}) == [
            "example.org",
            "www.example.org",
        ]
        assert env_list("H", ["a"], {}) == ["a"]


class TestSettings:
    def test_it_defaults_to_sqlite_in_the_project_folder_and_a_serverless_broker(self) -> None:
        code, settings = load_settings(DEBUG="true", EVALPLATFORM_VAR_DIR=None)
        assert code == 0
        assert settings["DATABASE_ENGINE"] == "django.db.backends.sqlite3"
        assert Path(str(settings["DATABASE_NAME"])) == ROOT / "var" / "db.sqlite3"
        assert str(settings["CELERY_BROKER_URL"]).startswith("filesystem://")
        options = settings["CELERY_BROKER_TRANSPORT_OPTIONS"]
        assert isinstance(options, dict)
        assert (
            options["data_folder_in"] == options["data_folder_out"] == str(ROOT / "var" / "broker" / "queue")
        )

    def test_it_uses_postgresql_and_redis_when_set(self) -> None:
        code, settings = load_settings(
            DEBUG="true",
            DATABASE_URL="postgres://evaluser:secret@db.internal:5433/evalplatform",
            CELERY_BROKER_URL="redis://cache.internal:6379/2",
        )
        assert code == 0
        assert settings["DATABASE_ENGINE"] == "evalplatform.postgresql"  # Django's, less a round trip
        assert settings["DATABASE_NAME"] == "evalplatform"
        assert settings["DATABASE_HOST"] == "db.internal"
        assert settings["CELERY_BROKER_URL"] == "redis://cache.internal:6379/2"

    def test_it_falls_back_to_redis_url_for_the_broker(self) -> None:
        code, settings = load_settings(DEBUG="true", REDIS_URL="redis://cache.internal:6379/0")
        assert code == 0
        assert settings["CELERY_BROKER_URL"] == "redis://cache.internal:6379/0"

    def test_it_refuses_to_start_without_a_secret_key_when_debug_is_off(self) -> None:
        code, settings = load_settings(DEBUG="false")
        assert code == 3
        assert settings["error"] == "ImproperlyConfigured"
        assert "SECRET_KEY must be set" in str(settings["message"])

    def test_it_refuses_the_development_key_when_debug_is_off(self) -> None:
        code, settings = load_settings(
            DEBUG="false", SECRET_KEY="django-insecure-development-only-key-never-use-in-production"
        )
        assert code == 3
        assert "development SECRET_KEY is refused" in str(settings["message"])

    def test_it_uses_a_development_key_only_with_debug_on(self) -> None:
        code, settings = load_settings(DEBUG="true")
        assert code == 0
        assert str(settings["SECRET_KEY"]).startswith("django-insecure-")

    def test_it_reads_allowed_hosts_and_debug(self) -> None:
        code, settings = load_settings(DEBUG="off", SECRET_KEY="x" * 60, ALLOWED_HOSTS="eval.example.org")
        assert code == 0
        assert settings["DEBUG"] is False
        assert settings["ALLOWED_HOSTS"] == ["eval.example.org"]

    def test_it_rejects_a_malformed_debug_value(self) -> None:
        code, settings = load_settings(DEBUG="perhaps")
        assert code == 3
        assert settings["error"] == "EnvError"

    def test_it_refuses_a_webhook_network_that_is_not_a_cidr(self) -> None:
        code, settings = load_settings(DEBUG="true", WEBHOOK_ALLOWED_NETWORKS="127.0.0.0/8, 10.0.0.0/33")
        assert code == 3
        assert settings["error"] == "ImproperlyConfigured"
        assert "WEBHOOK_ALLOWED_NETWORKS: '10.0.0.0/33' is not a network" in str(settings["message"])

    def test_it_bounds_webhooks_and_mail_by_default(self) -> None:
        from django.conf import settings

        assert (settings.WEBHOOK_ALLOWED_NETWORKS, settings.WEBHOOK_TIMEOUT_SECONDS) == ([], 10)
        assert settings.EMAIL_TIMEOUT == 10  # Django's own default waits on an SMTP server for ever

    def test_it_configures_celery_for_safe_redelivery(self) -> None:
        code, settings = load_settings(DEBUG="true")
        assert code == 0
        assert settings["CELERY_TASK_ACKS_LATE"] is True
        assert settings["CELERY_TASK_REJECT_ON_WORKER_LOST"] is True
        assert settings["CELERY_TASK_SERIALIZER"] == "json"
        assert settings["CELERY_BEAT_SCHEDULER"] == "django_celery_beat.schedulers:DatabaseScheduler"

    def test_it_passes_the_deploy_checks_with_production_settings(self) -> None:
        env = {key: value for key, value in os.environ.items() if key not in CLEARED}
        env.update(
            DEBUG="false",
            SECRET_KEY="k8-" + "q7Zx!vR2#pL9@wT4$mN6^bH1&cJ3*fD5(gK8)sA0-yU2=eI4" * 2,
            ALLOWED_HOSTS="eval.example.org",
            DATABASE_URL="postgres://postgres@127.0.0.1:5432/evalplatform",
            CELERY_BROKER_URL="redis://127.0.0.1:6379/0",
            SECURE_SSL_REDIRECT="true",
            SECURE_HSTS_SECONDS="31536000",
            SECURE_HSTS_INCLUDE_SUBDOMAINS="true",
            SECURE_HSTS_PRELOAD="true",
        )
        result = subprocess.run(
            [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr + result.stdout
        assert "no issues" in result.stdout


class TestDemoSettingsFile:
    """`make demo` leaves its settings in var/demo.env (`bin/demo`); a command typed later in a shell with
    none of them runs with them, and the environment wins over the file."""

    def test_it_reads_the_demos_settings_where_the_environment_sets_none(self, tmp_path: Path) -> None:
        written = demo_env_write(tmp_path, site_url="http://127.0.0.1:8123", environ={})
        code, settings = load_settings(EVALPLATFORM_VAR_DIR=str(tmp_path))
        assert code == 0, settings
        assert settings["DEBUG"] is True
        assert settings["SECRET_KEY"] == read_env_value(written, "SECRET_KEY")
        assert not str(settings["SECRET_KEY"]).startswith("django-insecure-")
        assert settings["DATABASE_ENGINE"] == "django.db.backends.sqlite3"
        assert Path(str(settings["DATABASE_NAME"])) == tmp_path / "db.sqlite3"
        assert str(settings["CELERY_BROKER_URL"]).startswith("filesystem://")
        assert settings["SITE_URL"] == "http://127.0.0.1:8123"

    def test_it_lets_the_environment_win_over_the_demos_file(self, tmp_path: Path) -> None:
        demo_env_write(tmp_path, site_url="http://127.0.0.1:8123", environ={})
        code, settings = load_settings(
            EVALPLATFORM_VAR_DIR=str(tmp_path),
            DEBUG="false",
            SECRET_KEY="s" * 60,
            DATABASE_URL="postgres://evaluser:secret@db.internal:5433/evalplatform",
            CELERY_BROKER_URL="redis://cache.internal:6379/2",
            SITE_URL="https://eval.example.org",
        )
        assert code == 0, settings
        assert settings["DEBUG"] is False
        assert settings["SECRET_KEY"] == "s" * 60
        assert settings["DATABASE_HOST"] == "db.internal"
        assert settings["CELERY_BROKER_URL"] == "redis://cache.internal:6379/2"
        assert settings["SITE_URL"] == "https://eval.example.org"

    def test_it_keeps_the_demos_secret_key_from_one_start_to_the_next(self, tmp_path: Path) -> None:
        first = read_env_value(
            demo_env_write(tmp_path, site_url="http://127.0.0.1:8000", environ={}), "SECRET_KEY"
        )
        written = demo_env_write(tmp_path, site_url="http://127.0.0.1:8001", environ={})
        assert read_env_value(written, "SECRET_KEY") == first  # nobody is logged out by a second `make demo`
        assert read_env_value(written, "SITE_URL") == "http://127.0.0.1:8001"
        assert len(first) >= 50
        assert first != read_env_value(
            demo_env_write(tmp_path / "other", site_url="http://127.0.0.1:8000", environ={}), "SECRET_KEY"
        )
        assert written.stat().st_mode & 0o777 == 0o600

    def test_it_refuses_a_malformed_line_of_the_demos_file_naming_the_file_and_line(
        self, tmp_path: Path
    ) -> None:
        (tmp_path / DEMO_ENV_NAME).write_text("# the demo's settings\nDEBUG=true\nSECRET_KEY\n")
        code, settings = load_settings(EVALPLATFORM_VAR_DIR=str(tmp_path))
        assert code == 3
        assert settings == {
            "error": "EnvError",
            "message": f"{tmp_path / DEMO_ENV_NAME}:3: expected NAME=VALUE, got 'SECRET_KEY'",
        }

    def test_it_says_in_one_line_that_a_command_needs_a_secret_key(self, tmp_path: Path) -> None:
        result = run_without_a_secret_key(["manage.py", "drf_create_token", "analyst"], tmp_path, timeout=60)
        assert result.returncode == 1
        assert result.stdout == ""
        assert result.stderr == no_secret_key_line("manage.py", tmp_path) + "\n"

    @pytest.mark.parametrize(
        ("program", "command", "status"),
        [
            ("celery", ["-m", "celery", "-A", "evalplatform", "worker", "--loglevel", "WARNING"], 1),
            ("celery", ["-m", "celery", "-A", "evalplatform", "beat"], 1),
            # The checkout's gunicorn.conf.py checks the settings in the master, before any worker.
            ("evalplatform.wsgi", ["-m", "gunicorn", "evalplatform.wsgi", "--bind", "127.0.0.1:0"], 4),
            ("evalplatform.wsgi", ["-m", "gunicorn", "evalplatform.wsgi", "--bind", "127.0.0.1:0",
                                   "--workers", "3"], 4),
            ("evalplatform.wsgi", ["-m", "gunicorn", "evalplatform.wsgi", "--bind", "127.0.0.1:0",
                                   "--workers", "3", "--preload"], 4),
            # Another settings file (no check in the master): the one worker's own refusal.
            ("evalplatform.wsgi", ["-m", "gunicorn", "-c", "/dev/null", "evalplatform.wsgi",
                                   "--bind", "127.0.0.1:0"], 4),
        ],
    )  # fmt: skip
    def test_the_worker_beat_and_web_server_say_it_in_one_line_too(
        self, tmp_path: Path, program: str, command: list[str], status: int
    ) -> None:
        """The Celery app and the WSGI application refuse as manage.py does; gunicorn's worker exits with
        its "application failed to load" status, so that its master stops instead of starting it again."""
        result = run_without_a_secret_key(command, tmp_path, timeout=120)
        assert result.returncode == status, result.stderr[-2000:]
        assert result.stderr.count(no_secret_key_line(program, tmp_path)) == 1, result.stderr[-2000:]
        assert "Traceback" not in result.stderr + result.stdout


def run_without_a_secret_key(
    arguments: list[str], var_dir: Path, *, timeout: float
) -> subprocess.CompletedProcess[str]:
    """`python <arguments>` in the checkout, with no SECRET_KEY, DEBUG or demo file (`var_dir` has none)."""
    env = {key: value for key, value in os.environ.items() if key not in CLEARED}
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=ROOT,
        env={**env, "EVALPLATFORM_VAR_DIR": str(var_dir)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def no_secret_key_line(program: str, var_dir: Path) -> str:
    """The one line `program` stops with when SECRET_KEY is missing and `var_dir` holds no demo file."""
    return (
        f"{program}: SECRET_KEY must be set when DEBUG is off. Set DEBUG=true for local development, or "
        f"run `make demo` once: later commands then read its settings from {var_dir / DEMO_ENV_NAME}."
    )


def read_env_value(path: Path, name: str) -> str:
    lines = [line for line in path.read_text().splitlines() if line.startswith(f"{name}=")]
    assert len(lines) == 1, lines
    return lines[0].partition("=")[2]
