"""Read queries of the pool pages and API, and the one permission-aware lookup of a pool.

Pools belong to a judging project and are read by its leads only: annotators never see which pairs a
pool wants, in which order, or how relevant they turned out (`annotations.selectors.get_lead_project`
answers 404 to non-members and 403 to annotators). Creating a pool also reads the linked team's runs,
so it takes a member of that team too (`pool_team_for`).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.urls import reverse

from annotations.models import Project
from annotations.selectors import get_lead_project
from evalplatform.auth import AnyUser
from evalplatform.models import Team
from evalplatform.teams import get_team_for_member
from monitoring.files.models import Run
from monitoring.pooling.models import JudgingPool

#: At most this many points of the yield curve are listed beside its chart (the CSV has them all).
YIELD_TABLE_POINTS = 20


def get_pool_project(user: AnyUser, slug: str) -> Project:
    """The project `slug` if the user leads it (404 to non-members, 403 to annotators)."""
    return get_lead_project(user, slug)


def pool_team_for(user: AnyUser, project: Project) -> Team:
    """The project's linked team, whose runs the user may pool: 403 when the project has none or the user
    is not a member of it."""
    team = project.team
    if team is None:
        raise PermissionDenied("Link the project to a team first: a pool is built from that team's runs.")
    try:
        return get_team_for_member(user, team.slug).team
    except Http404:
        raise PermissionDenied("Only members of the project's team may pool its runs.") from None


def may_pool(user: AnyUser, project: Project) -> bool:
    try:
        pool_team_for(user, project)
    except PermissionDenied:
        return False
    return True


def pool_links(project: Project) -> list[tuple[str, str]]:
    """The link on the lead's project page (`annotations.hooks.project_links_register`)."""
    return [("Pools from runs", reverse("monitoring:pool-list", args=[project.slug]))]


def project_pools(*, project: Project) -> QuerySet[JudgingPool]:
    return (
        JudgingPool.objects.filter(project=project)
        .select_related("project", "team", "created_by")
        .defer("candidates", "yield_curve")
        .order_by("-created_at", "-pk")
    )


def get_pool(*, project: Project, pk: int) -> JudgingPool:
    pool = get_object_or_404(
        JudgingPool.objects.select_related("project", "team").defer("candidates"), project=project, pk=pk
    )
    return pool


def team_runs(*, team: Team) -> QuerySet[Run]:
    return Run.objects.filter(team=team).order_by("-created_at", "-pk")


@dataclass(frozen=True)
class YieldPoint:
    judged: int
    relevant: int

    @property
    def share(self) -> float:
        return self.relevant / self.judged if self.judged else 0.0


def yield_points(pool: JudgingPool) -> list[YieldPoint]:
    """Every point of the yield curve: relevant found after each judgment."""
    return [YieldPoint(judged, int(relevant)) for judged, relevant in enumerate(pool.yield_curve, start=1)]


def yield_table(pool: JudgingPool, *, points: int = YIELD_TABLE_POINTS) -> list[YieldPoint]:
    """At most `points` evenly spaced points of the curve, the last one always among them."""
    every = yield_points(pool)
    if len(every) <= points:
        return every
    step = -(-len(every) // points)
    chosen = every[step - 1 :: step]
    return chosen if chosen[-1] is every[-1] else [*chosen, every[-1]]
