"""The file commands' runner: a command that reads files and prints results, run from the shell
without Django.

The evaluation commands (`manage.py eval_fraud`, `eval_agreement`, ...) touch no database and no web
setting. Each is a `FileCommand` (its module's `Program`), which needs nothing of Django: `manage.py` runs
it through `run_standalone`, with a parser that answers exactly as Django's would (the same options, help,
error line and exit status) but without importing Django, whose management package alone costs a fifth of
a second of CPU, more than reading a million fraud scores. Django's `Command` (`call_command`, `manage.py
help`) is made from the same `Program` on first use, by `evalplatform.filecommands`.

It lives here, framework-free, so that both apps' commands can use it: importing any module of
`evalplatform` loads Celery, and `annotations` may not import `monitoring`. Nothing here imports numpy,
pyarrow or the readers: each command imports what it needs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from importlib import import_module
from pathlib import Path
from typing import Any, TextIO

#: Files above this size get a progress bar when stderr is a terminal.
PROGRESS_MIN_BYTES = 20 * 1024 * 1024


class CommandError(Exception):
    """A command's refusal, said in one line: "CommandError: <message>" on stderr and exit status
    `returncode`, as Django prints its own `CommandError` (which the Django command raises instead)."""

    def __init__(self, message: str, *, returncode: int = 1) -> None:
        super().__init__(message)
        self.returncode = returncode


class Output:
    """stdout as a command writes to it: `write(text, ending="\\n")` adds the ending unless the text
    has it, as Django's `OutputWrapper`, which takes its place under `call_command`."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str = "", ending: str = "\n") -> None:
        self._stream.write(text if not ending or text.endswith(ending) else text + ending)


class FileCommand:
    """A command that reads files and prints: its `help`, its options (`add_arguments`) and `handle`,
    which writes to `self.stdout` and raises `CommandError` for a refusal."""

    help = ""

    def __init__(self, stdout: Any = None) -> None:
        self.stdout = stdout if stdout is not None else Output(sys.stdout)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        pass

    def handle(self, **options: Any) -> None:
        raise NotImplementedError


# --- the parser Django's commands have -----------------------------------------------------------------


class _HelpFormatter(argparse.HelpFormatter):
    """Django's order: a command's own options first, then the options every command has."""

    def _reordered(self, actions: Any) -> list[Any]:
        return sorted(actions, key=lambda action: bool(set(action.option_strings) & _COMMON_OPTIONS))

    def add_usage(self, usage: Any, actions: Any, *args: Any, **kwargs: Any) -> None:
        super().add_usage(usage, self._reordered(actions), *args, **kwargs)

    def add_arguments(self, actions: Any) -> None:
        super().add_arguments(self._reordered(actions))


_COMMON_OPTIONS = {"--version", "--verbosity", "--traceback", "--settings", "--pythonpath", "--no-color",
                   "--force-color"}  # fmt: skip


class _DjangoVersion(argparse.Action):
    """`--version` prints Django's version, as Django's commands do, read from its installed metadata
    (the same string as `django.get_version()` for a release) rather than by importing it."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from importlib.metadata import version  # only here: its import costs 0.04 s of CPU

        sys.stdout.write(version("django") + "\n")
        parser.exit()


def command_parser(command: FileCommand, prog_name: str, subcommand: str) -> argparse.ArgumentParser:
    """The parser Django's `BaseCommand.create_parser` makes for a command without system checks: the
    same options, help and usage (a test holds them equal)."""
    parser = argparse.ArgumentParser(
        prog=f"{os.path.basename(prog_name)} {subcommand}",
        description=command.help or None,
        formatter_class=_HelpFormatter,
    )
    parser.add_argument(
        "--version", action=_DjangoVersion, nargs=0, default=argparse.SUPPRESS,
        help="Show program's version number and exit.",
    )  # fmt: skip
    parser.add_argument(
        "-v", "--verbosity", default=1, type=int, choices=[0, 1, 2, 3],
        help="Verbosity level; 0=minimal output, 1=normal output, 2=verbose output, 3=very verbose output",
    )  # fmt: skip
    parser.add_argument(
        "--settings",
        help='The Python path to a settings module, e.g. "myproject.settings.main". If this isn\'t provided, '
        "the DJANGO_SETTINGS_MODULE environment variable will be used.",
    )
    parser.add_argument(
        "--pythonpath", help='A directory to add to the Python path, e.g. "/home/djangoprojects/myproject".'
    )
    parser.add_argument(
        "--traceback", action="store_true", help="Display a full stack trace on CommandError exceptions."
    )
    parser.add_argument("--no-color", action="store_true", help="Don't colorize the command output.")
    parser.add_argument(
        "--force-color", action="store_true", help="Force colorization of the command output."
    )
    command.add_arguments(parser)
    return parser


# --- the shell's way: no Django ----------------------------------------------------------------------


def run_standalone(module: str, argv: list[str]) -> None:
    """Run the `Program` (a `FileCommand`) of `module` from the command line `argv` (`manage.py
    <command> ...`), without Django. Errors are one line on stderr; an interrupted run or a closed pipe
    (`| head`) ends quietly.
    """
    program = import_module(module).Program
    try:
        _run_program(program(), argv)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        # Python would complain again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


def _run_program(command: FileCommand, argv: list[str]) -> None:
    options = vars(command_parser(command, argv[0], argv[1]).parse_args(argv[2:]))
    if options["settings"]:
        os.environ["DJANGO_SETTINGS_MODULE"] = options["settings"]
    if options["pythonpath"]:
        sys.path.insert(0, options["pythonpath"])
    try:
        if options["force_color"] and options["no_color"]:
            raise CommandError("The --no-color and --force-color options can't be used together.")
        command.handle(**options)
    except CommandError as exc:
        if options["traceback"]:
            raise
        sys.stderr.write(f"CommandError: {exc}\n")
        sys.exit(exc.returncode)


# --- what the commands share -----------------------------------------------------------------------------


def require_file(path: str) -> Path:
    file = Path(path)
    if file.is_dir():
        raise CommandError(f"{path}: is a directory, not a file")
    if not file.is_file():
        raise CommandError(f"{path}: no such file")
    return file


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
