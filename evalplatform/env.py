"""Typed readers for settings that come from the environment.

Kept free of Django so the settings module and its tests can use them directly.
"""

from __future__ import annotations

import math
import os
import secrets
from collections.abc import Mapping, MutableMapping
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


def env_float(name: str, default: float, environ: Mapping[str, str] = os.environ) -> float:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise EnvError(f"{name}={raw!r} is not a number") from exc
    if not math.isfinite(value):
        raise EnvError(f"{name}={raw!r} is not a finite number")
    return value


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


#: The file `bin/demo` writes in the var folder: the settings the demo ran with, read by every later
#: `manage.py` command (and the demo's own processes) for what the environment does not set.
DEMO_ENV_NAME = "demo.env"


def read_env_file(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines (blank lines and ``#`` comments skipped, no quoting) of a settings file.

    A malformed line is refused with the file, the line and the reason, so a hand-edited file cannot
    silently drop a setting.
    """
    values: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise EnvError(f"{path}:{number}: expected NAME=VALUE, got {text!r}")
        values[name] = value.strip()
    return values


def load_env_file(path: Path, environ: MutableMapping[str, str] = os.environ) -> None:
    """Add a settings file's values to ``environ`` where it has none: the environment always wins, so a
    deployment's or a test's variables are never overridden, and nothing changes when the file is absent."""
    if not path.is_file():
        return
    for name, value in read_env_file(path).items():
        environ.setdefault(name, value)


def demo_env_write(var_dir: Path, *, site_url: str, environ: Mapping[str, str] = os.environ) -> Path:
    """Write the demo's settings to ``var_dir/demo.env`` and return its path.

    It holds what the demo runs with: DEBUG on, its database and broker (the embedded defaults unless the
    environment named others), the address links point to, and a secret key generated once and kept, so a
    second `make demo` logs nobody out. The key is the file's own, never one written in the code, and the
    file is readable by its owner only.
    """
    path = var_dir / DEMO_ENV_NAME
    kept = read_env_file(path) if path.is_file() else {}
    values = {
        "DEBUG": "true",
        "SECRET_KEY": environ.get("SECRET_KEY") or kept.get("SECRET_KEY") or secrets.token_urlsafe(50),
        "DATABASE_URL": environ.get("DATABASE_URL") or default_sqlite_url(var_dir),
        "CELERY_BROKER_URL": environ.get("CELERY_BROKER_URL")
        or environ.get("REDIS_URL")
        or default_broker_url(),
        "SITE_URL": site_url,
    }
    var_dir.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Written by bin/demo (`make demo`): the demo's settings, for every later manage.py command.",
        "# Variables set in the environment win over these. Local demo only; delete it to drop them.",
        *(f"{name}={value}" for name, value in values.items()),
    ]
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    os.chmod(path, 0o600)
    return path
