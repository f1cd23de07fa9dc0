"""`pool_delete --project SLUG --pool ID`: delete a pool of a judging project, as its page and the API do."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from monitoring.pooling import services as pooling
from monitoring.pooling.models import JudgingPool


class Command(BaseCommand):
    help = (
        "Delete a pool built from runs: the tasks it created that nobody started go with it, its other "
        "unanswered tasks lose their priority, every answer stays, and the project may pool again (one pool "
        "builds or judges at a time)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, metavar="SLUG", help="the judging project's slug")
        parser.add_argument("--pool", required=True, type=int, metavar="ID", help="the pool's id")

    def handle(self, *args: Any, **options: Any) -> None:
        pool = JudgingPool.objects.filter(project__slug=options["project"], pk=options["pool"]).first()
        if pool is None:
            raise CommandError(f"The project {options['project']!r} has no pool {options['pool']}.")
        deleted = pooling.pool_delete(pool=pool)
        self.stdout.write(
            f"Pool {options['pool']} of {options['project']} deleted, with the {deleted} task"
            f"{'s' if deleted != 1 else ''} it created that nobody had started."
        )
