"""Load the demo data for `make demo`: accounts with known passwords (printed), a judging project and a
search team that evaluates two systems on the project's qrels.

The project gets simulated answers from two careful and two careless annotators, its quality snapshot,
and a first qrels build; the team gets two runs (BM25 and LSA), their evaluations and a comparison. All
of it is computed here, in-process, so the demo needs no worker for it.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from annotations import qrels
from annotations.demo import (
    DEMO_LEAD,
    SIMULATED_ANNOTATORS,
    demo_annotations_simulate,
    demo_click_judge_load,
    demo_machine_judge_load,
    demo_project_create,
    demo_summary,
)
from annotations.models import Annotation, Project, QrelsBuild
from annotations.quality import services as quality
from monitoring.demo import DEMO_EDITOR, DemoSearchTeam, demo_search_team_load, demo_team_summary
from monitoring.embeddings.demo import demo_stream_load
from portal.demo import demo_accounts_create


class Command(BaseCommand):
    help = (
        "Create the demo accounts (admin, a project lead, two annotators, an analyst) and print their logins, "
        "and the demo judging project 'python-help' (Python questions against the standard library's help "
        "texts), with simulated answers from two careful annotators (carol, dave) and two careless ones "
        "(eve, mallory), its quality figures and a first qrels build; and the search team 'search' (analyst "
        "edits, lead views) with two runs over that project (BM25, and LSA as a stand-in for a dense "
        "retriever) evaluated on qrels v1 and compared. Idempotent: existing accounts keep their passwords, "
        "so running it again logs nobody out, and nothing is created twice."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")

    def handle(self, *args: Any, **options: Any) -> None:
        accounts = demo_accounts_create()
        project = demo_project_create()
        demo_annotations_simulate(project)
        quality.quality_snapshot_refresh(project_id=project.pk)
        if not QrelsBuild.objects.filter(project=project).exists():
            build = qrels.qrels_build_create(
                project=project,
                created_by=project.memberships.get(user__username=DEMO_LEAD).user,
                enqueue=False,
            )
            qrels.qrels_build_run(build_id=build.pk)
        demo_machine_judge_load(project)  # after the build: its calibration and routing read the consensus
        demo_click_judge_load(project)  # a simulated search log, fitted by DBN: the click-derived judgments
        search = demo_search_team_load()
        demo_stream_load()  # the search team's embedding stream: drift, then collapse
        summary = demo_summary(project)
        if options["json"]:
            rows = [
                {
                    "username": a.username,
                    "password": a.password,
                    "name": a.first_name,
                    "role": a.role.value if a.role else "admin",
                }
                for a in accounts
            ]
            data: dict[str, Any] = {"accounts": rows, "project": {"slug": project.slug, **summary}}
            data["team"] = demo_team_summary(search) if search else None
            self.stdout.write(json.dumps(data))
            return
        self.stdout.write(
            self.style.SUCCESS("Demo logins (local demo only; existing accounts keep their passwords):")
        )
        for account in accounts:
            role = account.role.label if account.role else "Admin (superuser)"
            self.stdout.write(
                f"  {account.username:<10} {account.password:<20} {account.first_name:<8} {role}"
            )
        self.stdout.write(
            self.style.SUCCESS(f"Demo judging project {project.slug!r}: ")
            + f"{summary['topics']} queries, {summary['documents']} documents, {summary['tasks']} tasks "
            f"({summary['gold_tasks']} gold), {_simulated_answers(project)} answers from the simulated annotators "
            f"{', '.join(a.username for a in SIMULATED_ANNOTATORS)}. Log in as alice or bob and open "
            f"/projects/{project.slug}/judge/; as lead, /projects/{project.slug}/quality/."
        )
        if search is not None:
            self.stdout.write(
                self.style.SUCCESS(f"Demo search team {search.team.slug!r}: ") + _team_line(search)
            )


def _simulated_answers(project: Project) -> int:
    """The simulated annotators' answers only: once alice or bob have judged, the project's total counts
    theirs too, which this message does not claim."""
    names = [annotator.username for annotator in SIMULATED_ANNOTATORS]
    return Annotation.objects.filter(project=project, annotator__username__in=names).count()


def _team_line(search: DemoSearchTeam) -> str:
    runs = " and ".join(
        f"{evaluation.run.name} (map {_map_of(evaluation):.3f})" for evaluation in search.evaluations
    )
    compared = (
        f", compared with a randomization test and Holm's correction at {search.comparison.get_absolute_url()}"
        if search.comparison
        else ""
    )
    return (
        f"runs {runs} on {search.qrels.name}{compared}. Log in as {DEMO_EDITOR} and open "
        f"/teams/{search.team.slug}/ (leaderboard: {search.qrels.get_absolute_url()})."
    )


def _map_of(evaluation: object) -> float:
    row = next((r for r in evaluation.results if r.measure == "map"), None)  # type: ignore[attr-defined]
    return row.value if row is not None and row.value is not None else float("nan")
