"""`manage.py import_click_log --project P --log FILE --model dbn`: a click model's judgments from a search
log, stored as a machine judge's labels in a project."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NoReturn

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.machine_judges.clicks import (
    DEFAULT_MIN_IMPRESSIONS,
    ClickImportParams,
    click_log_import,
    grade_map_error,
)
from annotations.models import Project
from evalcore.clicks import FORMATS, MODELS
from evalcore.errors import FormatError
from evalplatform.errors import InputError


def _numbers(text: str | None, kind: type, option: str, what: str) -> tuple[Any, ...] | None:
    if text is None:
        return None
    try:
        return tuple(kind(part) for part in text.split(","))
    except ValueError:
        raise CommandError(f"{option} {text!r}: give {what} separated by commas") from None


class Command(BaseCommand):
    help = (
        "Derive graded judgments from a search log with a click model (coec, pbm or dbn, as "
        "derive_click_judgments) and store them as the labels of a machine judge of kind click model in a "
        "project, its configuration (model, parameters, grade mapping, log) kept as metadata. All or nothing: "
        "a bad line stores nothing and the error names the file, the line and the reason. The same log with "
        "the same settings again changes nothing; another log or other settings need a new --version. A log's "
        "query is matched to a topic by qid, else by title; pairs outside the project are counted and left out."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        # `--version` is the judge's version here, not Django's: the later option replaces the base one.
        parser.conflict_handler = parser._optionals.conflict_handler = "resolve"
        parser.add_argument("--project", required=True, help="the project's slug")
        parser.add_argument("--log", required=True, metavar="FILE", help="the search log")
        parser.add_argument("--format", dest="log_format", choices=FORMATS, default="csv")
        parser.add_argument("--model", required=True, choices=MODELS, help="the click model")
        parser.add_argument("--judge", default="", help="the judge's name (default clicks-MODEL)")
        parser.add_argument("--version", dest="judge_version", default="1", help="the judge's version")
        parser.add_argument("--min-impressions", type=int, default=DEFAULT_MIN_IMPRESSIONS, metavar="N")
        parser.add_argument("--thresholds", metavar="T1,T2,T3,T4", help="relevance boundaries of grades 1-4")
        parser.add_argument(
            "--grade-map", metavar="G0,G1,G2,G3,G4",
            help="the project's grade for each click grade 0-4 (default: the largest project grade not above it)",
        )  # fmt: skip
        parser.add_argument("--min-dwell", type=float, metavar="SECONDS")
        parser.add_argument("--max-iterations", type=int, metavar="N")
        parser.add_argument("--json", action="store_true", help="print one JSON object to stdout")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            self._fail(options, f"no project with the slug {options['project']!r}")
        path = Path(options["log"])
        if not path.is_file():
            self._fail(options, f"{path}: no such file")
        grade_map = _numbers(options["grade_map"], int, "--grade-map", "five grades")
        if grade_map is not None and (wrong := grade_map_error(project, grade_map)):
            self._fail(options, f"--grade-map: {wrong}")
        try:
            params = ClickImportParams(
                model=options["model"], log_format=options["log_format"], name=options["judge"],
                version=options["judge_version"], min_impressions=options["min_impressions"],
                thresholds=_numbers(options["thresholds"], float, "--thresholds", "four numbers"),
                grade_map=grade_map, min_dwell=options["min_dwell"], max_iterations=options["max_iterations"],
            )  # fmt: skip
        except ValueError as exc:
            self._fail(options, str(exc))
        try:
            result, derived = click_log_import(project=project, path=path, params=params)
        except FormatError as exc:
            self._fail(options, str(exc), {"file": exc.path, "line": exc.line, "reason": exc.reason})
        except InputError as exc:
            self._fail(options, str(exc))
        if options["json"]:
            self.stdout.write(
                json.dumps({"project": project.slug, **result.as_dict(), "log": derived.summary})
            )
            return
        log = derived.summary
        self.stdout.write(self.style.SUCCESS(f"{path}: {result.summary}"))
        self.stdout.write(
            f"{params.model}: {log['rows']} impressions in {log['sessions']} sessions, {log['clicks']} clicks; "
            f"{log['judged_pairs']} of {log['pairs']} pairs judged, {log['unknown_queries']} of them on no topic"
        )

    def _fail(self, options: dict[str, Any], message: str, error: dict[str, Any] | None = None) -> NoReturn:
        if options["json"]:
            self.stdout.write(json.dumps({"error": error or {"reason": message}}))
        raise CommandError(f"import failed, nothing was imported: {message}")
