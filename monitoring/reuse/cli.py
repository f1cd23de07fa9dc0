"""What the three reuse commands share: finding the team's qrels source and printing JSON or text."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from monitoring.management.commands.upload_run import find_team
from monitoring.models import QrelsSource
from monitoring.models import Run as RunRow
from monitoring.reuse import services


def add_source_arguments(parser: CommandParser, *, required: bool = True) -> None:
    parser.add_argument("--team", required=required, metavar="TEAM", help="the team's slug")
    parser.add_argument(
        "--qrels", required=required, type=int, metavar="ID", help="a qrels source id of the team"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def source_and_runs(team: str, qrels: int) -> tuple[QrelsSource, list[RunRow]]:
    found = find_team(team)
    source = QrelsSource.objects.filter(team=found, pk=qrels).select_related("build").first()
    if source is None:
        raise CommandError(f"The team {team} has no qrels source {qrels}.")
    runs = services.source_runs(qrels=source)
    if len(runs) < 2:
        raise CommandError("Evaluate at least two runs on these qrels first: the analysis compares runs.")
    return source, runs


def dump(data: Any) -> str:
    return json.dumps(data, indent=2, allow_nan=False)


def fmt(value: Any, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def quiet(fraction: float | None, note: str = "") -> None:
    """Progress goes nowhere: the commands print their result once."""
