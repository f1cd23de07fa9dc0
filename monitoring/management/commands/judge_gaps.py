"""`judge_gaps --team T --qrels QRELS --run RUN [--depth K] [--json]`: add a run's unjudged top-k pairs on
a qrels version to the judging project it was built from, as the leaderboard's "judge the gaps" does.

Idempotent: pairs already tasks of the project are counted as existing; pairs whose topic or document the
project lacks are counted and skipped (`monitoring.evaluations.loop.run_gaps_judge`).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evalplatform.errors import InputError
from monitoring.evaluations.loop import DEFAULT_GAP_DEPTH, MAX_GAP_DEPTH, GapsJudged, run_gaps_judge
from monitoring.management.commands.leaderboard_diff import find_source
from monitoring.management.commands.upload_run import find_team
from monitoring.models import Run


def gaps_text(done: GapsJudged) -> str:
    return (
        f"Run {done.run} on qrels {done.qrels}, top {done.depth}: {done.unjudged} unjudged pairs; "
        f"{done.created} added to {done.project}, {done.existing} already there, "
        f"{done.missing_topic} skipped (topic not in the project), "
        f"{done.missing_document} skipped (document not in the project)."
    )


class Command(BaseCommand):
    help = (
        "Add a run's unjudged top-k pairs on a qrels version to the judging project the version was built "
        "from (the leaderboard's 'judge the gaps'). QRELS is a qrels source id of the team, PROJECT:VERSION "
        "or a source name; RUN a run id or name of the team (the newest of that name). Asking twice adds "
        "nothing the second time."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--team", required=True, metavar="T", help="the team's slug")
        parser.add_argument("--qrels", required=True, metavar="QRELS", help="the qrels version (built)")
        parser.add_argument("--run", required=True, metavar="RUN", help="the run's id or name")
        parser.add_argument(
            "--depth", type=int, default=DEFAULT_GAP_DEPTH, metavar="K",
            help=f"how deep the run is read (1 to {MAX_GAP_DEPTH}; default {DEFAULT_GAP_DEPTH})",
        )  # fmt: skip
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        team = find_team(options["team"])
        qrels = find_source(team, options["qrels"])
        spec = options["run"]
        runs = Run.objects.filter(team=team)
        run = (
            (runs.filter(pk=int(spec)) if spec.isdigit() else runs.filter(name=spec)).order_by("-pk").first()
        )
        if run is None:
            raise CommandError(f"The team {team.slug} has no run {spec!r}.")
        try:
            done = run_gaps_judge(run=run, qrels=qrels, depth=options["depth"])
        except InputError as error:
            raise CommandError(str(error)) from None
        if options["json"]:
            self.stdout.write(json.dumps(done.as_dict(), allow_nan=False))
        else:
            self.stdout.write(gaps_text(done))
