"""Shared pieces of the evaluation commands: running one from the shell without Django, file reading
with clear errors, progress and JSON output.

The evaluation commands read files and print results: they touch no database and no web setting. Each is
a `FileCommand` (its module's `Program`), which needs nothing of Django: `manage.py` runs it through
`run_standalone`, with a parser that answers exactly as Django's would (the same options, help, error
line and exit status) but without importing Django, whose management package alone costs a fifth of a
second of CPU, more than reading a million fraud scores. Django's `Command` (`call_command`, `manage.py
help`) is made from the same `Program` on first use (`django_command`).

Nothing here imports numpy, pyarrow or the readers at module level: each command imports what it needs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from evalcore.comparison_params import ComparisonParams
from evalcore.errors import EvalCoreError

if TYPE_CHECKING:
    from evalcore.retrieval import Qrels, Run

#: Files above this size get a progress bar when stderr is a terminal.
PROGRESS_MIN_BYTES = 20 * 1024 * 1024
FORMATS = ("trec", "tsv", "jsonl")
T = TypeVar("T")


class CommandError(Exception):
    """A command's refusal, said in one line: "CommandError: <message>" on stderr and exit status
    `returncode`, as Django prints its own `CommandError` (which `django_command` raises instead)."""

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


# --- the shell's way: no Django ----------------------------------------------------------------------


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
    """`--version` prints Django's version, as Django's commands do; Django is imported only then."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        import django

        sys.stdout.write(django.get_version() + "\n")
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


def run_standalone(module: str, argv: list[str]) -> None:
    """Run the command of `module` from the command line, without the project's settings.

    A module with a `Program` (a `FileCommand`) runs without Django; any other runs its Django `Command`
    with Django's settings left at their defaults. Errors are one line on stderr; an interrupted run or a
    closed pipe (`| head`) ends quietly.
    """
    program = getattr(import_module(module), "Program", None)
    try:
        if program is None:
            _run_django_command(module, argv)
        else:
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


def _run_django_command(module: str, argv: list[str]) -> None:
    from django.conf import settings

    if not settings.configured:
        settings.configure()
    import_module(module).Command().run_from_argv(argv)


# --- Django's way: call_command, manage.py help --------------------------------------------------------


def django_command(program: type[FileCommand], module: str, name: str) -> Any:
    """What a command module's `__getattr__` answers: for `Command`, the Django management command that
    runs `program` (made once), raising Django's `CommandError` for ours; for any other name, AttributeError.
    """
    if name != "Command":
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    if program not in _DJANGO_COMMANDS:
        _DJANGO_COMMANDS[program] = _django_command(program)
    return _DJANGO_COMMANDS[program]


_DJANGO_COMMANDS: dict[type[FileCommand], type] = {}


def _django_command(program: type[FileCommand]) -> type:
    from django.core.management.base import BaseCommand
    from django.core.management.base import CommandError as DjangoCommandError

    class Command(BaseCommand):
        help = program.help
        # Reads files, prints results: neither the database nor the settings are involved.
        requires_system_checks: list[str] = []

        def add_arguments(self, parser: argparse.ArgumentParser) -> None:
            program().add_arguments(parser)

        def handle(self, *args: Any, **options: Any) -> None:
            try:
                program(stdout=self.stdout).handle(**options)
            except CommandError as exc:
                raise DjangoCommandError(str(exc), returncode=exc.returncode) from exc

    Command.__module__ = program.__module__
    return Command


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
    from evalcore import trec

    return _read(trec.read_qrels, path, fmt=fmt, on_duplicate=on_duplicate, strict=strict)


def read_run(path: str, *, fmt: str | None, on_duplicate: str, strict: bool = False) -> Run:
    from evalcore import trec

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
