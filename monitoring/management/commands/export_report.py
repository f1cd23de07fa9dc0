"""`export_report --team T (--evaluation ID | --comparison ID | --stream S [--run ID]) [--format F] --out FILE`:
a report to share or cite, written to a file (`monitoring.reports.services`): an evaluation's, a
comparison's or a monitor run's self-contained HTML report, or a comparison's table as LaTeX or Markdown.
Reads what the jobs stored; computes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.http import Http404

from monitoring.embeddings import services as monitors
from monitoring.evaluations import selectors
from monitoring.management.commands.upload_run import find_team
from monitoring.reports import services as reports


class Command(BaseCommand):
    help = (
        "Write a report to a file: an evaluation, a comparison or a monitor run as one self-contained HTML "
        "file (charts included, opens offline), or a comparison as a LaTeX (booktabs) or Markdown table with "
        "ranx-style significance markers. The job must have finished."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--team", required=True, metavar="T", help="the team's slug")
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument("--evaluation", type=int, metavar="ID", help="an evaluation's id")
        what.add_argument("--comparison", type=int, metavar="ID", help="a comparison's id")
        what.add_argument(
            "--stream", metavar="S", help="a stream's slug: its monitor run --run (default the newest done)"
        )
        parser.add_argument("--run", type=int, metavar="ID", help="with --stream: the monitor run's id")
        parser.add_argument(
            "--format", default="html", choices=list(reports.FORMATS),
            help="html (default); latex or markdown for a comparison's table",
        )  # fmt: skip
        parser.add_argument("--out", required=True, metavar="FILE", help="the file to write ('-': stdout)")

    def handle(self, *args: Any, **options: Any) -> None:
        team = find_team(options["team"])
        fmt = options["format"]
        if fmt != "html" and options["comparison"] is None:
            raise CommandError("--format latex and markdown are for a --comparison; the others are html.")
        try:
            body = self.body(team, fmt, options)
        except Http404 as error:
            raise CommandError(str(error)) from None
        if options["out"] == "-":
            self.stdout.write(body, ending="")
            return
        Path(options["out"]).write_text(body, encoding="utf-8")
        self.stderr.write(f"Wrote {options['out']} ({len(body.encode()):,} bytes).")

    def body(self, team: Any, fmt: str, options: dict[str, Any]) -> str:
        if options["evaluation"] is not None:
            evaluation = selectors.get_evaluation(team=team, pk=options["evaluation"], per_query=True)
            return reports.evaluation_report(evaluation)
        if options["comparison"] is not None:
            comparison = selectors.get_comparison(team=team, pk=options["comparison"], per_query=False)
            return reports.comparison_export(comparison, fmt)
        stream = monitors.get_stream(team=team, slug=options["stream"])
        run = reports.monitor_run_chosen(stream=stream, pk=options["run"])
        return reports.monitor_run_report(run)
