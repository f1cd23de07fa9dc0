"""Shared pieces of the evaluation commands: file reading with clear errors, progress, JSON output, and
running a command without the web stack.

The evaluation commands read files and print results: they touch no database and no web setting. So
`manage.py` runs them through `run_standalone`, with Django's settings left at their defaults instead
of the project's (no SECRET_KEY, no apps loaded) and no system checks, which import the URL
configuration and with it the web stack and scipy.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from importlib import import_module
from pathlib import Path
from typing import Any, TextIO, TypeVar

from django.core.management.base import CommandError, CommandParser

from evalcore import trec
from evalcore.comparison_params import ComparisonParams
from evalcore.errors import EvalCoreError
from evalcore.retrieval import Qrels, Run

#: Files above this size get a progress bar when stderr is a terminal.
PROGRESS_MIN_BYTES = 20 * 1024 * 1024
FORMATS = ("trec", "tsv", "jsonl")
T = TypeVar("T")


def run_standalone(module: str, argv: list[str]) -> None:
    """Run the command class of `module` from the command line, without the project's settings.

    Errors are one line on stderr (Django prints a CommandError so); an interrupted run or a closed
    pipe (`| head`) ends quietly.
    """
    from django.conf import settings

    if not settings.configured:
        settings.configure()
    command = import_module(module).Command()
    try:
        command.run_from_argv(argv)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        # Python would complain again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


def add_input_options(parser: CommandParser) -> None:
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


def require_file(path: str) -> Path:
    file = Path(path)
    if file.is_dir():
        raise CommandError(f"{path}: is a directory, not a file")
    if not file.is_file():
        raise CommandError(f"{path}: no such file")
    return file


def _read(reader: Callable[..., T], path: str, *, fmt: str | None, on_duplicate: str, strict: bool) -> T:
    """Run one of `evalcore.trec`'s readers, turning a malformed file into the command's error."""
    try:
        return reader(require_file(path), fmt=fmt, on_duplicate=on_duplicate, strict=strict)
    except (EvalCoreError, UnicodeDecodeError) as exc:
        raise CommandError(str(exc)) from exc
    except OSError as exc:
        raise CommandError(f"{path}: {exc.strerror or exc}") from exc


def read_qrels(path: str, *, fmt: str | None, on_duplicate: str, strict: bool = False) -> Qrels:
    return _read(trec.read_qrels, path, fmt=fmt, on_duplicate=on_duplicate, strict=strict)


def read_run(path: str, *, fmt: str | None, on_duplicate: str, strict: bool = False) -> Run:
    return _read(trec.read_run, path, fmt=fmt, on_duplicate=on_duplicate, strict=strict)


@contextmanager
def progress(paths: list[str], *, stages: int, stream: TextIO = sys.stderr) -> Iterator[Any]:
    """A stage-by-stage bar on stderr, shown only for large inputs on a terminal."""
    size = sum(Path(p).stat().st_size for p in paths if Path(p).is_file())
    if not (stream.isatty() and size >= PROGRESS_MIN_BYTES):
        with nullcontext(_NoProgress()) as bar:
            yield bar
        return
    from tqdm import tqdm  # only here: importing it costs a twentieth of a second

    with tqdm(total=stages, file=stream, unit="step", leave=False) as bar:
        yield bar


class _NoProgress:
    def set_description(self, text: str) -> None:
        pass

    def update(self, steps: int = 1) -> None:
        pass


def dump_json(data: Any) -> str:
    return json.dumps(data, allow_nan=False)
