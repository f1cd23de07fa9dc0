"""`evaluate TEAM --run ID|FILE --qrels ID|FILE|PROJECT:VERSION`: a team's evaluation job, from the shell.

Files are uploaded first (a file whose content the team already uploaded is reused, so running the same
command again finds the same run, the same evaluation and its results). The evaluation is queued on the
worker's heavy queue and the command follows the job's progress on stderr until it is done, then prints
the results; `--sync` runs it in this process and `--no-wait` only queues it.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import InterfaceError, OperationalError
from django.http import Http404
from tqdm import tqdm

from annotations.models import Project, QrelsBuild
from evalcore.comparison import DEFAULT_MEASURES, ComparisonParams
from evalcore.retrieval import parse_measures
from evalplatform.auth import User
from evalplatform.errors import InputError
from evalplatform.jobs import JobStatus, job_enqueue
from evalplatform.models import Team
from monitoring.alerts import services as alerts
from monitoring.evaluations import selectors
from monitoring.evaluations import services as evaluations
from monitoring.files import uploads
from monitoring.management.commands.upload_run import (
    FORMATS,
    add_user_option,
    file_sha256,
    opened,
    team_and_user,
)
from monitoring.models import Evaluation, QrelsSource, Run

#: Seconds between two looks at the job while waiting.
POLL_SECONDS = 0.5
#: After this long still pending, say that a worker may be missing (once).
NO_WORKER_HINT_AFTER = 15.0
BUILD_SPEC = re.compile(r"(?P<project>[-\w]+):(?P<version>\d+)")


class Command(BaseCommand):
    help = (
        "Evaluate a team's run against qrels on the worker and print the results with bootstrap confidence "
        "intervals. --run is a run id or a run file to upload; --qrels a qrels source id, a qrels file to "
        "upload, or PROJECT:VERSION, a qrels build of a judging project linked to the team. The command "
        "waits for the job with a progress bar on stderr (--no-wait: only queue it; --sync: run it here, "
        "needing no worker), then prints trec_eval's three columns plus the interval, or one JSON object. "
        "The same run, qrels and options find the same evaluation, so running it again reprints the results."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("team", metavar="TEAM", help="the team's slug")
        parser.add_argument(
            "--run",
            required=True,
            metavar="ID|FILE",
            help="a run id of the team, or a run file to upload (write ./12 for a file named 12)",
        )
        parser.add_argument(
            "--qrels",
            required=True,
            metavar="ID|FILE|PROJECT:VERSION",
            help="a qrels source id of the team, a qrels file to upload, or a judging project's build "
            "(python-help:1) whose project is linked to the team",
        )
        parser.add_argument(
            "-m",
            "--measure",
            action="append",
            dest="measures",
            metavar="MEASURE",
            help=f"trec_eval or ir-measures name; repeat for several (default: {' '.join(DEFAULT_MEASURES)})",
        )
        parser.add_argument(
            "-l",
            "--level",
            type=int,
            default=ComparisonParams.rel_level,
            metavar="LEVEL",
            help="relevance level: binary measures count rel >= LEVEL as relevant (trec_eval -l; default 1)",
        )
        parser.add_argument(
            "-c",
            "--complete",
            action="store_true",
            help="average over every qrels query, counting queries missing from the run as 0 (trec_eval -c)",
        )
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--sync", action="store_true", help="evaluate in this process, not on a worker")
        mode.add_argument(
            "--no-wait", action="store_true", help="queue the evaluation, print its id and return"
        )
        parser.add_argument(
            "--timeout",
            type=float,
            default=evaluations.TIME_LIMIT,
            metavar="S",
            help="seconds to wait for the worker (default %(default)d, the job's time limit)",
        )
        parser.add_argument("--run-format", choices=FORMATS, help="format of a run file (default: detected)")
        parser.add_argument(
            "--qrels-format", choices=FORMATS, help="format of a qrels file (default: detected)"
        )
        add_user_option(parser)
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, *args: Any, **options: Any) -> None:
        self.verbosity = int(options["verbosity"])
        team, user = team_and_user(options["team"], options["user"])
        try:
            measures = evaluations.check_measures(options["measures"] or DEFAULT_MEASURES)
        except InputError as error:
            raise CommandError(str(error)) from None
        run = self.find_run(options["run"], team=team, user=user, fmt=options["run_format"])
        qrels = self.find_qrels(options["qrels"], team=team, user=user, fmt=options["qrels_format"])
        try:
            evaluation = evaluations.evaluation_create(
                run=run, qrels=qrels, measures=measures, rel_level=options["level"],
                complete=options["complete"], created_by=user, enqueue=not options["sync"],
            )  # fmt: skip
        except InputError as error:
            raise CommandError(str(error)) from None
        evaluation.refresh_from_db()
        if evaluation.status == JobStatus.DONE:
            self.note(f"Evaluation {evaluation.pk} was done before (same run, qrels and options).")
        elif options["sync"]:
            self.run_here(evaluation, timeout=options["timeout"])
        else:
            if evaluation.status == JobStatus.PENDING and evaluation.queued_at is None:
                job_enqueue(evaluation)  # found pending but never queued (an interrupted --sync run)
            if options["no_wait"]:
                evaluation.refresh_from_db()
                if evaluation.status != JobStatus.FAILED:
                    self.queued(evaluation, as_json=options["json"])
                    return
            else:
                self.wait(evaluation, timeout=options["timeout"])
        evaluation.refresh_from_db()
        self.report(evaluation, as_json=options["json"])

    # --- inputs ---------------------------------------------------------------------------------------

    def find_run(self, spec: str, *, team: Team, user: User | None, fmt: str | None) -> Run:
        if spec.isdigit():
            try:
                return selectors.get_run(team=team, pk=spec)
            except Http404:
                raise CommandError(f"The team {team.slug} has no run {spec}.") from None
        digest = file_sha256(spec)
        same = Run.objects.filter(team=team, sha256=digest).order_by("-created_at", "-pk").first()
        if same is not None:
            self.note(f"{spec}: already uploaded as run {same.pk} {same.name!r}; using it.")
            return same
        with opened(spec) as handle:
            try:
                run = uploads.run_upload(team=team, upload=handle, fmt=fmt, uploaded_by=user)
            except uploads.UploadError as error:
                raise CommandError(str(error)) from None
        self.note(f"{spec}: uploaded as run {run.pk} {run.name!r}.")
        return run

    def find_qrels(self, spec: str, *, team: Team, user: User | None, fmt: str | None) -> QrelsSource:
        if spec.isdigit():
            try:
                return selectors.get_qrels_source(team=team, pk=spec)
            except Http404:
                raise CommandError(f"The team {team.slug} has no qrels source {spec}.") from None
        build_spec = BUILD_SPEC.fullmatch(spec)
        if build_spec and not Path(spec).exists():
            return self.build_source(build_spec["project"], int(build_spec["version"]), team=team, user=user)
        digest = file_sha256(spec)
        same = (
            QrelsSource.objects.filter(team=team, kind=QrelsSource.Kind.UPLOAD, sha256=digest)
            .order_by("-created_at", "-pk")
            .first()
        )
        if same is not None:
            self.note(f"{spec}: already uploaded as qrels {same.pk} {same.name!r}; using it.")
            return same
        with opened(spec) as handle:
            try:
                source = uploads.qrels_upload(team=team, upload=handle, fmt=fmt, uploaded_by=user)
            except uploads.UploadError as error:
                raise CommandError(str(error)) from None
        self.note(f"{spec}: uploaded as qrels {source.pk} {source.name!r}.")
        return source

    def build_source(self, slug: str, version: int, *, team: Team, user: User | None) -> QrelsSource:
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"There is no judging project {slug!r} (nor a file {slug}:{version}).")
        build = QrelsBuild.objects.filter(project=project, version=version).first()
        if build is None:
            raise CommandError(f"The judging project {slug} has no qrels build v{version}.")
        try:
            return uploads.qrels_source_for_build(team=team, build=build, by=user)
        except uploads.UploadError as error:
            raise CommandError(f"{error}.") from None

    # --- running and waiting --------------------------------------------------------------------------

    def run_here(self, evaluation: Evaluation, *, timeout: float) -> None:
        self.note(f"Evaluating {evaluation.run.name!r} on {evaluation.qrels.name!r} here (--sync)...")
        try:
            with alerts.alerts_checked_here():  # its alert rules checked here too, as a worker would
                outcome = evaluations.evaluation_run(evaluation_id=evaluation.pk)
        except (OperationalError, InterfaceError) as error:
            raise CommandError(
                f"Evaluation {evaluation.pk} stopped on a database error ({error}); it is pending again, "
                "so run the same command again."
            ) from None
        if outcome.status in ("busy", "lost"):
            self.note(f"A worker holds evaluation {evaluation.pk}; waiting for it.")
            self.wait(evaluation, timeout=timeout)

    def wait(self, evaluation: Evaluation, *, timeout: float) -> None:
        """Follow the job's status and progress on a bar on stderr until it is finished."""
        started = time.monotonic()
        hinted = False
        stream = getattr(self.stderr, "_out", sys.stderr)  # the bar writes raw; OutputWrapper adds newlines
        bar = tqdm(
            total=100, desc=describe(evaluation), file=stream, disable=self.verbosity < 1, leave=False,
            dynamic_ncols=True, bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}",
        )  # fmt: skip
        try:
            while True:
                evaluation.refresh_from_db(fields=["status", "progress", "progress_note", "attempts"])
                bar.n = evaluation.percent or 0
                bar.set_description_str(describe(evaluation), refresh=False)
                bar.refresh()
                if evaluation.is_finished:
                    return
                waited = time.monotonic() - started
                if waited > timeout:
                    raise CommandError(
                        f"Evaluation {evaluation.pk} is still {evaluation.status} after {timeout:g} s; "
                        "is a worker running on the heavy queue? Run the same command again to keep waiting."
                    )
                if not hinted and evaluation.status == JobStatus.PENDING and waited > NO_WORKER_HINT_AFTER:
                    hinted = True
                    bar.write(
                        f"No worker has taken evaluation {evaluation.pk} yet. Start one "
                        "(celery -A evalplatform worker -Q default,heavy) or use --sync to evaluate here.",
                        file=stream,
                    )
                time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            raise CommandError(
                f"Stopped waiting; evaluation {evaluation.pk} is {evaluation.status} and goes on on the "
                "worker. Run the same command again to wait for it."
            ) from None
        finally:
            bar.close()

    # --- output ---------------------------------------------------------------------------------------

    def note(self, text: str) -> None:
        if self.verbosity >= 1:
            self.stderr.write(text)

    def queued(self, evaluation: Evaluation, *, as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps(as_data(evaluation)))
            return
        self.stdout.write(
            f"Queued evaluation {evaluation.pk} of run {evaluation.run_id} {evaluation.run.name!r} on "
            f"{evaluation.qrels.name!r} ({evaluation.status}). Run the same command again to wait for it."
        )

    def report(self, evaluation: Evaluation, *, as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps(as_data(evaluation), allow_nan=False))
        if evaluation.status == JobStatus.FAILED:
            hint = (
                " Or evaluate it here with --sync." if "task queue is unreachable" in evaluation.error else ""
            )
            raise CommandError(f"Evaluation {evaluation.pk} failed: {evaluation.error}{hint}")
        if as_json:
            return
        self.note(
            f"Evaluation {evaluation.pk}: run {evaluation.run_id} {evaluation.run.name!r} on qrels "
            f"{evaluation.qrels_id} {evaluation.qrels.name!r}, {_queries(evaluation.num_queries or 0)}"
            + (f" ({evaluation.num_missing} missing, counted as 0)" if evaluation.complete else "")
            + f"; {round(100 * evaluation.confidence)}% bootstrap intervals."
        )
        self.stdout.write(as_text(evaluation), ending="")


