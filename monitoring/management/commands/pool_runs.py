"""`pool_runs --project SLUG --run NAME ... --strategy S --budget B [-m MEASURE]`: pool a team's runs into
the judging project linked to that team, as the pool page and the API do, built in this process."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.models import Project
from evalcore.pooling import ADAPTIVE_STRATEGIES, STRATEGIES
from evalplatform.errors import InputError
from monitoring.files.models import Run
from monitoring.pooling import services as pooling
from monitoring.pooling.models import DEFAULTS, JudgingPool
from monitoring.pooling.planner import MEASURE, simulation_measure_check


def pool_summary(pool: JudgingPool) -> dict[str, Any]:
    return {
        "pool": pool.pk,
        "project": pool.project.slug,
        "team": pool.team.slug,
        "runs": [run.name for run in pool.runs.order_by("pk")],
        "strategy": pool.strategy,
        "adaptive": pool.is_adaptive,
        "budget": pool.budget,
        "depth": pool.depth,
        "seed": pool.seed,
        "simulation_measure": pool.simulation_measure,
        "status": pool.status,
        "error": pool.error,
        **pool.summary(),
        "url": pool.get_absolute_url(),
    }


class Command(BaseCommand):
    help = (
        "Pool runs into a judging project: the top --depth documents of each run (the runs of the team the "
        "project is linked to, named by --run) over the project's topics, ordered by --strategy, the first "
        "--budget of them added to the project as tasks that annotators are served first, in that order "
        "(tasks the project has are reused; documents it lacks are left out and counted). Adaptive "
        f"strategies ({', '.join(sorted(ADAPTIVE_STRATEGIES))}) re-order the pending tasks as answers "
        "arrive. The pool is built in this process; its page lists it for the project's leads, with every "
        "strategy replayed on the runs (the simulation), the runs ranked by -m/--measure."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, metavar="SLUG", help="the judging project's slug")
        parser.add_argument(
            "--run", action="append", dest="runs", required=True, metavar="NAME",
            help="a run of the project's team, by name (the newest of that name); repeat for several",
        )  # fmt: skip
        parser.add_argument("--strategy", required=True, choices=STRATEGIES, help="the order to judge in")
        parser.add_argument(
            "--budget", required=True, type=int, metavar="B", help="pairs to judge over all topics"
        )
        parser.add_argument(
            "--depth", type=int, default=DEFAULTS.depth, metavar="D",
            help=f"how deep each run is read (default {DEFAULTS.depth})",
        )  # fmt: skip
        parser.add_argument(
            "--seed", type=int, default=DEFAULTS.seed, metavar="N",
            help=f"drives the random and bandit orders (default {DEFAULTS.seed})",
        )  # fmt: skip
        parser.add_argument(
            "-m", "--measure", default=MEASURE, metavar="MEASURE",
            help=f"the measure that ranks the runs in the pool page's simulation of the strategies, as "
            f"simulate_pooling's -m: any one numeric measure of the registry, in any of its spellings, such "
            f"as ndcg_cut_10 or P_5 (default {MEASURE})",
        )  # fmt: skip
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.select_related("team").filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"There is no project {options['project']!r}.")
        if project.team is None:
            raise CommandError(
                f"The project {project.slug} is linked to no team: link it to the team whose runs to pool."
            )
        runs = [self._run(project, name) for name in options["runs"]]
        if options["budget"] < 1:
            raise CommandError("--budget must be at least 1.")
        try:
            measure = simulation_measure_check(options["measure"])
        except InputError as error:
            raise CommandError(f"-m/--measure: {error}") from None
        try:
            pool = pooling.pool_create(
                project=project, runs=runs, strategy=options["strategy"], budget=options["budget"],
                depth=options["depth"], seed=options["seed"], simulation_measure=measure, enqueue=False,
            )  # fmt: skip
        except InputError as error:
            raise CommandError(str(error)) from None
        pooling.pool_build_run(pool_id=pool.pk)
        pool = JudgingPool.objects.select_related("project", "team").get(pk=pool.pk)
        if options["json"]:
            self.stdout.write(json.dumps(pool_summary(pool)))
            if pool.status == "failed":
                raise CommandError(pool.error)
            return
        if pool.status == "failed":
            raise CommandError(f"The pool could not be built: {pool.error}")
        skipped = (
            f"; {pool.skipped_missing} left out (no such document in the project)"
            if pool.skipped_missing
            else ""
        )
        self.stdout.write(
            f"Pool {pool.pk} ({pool.strategy}) of {len(runs)} run{'s' if len(runs) != 1 else ''} into "
            f"{project.slug}: {pool.candidates_count} pairs pooled{skipped}; {pool.tasks_created} tasks added, "
            f"{pool.tasks_reused} reused; {pool.judged} of {pool.budget} judged already, {pool.pending} waiting "
            f"({pool.phase_label.lower()}); its simulation ranks the runs by {pool.simulation_measure}. Its page: "
            f"{pool.get_absolute_url()}"
        )

    @staticmethod
    def _run(project: Project, name: str) -> Run:
        run = Run.objects.filter(team=project.team_id, name=name).order_by("-created_at", "-pk").first()
        if run is None:
            raise CommandError(
                f"The team {project.team.slug if project.team else ''} has no run named {name!r}."
            )
        return run
