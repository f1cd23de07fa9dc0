"""Every file-only command runs from the shell without the project's settings (no SECRET_KEY, DEBUG or
database) and answers a bad file in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from manage import STANDALONE_COMMANDS  # noqa: E402

MISSING_FILE_ARGS = {
    "eval_retrieval": ["--qrels", "absent.qrels", "--run", "absent.run"],
    "compare_runs": ["--qrels", "absent.qrels", "--run", "a.run", "--run", "b.run", "-m", "map"],
    "eval_agreement": ["--annotations", "absent.csv"],
    "eval_recsys": ["--recs", "absent.csv", "--interactions", "absent.csv"],
    "eval_fraud": ["--scores", "absent.csv"],
    "eval_embeddings": ["--reference", "absent.npy"],
}


def bare_environment() -> dict[str, str]:
    unset = {"SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE", "DATABASE_URL"}
    return {key: value for key, value in os.environ.items() if key not in unset}


def test_it_lists_a_missing_file_case_for_every_standalone_command() -> None:
    assert set(MISSING_FILE_ARGS) == set(STANDALONE_COMMANDS)


@pytest.mark.parametrize("command", sorted(STANDALONE_COMMANDS))
def test_it_answers_help_and_a_missing_file_without_settings(command: str, tmp_path: Path) -> None:
    def manage(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), command, *args],
            capture_output=True, text=True, env=bare_environment(), cwd=tmp_path, timeout=120,
        )  # fmt: skip

    assert manage("--help").returncode == 0
    failed = manage(*MISSING_FILE_ARGS[command])
    assert failed.returncode != 0
    assert "Traceback" not in failed.stderr and len(failed.stderr.strip().splitlines()) == 1, failed.stderr
    assert "absent" in failed.stderr
