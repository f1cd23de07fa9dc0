"""`build_qrels PROJECT`: a new qrels version from the reliable annotators' labels."""

from __future__ import annotations

import json
import time
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations import qrels
from annotations.models import SOURCE_RULES, MachineJudge, Project, QrelsBuild
from evalcore.judging import DEFAULT_QRELS_PARAMS, REASONS, QrelsError


class Command(BaseCommand):
    help = (
        "Build a new qrels version of a judging project (PROJECT is its slug): keep the labels of reliable "
        "annotators (accuracy on gold, or a lead's override), given in time, on pairs whose labels agree "
        "within the tolerance, and aggregate each pair. By default the build is queued on the worker's heavy "
        "queue and its id printed (add --wait to wait for it); --sync builds it here, in this process."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", metavar="PROJECT", help="the project's slug")
        parser.add_argument(
            "--tolerance",
            type=float,
            default=DEFAULT_QRELS_PARAMS.tolerance,
            help="keep pairs whose labels differ by at most this (default %(default)g)",
        )
        parser.add_argument("--aggregation", choices=QrelsBuild.Aggregation.values,
                            default=DEFAULT_QRELS_PARAMS.aggregation,
                            help="how a pair's labels become one grade (default %(default)s)")  # fmt: skip
        parser.add_argument(
            "--min-accuracy",
            type=float,
            help="reliable: accuracy on gold at least this (default: the project's)",
        )
        parser.add_argument(
            "--min-gold", type=int, help="reliable: on at least this many gold items (default: the project's)"
        )
        parser.add_argument(
            "--min-labels",
            type=int,
            default=DEFAULT_QRELS_PARAMS.min_labels,
            help="keep pairs with at least this many labels (default %(default)d)",
        )
        parser.add_argument(
            "--no-adjudications",
            action="store_true",
            help="ignore the adjudicated grades: every pair judged by the annotators' labels alone",
        )
        parser.add_argument(
            "--sources", choices=list(SOURCE_RULES), default="human",
            help="human (default): people only; machine: the machine judge only; both: people where the "
            "human build judges the pair, else the machine judge",
        )  # fmt: skip
        parser.add_argument(
            "--machine-judge",
            metavar="NAME[:VERSION]",
            help="the machine judge for --sources machine or both",
        )
        parser.add_argument("--user", metavar="USERNAME", help="record this account as the build's creator")
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument(
            "--sync", action="store_true", help="build in this process instead of on the worker"
        )
        mode.add_argument("--wait", action="store_true", help="queue it, then wait until the worker is done")
        parser.add_argument("--timeout", type=float, default=600, help="seconds --wait waits (default 600)")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"There is no project {options['project']!r}.")
        creator = None
        if options["user"]:
            creator = get_user_model().objects.filter(username=options["user"]).first()
            if creator is None:
                raise CommandError(f"There is no account {options['user']!r}.")
        judge = _machine_judge(project, options["machine_judge"])
        try:
            build = qrels.qrels_build_create(
                project=project, created_by=creator, tolerance=options["tolerance"],
                aggregation=options["aggregation"], min_accuracy=options["min_accuracy"],
                min_gold=options["min_gold"], min_labels=options["min_labels"],
                use_adjudications=not options["no_adjudications"], enqueue=not options["sync"],
                sources=options["sources"], machine_judge=judge,
            )  # fmt: skip
        except QrelsError as error:
            raise CommandError(str(error)) from error
        if options["sync"]:
            qrels.qrels_build_run(build_id=build.pk)
        elif options["wait"]:
            _wait(build, timeout=options["timeout"])
        build.refresh_from_db()
        if build.status == QrelsBuild.Status.FAILED:
            raise CommandError(f"Build v{build.version} (id {build.pk}) failed: {build.error}")
        self.stdout.write(json.dumps(qrels.build_summary(build)) if options["json"] else as_text(build))


def _wait(build: QrelsBuild, *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        build.refresh_from_db(fields=["status"])
        if build.is_finished:
            return
        time.sleep(0.5)
    raise CommandError(
        f"Build id {build.pk} is still {build.status} after {timeout:g} s; is a worker running?"
    )


def as_text(build: QrelsBuild) -> str:
    head = f"qrels v{build.version} of {build.project.slug} (build id {build.pk})"
    if build.status != QrelsBuild.Status.DONE:
        return f"Queued {head}. Export it with `export_qrels {build.pk}` once it is done."
    pairs = build.counts["pairs"]
    dropped = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in pairs["dropped"].items())
    excluded = ", ".join(
        f"{a['username']} ({REASONS.get(a['reason'], a['reason'])})" for a in build.annotators["excluded"]
    )
    return (
        f"Built {head}: {pairs['kept']} of {pairs['total']} pairs kept, {build.adjudicated} of them "
        f"adjudicated (dropped: {dropped}).\n"
        f"Excluded annotators: {excluded or 'none'}.\n"
        f"{gold_text(build.counts.get('gold_mismatches', []))}"
        f"sha256 of the TREC export: {build.content_hash}"
    )


def gold_text(mismatches: list[dict[str, Any]]) -> str:
    """The pairs exported with a grade other than their gold grade, one a line (nothing when none)."""
    if not mismatches:
        return ""
    lines = [
        f"  {m['qid']}/{m['doc_id']}: gold {m['gold']}, exported {m['rel']} ({m['source']})"
        for m in mismatches
    ]
    plural = "s differ" if len(mismatches) != 1 else " differs"
    return f"{len(mismatches)} pair{plural} from gold:\n" + "\n".join(lines) + "\n"


def _machine_judge(project: Project, spec: str | None) -> MachineJudge | None:
    """`NAME` (its latest version by creation) or `NAME:VERSION` among the project's machine judges."""
    if not spec:
        return None
    name, _, version = spec.partition(":")
    judges = MachineJudge.objects.filter(project=project, name=name)
    judge = (judges.filter(version=version) if version else judges.order_by("-created_at", "-pk")).first()
    if judge is None:
        raise CommandError(f"There is no machine judge {spec!r} in {project.slug}.")
    return judge
