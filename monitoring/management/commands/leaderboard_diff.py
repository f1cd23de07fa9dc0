"""`leaderboard_diff --team T --from QRELS --to QRELS [-m MEASURE] [--json]`: how a team's leaderboard
changed between two qrels sources (typically consecutive versions of a judging project's qrels).

Reads the stored leaderboards (`monitoring.evaluations.diffs.leaderboard_diff`): nothing is evaluated.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q

from evalplatform.errors import InputError
from evalplatform.models import Team
from monitoring.evaluations.diffs import LeaderboardDiff, MeasureDiff, leaderboard_diff
from monitoring.management.commands.evaluate import BUILD_SPEC
from monitoring.management.commands.upload_run import find_team
from monitoring.models import QrelsSource


def _number(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _signed(value: float | int | None, digits: int = 4) -> str:
    if value is None:
        return "-"
    return f"{value:+d}" if isinstance(value, int) else f"{value:+.{digits}f}"


def measure_text(measure: MeasureDiff) -> list[str]:
    lines = [
        f"{measure.measure}: Kendall's tau {_number(measure.kendall_tau)}, tau_ap {_number(measure.tau_ap)} "
        f"over {measure.runs_compared} runs",
        f"  {'run':<30} {'old':>8} {'new':>8} {'change':>8} {'old #':>5} {'new #':>5} {'moved':>5}",
    ]
    for row in measure.rows:
        old = row.old.value if row.old else None
        new = row.new.value if row.new else None
        lines.append(
            f"  {row.run.label[:30]:<30} {_number(old):>8} {_number(new):>8} {_signed(row.change):>8} "
            f"{row.old_rank or '-':>5} {row.new_rank or '-':>5} {_signed(row.rank_change):>5}"
        )
    return lines


def diff_text(diff: LeaderboardDiff) -> str:
    lines = [f"Leaderboard diff {diff.old.name} -> {diff.new.name}"]
    for measure in diff.measures:
        lines += ["", *measure_text(measure)]
    return "\n".join(lines)


class Command(BaseCommand):
    help = (
        "Compare a team's leaderboards on two qrels sources: per measure and run the old and new score, "
        "the change, the old and new rank and the rank change; per measure Kendall's tau-b and tau_ap "
        "(the new ranking as the truth) between the two system rankings. Reads each run's newest finished "
        "evaluation on each source; evaluates nothing. QRELS is a qrels source id of the team, or "
        "PROJECT:VERSION for the team's source of a judging project's qrels build."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--team", required=True, metavar="T", help="the team's slug")
        parser.add_argument("--from", required=True, dest="old", metavar="QRELS", help="the old qrels source")
        parser.add_argument("--to", required=True, dest="new", metavar="QRELS", help="the new qrels source")
        parser.add_argument(
            "-m", "--measure", action="append", dest="measures", metavar="MEASURE",
            help="only this measure (repeat it); default: every measure on both leaderboards, then coverage",
        )  # fmt: skip
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        team = find_team(options["team"])
        old, new = find_source(team, options["old"]), find_source(team, options["new"])
        try:
            diff = leaderboard_diff(old=old, new=new, measures=options["measures"])
        except InputError as error:
            raise CommandError(str(error)) from None
        if options["json"]:
            self.stdout.write(json.dumps(diff.as_dict(), allow_nan=False))
        else:
            self.stdout.write(diff_text(diff))


def find_source(team: Team, spec: str) -> QrelsSource:
    """The team's qrels source by id, by PROJECT:VERSION or by name."""
    sources = QrelsSource.objects.filter(team=team).select_related("build__project")
    if spec.isdigit():
        found = sources.filter(pk=int(spec)).first()
    elif match := BUILD_SPEC.fullmatch(spec):
        found = sources.filter(
            build__project__slug=match["project"], build__version=int(match["version"])
        ).first()
    else:
        found = sources.filter(Q(name=spec)).order_by("-created_at").first()
    if found is None:
        raise CommandError(f"The team {team.slug} has no qrels source {spec!r}.")
    return found