def _queries(count: int) -> str:
    return f"{count} query" if count == 1 else f"{count} queries"


def describe(evaluation: Evaluation) -> str:
    if evaluation.status == JobStatus.PENDING:
        if evaluation.attempts:
            return f"waiting for a retry (attempt {evaluation.attempts} was interrupted)"
        return "waiting for a worker"
    if evaluation.status == JobStatus.RUNNING:
        attempt = f" (attempt {evaluation.attempts})" if evaluation.attempts > 1 else ""
        return (evaluation.progress_note or "running") + attempt
    return str(evaluation.status)


def _integer_keys(evaluation: Evaluation) -> set[str]:
    return {spec.key for spec in parse_measures(list(evaluation.measures)) if spec.measure.integer}


def _number(value: float | None, *, integer: bool) -> float | int | None:
    return int(round(value)) if integer and value is not None else value


def as_data(evaluation: Evaluation) -> dict[str, Any]:
    """The `--json` object: the evaluation's id and status, each measure's value and its interval."""
    integer = _integer_keys(evaluation)
    rows = list(evaluation.results)
    data: dict[str, Any] = {
        "evaluation": evaluation.pk,
        "status": evaluation.status,
        "run": evaluation.run_id,
        "qrels": evaluation.qrels_id,
        "num_queries": evaluation.num_queries,
        "aggregate": {row.measure: _number(row.value, integer=row.measure in integer) for row in rows},
        "ci": {
            row.measure: None if row.ci_low is None or row.ci_high is None else [row.ci_low, row.ci_high]
            for row in rows
        },
    }
    if evaluation.status == JobStatus.FAILED:
        data["error"] = evaluation.error
    return data


def as_text(evaluation: Evaluation) -> str:
    """trec_eval's three columns (`measure<TAB>all<TAB>value`), then the interval `[low, high]`."""
    integer = _integer_keys(evaluation)
    lines = []
    for row in evaluation.results:
        if row.value is None:
            value = "-"
        elif row.measure in integer:
            value = str(int(round(row.value)))
        else:
            value = f"{row.value:.4f}"
        line = f"{row.measure:<22s}\tall\t{value}"
        if row.ci_low is not None and row.ci_high is not None:
            line += f"\t[{row.ci_low:.4f}, {row.ci_high:.4f}]"
        lines.append(line)
    return "\n".join(lines) + "\n"
