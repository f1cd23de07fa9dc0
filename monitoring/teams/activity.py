"""What changed in a team, newest first: runs evaluated (or failed), new qrels versions and the
leaderboard diff each new version of a project makes, alerts opened and resolved (what is archived left
out). Read from the tables
that hold them (five queries, whatever the number of teams): nothing is stored twice."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.urls import reverse

from evalplatform.jobs import JobStatus
from evalplatform.models import Team
from monitoring.models import AlertEvent, Evaluation, QrelsSource

#: The kinds of change, as the page's badges name them.
KINDS = {
    "evaluated": "run evaluated",
    "failed": "evaluation failed",
    "qrels": "new qrels",
    "leaderboard": "leaderboard changed",
    "opened": "alert opened",
    "resolved": "alert resolved",
}


@dataclass(frozen=True)
class Activity:
    at: datetime
    kind: str
    team: Team
    text: str
    url: str

    @property
    def label(self) -> str:
        return KINDS[self.kind]


def team_activity(*, teams: Sequence[Team], limit: int = 20) -> list[Activity]:
    """The `limit` newest changes in these teams, newest first."""
    if not teams:
        return []
    found: list[Activity] = []
    evaluations = (
        Evaluation.objects.filter(team__in=teams, status__in=[JobStatus.DONE, JobStatus.FAILED])
        .exclude(finished_at=None)
        .exclude(archived=True)
        .exclude(run__archived=True)
        .exclude(qrels__archived=True)
        .select_related("team", "run", "qrels")
        .defer("per_query")
        .order_by("-finished_at", "-pk")[:limit]
    )
    for evaluation in evaluations:
        done = evaluation.status == JobStatus.DONE
        text = (
            f"{evaluation.run.name} evaluated on {evaluation.qrels.name}"
            if done
            else f"{evaluation.run.name} on {evaluation.qrels.name} failed: {evaluation.error[:120]}"
        )
        found.append(Activity(evaluation.finished_at, "evaluated" if done else "failed", evaluation.team, text,  # type: ignore[arg-type]
                              evaluation.get_absolute_url()))  # fmt: skip
    sources = list(
        QrelsSource.objects.filter(team__in=teams, archived=False)
        .select_related("team", "build__project")
        .order_by("-created_at", "-pk")[:limit]
    )
    built = [s for s in sources if s.build is not None]
    versions: dict[tuple[int, int], list[tuple[int, int]]] = {}
    if built:
        earlier = QrelsSource.objects.filter(
            team__in=teams,
            build__status=JobStatus.DONE,
            build__project_id__in={s.build.project_id for s in built},  # type: ignore[union-attr]
        ).values_list("team_id", "build__project_id", "build__version", "pk")
        for team_id, project_id, version, pk in earlier:
            versions.setdefault((team_id, project_id), []).append((version, pk))
    for source in sources:
        board = reverse("monitoring:leaderboard", args=[source.team.slug, source.pk])
        found.append(Activity(source.created_at, "qrels", source.team, f"New qrels {source.name}", board))
        if source.build is None:
            continue
        before = [
            (version, pk)
            for version, pk in versions.get((source.team_id, source.build.project_id), [])
            if version < source.build.version
        ]
        if before:
            version, pk = max(before)
            diff = reverse("monitoring:leaderboard-diff", args=[source.team.slug, source.pk]) + f"?from={pk}"
            text = f"Leaderboard of {source.build.project.name} on v{source.build.version} against v{version}"
            found.append(Activity(source.created_at, "leaderboard", source.team, text, diff))
    events = AlertEvent.objects.filter(team__in=teams).select_related("team", "rule")
    for event in events.order_by("-opened_at", "-pk")[:limit]:
        url = event.source_url or reverse("monitoring:alerts", args=[event.team.slug])
        value = "undefined" if event.value is None else f"{event.value:.4g}"
        found.append(
            Activity(
                event.opened_at,
                "opened",
                event.team,
                f"{event.rule.name}: {event.rule.metric} = {value}",
                url,
            )
        )
    for event in events.exclude(resolved_at=None).order_by("-resolved_at", "-pk")[:limit]:
        url = event.source_url or reverse("monitoring:alerts", args=[event.team.slug])
        found.append(Activity(event.resolved_at, "resolved", event.team, f"{event.rule.name} resolved", url))  # type: ignore[arg-type]
    found.sort(key=lambda a: a.at, reverse=True)
    return found[:limit]
