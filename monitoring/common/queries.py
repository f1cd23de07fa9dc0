"""Read queries only the API needs. The ones it shares with the pages (`get_evaluation`,
`team_evaluations`, `get_comparison`, `team_comparisons`) are `monitoring.evaluations.selectors`', each defined once.

Like the selectors, each takes a team that `get_team_for_member` returned, so another team's object is a
404. List queries load a fixed number of queries whatever the number of rows; per-query arrays are left
in the database unless the caller asks for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import OuterRef, Prefetch, QuerySet, Subquery, Value

from annotations.models import Project, QrelsBuild
from evalplatform.auth import AnyUser
from evalplatform.jobs import JobStatus
from evalplatform.models import Team, TeamMembership
from evalplatform.teams import teams_for_user
from monitoring.models import Evaluation

# --- teams --------------------------------------------------------------------------------------------


def teams_with_role(user: AnyUser) -> QuerySet[Team]:
    """The user's teams, each annotated with the user's `role` (editor of every team for a superuser)."""
    teams = teams_for_user(user).order_by("name", "pk")
    if getattr(user, "is_superuser", False):
        return teams.annotate(role=Value(TeamMembership.Role.EDITOR))
    role = TeamMembership.objects.filter(team=OuterRef("pk"), user_id=user.pk or 0).values("role")[:1]
    return teams.annotate(role=Subquery(role))


@dataclass(frozen=True)
class LinkedProject:
    slug: str
    name: str
    builds: list[int]


@dataclass(frozen=True)
class TeamDetail:
    slug: str
    name: str
    description: str
    role: str
    runs: int
    qrels: int
    evaluations: int
    comparisons: int
    judging_projects: list[LinkedProject]


def team_detail(membership: TeamMembership) -> TeamDetail:
    team = membership.team
    done = QrelsBuild.objects.filter(status=JobStatus.DONE).only("project_id", "version").order_by("version")
    projects = (
        Project.objects.filter(team=team)
        .order_by("slug")
        .prefetch_related(Prefetch("qrels_builds", queryset=done, to_attr="done_builds"))
    )
    return TeamDetail(
        slug=team.slug,
        name=team.name,
        description=team.description,
        role=membership.role,
        runs=team.runs.count(),
        qrels=team.qrels_sources.count(),
        evaluations=team.evaluations.count(),
        comparisons=team.comparisons.count(),
        judging_projects=[
            LinkedProject(p.slug, p.name, [b.version for b in p.done_builds])  # type: ignore[attr-defined]
            for p in projects
        ],
    )


def linked_build(*, team: Team, project: str, version: int | None) -> QrelsBuild | None:
    """A qrels build of a judging project linked to the team (its latest finished one without a version)."""
    builds = QrelsBuild.objects.filter(project__slug=project, project__team=team).select_related("project")
    if version is not None:
        return builds.filter(version=version).first()
    return builds.filter(status=JobStatus.DONE).order_by("-version").first()


# --- evaluations ------------------------------------------------------------------------------------


def per_query_values(evaluation: Evaluation, measures: list[str]) -> list[dict[str, Any]]:
    """One row per query of the evaluation, `{"qid", "values": {measure: value}}`, in its qids' order."""
    stored = Evaluation.objects.filter(pk=evaluation.pk).values_list("per_query", flat=True).first() or {}
    arrays = {measure: values for measure, values in stored.items() if measure in measures}
    return [
        {"qid": qid, "values": {measure: arrays[measure][index] for measure in measures if measure in arrays}}
        for index, qid in enumerate(evaluation.qids)
    ]
