"""docker-compose.yml and the Dockerfile stay in step with the settings and the Celery setup."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


class TestDockerCompose:
    def test_it_has_the_six_services(self) -> None:
        assert set(compose()["services"]) == {"postgres", "redis", "web", "worker", "notifier", "beat"}

    def test_it_only_sets_environment_variables_the_settings_read(self) -> None:
        settings_source = (ROOT / "evalplatform" / "settings.py").read_text()
        read_by_settings = set(re.findall(r'env_\w+\(\s*"([A-Z_]+)"', settings_source))
        read_by_settings |= set(re.findall(r'os\.environ\.get\(\s*"([A-Z_]+)"', settings_source))
        for name in ("web", "worker", "notifier", "beat"):
            env_names = set(compose()["services"][name]["environment"])
            assert env_names <= read_by_settings, (
                f"{name}: {env_names - read_by_settings} unknown to settings"
            )

    def test_it_gives_every_service_a_healthcheck_except_beat(self) -> None:
        services = compose()["services"]
        assert all(
            "healthcheck" in services[name] for name in ("postgres", "redis", "web", "worker", "notifier")
        )

    def test_it_keeps_the_database_on_a_volume(self) -> None:
        assert "pgdata" in compose()["volumes"]
        assert "pgdata:/var/lib/postgresql/data" in compose()["services"]["postgres"]["volumes"]

    def test_it_shares_the_uploads_between_web_and_workers(self) -> None:
        services = compose()["services"]
        assert "media" in compose()["volumes"]
        for name in ("web", "worker", "beat"):
            assert "media:/app/var/media" in services[name]["volumes"], name

    def test_it_runs_the_worker_on_both_queues(self) -> None:
        assert "-Q default,heavy" in compose()["services"]["worker"]["command"]

    def test_it_runs_notifications_on_a_worker_of_their_own(self) -> None:
        services = compose()["services"]
        assert "-Q notifications" in services["notifier"]["command"]
        assert "notifications" not in services["worker"]["command"]

    def test_it_keeps_secrets_out_of_the_file(self) -> None:
        environment = compose()["services"]["web"]["environment"]
        assert environment["SECRET_KEY"].startswith("${SECRET_KEY:?")

    def test_it_leaves_a_demos_settings_out_of_the_image(self) -> None:
        # `make demo` leaves DEBUG=true and its own key in var/demo.env, which the settings read for what the
        # environment does not set: the image never holds the checkout's var/, and the containers set both.
        assert "var" in (ROOT / ".dockerignore").read_text().splitlines()
        environment = compose()["services"]["web"]["environment"]
        assert environment["DEBUG"] == "false"
