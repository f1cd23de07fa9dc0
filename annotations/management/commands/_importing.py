"""The shared shape of the import commands: `PROJECT FILE [--format F] [--json]`, a progress bar on stderr."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from annotations.imports import FORMATS, KINDS, count_lines, import_file
from annotations.models import Project
from evalcore.errors import FormatError


class ImportCommand(BaseCommand):
    kind: str = ""
    file_help: str = ""

    @property
    def help(self) -> str:  # type: ignore[override]
        return (
            f"Import {KINDS[self.kind].lower()} into a judging project, atomically: a file with a bad line "
            f"imports nothing and the error names the file, the line and the reason. Re-importing is idempotent."
        )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", metavar="PROJECT", help="the project's slug")
        parser.add_argument("file", metavar="FILE", help=self.file_help)
        parser.add_argument(
            "--format",
            choices=FORMATS[self.kind],
            default=None,
            help="the file's format (default: detected from the extension and the first line)",
        )
        parser.add_argument(
            "--json", action="store_true", help="print one JSON object with the counts to stdout"
        )

    def import_options(self, options: dict[str, Any]) -> dict[str, Any]:
        return {}

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            self._fail(options, f"no project with the slug {options['project']!r}")
        path = Path(options["file"])
        if not path.is_file():
            self._fail(options, f"{path}: no such file")
        show_bar = options["verbosity"] > 0 and sys.stderr.isatty() or options["verbosity"] > 1
        with tqdm(
            total=count_lines(path) or None, unit=" lines", desc=f"{self.kind} {path.name}",
            file=sys.stderr, disable=not show_bar, leave=False,
        ) as bar:  # fmt: skip
            try:
                result = import_file(
                    project=project, kind=self.kind, path=path, fmt=options["format"],
                    progress=bar.update, **self.import_options(options),
                )  # fmt: skip
            except FormatError as exc:
                self._fail(
                    options, str(exc), error={"file": exc.path, "line": exc.line, "reason": exc.reason}
                )
            except ValueError as exc:
                self._fail(options, str(exc))
        if options["json"]:
            self.stdout.write(json.dumps({"project": project.slug, **result.as_dict()}))
        else:
            self.stdout.write(self.style.SUCCESS(f"{path}: {result.summary}"))

    def _fail(self, options: dict[str, Any], message: str, error: dict[str, Any] | None = None) -> NoReturn:
        if options["json"]:
            self.stdout.write(json.dumps({"error": error or {"reason": message}}))
        raise CommandError(f"import failed, nothing was imported: {message}")
