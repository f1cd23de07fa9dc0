"""What monitoring's evaluation commands share beyond the runner (`evalcore.filecommands`, whose names
are repeated here for them): reading qrels and runs with clear errors, and their input options.

Nothing here imports numpy, pyarrow or the readers at module level: each command imports what it needs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from evalcore.comparison_params import ComparisonParams
from evalcore.errors import EvalCoreError
from evalcore.filecommands import (
    PROGRESS_MIN_BYTES,
    CommandError,
    FileCommand,
    Output,
    command_parser,
    dump_json,
    progress,
    require_file,
    run_standalone,
)

__all__ = [
    "FORMATS",
    "PROGRESS_MIN_BYTES",
    "CommandError",
    "FileCommand",
    "Output",
    "add_input_options",
    "command_parser",
    "django_command",
    "dump_json",
    "progress",
    "read_qrels",
    "read_run",
    "require_file",
    "run_standalone",
]

if TYPE_CHECKING:
    from evalcore.retrieval import Qrels, Run

FORMATS = ("trec", "tsv", "jsonl")
T = TypeVar("T")


def django_command(program: type[FileCommand], module: str, name: str) -> Any:
    """What a command module's `__getattr__` answers: for `Command`, the Django management command that
    runs `program` (`evalplatform.filecommands`, imported only then: it loads Django and Celery); for any
    other name, AttributeError."""
    if name != "Command":
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    from evalplatform.filecommands import django_command as made_for_django

    return made_for_django(program)


# --- reading files -------------------------------------------------------------------------------------


def add_input_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--qrels-format", choices=FORMATS, help="qrels format (default: from the file)")
    parser.add_argument("--run-format", choices=FORMATS, help="run format (default: from the file)")
    parser.add_argument(
        "--on-duplicate",
        choices=("error", "first"),
        default="error",
        help="a docno listed twice for a query: stop with an error, as trec_eval does (default), "
        "or keep its first occurrence",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse what trec_eval reads leniently: a relevance that is not an integer (trec_eval reads "
        "1.5 as 1) and columns after a run's sixth (trec_eval ignores them)",
    )
    parser.add_argument(
        "-l",
        "--level",
        type=int,
        default=ComparisonParams.rel_level,
        metavar="LEVEL",
        help="relevance level: binary measures count rel >= LEVEL as relevant (trec_eval -l; default 1)",
    )
    parser.add_argument(
        "-c",
        "--complete",
        action="store_true",
        help="average over every qrels query, counting queries missing from the run as 0 (trec_eval -c)",
    )


def _read(reader: Callable[..., T], path: str, *, fmt: str | None, on_duplicate: str, strict: bool) -> T:
    """Run one of `evalcore.trec`'s readers, turning a malformed file into the command's error."""
    try:
        return reader(require_file(path), fmt=fmt, on_duplicate=on_duplicate, strict=strict)
    except (EvalCoreError, UnicodeDecodeError) as exc:
        raise CommandError(str(exc)) from exc
    except OSError as exc:
        raise CommandError(f"{path}: {exc.strerror or exc}") from exc


def read_qrels(path: str, *, fmt: str | None, on_duplicate: str, strict: bool = False) -> Qrels:
    from evalcore import trec

    return _read(trec.read_qrels, path, fmt=fmt, on_duplicate=on_duplicate, strict=strict)


def read_run(path: str, *, fmt: str | None, on_duplicate: str, strict: bool = False) -> Run:
    from evalcore import trec

    return _read(trec.read_run, path, fmt=fmt, on_duplicate=on_duplicate, strict=strict)
