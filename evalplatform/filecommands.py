"""Django's way into the file commands (`call_command`, `manage.py help`): the management command made
from a command's `Program` (`evalcore.filecommands.FileCommand`), which the shell runs without Django.

A command module answers `Command` from its module-level `__getattr__`, importing this module only then:
importing any module of `evalplatform` loads Celery, which the shell's run must not pay for.
"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand
from django.core.management.base import CommandError as DjangoCommandError

from evalcore.filecommands import CommandError, FileCommand

_DJANGO_COMMANDS: dict[type[FileCommand], type[BaseCommand]] = {}


def django_command(program: type[FileCommand]) -> type[BaseCommand]:
    """The Django management command that runs `program` (made once), raising Django's `CommandError`
    for ours."""
    if program not in _DJANGO_COMMANDS:
        _DJANGO_COMMANDS[program] = _django_command(program)
    return _DJANGO_COMMANDS[program]


def _django_command(program: type[FileCommand]) -> type[BaseCommand]:
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
