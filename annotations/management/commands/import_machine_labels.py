"""`manage.py import_machine_labels --project P --judge NAME FILE`: a machine judge's labels into a project."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NoReturn

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.machine_judges.routing import RouteParams, judge_route
from annotations.machine_judges.services import judge_labels_import
from annotations.models import MachineJudge, Project
from evalcore.errors import FormatError


class Command(BaseCommand):
    help = (
        "Import a machine judge's labels (TREC qrels, or JSON Lines {qid, doc_id, label, confidence?, "
        "rationale?}) into a judging project, atomically: a bad line imports nothing and the error names "
        "the file, the line and the reason. Re-importing the same file changes nothing; a new --version is "
        "a new judge. Pairs whose topic or document the project lacks are counted and left out. With "
        "--route-budget, then route the judge's doubtful pairs (and a random sample) to people."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        # `--version` is the judge's version here, not Django's: the later option replaces the base one.
        parser.conflict_handler = parser._optionals.conflict_handler = "resolve"
        parser.add_argument("file", metavar="FILE", help="the labels: TREC qrels or JSON Lines")
        parser.add_argument("--project", required=True, help="the project's slug")
        parser.add_argument("--judge", required=True, help="the machine judge's name")
        parser.add_argument("--kind", choices=MachineJudge.Kind.values, default=MachineJudge.Kind.OTHER)
        parser.add_argument("--model", default="", help="the model (or click model) that made the labels")
        parser.add_argument(
            "--version",
            dest="judge_version",
            default="1",
            help="the judge's version (a new one is a new judge)",
        )
        parser.add_argument("--configuration", default="", help="the prompt or configuration, verbatim")
        defaults = RouteParams()
        parser.add_argument("--route-budget", type=int, default=None, help="route up to this many pairs")
        parser.add_argument("--confidence-below", type=float, default=defaults.confidence_below)
        parser.add_argument("--topic-agreement-below", type=float, default=defaults.topic_agreement_below)
        parser.add_argument("--sample-share", type=float, default=defaults.sample_share)
        parser.add_argument("--seed", type=int, default=defaults.seed)
        parser.add_argument("--json", action="store_true", help="print one JSON object to stdout")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            self._fail(options, f"no project with the slug {options['project']!r}")
        path = Path(options["file"])
        if not path.is_file():
            self._fail(options, f"{path}: no such file")
        try:
            result = judge_labels_import(
                project=project, name=options["judge"], path=path, version=options["judge_version"],
                kind=options["kind"], model=options["model"], configuration=options["configuration"],
            )  # fmt: skip
        except FormatError as exc:
            self._fail(options, str(exc), {"file": exc.path, "line": exc.line, "reason": exc.reason})
        output: dict[str, Any] = {"project": project.slug, **result.as_dict()}
        if options["route_budget"] is not None:
            try:
                params = RouteParams(
                    budget=options["route_budget"], confidence_below=options["confidence_below"],
                    topic_agreement_below=options["topic_agreement_below"],
                    sample_share=options["sample_share"], seed=options["seed"],
                )  # fmt: skip
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
            judge = MachineJudge.objects.select_related("project").get(pk=result.judge)
            output["routing"] = judge_route(judge=judge, params=params).as_dict()
        if options["json"]:
            self.stdout.write(json.dumps(output))
            return
        self.stdout.write(self.style.SUCCESS(f"{path}: {result.summary}"))
        if "routing" in output:
            routed = output["routing"]["routed"]
            self.stdout.write(
                "routed to people: "
                + ", ".join(f"{n} {reason}" for reason, n in routed.items())
                + f"; {output['routing']['tasks_created']} new tasks, "
                + f"{output['routing']['judgments_added']} answered tasks asked for one more judgment"
            )

    def _fail(self, options: dict[str, Any], message: str, error: dict[str, Any] | None = None) -> NoReturn:
        if options["json"]:
            self.stdout.write(json.dumps({"error": error or {"reason": message}}))
        raise CommandError(f"import failed, nothing was imported: {message}")
