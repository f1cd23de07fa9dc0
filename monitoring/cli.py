"""Shared pieces of the evaluation commands: file reading with clear errors, progress, JSON output."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO, TypeVar

from django.core.management.base import CommandError, CommandParser
from tqdm import tqdm

from evalcore import trec
from evalcore.errors import EvalCoreError
from evalcore.retrieval import Qrels, Run

#: Files above this size get a progress bar when stderr is a terminal.
PROGRESS_MIN_BYTES = 20 * 1024 * 1024
FORMATS = ("trec", "tsv", "jsonl")
T = TypeVar("T")


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
        "-l",
        "--level",
        type=int,
        default=1,
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
    if not file.is_file():
        raise CommandError(f"{path}: no such file")
    return file


def _read(reader: Callable[..., T], path: str, *, fmt: str | None, on_duplicate: str) -> T:
    """Run one of `evalcore.trec`'s readers, turning a malformed file into the command's error."""
    try:
        return reader(require_file(path), fmt=fmt, on_duplicate=on_duplicate)
    except (EvalCoreError, UnicodeDecodeError) as exc:
        raise CommandError(str(exc)) from exc


def read_qrels(path: str, *, fmt: str | None, on_duplicate: str) -> Qrels:
    return _read(trec.read_qrels, path, fmt=fmt, on_duplicate=on_duplicate)


def read_run(path: str, *, fmt: str | None, on_duplicate: str) -> Run:
    return _read(trec.read_run, path, fmt=fmt, on_duplicate=on_duplicate)


@contextmanager
def progress(paths: list[str], *, stages: int, stream: TextIO = sys.stderr) -> Iterator[tqdm]:
    """A stage-by-stage bar on stderr, shown only for large inputs on a terminal."""
    size = sum(Path(p).stat().st_size for p in paths if Path(p).is_file())
    show = stream.isatty() and size >= PROGRESS_MIN_BYTES
    with tqdm(total=stages, file=stream, disable=not show, unit="step", leave=False) as bar:
        yield bar


def json_number(value: float, *, integer: bool = False) -> float | int | None:
    if math.isnan(value) or math.isinf(value):
        return None
    return int(round(value)) if integer else value


def dump_json(data: Any) -> str:
    return json.dumps(data, allow_nan=False)
