"""Typed readers for settings that come from the environment.

Kept free of Django so the settings module and its tests can use them directly.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})


class EnvError(ValueError):
    """An environment variable holds a value that cannot be parsed."""


def env_bool(name: str, default: bool, environ: Mapping[str, str] = os.environ) -> bool:
    raw = environ.get(name)
    if raw is None:
        return default
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise EnvError(f"{name}={raw!r} is not a boolean (use true/false, 1/0, yes/no, on/off)")


def env_int(name: str, default: int, environ: Mapping[str, str] = os.environ) -> int:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise EnvError(f"{name}={raw!r} is not an integer") from exc


def env_list(name: str, default: list[str], environ: Mapping[str, str] = os.environ) -> list[str]:
    raw = environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def default_sqlite_url(var_dir: Path) -> str:
    return f"sqlite:///{var_dir / 'db.sqlite3'}"


def default_broker_url() -> str:
    """kombu's filesystem transport: a real broker with no server, for the embedded default."""
    return "filesystem://localhost/"


def is_filesystem_broker(url: str) -> bool:
    return url.startswith("filesystem://")


def filesystem_broker_options(var_dir: Path) -> dict[str, object]:
    """Folders for kombu's filesystem transport. Producers and consumers share one queue folder."""
    root = var_dir / "broker"
    queue = str(root / "queue")
    return {
        "data_folder_in": queue,
        "data_folder_out": queue,
        "control_folder": str(root / "control"),
        "processed_folder": str(root / "processed"),
        "store_processed": False,
    }
