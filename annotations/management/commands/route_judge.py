"""`route_judge --project SLUG --judge NAME [--judge-version V] [--budget N] ... [--json]`: send a machine judge's
doubtful pairs, and a random sample of the rest, to people."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.machine_judges.routing import RouteParams, judge_route
from annotations.models import MachineJudge, Project

DEFAULTS = RouteParams()


class Command(BaseCommand):
    help = (
        "Route a machine judge's doubtful pairs to people, as the judge's page does: pairs whose confidence "
        "is below --confidence-below, pairs where it disagrees with the human labels it has, and pairs of "
        "topics whose agreement with people is below --topic-agreement-below go to the judging queue (or to "
        "adjudication where people already disagree), up to --budget pairs over all routings of the judge; "
        "--sample-share of the other unjudged pairs go to people at random, so the calibration stays "
        "unbiased. A routed pair that is already a task with answers gets one more required judgment. "
        "Running it again routes only what was not routed before."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, metavar="SLUG", help="the project's slug")
        parser.add_argument("--judge", required=True, metavar="NAME", help="the machine judge's name")
        parser.add_argument("--judge-version", default=None, help="its version, when several share the name")
        parser.add_argument("--budget", type=int, default=DEFAULTS.budget, help="default %(default)s")
        parser.add_argument("--confidence-below", type=float, default=DEFAULTS.confidence_below,
                            help="default %(default)s")  # fmt: skip
        parser.add_argument("--topic-agreement-below", type=float, default=DEFAULTS.topic_agreement_below,
                            help="default %(default)s")  # fmt: skip
        parser.add_argument(
            "--sample-share", type=float, default=DEFAULTS.sample_share, help="default %(default)s"
        )
        parser.add_argument("--seed", type=int, default=DEFAULTS.seed, help="default %(default)s")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"There is no project {options['project']!r}.")
        judges = MachineJudge.objects.filter(project=project, name=options["judge"])
        if options["judge_version"] is not None:
            judges = judges.filter(version=options["judge_version"])
        found = list(judges.order_by("-pk")[:2])
        if not found:
            raise CommandError(f"{project.slug} has no machine judge {options['judge']!r}.")
        if len(found) > 1 and options["judge_version"] is None:
            raise CommandError(f"Several judges are named {options['judge']!r}: give --judge-version.")
        try:
            params = RouteParams(**{f.name: options[f.name] for f in fields(RouteParams)})
        except ValueError as error:
            raise CommandError(str(error)) from None
        done = judge_route(judge=found[0], params=params)
        if options["json"]:
            self.stdout.write(json.dumps({"judge": found[0].pk, **done.as_dict()}, indent=2))
            return
        reasons = ", ".join(f"{reason} {n}" for reason, n in done.routed.items() if n) or "nothing new"
        self.stdout.write(
            f"Routed {done.total} pairs of {found[0]} to people ({reasons}): {done.tasks_created} new tasks, "
            f"{done.tasks_existing} already tasks, {done.judgments_added} given one more judgment."
        )
